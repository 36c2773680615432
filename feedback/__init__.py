"""Tollgate's feedback loop: outcomes joined to verdicts, labelled examples, the
four-hourly preference fine-tune, the promotion gate and the model registry.

Read it in data-flow order:

* ``app``        — the faust worker: agents over ``tx.verdicts`` / ``tx.outcomes``;
* ``process``    — what a batch does (join, delayed-label update, flush), faust-free;
* ``join``       — the join rules, pure: order, duplicates, corrections;
* ``joinstate``  — join records and pending work in Redis (crash-safe);
* ``store``      — append-only hourly Parquet: labelled examples and decisions;
* ``dataset``    — stored rows → the exact model inputs; models → gate scores;
* ``trust``      — what outcomes may teach: trusted sources and held-out, influence caps,
  the label-shift alarm, the poisoning drill;
* ``preference`` — outcome DPO per decision and over (bad, good) decision pairs, KL,
  the stop budget, plus risk BCE;
* ``finetune``   — bounded fine-tune of a candidate from the serving model;
* ``gate``       — held-out metrics + 24 h replay migration matrix → pass/refuse, report;
* ``final_verdicts`` — the gate's replay of detector → policy → hard rules per rule set;
* ``registry``   — model directories, the serving pointer, pub/sub, audit;
* ``scheduler``  — one cycle: fine-tune → gate → promote, every four hours;
* ``export``     — decision logs + outcomes → a clean training table;
* ``rehearse``   — the loop on a simulated stream, stores written in event time (bench, drill);
* ``commands``   — ``tollgate feedback …`` and ``tollgate model …``.
"""
