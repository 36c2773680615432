"""Tollgate's feedback loop: outcomes joined to verdicts, labelled examples, the
four-hourly preference fine-tune, the promotion gate and the model registry.

Read it in data-flow order:

* ``app``        — the faust worker: agents over ``tx.verdicts`` / ``tx.outcomes``;
* ``process``    — what a batch does (join, delayed-label update, flush), faust-free;
* ``join``       — the join rules, pure: order, duplicates, corrections;
* ``joinstate``  — join records and pending work in Redis (crash-safe);
* ``store``      — append-only hourly Parquet: labelled examples and decisions;
* ``dataset``    — stored rows → the exact model inputs; models → gate scores;
* ``preference`` — the outcome-based DPO loss with review cost, plus risk BCE;
* ``finetune``   — bounded fine-tune of a candidate from the serving model;
* ``gate``       — held-out metrics + 24 h replay migration matrix → pass/refuse, report;
* ``registry``   — model directories, the serving pointer, pub/sub, audit;
* ``scheduler``  — one cycle: fine-tune → gate → promote, every four hours;
* ``export``     — decision logs + outcomes → a clean training table;
* ``commands``   — ``tollgate feedback …`` and ``tollgate model …``.
"""
