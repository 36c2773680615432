"""``DecisionPipeline``: enrich → encode → infer → detect → decide → guard, for one batch.

This is the *single* code path from events to verdicts. The Kafka worker, the Python
API (``engine.interfaces.api``), the HTTP service (``engine.interfaces.http``) and the batch CLI
(``engine.interfaces.file_scoring``) all call ``decide_batch``; none of them re-implements a stage, so
for the same events and the same context they give the same verdict, verdict for
verdict (``tests/integration/test_interfaces_agree.py`` holds them to it).

Why a batch and not one event: one forward pass and one Redis round trip per batch
amortise their fixed cost; the callers choose the batch (worker: B events or W ms;
HTTP: micro-batched across connections; CLI: file chunks).

``decide_batch`` is three phases, public so that the Kafka worker can overlap them
across batches (``engine.worker.loop``): ``prepare`` (enrich → encode; batches are prepared
one at a time, in arrival order, because enrich reads *and records* context),
``score`` (infer: no shared state, so it may run on another thread while the next
batch is prepared — PyTorch releases the GIL) and ``finish`` (detect → decide → guard
→ verdicts). ``decide_batch`` runs them back to back.

The stages are held in one immutable ``Components`` record. ``swap`` replaces it in a
single reference assignment, and every batch reads the reference once at its start
(``prepare``) and carries it through ``score`` and ``finish``, so a model or rule
hot-swap (promotion, rollback, rule reload) lands *between* batches: no batch is ever
half old model, half new.

When the feature store raises ``ContextUnavailable`` the batch is scored on empty
context snapshots and the policy runs in degraded mode (see ``engine.stages.decide``).

**Untrusted text may only add suspicion** (docs/field-isolation.md). For every event,
the verdict's severity and the risk score are at least those of the same event without
its user text. Every event that carries text has *text-free twins*: the same event with
each proper subset of its text fields removed (memo and descriptor: three twins). Twins
are real events, encoded, screened and ruled on exactly as if they had been sent that
way, and scored in the same forward pass as the batch (a model that reads no text gives
a twin its event's outputs without scoring it again, ``Components.model_reads_text``:
the twin's inputs to it are the event's). The most severe final verdict
over an event and its twins wins, and the risk score is their maximum; the reason
``user_text_cannot_lower`` says when a twin raised either. (A row already rejected with
its text cannot be made more severe, so its twins skip detect, policy and rules.) With
the detector, which only escalates, adding text to an event can never move it towards
pass (``tests/unit/test_user_text_cannot_lower.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from engine.features.snapshot import RuleContexts
from engine.features.store import ContextUnavailable, FeatureStore
from engine.records import SEVERITY, Decision, Reason, TransactionEvent, VerdictBatch
from engine.stages.contracts import Detector, Encoder, RuleGuard, Scorer
from engine.stages.decide import Policy, PolicyBatch, PolicyDecision, ScoreColumns, decide_columns
from engine.stages.detect import DetectorResult, event_input_reasons
from engine.stages.enrich import EnrichStage
from engine.text_twins import text_cannot_lower, text_twins

if TYPE_CHECKING:  # tensor records: the pipeline module itself needs no torch (engine.stages.contracts)
    from engine.features.snapshot import ContextSnapshot
    from engine.stages.encode import ArrayBatch, EncodedBatch

__all__ = ["STAGES", "BatchTimings", "Components", "DecisionPipeline", "GuardOutcome", "PreparedBatch",
           "ScoredBatch", "detect_events", "guard_batch"]

#: Stage names, in order, as they appear in ``BatchTimings`` and the metrics.
STAGES: tuple[str, ...] = ("enrich", "encode", "infer", "detect", "decide", "guard")
_MOST_SEVERE = max(SEVERITY.values())


@dataclass(slots=True, frozen=True)
class Components:
    """Everything one batch needs. Immutable: swapping means building a new one."""

    store: FeatureStore
    encoder: Encoder
    inference: Scorer
    detector: Detector | None  # None: no text screening
    guard: RuleGuard | None  # None: no hard rules
    policy: Policy
    model_version: str
    #: Builds an empty context for one event (degraded mode); None: degraded mode impossible.
    empty_context: Callable[[TransactionEvent], ContextSnapshot] | None = None
    #: Whether the model reads user text (its card's ``read_text``). When it does not, an
    #: event's text-free twins have the event's own model inputs, so they are not encoded
    #: or scored again: they take the event's outputs. (Scored apart, they differed from
    #: the event's only by the float rounding of another batch make-up, enough to put a
    #: false ``user_text_cannot_lower`` on some verdicts.) True is always safe, only
    #: dearer: every card payment carries a merchant descriptor, so most events have a twin.
    model_reads_text: bool = True


@dataclass(slots=True)
class BatchTimings:
    """Wall time of each stage for one batch, in milliseconds, plus what happened."""

    size: int = 0
    degraded: bool = False
    stage_ms: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @property
    def total_ms(self) -> float:
        return sum(self.stage_ms.values())


@dataclass(slots=True)
class PreparedBatch:
    """A batch after enrich and encode, with the components it started with (so a swap
    never splits it). Rows ``0..n-1`` of ``encoded`` are the events as sent; the rows
    after them are ``twins``, the text-free twins of the events ``text_rows`` names
    (one entry per twin, so an event with two text fields is named three times)."""

    components: Components
    events: list[TransactionEvent]
    arrival_ms: list[float] | None
    start_wall_ms: float
    snapshots: list[ContextSnapshot]
    degraded: bool
    encoded: EncodedBatch | ArrayBatch | None  # None only for an empty batch
    text_rows: list[int]
    timings: BatchTimings
    twins: list[TransactionEvent] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.events)


@dataclass(slots=True)
class ScoredBatch:
    """A prepared batch and the model's outputs as columns, one row per encoded row
    (events, then twins)."""

    prepared: PreparedBatch
    scores: ScoreColumns


class DecisionPipeline:
    """Chains the stages for a batch. Thread-safe: batches are *prepared* one at a time,
    because enrich both reads and records context and must see events in arrival order;
    ``decide_batch`` holds the same lock for its whole batch."""

    def __init__(self, components: Components,
                 on_batch: Callable[[BatchTimings], None] | None = None,
                 context_unavailable: tuple[type[BaseException], ...] | None = None,
                 base_policy: Policy | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self._components = components
        #: Seconds, monotonic: what the stage timings are read from (a test injects its own).
        self._clock = clock
        #: What a rule set's ``policy:`` overrides apply to (settings.policy); see ``swap``.
        self.base_policy = base_policy or Policy()
        self._lock = threading.RLock()
        #: Called after every batch with its timings (the worker and serve feed Prometheus with it).
        self.on_batch = on_batch
        self.last_timings = BatchTimings()
        self._unavailable = context_unavailable if context_unavailable is not None else (ContextUnavailable,)

    # -- configuration --------------------------------------------------------------
    @property
    def components(self) -> Components:
        return self._components

    @property
    def model_version(self) -> str:
        return self._components.model_version

    @property
    def rules_version(self) -> str:
        guard = self._components.guard
        return guard.version if guard is not None else "none"

    @property
    def policy(self) -> Policy:
        return self._components.policy

    def swap(self, **changes: Any) -> Components:
        """Atomically replace some components (``inference=..., model_version=...`` on a
        promotion; ``guard=..., policy=...`` on a rule reload). Waits for a running
        ``decide_batch`` or ``prepare`` to finish; batches already prepared keep the
        components they started with, so every batch sees all changes or none. Returns
        the old set.

        ``policy`` may be a ``Policy`` or a rule set's overrides mapping
        (``Guard.policy``), which is applied over ``base_policy`` — so removing a key from
        ``policy.yaml`` restores the settings' value rather than keeping the old one."""
        unknown = set(changes) - set(Components.__slots__)
        if unknown:
            raise TypeError(f"unknown pipeline component(s): {', '.join(sorted(unknown))}")
        if "policy" in changes and not isinstance(changes["policy"], Policy):
            changes["policy"] = self.base_policy.with_overrides(dict(changes["policy"] or {}))
        with self._lock:
            old = self._components
            self._components = replace(old, **changes)
        return old

    # -- the hot path -----------------------------------------------------------------
    def decide_batch(self, events: Sequence[TransactionEvent],
                     arrival_ms: Sequence[float] | None = None) -> VerdictBatch:
        """Verdicts for ``events``, in the same order (``finish``'s ``VerdictBatch``).

        ``arrival_ms``: when each event reached the caller, in epoch milliseconds
        (``time.time() * 1000``); a verdict's ``decision_latency_ms`` is measured from
        it. Without it, latency is measured from the start of this call.
        """
        if not events:
            return VerdictBatch.of(())
        with self._lock:
            return self.finish(self.score(self.prepare(events, arrival_ms)))

    def prepare(self, events: Sequence[TransactionEvent],
                arrival_ms: Sequence[float] | None = None) -> PreparedBatch:
        """enrich → encode (with the text-blind twins). Records the events' context, so
        call it in arrival order; the batch then needs ``score`` and ``finish``."""
        if arrival_ms is not None and len(arrival_ms) != len(events):
            raise ValueError(f"{len(arrival_ms)} arrival times for {len(events)} events")
        start_wall_ms = time.time() * 1000.0
        events = list(events)
        timings = BatchTimings(size=len(events))
        clock = _StageClock(timings, self._clock)
        with self._lock:
            c = self._components  # read once: a swap lands between batches, never inside one
            if not events:
                return PreparedBatch(c, [], None, start_wall_ms, [], False, None, [], timings)
            with clock("enrich"):
                enriched = EnrichStage(c.store, c.empty_context, self._unavailable)(events)
            snapshots, degraded = enriched.snapshots, enriched.degraded
            timings.degraded = degraded
            with clock("encode"):
                encoded, text_rows, twins = _encode(c, events, snapshots)
        return PreparedBatch(c, events, None if arrival_ms is None else [float(a) for a in arrival_ms],
                             start_wall_ms, snapshots, degraded, encoded, text_rows, timings, twins)

    def score(self, prepared: PreparedBatch) -> ScoredBatch:
        """infer: the model on every row of the batch in one call. Reads nothing that
        ``prepare`` or ``finish`` of another batch writes, so it may run concurrently
        with them."""
        if prepared.encoded is None:
            return ScoredBatch(prepared, ScoreColumns.from_rows([]))
        with _StageClock(prepared.timings, self._clock)("infer"):
            scores = _infer(prepared.components, prepared.encoded, len(prepared.events), prepared.text_rows)
        return ScoredBatch(prepared, scores)

    def finish(self, scored: ScoredBatch) -> VerdictBatch:
        """detect → decide → guard → the batch's verdicts as columns, in input order (a
        ``Sequence[Verdict]``: indexing or iterating gives the typed records)."""
        p = scored.prepared
        if not p.events:
            return VerdictBatch.of(())
        c, events = p.components, p.events
        detections, proposals, finals = _decide_and_guard(c, events, p.snapshots, p.degraded, scored.scores,
                                                          p.text_rows, p.twins, _StageClock(p.timings, self._clock))
        self.last_timings = p.timings
        decided_at = time.time() * 1000.0
        rules_version = c.guard.version if c.guard is not None else "none"
        arrivals = p.arrival_ms if p.arrival_ms is not None else [p.start_wall_ms] * len(events)
        n = len(events)
        verdicts = VerdictBatch(
            event_ids=[e.event_id for e in events],
            customer_ids=[e.customer_id for e in events],
            verdicts=[f.verdict for f in finals],
            confidences=[d.confidence for d in proposals],
            probabilities=[d.probabilities for d in proposals],
            risk_scores=[d.risk_score for d in proposals],
            reasons=[event_input_reasons(e, detection) + d.reasons + f.added_reasons
                     for e, detection, d, f in zip(events, detections, proposals, finals, strict=True)],
            model_versions=[c.model_version] * n,
            rules_versions=[f.rules_version or rules_version for f in finals],  # the set that really decided
            decision_latencies_ms=[max(0.0, decided_at - arrived) for arrived in arrivals],
            decided_at_ms=[int(decided_at)] * n,
            event_times_ms=[e.event_time_ms for e in events],
            detector_scores=[d.detector_score for d in proposals],
        )
        if self.on_batch is not None:
            self.on_batch(p.timings)
        return verdicts

    def warmup(self, batch_sizes: Sequence[int] = (1, 8)) -> float:
        """Run every stage but enrich on synthetic events, so the first real request
        does not pay for lazy initialisation (allocator, kernels, rule compilation).
        Nothing is recorded in the feature store. Returns the seconds it took."""
        t0 = time.perf_counter()
        c = self._components
        for n in batch_sizes:
            events = [_warmup_event(i) for i in range(n)]
            if c.empty_context is None:
                raise RuntimeError("warmup needs Components.empty_context")
            snapshots = [c.empty_context(e) for e in events]
            encoded, text_rows, twins = _encode(c, events, snapshots)
            scores = _infer(c, encoded, n, text_rows)
            _decide_and_guard(c, events, snapshots, False, scores, text_rows, twins, _StageClock(BatchTimings()))
        return time.perf_counter() - t0


class _StageClock:
    """``with clock("infer"): ...`` adds the block's wall time to that stage."""

    __slots__ = ("_timings", "_clock", "_stage", "_t0")

    def __init__(self, timings: BatchTimings, clock: Callable[[], float] = time.perf_counter):
        self._timings, self._clock = timings, clock

    def __call__(self, stage: str) -> _StageClock:
        self._stage = stage
        return self

    def __enter__(self) -> None:
        self._t0 = self._clock()

    def __exit__(self, *exc: Any) -> None:
        self._timings.stage_ms[self._stage] += (self._clock() - self._t0) * 1000.0


def _encode(c: Components, events: Sequence[TransactionEvent], snapshots: Sequence[ContextSnapshot]
            ) -> tuple[EncodedBatch | ArrayBatch, list[int], list[TransactionEvent]]:
    """The events and, after them, every text-free twin (``text_twins``) with its event's
    context snapshot, encoded in one call of the same encoder; the events alone when the
    model reads no text (``Components.model_reads_text``: a twin's rows would be its
    event's)."""
    owners, twins = text_twins(events)
    if not twins or not c.model_reads_text:
        return c.encoder.encode(events, snapshots), owners, twins
    encoded = c.encoder.encode([*events, *twins], [*snapshots, *(snapshots[i] for i in owners)])
    return encoded, owners, twins


def _infer(c: Components, encoded: EncodedBatch | ArrayBatch, n_events: int, owners: Sequence[int]) -> ScoreColumns:
    """The model's outputs for the events and then their twins (``owners``: each twin's
    event). A model that reads no text scored the events only; each twin takes its
    event's row."""
    scores = c.inference(encoded).score_columns()
    scored_rows = n_events + (len(owners) if c.model_reads_text else 0)
    if len(scores) != scored_rows:
        raise RuntimeError(f"model returned {len(scores)} rows for {scored_rows} events and twins")
    if owners and not c.model_reads_text:
        scores = scores.take([*range(n_events), *owners])
    return scores


@dataclass(slots=True, frozen=True)
class GuardOutcome:
    """The final verdict of one event, the reasons the rules *added* to the proposal's,
    and the version of the rule set that decided (a reload may land between batches)."""

    verdict: Decision
    added_reasons: tuple[Reason, ...] = ()
    rules_version: str | None = None


def detect_events(detector: Detector | None, events: Sequence[TransactionEvent]) -> list[DetectorResult | None]:
    """One result per event over its untrusted text fields; None where there is no text
    (or no detector). Only the events that carry a text field are handed to the detector
    (most carry none; the detector would answer "no text" for each)."""
    out: list[DetectorResult | None] = [None] * len(events)
    if detector is None:
        return out
    texted = [j for j, e in enumerate(events) if e.memo is not None or e.merchant_descriptor is not None]
    if texted:
        screened = detector.screen_events(events if len(texted) == len(events) else [events[j] for j in texted])
        for j, r in zip(texted, screened, strict=True):
            out[j] = r if r.field is not None else None
    return out


def guard_batch(guard: RuleGuard | None, events: Sequence[TransactionEvent],
                contexts: Sequence[Mapping[str, float]], proposed: PolicyBatch) -> list[GuardOutcome]:
    """Hard rules last: they always win. ``contexts``: what rules read as ``ctx.*``
    (``RuleContexts`` of the batch's snapshots: nothing is built until a rule asks);
    ``proposed`` from ``decide_columns``: its decisions, and their model views as the
    columns the rules read."""
    proposals = proposed.decisions
    if guard is None:
        return [GuardOutcome(p.verdict) for p in proposals]
    guarded = guard.apply_batch(events, contexts, proposed.views, proposals)
    out = []
    for g, p in zip(guarded, proposals, strict=True):
        if g.reasons is p.reasons:  # no rule fired (``Guard`` hands the proposal's tuple back)
            out.append(GuardOutcome(g.verdict, (), g.rules_version or None))
            continue
        n = len(p.reasons)
        if g.reasons[:n] != p.reasons:  # the RuleGuard contract: the proposal's reasons first
            raise ValueError(f"guard {type(guard).__name__} did not keep the proposal's reasons first")
        out.append(GuardOutcome(g.verdict, tuple(g.reasons[n:]), g.rules_version or None))
    return out


def _decide_and_guard(c: Components, events: Sequence[TransactionEvent], snapshots: Sequence[ContextSnapshot],
                      degraded: bool, scores: ScoreColumns, owners: Sequence[int],
                      twins: Sequence[TransactionEvent], clock: _StageClock
                      ) -> tuple[list[DetectorResult | None], list[PolicyDecision], list[GuardOutcome]]:
    """detect → decide → guard, each timed; then the same for the text-free twins, and
    per event the most severe final verdict wins and the highest risk score is kept. A
    row already at the most severe verdict with its text cannot be raised by a twin, so
    those twins are not decided at all (their risk scores still count)."""
    n = len(events)
    with clock("detect"):
        detections = detect_events(c.detector, events)
    with clock("decide"):
        proposed = decide_columns(scores.take(slice(0, n)), detections, c.policy, degraded)
        proposals = proposed.decisions
    with clock("guard"):
        contexts = RuleContexts(snapshots)  # read-only: the text-free twins share it
        finals = guard_batch(c.guard, events, contexts, proposed)
    if not owners:
        return detections, proposals, finals
    twin_scores = scores.take(slice(n, None))
    deciders = list(proposals)
    risks = [p.risk_score for p in proposals]
    for i, risk in zip(owners, twin_scores.risk.tolist(), strict=True):
        risks[i] = max(risks[i], risk)
    open_twins = [k for k, i in enumerate(owners) if SEVERITY[finals[i].verdict] < _MOST_SEVERE]
    if open_twins:
        open_events = [twins[k] for k in open_twins]
        with clock("detect"):
            twin_detections = detect_events(c.detector, open_events)
        with clock("decide"):
            twin_proposed = decide_columns(twin_scores.take(open_twins), twin_detections, c.policy, degraded)
        with clock("guard"):
            twin_finals = guard_batch(c.guard, open_events, contexts.take([owners[k] for k in open_twins]),
                                      twin_proposed)
        for k, proposal, final in zip(open_twins, twin_proposed.decisions, twin_finals, strict=True):
            i = owners[k]
            if SEVERITY[final.verdict] > SEVERITY[finals[i].verdict]:
                deciders[i], finals[i] = proposal, final
    for i in sorted(set(owners)):
        proposals[i] = text_cannot_lower(deciders[i], proposals[i], risks[i])
    return detections, proposals, finals


def _warmup_event(i: int) -> TransactionEvent:
    return TransactionEvent(
        event_id=f"warmup-{i}", event_time_ms=1_700_000_000_000 + i, customer_id="warmup",
        account_id="warmup", terminal_id="warmup", merchant_category="5411", amount=10.0 * (i + 1),
        currency="EUR", channel="ecommerce", country="BE", memo="invoice 4411" if i % 2 else None)

