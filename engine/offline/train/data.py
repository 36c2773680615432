"""From an event frame to what ``tollgate train`` trains on: encoded events and their labels.

The events are replayed through enrich → encode in event time (the stream's own code,
``engine.offline.backtest.run.Replay``), each outcome revealed to the feature store when it arrived.
Two sources of labels:

* **outcomes**: an event's label is its latest outcome. Without rule verdicts an event
  with no outcome is presumed good (a chargeback would have arrived), which is what a
  card issuer assumes too.
* **rule verdicts**, for a cold start (few or no outcomes yet): an existing rule
  engine's verdict per event becomes a soft verdict target (``LabelledSet.soft_verdict``:
  the rule's verdict with probability ``confidence``, the rest shared by the other two,
  because rules are not ground truth). Either a YAML rule set run here over the replayed
  events, or a file of verdicts recorded by the rule engine in use. With rule verdicts an
  event without an outcome stays *unlabelled* (NaN) for the risk loss: presuming it good
  would teach the risk head that what the rules reject is good.

A rule set run here sees what the guard stage gives it, ``event.*`` and the context
``ctx.*`` at the moment of the event, starting from a ``pass`` proposal and an empty
model view: there is no model yet, so rules that read ``model.*`` (risk, verdict) see
zeros and ``pass``, and shadow rules do not count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from engine.offline.backtest.run import Replay
from engine.offline.train.sets import LabelledSet
from engine.records import DECISIONS, Decision, TransactionEvent
from engine.rules.rule_metrics import RuleMetrics
from engine.stages.encode import EncodedBatch, FieldIsolatedEncoder
from engine.stages.guard import Guard, ProposedVerdict

VERDICT_INDEX = {d.value: i for i, d in enumerate(DECISIONS)}
#: Default probability a rule verdict puts on itself (label smoothing for imperfect rules).
RULE_CONFIDENCE = 0.9

RuleJudge = Callable[[list[TransactionEvent], list[Any]], list[str]]


def soft_verdicts(verdicts: Sequence[str | None], confidence: float = RULE_CONFIDENCE) -> Tensor:
    """[N, 3] soft labels: ``confidence`` on the rule's verdict, the rest split evenly;
    a NaN row where there is no verdict (``None``).

    >>> soft_verdicts(["reject", None], 0.8).tolist()[0]
    [0.10000000149011612, 0.10000000149011612, 0.800000011920929]
    """
    if not 1 / len(DECISIONS) < confidence <= 1:
        raise ValueError(f"rule confidence must be in (1/3, 1], got {confidence}")
    out = torch.full((len(verdicts), len(DECISIONS)), (1 - confidence) / (len(DECISIONS) - 1))
    for i, verdict in enumerate(verdicts):
        if verdict is None:
            out[i] = float("nan")
        else:
            out[i, _verdict_index(verdict, f"event {i}")] = confidence
    return out


def _verdict_index(verdict: str, where: str) -> int:
    try:
        return VERDICT_INDEX[str(verdict).strip().lower()]
    except KeyError:
        raise ValueError(f"{where}: verdict {verdict!r} is not one of {', '.join(VERDICT_INDEX)}") from None


def rule_judge(rules_dir: str | Path) -> RuleJudge:
    """``(events, context snapshots) -> verdicts`` by the YAML rule set in ``rules_dir``
    (raises ``RuleSetError`` if it does not load), as the guard stage decides them."""
    # local: a metrics registry only on this path
    from prometheus_client import CollectorRegistry

    # A private registry: verdicts for training data are not live rule hits.
    guard = Guard.from_dir(rules_dir, metrics=RuleMetrics(CollectorRegistry()))
    no_model = ProposedVerdict(Decision.PASS)

    def judge(events: list[TransactionEvent], snapshots: list[Any]) -> list[str]:
        contexts = [dict(s.as_rule_inputs()) for s in snapshots]
        decided = guard.apply_batch(events, contexts, [{}] * len(events), [no_model] * len(events))
        return [d.verdict.value for d in decided]

    return judge


def read_rule_verdicts(path: str | Path) -> dict[str, str]:
    """event_id → verdict from a Parquet, CSV or JSON-lines file with columns ``event_id``
    and ``verdict`` (pass, review or reject)."""
    p = Path(path)
    frame = (pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p, dtype={"event_id": str})
             if p.suffix == ".csv" else pd.read_json(p, lines=True, dtype={"event_id": str}))
    missing = {"event_id", "verdict"} - set(frame.columns)
    if missing:
        raise ValueError(f"{p}: rule verdicts need the columns event_id and verdict (missing {sorted(missing)})")
    out: dict[str, str] = {}
    for event_id, verdict in zip(frame["event_id"].astype(str), frame["verdict"]):
        out[event_id] = DECISIONS[_verdict_index(verdict, f"{p}, event {event_id}")].value
    return out


@dataclass(slots=True)
class TrainingData:
    dataset: LabelledSet
    n_outcomes: int  # events with a known outcome
    n_bad: int
    n_rule_verdicts: int  # events with a rule verdict (0: no soft labels)


def outcome_labels(frame: pd.DataFrame, arrivals: pd.DataFrame, unknown_as_good: bool) -> np.ndarray:
    """Per event of ``frame``: 1.0 bad, 0.0 good (its latest outcome), NaN unknown, or 0.0
    for an unknown one with ``unknown_as_good``."""
    latest = arrivals.sort_values("arrival_time_ms", kind="stable").groupby("event_id")["is_bad"].last()
    labels = frame["event_id"].astype(str).map({str(k): float(v) for k, v in latest.items()}).astype(float)
    return (labels.fillna(0.0) if unknown_as_good else labels).to_numpy()


def no_arrivals() -> pd.DataFrame:
    """An empty outcome-arrival frame (``engine.offline.backtest.run`` layout): a cold start's outcomes."""
    return pd.DataFrame({"event_id": pd.Series(dtype=object), "terminal_id": pd.Series(dtype=object),
                         "event_time_ms": pd.Series(dtype="int64"), "arrival_time_ms": pd.Series(dtype="int64"),
                         "is_bad": pd.Series(dtype=bool)})


def build_training_set(frame: pd.DataFrame, arrivals: pd.DataFrame, *, judge: RuleJudge | None = None,
                       rule_verdicts: dict[str, str] | None = None, confidence: float = RULE_CONFIDENCE,
                       batch_size: int = 512) -> TrainingData:
    """Replay ``frame`` (time-ordered) through enrich → encode with ``arrivals`` revealed
    as they arrive; labels from the outcomes and, if given, rule verdicts as soft labels:
    either ``judge`` (``rule_judge(DIR)``: a rule set that decides every event during
    the replay, on its context at that moment) or ``rule_verdicts`` (event_id → verdict;
    events it lacks get none)."""
    if judge is not None and rule_verdicts is not None:
        raise ValueError("give a rule set or recorded rule verdicts, not both")
    use_rules = judge is not None or rule_verdicts is not None
    ids = frame["event_id"].astype(str).to_numpy()
    verdicts: list[str | None] = [None] * len(frame)
    if rule_verdicts is not None:
        verdicts = [rule_verdicts.get(e) for e in ids]

    def on_context(rows: np.ndarray, events: list[TransactionEvent], snapshots: list[Any]) -> None:
        for row, verdict in zip(rows, judge(events, snapshots)):  # type: ignore[misc]
            verdicts[int(row)] = verdict

    batches: list[EncodedBatch] = []
    replay = Replay(frame, arrivals, FieldIsolatedEncoder(), batch_size=batch_size)
    replay.run_until(int(frame["event_time_ms"].max()) + 1, lambda r, e, enc: batches.append(enc), "encode",
                     on_context=on_context if judge is not None else None)
    labels = outcome_labels(frame, arrivals, unknown_as_good=not use_rules)
    soft = soft_verdicts(verdicts, confidence) if use_rules else None
    dataset = LabelledSet(EncodedBatch.concat(batches), torch.tensor(labels, dtype=torch.float32),
                          torch.tensor(frame["amount"].to_numpy(), dtype=torch.float32),
                          torch.tensor(frame["event_time_ms"].to_numpy(), dtype=torch.int64), soft)
    known = ~np.isnan(labels)
    return TrainingData(dataset, int(known.sum()), int(np.nansum(labels)),
                        sum(v is not None for v in verdicts) if use_rules else 0)
