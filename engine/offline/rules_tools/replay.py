"""The inputs of ``tollgate rules backtest``: historical events, in event time, with what
the model said about each — never what a policy or a rule set made of it.

A backtest compares two rule sets, and a rule set carries its own policy
(``policy.yaml``: thresholds, tie margin, abstain level, detector floor). So what is
recorded per event is everything *before* the policy — the context features, the
model's probabilities (``ScoreRow``), the detector's result, degraded mode — and each
side of the comparison runs ``engine.stages.decide.decide`` with its own policy, then its
own rules (``engine.offline.rules_tools.backtest``).

Where the model's outputs come from, in order of preference:

1. ``--model DIR``: the real pipeline's enrich → encode → infer, and its detector.
   Events with user text also carry their text-blind twin's ``ScoreRow``, so a side
   can apply the pipeline's "user text may only add suspicion" step;
2. the data file's columns ``p_pass``, ``p_review``, ``p_reject`` (all three), with
   optional ``risk`` (or ``risk_score``), ``detector_score``, ``detector_flagged``
   and ``degraded``;
3. neither: no policy can run. The proposal is then the file's ``proposed`` column
   if it has one, else ``pass`` for every event, the same for both sides — so a
   ``policy.yaml`` change cannot show, and the report says so.

Event time (river's ``simulate_qa`` idea): events in time order, in batches; before
each batch the outcomes that had *arrived* by then are fed to the feature store, so
delayed-label features (terminal risk) see what the live engine would have seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from engine.assemble import build_pipeline
from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import RuleContexts
from engine.features.store import LabelArrival
from engine.offline.simulate.frames import events_from_frame
from engine.pipeline import detect_events
from engine.records import Decision, OutcomeKind, TransactionEvent
from engine.rules.rule_metrics import RuleMetrics
from engine.settings import get_settings
from engine.stages.decide import ScoreRow
from engine.stages.guard import Guard

PROB_COLUMNS = ("p_pass", "p_review", "p_reject")
BATCH = 256


@dataclass(slots=True, frozen=True)
class FileDetection:
    """A detector result read from the data file (``engine.stages.decide.DetectorLike``)."""

    score: float
    flagged: bool
    reasons: tuple[Any, ...] = ()


@dataclass(slots=True, frozen=True)
class ReplayInput:
    """One event's inputs to policy and rules: the same for both rule sets."""

    event: TransactionEvent
    context: Mapping[str, float]
    row: ScoreRow | None  # the model's output; None: no model outputs, use ``proposed``
    detection: Any | None = None  # DetectorLike, or None when the event has no text / no detector
    degraded: bool = False
    twin: ScoreRow | None = None  # the text-blind row (``--model`` only, events with user text)
    proposed: Decision = Decision.PASS  # only without ``row``: the proposal both sides start from
    view: Mapping[str, Any] = field(default_factory=dict)  # only without ``row``: model.* for rules


@dataclass(slots=True, frozen=True)
class InputSource:
    """A generator factory over batches (``batches(arrivals)`` yields (start, inputs)),
    and how the report should describe it."""

    batches: Callable[[list[Any]], Iterator[tuple[int, list[ReplayInput]]]]
    model_source: str  # where the model's outputs come from
    proposal_source: str  # how each side's proposal is made
    policy_applied: bool  # False: the proposal does not depend on the policy


def read_events(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
    elif path.suffix in (".jsonl", ".json"):
        frame = pd.read_json(path, lines=True)
    else:
        raise ValueError(f"{path}: expected a .parquet or .jsonl file (as written by `tollgate simulate`)")
    return frame.sort_values("event_time_ms", kind="stable").reset_index(drop=True)


def read_arrivals(path: Path, frame: pd.DataFrame) -> list[Any]:
    """Label arrivals from the sibling outcomes file, in arrival order (empty if none)."""
    source = path.with_name(f"{path.stem}.outcomes{path.suffix}")
    if not source.exists():
        return []
    outcomes = pd.read_parquet(source) if source.suffix == ".parquet" else pd.read_json(source, lines=True)
    times = dict(zip(frame["event_id"].astype(str), frame["event_time_ms"].astype("int64")))
    terminals = dict(zip(frame["event_id"].astype(str), frame["terminal_id"].astype(str)))
    out = []
    for row in outcomes.sort_values("outcome_time_ms", kind="stable").itertuples(index=False):
        event_id = str(row.event_id)
        if event_id not in times:
            continue
        out.append(LabelArrival(event_id, terminals[event_id], int(times[event_id]), int(row.outcome_time_ms),
                                OutcomeKind(row.kind).is_bad))
    return out


def input_source(frame: pd.DataFrame, model_dir: Path | None, ruleset: Any) -> InputSource:
    """The inputs for ``frame``: scored by ``model_dir`` if given, else from its columns."""
    if model_dir is not None:
        return InputSource(_pipeline_batches(frame, model_dir, ruleset), f"model {model_dir}",
                           "each rule set's policy.yaml decides from the model's probabilities", True)
    present = [c for c in PROB_COLUMNS if c in frame.columns]
    if present and len(present) < len(PROB_COLUMNS):
        missing = ", ".join(c for c in PROB_COLUMNS if c not in present)
        raise ValueError(f"model probability columns need all of {', '.join(PROB_COLUMNS)}; missing {missing}")
    has_probs = bool(present)
    has_proposed = "proposed" in frame.columns
    if has_probs:
        how = "each rule set's policy.yaml decides from p_pass/p_review/p_reject"
        if has_proposed:
            how += " (the file's `proposed` column is ignored)"
        model_source = "model outputs from the data file (p_pass/p_review/p_reject)"
    elif has_proposed:
        how = "the data file's `proposed` column, for both sets (no probabilities: policy.yaml changes do not show)"
        model_source = "none (no p_pass/p_review/p_reject columns)"
    else:
        how = "pass for every event (no model outputs: policy.yaml changes do not show)"
        model_source = "none (no p_pass/p_review/p_reject columns)"
    return InputSource(_file_batches(frame, has_probs, has_proposed), model_source, how, has_probs)


def _batches(frame: pd.DataFrame) -> Iterator[tuple[int, list[TransactionEvent]]]:
    for start in range(0, len(frame), BATCH):
        yield start, events_from_frame(frame.iloc[start:start + BATCH])


def _feed(store: Any, arrivals: list[Any], cursor: int, until_ms: int) -> int:
    end = cursor
    while end < len(arrivals) and arrivals[end].arrival_time_ms <= until_ms:
        end += 1
    if end > cursor:
        store.record_outcomes(arrivals[cursor:end])
    return end


def _file_batches(frame: pd.DataFrame, has_probs: bool, has_proposed: bool):
    def gen(arrivals: list[Any]) -> Iterator[tuple[int, list[ReplayInput]]]:
        store, cursor = MemoryFeatureStore(), 0
        for start, events in _batches(frame):
            cursor = _feed(store, arrivals, cursor, events[0].event_time_ms)
            snapshots = store.enrich(events)
            rows = frame.iloc[start:start + len(events)].to_dict("records")
            yield start, [_from_row(start + i, event, snap.as_rule_inputs(), row, has_probs, has_proposed)
                          for i, (event, snap, row) in enumerate(zip(events, snapshots, rows))]

    return gen


def _from_row(index: int, event: TransactionEvent, context: Mapping[str, float], row: Mapping[str, Any],
              has_probs: bool, has_proposed: bool) -> ReplayInput:
    detection = None
    if _given(row.get("detector_score")) or _given(row.get("detector_flagged")):
        detection = FileDetection(float(_or(row.get("detector_score"), 0.0)),
                                  bool(_or(row.get("detector_flagged"), False)))
    risk = float(_or(row.get("risk"), _or(row.get("risk_score"), 0.0)))
    degraded = bool(_or(row.get("degraded"), False))
    if has_probs:
        probs = tuple(row[c] for c in PROB_COLUMNS)
        if not all(_given(p) for p in probs):
            raise ValueError(f"event {event.event_id} (row {index}): p_pass/p_review/p_reject missing")
        return ReplayInput(event, context, ScoreRow(tuple(float(p) for p in probs), risk),  # type: ignore[arg-type]
                           detection, degraded)
    proposed = Decision(str(row["proposed"])) if has_proposed and _given(row.get("proposed")) else Decision.PASS
    view: dict[str, Any] = {"risk": risk, "degraded": degraded}
    if detection is not None:
        view.update(detector_score=detection.score, detector_flagged=detection.flagged)
    return ReplayInput(event, context, None, detection, degraded, proposed=proposed, view=view)


def _given(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)  # not None, not NaN


def _or(value: Any, default: Any) -> Any:
    return value if _given(value) else default


def _pipeline_batches(frame: pd.DataFrame, model_dir: Path, ruleset: Any):
    """enrich → encode → infer → detect through the real pipeline; policy and rules are
    left to each side. The pipeline's guard is never called (``finish`` is not run)."""
    # local: a metrics registry only on this path
    from prometheus_client import CollectorRegistry

    def gen(arrivals: list[Any]) -> Iterator[tuple[int, list[ReplayInput]]]:
        store, cursor = MemoryFeatureStore(), 0
        unused_guard = Guard(ruleset, metrics=RuleMetrics(CollectorRegistry()))  # so nothing reads rules_dir
        pipeline = build_pipeline(get_settings(), model=model_dir, context=store, guard=unused_guard)
        for start, events in _batches(frame):
            cursor = _feed(store, arrivals, cursor, events[0].event_time_ms)
            scored = pipeline.score(pipeline.prepare(events))
            p, n = scored.prepared, len(events)
            detections = detect_events(p.components.detector, events)
            contexts = RuleContexts(p.snapshots)
            rows = scored.scores.rows()
            twins: dict[int, ScoreRow] = {}
            for i, row in zip(p.text_rows, rows[n:]):
                twins.setdefault(i, row)  # an event's first twin is the one without any user text
            yield start, [ReplayInput(e, ctx, row, det, p.degraded, twins.get(i))
                          for i, (e, ctx, row, det) in enumerate(zip(events, contexts, rows[:n], detections))]

    return gen
