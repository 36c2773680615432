"""Tollgate's feedback loop: outcomes joined to verdicts, labelled examples, the
four-hourly preference fine-tune, the promotion gate and the model registry."""
