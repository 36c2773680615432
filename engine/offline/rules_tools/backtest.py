"""``tollgate rules backtest``: replay history through the current and a proposed rule set.

A rule set is its rules *and* its policy (``policy.yaml``), so each side of the
comparison makes its own proposal: ``engine.stages.decide.decide`` on the event's model
outputs with that set's policy (``RuleSet.decision_policy``, built as the worker
builds it), then that set's rules. Both sides start from the same recorded inputs —
context, the model's probabilities, the detector's result (``engine.offline.rules_tools.replay``)
— so every difference in the report comes from the rules or the policy. A threshold
change in ``policy.yaml`` moves the migration matrix like a rule change does.

Without model probabilities (no ``--model``, no ``p_*`` columns) there is nothing
for a policy to decide from: both sides start from the file's ``proposed`` column
(or ``pass``), and the report's header says that policy changes cannot show.

Labels (``tx_fraud``, ``is_bad`` or ``label``) make it print fraud caught (bad events
not passed) and good customers hurt (good events not passed).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
from prometheus_client import CollectorRegistry

from engine.offline.rules_tools.replay import BATCH, ReplayInput, input_source, read_arrivals, read_events
from engine.records import DECISIONS, SEVERITY, Decision
from engine.rules.rule_metrics import RuleMetrics
from engine.rules.ruleset import RuleSet
from engine.stages.decide import Policy, decide
from engine.stages.guard import Guard, ProposedVerdict

__all__ = ["BATCH", "BacktestReport", "SideStats", "format_report", "read_arrivals", "read_events", "run_backtest"]

LABEL_COLUMNS = ("tx_fraud", "is_bad", "label")
_MOST_SEVERE = max(SEVERITY.values())
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
    proposal_source: str = ""  # how each side's proposal was made
    policy_applied: bool = True  # False: no model probabilities, the policies could not act
    current_policy: dict[str, Any] = field(default_factory=dict)
    proposed_policy: dict[str, Any] = field(default_factory=dict)
    model_proposed: SideStats | None = None  # the proposed policy without rules

    @property
    def policy_changed(self) -> bool:
        return self.current_policy != self.proposed_policy

    @property
    def baselines(self) -> tuple[SideStats, ...]:
        """The policy-only verdicts: the current policy's, and the proposed one's if it
        differs and could act (with model probabilities)."""
        shown = self.policy_changed and self.policy_applied and self.model_proposed is not None
        extra = (self.model_proposed,) if shown else ()
        return (self.model_only, *extra)


class _Judge:
    """One side of the comparison: a rule set's policy, then its rules."""

    def __init__(self, ruleset: RuleSet, policy: Policy):
        self.policy = policy
        self.guard = Guard(ruleset, metrics=RuleMetrics(CollectorRegistry()))  # keep out of live metrics

    def judge(self, item: ReplayInput) -> tuple[Decision, Any]:
        """(the proposal's verdict, the guarded decision) for one event."""
        if item.row is None:
            proposal: Any = ProposedVerdict(item.proposed)
            return proposal.verdict, self.guard.apply(item.event, item.context, item.view, proposal)
        proposal = decide(item.row, item.detection, self.policy, item.degraded)
        guarded = self.guard.apply(item.event, item.context, proposal.model_view(), proposal)
        if item.twin is not None and SEVERITY[guarded.verdict] < _MOST_SEVERE:
            # engine.pipeline: user text may only add suspicion; the text-free twin (the
            # event without text: no detector result) decides when it ends more severe.
            # The pipeline also counts the twins with part of the text; this replay has
            # only the text-free one's row.
            blind = decide(item.twin, None, self.policy, item.degraded)
            text_free = replace(item.event, memo=None, merchant_descriptor=None)
            blind_guarded = self.guard.apply(text_free, item.context, blind.model_view(), blind)
            if SEVERITY[blind_guarded.verdict] > SEVERITY[guarded.verdict]:
                return blind.verdict, blind_guarded
        return proposal.verdict, guarded


def run_backtest(data: Path, current: RuleSet, proposed: RuleSet, *, model_dir: Path | None = None,
                 limit: int | None = None, progress: bool = True, base_policy: Any = None) -> BacktestReport:
    """Replay ``data`` through both sets. ``base_policy`` (default: the settings' policy)
    is what each set's ``policy.yaml`` overrides, as in the worker."""
    frame = read_events(data)
    if limit is not None:
        frame = frame.head(limit)
    arrivals = read_arrivals(data, frame)
    labels = _labels(frame)
    policies = (current.decision_policy(base_policy), proposed.decision_policy(base_policy))
    judges = (_Judge(current, policies[0]), _Judge(proposed, policies[1]))
    sides = (SideStats("current"), SideStats("proposed"), SideStats("model"), SideStats("model-proposed"))
    migration: Counter = Counter()
    source = input_source(frame, model_dir, current)
    bar = _progress(len(frame), progress)
    for start, batch in source.batches(arrivals):
        for i, item in enumerate(batch):
            label = labels[start + i] if labels is not None else None
            (pa, a), (pb, b) = (j.judge(item) for j in judges)
            sides[0].add(a.verdict, a.fired, a.shadow, label)
            sides[1].add(b.verdict, b.fired, b.shadow, label)
            sides[2].add(pa, (), (), label)
            sides[3].add(pb, (), (), label)
            migration[(a.verdict.value, b.verdict.value)] += 1
        bar.update(len(batch))
    bar.close()
    return BacktestReport(
        events=len(frame), labelled=0 if labels is None else len(labels),
        bad=0 if labels is None else int(sum(labels)), model_source=source.model_source,
        current=sides[0], proposed=sides[1], model_only=sides[2], migration=migration,
        current_version=current.version, proposed_version=proposed.version,
        current_rules={r.id: (r.mode, r.action) for r in current.rules},
        proposed_rules={r.id: (r.mode, r.action) for r in proposed.rules},
        proposal_source=source.proposal_source, policy_applied=source.policy_applied,
        current_policy=_policy_dict(policies[0]), proposed_policy=_policy_dict(policies[1]),
        model_proposed=sides[3],
    )


def _policy_dict(policy: Policy) -> dict[str, Any]:
    return {**asdict(policy), "detector_floor": policy.detector_floor.value}


def _labels(frame: pd.DataFrame) -> list[int] | None:
    for column in LABEL_COLUMNS:
        if column in frame.columns:
            return [int(bool(v)) for v in frame[column].fillna(0).tolist()]
    return None


def _progress(total: int, enabled: bool) -> Any:
    # local: progress bars only on this path
    from tqdm import tqdm

    return tqdm(total=total, unit="ev", desc="backtest", file=sys.stderr, disable=not enabled)


def format_report(r: BacktestReport) -> str:
    lines = [f"events: {r.events}   model outputs: {r.model_source}",
             f"proposals: {r.proposal_source}",
             f"current rules: {r.current_version}   proposed rules: {r.proposed_version}",
             "current policy:  " + _fmt_policy(r.current_policy)]
    if r.policy_changed:
        changed = [k for k in r.proposed_policy if r.proposed_policy[k] != r.current_policy.get(k)]
        note = "" if r.policy_applied else "   (not applied: no model probabilities)"
        lines.append("proposed policy: " + _fmt_policy(r.proposed_policy) + f"   changed: {', '.join(changed)}{note}")
    else:
        lines.append("proposed policy: the same")
    lines.append("")
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
        f"{s.name} " + "/".join(str(s.verdicts[d.value]) for d in DECISIONS) for s in (*r.baselines, r.current, r.proposed))
        + "  (pass/review/reject)"]
    if r.labelled:
        good = r.labelled - r.bad
        lines += ["", f"labels: {r.bad} bad of {r.labelled}",
                  f"{'':<15}{'fraud caught':>22}{'fraud rejected':>18}{'good hurt':>22}{'good rejected':>18}"]
        for s in (*r.baselines, r.current, r.proposed):
            lines.append(f"{s.name:<15}{s.bad_not_passed:>10} ({_pct(s.bad_not_passed, r.bad)})"
                         f"{s.bad_rejected:>18}{s.good_not_passed:>10} ({_pct(s.good_not_passed, good)})"
                         f"{s.good_rejected:>18}")
    return "\n".join(lines)


def _fmt_policy(policy: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in policy.items())


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:6.2f}%" if d else "   n/a"
