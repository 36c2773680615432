"""Does the user text add detection, and does the model still read "has a memo" as "safe"?

    python ops/bench/user_text_train.py --model DIR [--model DIR ...] [--days 8] [--eval-days 3]

Simulates a validation stream (its own seed, never a training one), enriches it in event
time with delayed outcomes as the bootstrap training does, and scores the last
``--eval-days`` with each model, computing the risk score of every event four ways:
with all its text, with its memo alone, with its descriptor alone, without any text
(exactly the encoder's tensors for an event without those fields). Prints per model:

* average precision (fraud) of the *served* risk (the maximum over those variants, as
  ``engine.pipeline`` serves it) and of the risk *without the text segment*, on all
  events, on events with a memo, and on events with an injected memo;
* the shortcut: on how many events a benign memo ("Monthly rent June, thanks!") added
  to the event (descriptor kept) lowers the raw model's risk, and the median ratio;
* how often serving had to raise the risk (the ``user_text_cannot_lower`` reason).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np
import torch

from engine.features.memory import MemoryFeatureStore  # noqa: E402
from engine.features.store import LabelArrival  # noqa: E402
from engine.offline.simulate.frames import events_from_frame  # noqa: E402
from engine.offline.simulate.simulator import SimConfig, Simulator  # noqa: E402
from engine.records import OutcomeKind, TransactionEvent  # noqa: E402
from engine.stages.encode import TEXT_FIELDS, FieldIsolatedEncoder  # noqa: E402
from engine.stages.infer import Inference  # noqa: E402

BENIGN = "Monthly rent June, thanks!"
MEMO = slice(0, TEXT_FIELDS[0][1])
DESCRIPTOR = slice(TEXT_FIELDS[0][1], TEXT_FIELDS[0][1] + TEXT_FIELDS[1][1])


def validation_stream(days: int, eval_days: int, customers: int, seed: int, **sim: float):
    """Encoded events of the last ``eval_days`` (context warmed by the days before),
    fraud labels, memo presence and memo-injection flags."""
    encoder, store = FieldIsolatedEncoder(), MemoryFeatureStore()
    seen: dict[str, tuple[str, int]] = {}
    batches, fraud, has_memo, injected = [], [], [], []
    config = SimConfig(customers=customers, terminals=customers * 2, days=days, seed=seed,
                       outcome_delay_mean_days=2.0, drain_outcomes=False, **sim)
    for k, day in enumerate(Simulator(config).days()):
        arrivals = [LabelArrival(str(e), *seen[str(e)], int(at), OutcomeKind(kind).is_bad)
                    for e, kind, at in zip(day.outcomes.get("event_id", ()), day.outcomes.get("kind", ()),
                                           day.outcomes.get("outcome_time_ms", ())) if str(e) in seen]
        store.record_outcomes(arrivals)
        if not len(day.events):
            continue
        events = events_from_frame(day.events)
        seen.update((e.event_id, (e.terminal_id, e.event_time_ms)) for e in events)
        snaps = store.enrich(events)
        if k < days - eval_days:
            continue
        batches.append(encoder.encode(events, snaps))
        fraud.append(day.events["tx_fraud"].to_numpy().astype(bool))
        has_memo.append(day.events["memo"].notna().to_numpy())
        injected.append(day.events["memo_injection"].notna().to_numpy())
    from engine.stages.encode import EncodedBatch

    probe = TransactionEvent("probe", 1_700_000_000_000, "c", "a", "t", "5411", 1.0, "EUR", "transfer", "BE",
                             memo=BENIGN)
    benign = encoder.encode([probe], MemoryFeatureStore().enrich([probe]))
    return (EncodedBatch.concat(batches), np.concatenate(fraud), np.concatenate(has_memo),
            np.concatenate(injected), benign.text_ids[0, MEMO])


def blank(batch, *segments: slice):
    ids, mask = batch.text_ids.clone(), batch.text_mask.clone()
    for s in segments:
        ids[:, s] = 0
        mask[:, s] = False
    return type(batch)(batch.control_numeric, batch.control_categorical, batch.history_numeric,
                       batch.history_categorical, batch.history_mask, ids, mask)


def with_memo(batch, memo_ids: torch.Tensor):
    ids = batch.text_ids.clone()
    ids[:, MEMO] = memo_ids
    return type(batch)(batch.control_numeric, batch.control_categorical, batch.history_numeric,
                       batch.history_categorical, batch.history_mask, ids, ids != 0)


def risk(infer: Inference, batch) -> np.ndarray:
    return np.concatenate([infer(batch[i:i + 1024]).risk.numpy() for i in range(0, len(batch), 1024)])


def ap(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    return float(average_precision_score(labels, scores)) if labels.any() else float("nan")


def main() -> None:
    ap_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap_.add_argument("--model", type=Path, action="append", required=True)
    ap_.add_argument("--days", type=int, default=8)
    ap_.add_argument("--eval-days", type=int, default=3)
    ap_.add_argument("--customers", type=int, default=1000)
    ap_.add_argument("--seed", type=int, default=2207, help="validation seed (never a training one)")
    ap_.add_argument("--injection-rate", type=float, default=None,
                     help="share of memos that are injections (simulator default 0.01)")
    ap_.add_argument("--fraud-injection-rate", type=float, default=None,
                     help="the same for leaked-card frauds (default 0.1): raise it for an injection-heavy scenario")
    args = ap_.parse_args()
    torch.set_num_threads(1)

    sim = {k: v for k, v in (("injection_rate", args.injection_rate),
                             ("fraud_injection_rate", args.fraud_injection_rate)) if v is not None}
    batch, fraud, has_memo, injected, benign_ids = validation_stream(args.days, args.eval_days, args.customers,
                                                                     args.seed, **sim)
    print(f"validation: {len(batch)} events, {int(fraud.sum())} frauds; with memo {int(has_memo.sum())} "
          f"({int((fraud & has_memo).sum())} frauds); injected memo {int(injected.sum())} "
          f"({int((fraud & injected).sum())} frauds); seed {args.seed}, last {args.eval_days} of {args.days} days"
          + (f", {sim}" if sim else ""))
    print(f"{'model':34s} {'AP all':>13s} {'AP memo':>13s} {'AP injected':>13s} {'benign memo lowers':>19s} "
          f"{'median ratio':>12s} {'serving raised':>14s}")
    print(f"{'':34s} {'served/none':>13s} {'served/none':>13s} {'served/none':>13s}")
    no_memo_desc = blank(batch, MEMO)
    for path in args.model:
        infer = Inference.from_dir(path)
        full = risk(infer, batch)
        memo_only = risk(infer, blank(batch, DESCRIPTOR))
        desc_only = risk(infer, no_memo_desc)
        none = risk(infer, blank(batch, MEMO, DESCRIPTOR))
        served = np.maximum.reduce([full, memo_only, desc_only, none])
        planted = risk(infer, with_memo(no_memo_desc, benign_ids))
        lowers = planted < desc_only - 1e-6
        ratio = statistics.median((planted / np.maximum(desc_only, 1e-12)).tolist())
        raised = served > full + 1e-6
        cells = []
        for sel in (slice(None), has_memo, injected):
            cells.append(f"{ap(served[sel], fraud[sel]):.3f}/{ap(none[sel], fraud[sel]):.3f}")
        print(f"{str(path)[-34:]:34s} {cells[0]:>13s} {cells[1]:>13s} {cells[2]:>13s} "
              f"{lowers.mean():18.1%} {ratio:12.3f} {raised.mean():13.1%}")


if __name__ == "__main__":
    main()
