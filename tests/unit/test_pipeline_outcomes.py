"""Delayed outcomes in the file replay (``score_file(outcomes=...)``, ``tollgate score
--outcomes``) and the Python API (``decide(outcomes=...)``, ``add_outcomes``): the real
in-memory feature store, fed by ``engine.interfaces.outcome_feed``, must give every event the
context of the definition — an outcome counts from its own time on — which is what the
stream's feedback worker gives the Redis state. The model stages are small fakes (the
features are what is under test); a guard that rejects on terminal risk carries the
difference into the verdicts."""

from __future__ import annotations

import heapq

import pandas as pd
import pytest

from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import DAY_MS, IDLE_STATE_TTL_MS
from engine.features.store import LabelArrival
from engine.interfaces.api import TollgateModel
from engine.interfaces.file_scoring import score_file
from engine.interfaces.outcome_feed import OutcomeFeed
from engine.pipeline import Components, DecisionPipeline
from engine.records import Decision, Outcome, OutcomeKind, Reason, ReasonKind, TransactionEvent
from engine.settings import Settings
from engine.stages.decide import Policy, PolicyDecision
from tests.unit.test_pipeline import Encoded, FakeDetector, FakeInference, Unavailable, guarded


class _AmountEncoder:
    def encode(self, events, snapshots):
        return Encoded([e.amount for e in events], [0] * len(events))


class _RiskGuard:
    """Rejects at a terminal with a known bad outcome in the last day."""

    version = "rules-risk"

    def apply(self, event, context_inputs, model_view, proposed: PolicyDecision):
        if context_inputs.get("terminal_risk_1d", 0.0) > 0.0:
            return guarded(Decision.REJECT, proposed.reasons + (Reason(ReasonKind.RULE, "risky_terminal", "risk"),),
                           proposed, self.version)
        return guarded(proposed.verdict, proposed.reasons, proposed, self.version)

    def apply_batch(self, events, contexts, views, proposals):
        return [self.apply(e, c, v, p) for e, c, v, p in zip(events, contexts, views, proposals, strict=True)]


def pipeline() -> DecisionPipeline:
    store = MemoryFeatureStore(snapshot_retention_ms=365 * DAY_MS, forget_idle_after_ms=IDLE_STATE_TTL_MS)
    comps = Components(store=store, encoder=_AmountEncoder(), inference=FakeInference(), detector=FakeDetector(),
                       guard=_RiskGuard(), policy=Policy(), model_version="m-outcomes",
                       empty_context=lambda e: ContextSnapshot.empty(e))
    return DecisionPipeline(comps, context_unavailable=(Unavailable,))


@pytest.fixture(scope="module")
def world() -> tuple[list[TransactionEvent], list[Outcome]]:
    """Eight simulated days with outcomes 0.2-4 days late, plus two corrections, an
    outcome for an event that is not in the file, and outcomes out of time order."""
    from engine.offline.simulate.frames import events_from_frame, outcomes_from_frame
    from engine.offline.simulate.simulator import SimConfig, Simulator

    cfg = SimConfig(customers=150, terminals=60, days=8, seed=3, outcome_delay_mean_days=1.5,
                    outcome_delay_min_days=0.2, outcome_delay_max_days=4.0, drain_outcomes=False)
    events, outcomes = [], []
    for day in Simulator(cfg).days():
        events.extend(events_from_frame(day.events))
        outcomes.extend(outcomes_from_frame(day.outcomes))
    bad = [o for o in outcomes if o.kind.is_bad]
    corrections = [Outcome(o.event_id, OutcomeKind.CONFIRMED_LEGITIMATE, o.outcome_time_ms + DAY_MS // 2, "desk")
                   for o in bad[:2]]
    stray = Outcome("not-in-the-file", OutcomeKind.CHARGEBACK, events[50].event_time_ms, "issuer")
    return events, list(reversed(outcomes + corrections)) + [stray]


def reference(events: list[TransactionEvent], outcomes: list[Outcome]) -> list[ContextSnapshot]:
    """The definition, one event at a time: before each event, record every outcome whose
    time is at or before it (joined to its event's terminal), oldest first."""
    store = MemoryFeatureStore(snapshot_retention_ms=365 * DAY_MS)
    by_event: dict[str, list[tuple[int, int, Outcome]]] = {}
    for order, o in enumerate(outcomes):
        by_event.setdefault(o.event_id, []).append((o.outcome_time_ms, order, o))
    due: list[tuple[int, int, LabelArrival]] = []
    out = []
    for e in events:
        for when, order, o in by_event.pop(e.event_id, ()):
            heapq.heappush(due, (when, order, LabelArrival(e.event_id, e.terminal_id, e.event_time_ms, when,
                                                           o.kind.is_bad)))
        while due and due[0][0] <= e.event_time_ms:
            store.record_outcomes([heapq.heappop(due)[2]])
        out.extend(store.enrich([e]))
    return out


def test_file_replay_with_outcomes_gives_every_event_the_streams_terminal_risk(tmp_path, world):
    from engine.offline.simulate.frames import frame_from_events

    events, outcomes = world
    src, out, outcomes_path = tmp_path / "events.parquet", tmp_path / "verdicts.jsonl", tmp_path / "outcomes.jsonl"
    frame_from_events(events).to_parquet(src)
    rows = [o.to_dict() for o in outcomes] + [{"event_id": "x", "kind": "no-such-kind", "outcome_time_ms": 1}]
    pd.DataFrame(rows).to_json(outcomes_path, orient="records", lines=True)

    pipe = pipeline()
    feed = OutcomeFeed.from_file(outcomes_path, pipe.components.store)
    summary = score_file(pipe, src, out, chunk_rows=300, batch_size=128, progress=False, outcomes=feed)
    expected = reference(events, outcomes)
    got = pipe.components.store.decision_log([e.event_id for e in events])
    assert got == expected
    # not vacuous: many events saw outcomes, and the guard turned some into rejects
    assert sum(s.terminal_labelled_7d > 0 for s in expected) > len(events) / 10
    risky = {s.event_id for s in expected if s.terminal_risk_1d > 0}
    assert risky and summary.verdicts["reject"] >= len(risky)
    assert (feed.unmatched, feed.invalid) == (1, 1) and feed.applied + feed.not_yet_due == len(outcomes) - 1
    assert "outcomes fed to the context" in summary.describe() and "1 for events not scored" in summary.describe()

    without = pipeline()
    score_file(without, src, tmp_path / "plain.jsonl", chunk_rows=300, batch_size=128, progress=False)
    plain = without.components.store.decision_log([e.event_id for e in events])
    assert all(s.terminal_labelled_30d == 0 for s in plain) and plain != expected


def test_api_feeds_outcomes_given_before_or_after_their_events(world):
    events, outcomes = world
    expected = reference(events, outcomes)

    model = TollgateModel(pipeline(), Settings(), "memory")
    first = model.decide(events[:400], batch_size=64, outcomes=pd.DataFrame([o.to_dict() for o in outcomes]))
    rest = model.decide(events[400:], batch_size=64)
    assert model.pipeline.components.store.decision_log([e.event_id for e in events]) == expected
    assert [v.verdict for v in first + rest].count(Decision.REJECT) >= sum(s.terminal_risk_1d > 0 for s in expected)

    # Outcomes handed over only after their events were scored are joined through the
    # decision log and count from then on: every event scored afterwards sees them.
    late = TollgateModel(pipeline(), Settings(), "memory")
    cut = 500
    late.decide(events[:cut], batch_size=64)
    feed = late.add_outcomes(outcomes)
    assert feed.unmatched == 1 + sum(o.event_id in {e.event_id for e in events[cut:]} for o in outcomes)
    late.decide(events[cut:], batch_size=64)
    store = late.pipeline.components.store
    assert store.decision_log([e.event_id for e in events[cut:]]) == expected[cut:]

    with pytest.raises(RuntimeError, match="feedback worker"):
        TollgateModel(pipeline(), Settings(), "redis").add_outcomes(outcomes[:1])
    late.reset_context()
    assert late.decide(events[cut]).verdict is not None and late._outcomes is None


def test_cli_takes_an_outcomes_file(tmp_path, world):
    """`tollgate score --outcomes` end to end with a real (untrained) model: the outcomes
    reach the context (the summary counts them) and the verdicts are written."""
    from typer.testing import CliRunner

    from engine.interfaces import cli
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.offline.simulate.frames import frame_from_events
    from engine.stages.encode import FieldIsolatedEncoder

    events, outcomes = world
    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="t-outcomes", seed=1)
    model_dir = save_model_dir(model, card, tmp_path / "t-outcomes")
    (tmp_path / "rules").mkdir()
    src, out, outcomes_path = tmp_path / "events.parquet", tmp_path / "verdicts.csv", tmp_path / "outcomes.parquet"
    frame_from_events(events[:400]).to_parquet(src)
    pd.DataFrame([o.to_dict() for o in outcomes]).to_parquet(outcomes_path)
    cli._register_all()
    args = ["score", str(src), "-o", str(out), "--model", str(model_dir), "--rules", str(tmp_path / "rules"), "-q"]
    result = CliRunner().invoke(cli.app, [*args, "--outcomes", str(outcomes_path)])
    assert result.exit_code == 0, result.output
    applied = sum(1 for o in outcomes if o.event_id in {e.event_id for e in events[:400]}
                  and o.outcome_time_ms <= events[399].event_time_ms)
    assert applied > 5 and f"{applied} outcomes fed to the context" in result.output
    assert len(pd.read_csv(out)) == 400
    refused = CliRunner().invoke(cli.app, [*args, "--outcomes", str(outcomes_path), "--redis"])
    assert refused.exit_code != 0 and "feedback worker" in refused.output
