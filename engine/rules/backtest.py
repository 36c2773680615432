"""``tollgate rules backtest``: replay history through the current and a proposed rule set.

The replay follows the stream in event time (river's ``simulate_qa`` idea): events in
time order, in batches; before each batch, the outcomes that had *arrived* by then are
fed to the feature store, so delayed-label features (terminal risk) see exactly what
the live engine would have seen. For every event, both rule sets judge the same
inputs — context, model outputs, the policy's proposal — so every difference in the
report is caused by the rules alone.

Where model outputs come from, in order of preference:

1. ``--model DIR``: the real pipeline (encoder → model → detector → policy) scores
   each batch; a recording guard captures its inputs to the rules;
2. columns in the data file: ``p_pass``, ``p_review``, ``p_reject``, ``risk`` (or
   ``risk_score``), ``detector_score``, ``detector_flagged``, ``proposed``;
3. neither: the proposal is ``pass`` for every event (rules only), and the report says so.

Labels (``tx_fraud``, ``is_bad`` or ``label``) make it print fraud caught (bad events
not passed) and good customers hurt (good events not passed).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from prometheus_client import CollectorRegistry

from engine.records import DECISIONS, Decision, TransactionEvent
from engine.rules.metrics import RuleMetrics
from engine.rules.ruleset import RuleSet

LABEL_COLUMNS = ("tx_fraud", "is_bad", "label")
BATCH = 256


@dataclass(slots=True)
class SideStats:
    """Everything counted for one rule set (or the model alone)."""

    name: str
    hits: Counter = field(default_factory=Counter)
    verdicts: Counter = field(default_factory=Counter)
    bad_not_passed: int = 0
    bad_rejected: int = 0
    good_not_passed: int = 0
    good_rejected: int = 0

    def add(self, verdict: Decision, fired: Sequence[str], shadow: Sequence[str], label: int | None) -> None:
        self.verdicts[verdict.value] += 1
        for rule in fired:
            self.hits[rule] += 1
        for rule in shadow:
            self.hits[rule] += 1
        if label is None:
            return
        if label:
            self.bad_not_passed += verdict is not Decision.PASS
            self.bad_rejected += verdict is Decision.REJECT
        else:
            self.good_not_passed += verdict is not Decision.PASS
            self.good_rejected += verdict is Decision.REJECT


@dataclass(slots=True)
class BacktestReport:
    events: int
    labelled: int
    bad: int
    model_source: str
    current: SideStats
    proposed: SideStats
    model_only: SideStats
    migration: Counter  # (current verdict, proposed verdict) -> count
    current_version: str
    proposed_version: str
    current_rules: dict[str, tuple[str, str]]  # id -> (mode, action)
    proposed_rules: dict[str, tuple[str, str]]


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
    from engine.features.store import LabelArrival
    from engine.records import OutcomeKind

    candidates = [path.with_name(f"{path.stem}.outcomes{path.suffix}")]
    source = next((p for p in candidates if p.exists()), None)
    if source is None:
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


def run_backtest(data: Path, current: RuleSet, proposed: RuleSet, *, model_dir: Path | None = None,
                 limit: int | None = None, progress: bool = True) -> BacktestReport:
    from engine.guard import Guard

    frame = read_events(data)
    if limit is not None:
        frame = frame.head(limit)
    arrivals = read_arrivals(data, frame)
    labels = _labels(frame)
    registry = CollectorRegistry()  # keep backtest hits out of any live metrics
    guards = (Guard(current, metrics=RuleMetrics(registry)), Guard(proposed, metrics=RuleMetrics(CollectorRegistry())))
    sides = (SideStats("current"), SideStats("proposed"), SideStats("model"))
    migration: Counter = Counter()
    inputs, model_source = _input_source(frame, model_dir, current)
    bar = _progress(len(frame), progress)
    for start, batch in inputs(arrivals):
        for i, (event, ctx, view, proposal) in enumerate(batch):
            label = labels[start + i] if labels is not None else None
            a, b = (g.apply(event, ctx, view, proposal) for g in guards)
            sides[0].add(a.verdict, a.fired, a.shadow, label)
            sides[1].add(b.verdict, b.fired, b.shadow, label)
            sides[2].add(proposal.verdict, (), (), label)
            migration[(a.verdict.value, b.verdict.value)] += 1
        bar.update(len(batch))
    bar.close()
    return BacktestReport(
        events=len(frame), labelled=0 if labels is None else len(labels),
        bad=0 if labels is None else int(sum(labels)), model_source=model_source,
        current=sides[0], proposed=sides[1], model_only=sides[2], migration=migration,
        current_version=current.version, proposed_version=proposed.version,
        current_rules={r.id: (r.mode, r.action) for r in current.rules},
        proposed_rules={r.id: (r.mode, r.action) for r in proposed.rules},
    )


def _labels(frame: pd.DataFrame) -> list[int] | None:
    for column in LABEL_COLUMNS:
        if column in frame.columns:
            return [int(bool(v)) for v in frame[column].fillna(0).tolist()]
    return None


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="ev", desc="backtest", file=sys.stderr, disable=not enabled)


def _batches(frame: pd.DataFrame) -> Iterator[tuple[int, list[TransactionEvent]]]:
    from engine.simulate_frames import events_from_frame

    for start in range(0, len(frame), BATCH):
        yield start, events_from_frame(frame.iloc[start:start + BATCH])


def _feed(store: Any, arrivals: list[Any], cursor: int, until_ms: int) -> int:
    end = cursor
    while end < len(arrivals) and arrivals[end].arrival_time_ms <= until_ms:
        end += 1
    if end > cursor:
        store.record_outcomes(arrivals[cursor:end])
    return end


def _input_source(frame: pd.DataFrame, model_dir: Path | None, current: RuleSet):
    """A generator factory of (start, [(event, ctx, model_view, proposal)]) and its description."""
    from engine.features.memory import MemoryFeatureStore
    from engine.guard import ProposedVerdict

    if model_dir is not None:
        return _pipeline_inputs(frame, model_dir, current), f"model {model_dir}"
    has_model = {"p_pass", "p_review", "p_reject"} <= set(frame.columns)

    def gen(arrivals: list[Any]):
        store, cursor = MemoryFeatureStore(), 0
        for start, events in _batches(frame):
            cursor = _feed(store, arrivals, cursor, events[0].event_time_ms)
            snapshots = store.enrich(events)
            rows = frame.iloc[start:start + len(events)]
            out = []
            for event, snap, row in zip(events, snapshots, rows.to_dict("records")):
                view = _view_from_row(row) if has_model else {}
                proposal = ProposedVerdict(Decision(str(row.get("proposed") or "pass")) if has_model
                                           else Decision.PASS)
                out.append((event, snap.as_rule_inputs(), view, proposal))
            yield start, out

    return gen, "model outputs from the data file" if has_model else "none (proposal = pass for every event)"


def _view_from_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "p_pass": float(row["p_pass"]), "p_review": float(row["p_review"]), "p_reject": float(row["p_reject"]),
        "risk": float(row.get("risk", row.get("risk_score", 0.0)) or 0.0),
        "detector_score": float(row.get("detector_score") or 0.0),
        "detector_flagged": bool(row.get("detector_flagged") or False),
    }


class _RecordingGuard:
    """Stands in for the guard inside the real pipeline and records what it was given."""

    def __init__(self, ruleset: RuleSet):
        self.version, self.policy = ruleset.version, dict(ruleset.policy)
        self.seen: list[tuple[Any, Any, Any, Any]] = []

    def apply_batch(self, events, contexts, views, proposals):  # noqa: ANN001 - pipeline's contract
        from engine.guard import GuardedDecision

        self.seen.extend(zip(events, contexts, views, proposals))
        return [GuardedDecision(p.verdict, tuple(p.reasons), self.version, p.verdict) for p in proposals]


def _pipeline_inputs(frame: pd.DataFrame, model_dir: Path, current: RuleSet):
    from engine.assemble import build_pipeline
    from engine.features.memory import MemoryFeatureStore
    from engine.settings import get_settings

    def gen(arrivals: list[Any]):
        store, recorder, cursor = MemoryFeatureStore(), _RecordingGuard(current), 0
        pipeline = build_pipeline(get_settings(), model=model_dir, context=store, guard=recorder)
        for start, events in _batches(frame):
            cursor = _feed(store, arrivals, cursor, events[0].event_time_ms)
            recorder.seen.clear()
            pipeline.decide_batch(events)
            # The pipeline guards the batch as sent first (one entry per event, in order),
            # then again the text-blind variants of events with user text (engine/pipeline.py);
            # the backtest replays rules on the first, the model's view of each event as sent.
            yield start, list(recorder.seen)[:len(events)]

    return gen


def format_report(r: BacktestReport) -> str:
    lines = [f"events: {r.events}   model outputs: {r.model_source}",
             f"current rules: {r.current_version}   proposed rules: {r.proposed_version}", ""]
    ids = list(dict.fromkeys([*r.current_rules, *r.proposed_rules]))
    width = max([len(i) for i in ids] + [4])
    lines.append(f"{'rule':<{width}}  {'mode':<7} {'action':<10} {'current':>16}  {'proposed':>16}")
    for rule_id in ids:
        mode, action = r.proposed_rules.get(rule_id) or r.current_rules[rule_id]
        cells = []
        for side, rules in ((r.current, r.current_rules), (r.proposed, r.proposed_rules)):
            hits = side.hits[rule_id]
            cells.append(f"{hits:>7} {100 * hits / max(r.events, 1):>7.3f}%" if rule_id in rules else f"{'-':>16}")
        lines.append(f"{rule_id:<{width}}  {mode:<7} {action:<10} {cells[0]}  {cells[1]}")
    lines += ["", "verdict migration (rows: current, columns: proposed)",
              f"{'':>10}" + "".join(f"{d.value:>10}" for d in DECISIONS)]
    for a in DECISIONS:
        lines.append(f"{a.value:>10}" + "".join(f"{r.migration[(a.value, b.value)]:>10}" for b in DECISIONS))
    lines += ["", "verdicts: " + "   ".join(
        f"{s.name} " + "/".join(str(s.verdicts[d.value]) for d in DECISIONS) for s in (r.model_only, r.current, r.proposed))
        + "  (pass/review/reject)"]
    if r.labelled:
        good = r.labelled - r.bad
        lines += ["", f"labels: {r.bad} bad of {r.labelled}",
                  f"{'':<10}{'fraud caught':>22}{'fraud rejected':>18}{'good hurt':>22}{'good rejected':>18}"]
        for s in (r.model_only, r.current, r.proposed):
            lines.append(f"{s.name:<10}{s.bad_not_passed:>10} ({_pct(s.bad_not_passed, r.bad)})"
                         f"{s.bad_rejected:>18}{s.good_not_passed:>10} ({_pct(s.good_not_passed, good)})"
                         f"{s.good_rejected:>18}")
    return "\n".join(lines)


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:6.2f}%" if d else "   n/a"
