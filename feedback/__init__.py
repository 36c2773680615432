"""Tollgate's feedback loop: outcomes joined to verdicts, labelled examples, the
four-hourly preference fine-tune and the promotion gate. (The model registry it promotes
into is the engine's: ``engine.model.registry``.)

Read it in data-flow order:

* ``stream/``   — the outcome join worker: ``app`` (faust agents over ``tx.verdicts`` /
  ``tx.outcomes``), ``process`` (what a batch does, faust-free), ``join`` (the join rules,
  pure: order, duplicates, corrections), ``joinstate`` (join records and pending work in
  Redis, crash-safe), ``metrics``;
* ``store``     — append-only hourly Parquet: labelled examples and decisions (the stream
  writes, learning reads);
* ``trust``     — what outcomes may teach: trusted sources and held-out, influence caps,
  the label-shift alarm, the poisoning drill;
* ``learn/``    — ``dataset`` (stored rows → model inputs; models → gate scores),
  ``preference`` (outcome DPO per decision and over decision pairs, KL, stop budget, plus
  risk BCE), ``finetune`` (bounded, from the serving model), ``gate`` (held-out metrics +
  24 h replay migration matrix → pass/refuse, report), ``final_verdicts`` (the gate's
  replay of detector → policy → hard rules per rule set), ``scheduler`` (one cycle every
  four hours: fine-tune → gate → promote), ``export`` (decision logs + outcomes → a
  training table), ``rehearse`` (the loop on a simulated stream, in event time);
* ``commands``  — ``tollgate feedback …`` and ``tollgate model …``, found by the CLI through
  the ``tollgate.commands`` entry point (the engine never imports this package).
"""
