"""``DecisionPipeline``: enrich → encode → infer → detect → decide → guard, for one batch.

This is the *single* code path from events to verdicts. The Kafka worker, the Python
API (``engine.api``), the HTTP service (``engine.serve``) and the batch CLI
(``engine.score``) all call ``decide_batch``; none of them re-implements a stage, so
for the same events and the same context they give the same verdict, verdict for
verdict (``tests/integration/test_interfaces_agree.py`` holds them to it).

Why a batch and not one event: one forward pass and one Redis round trip per batch
amortise their fixed cost; the callers choose the batch (worker: B events or W ms;
HTTP: micro-batched across connections; CLI: file chunks).

The stages are held in one immutable ``Components`` record. ``swap`` replaces it in a
single reference assignment, and every batch reads the reference once at its start, so
a model or rule hot-swap (promotion, rollback, rule reload) lands *between* batches:
no batch is ever half old model, half new.

When the feature store raises ``ContextUnavailable`` the batch is scored on empty
context snapshots and the policy runs in degraded mode (see ``engine.decide``).

**Untrusted text may only add suspicion.** The model reads the memo/descriptor in its
own segment, so a benign-looking memo could otherwise nudge a borderline event from
review to pass. Every event that carries text is therefore scored twice *in the same
forward pass* — as sent, and with its text segment masked (trusted fields alone) — and
both variants go through policy and rules; the more severe final verdict wins, with the
reason ``user_text_cannot_lower`` when the trusted-only variant decided. Together with
the detector (which only escalates) this makes inserting text into an event unable to
move its verdict towards pass (``tests/unit/test_field_isolation_e2e.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.decide import Policy, PolicyDecision, ScoreRow, decide
from engine.records import SEVERITY, Reason, ReasonKind, TransactionEvent, Verdict
from engine.textproc import clean_user_text

#: Stage names, in order, as they appear in ``BatchTimings`` and the metrics.
STAGES: tuple[str, ...] = ("enrich", "encode", "infer", "detect", "decide", "guard")


@dataclass(slots=True, frozen=True)
class Components:
    """Everything one batch needs. Immutable: swapping means building a new one."""

    store: Any  # FeatureStore: enrich(events) -> list[ContextSnapshot]
    encoder: Any  # encode(events, snapshots) -> EncodedBatch
    inference: Any  # __call__(EncodedBatch) -> ModelOutputs (probs [B,3], risk [B], exit_layer [B])
    detector: Any | None  # score_texts(texts) -> list[DetectorResult]; None: no text screening
    guard: Any | None  # apply(event, context_inputs, model_view, proposed) -> GuardedDecision; .version
    policy: Policy
    model_version: str
    #: Builds an empty context for one event (degraded mode); None: degraded mode impossible.
    empty_context: Callable[[TransactionEvent], Any] | None = None


@dataclass(slots=True, frozen=True)
class EventDetection:
    """The detector's view of one event: worst score over its untrusted text fields."""

    score: float
    flagged: bool
    reasons: tuple[Any, ...] = ()


@dataclass(slots=True)
class BatchTimings:
    """Wall time of each stage for one batch, in milliseconds, plus what happened."""

    size: int = 0
    degraded: bool = False
    stage_ms: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @property
    def total_ms(self) -> float:
        return sum(self.stage_ms.values())


class DecisionPipeline:
    """Chains the stages for a batch. Thread-safe: batches run one at a time, because
    enrich both reads and records context and must see events in arrival order."""

    def __init__(self, components: Components,
                 on_batch: Callable[[BatchTimings], None] | None = None,
                 context_unavailable: tuple[type[BaseException], ...] | None = None,
                 base_policy: Policy | None = None):
        self._components = components
        #: What a rule set's ``policy:`` overrides apply to (settings.policy); see ``swap``.
        self.base_policy = base_policy or Policy()
        self._lock = threading.Lock()
        #: Called after every batch with its timings (the worker and serve feed Prometheus with it).
        self.on_batch = on_batch
        self.last_timings = BatchTimings()
        self._unavailable = context_unavailable if context_unavailable is not None else _context_unavailable_types()

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
        return str(getattr(guard, "version", "none")) if guard is not None else "none"

    @property
    def policy(self) -> Policy:
        return self._components.policy

    def swap(self, **changes: Any) -> Components:
        """Atomically replace some components (``inference=..., model_version=...`` on a
        promotion; ``guard=..., policy=...`` on a rule reload). Waits for the running
        batch to finish, so the next batch sees all changes or none. Returns the old set.

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
                     arrival_ms: Sequence[float] | None = None) -> list[Verdict]:
        """Verdicts for ``events``, in the same order.

        ``arrival_ms``: when each event reached the caller, in epoch milliseconds
        (``time.time() * 1000``); a verdict's ``decision_latency_ms`` is measured from
        it. Without it, latency is measured from the start of this call.
        """
        if not events:
            return []
        if arrival_ms is not None and len(arrival_ms) != len(events):
            raise ValueError(f"{len(arrival_ms)} arrival times for {len(events)} events")
        start_wall_ms = time.time() * 1000.0
        with self._lock:
            c = self._components  # read once: a swap lands between batches, never inside one
            timings = BatchTimings(size=len(events))
            clock = _StageClock(timings)

            with clock("enrich"):
                snapshots, degraded = self._enrich(c, events)
            timings.degraded = degraded
            detections, proposals, finals = _score(c, events, snapshots, degraded, clock)
            self.last_timings = timings

        decided_at = time.time() * 1000.0
        rules_version = str(getattr(c.guard, "version", "none")) if c.guard is not None else "none"
        verdicts = []
        for i, (event, proposal, detection, (final_verdict, rule_reasons, guarded_version)) in enumerate(
                zip(events, proposals, detections, finals)):
            arrived = float(arrival_ms[i]) if arrival_ms is not None else start_wall_ms
            verdicts.append(Verdict(
                event_id=event.event_id,
                customer_id=event.customer_id,
                verdict=final_verdict,
                confidence=proposal.confidence,
                probabilities=proposal.probabilities,
                risk_score=proposal.risk_score,
                reasons=_input_reasons(event, detection) + proposal.reasons + rule_reasons,
                model_version=c.model_version,
                rules_version=guarded_version or rules_version,  # the set that really decided
                decision_latency_ms=max(0.0, decided_at - arrived),
                decided_at_ms=int(decided_at),
                event_time_ms=event.event_time_ms,
                detector_score=proposal.detector_score,
            ))
        if self.on_batch is not None:
            self.on_batch(timings)
        return verdicts

    def warmup(self, batch_sizes: Sequence[int] = (1, 8)) -> float:
        """Run every stage but enrich on synthetic events, so the first real request
        does not pay for lazy initialisation (allocator, kernels, rule compilation).
        Nothing is recorded in the feature store. Returns the seconds it took."""
        t0 = time.perf_counter()
        c = self._components
        for n in batch_sizes:
            events = [_warmup_event(i) for i in range(n)]
            snapshots = [c.empty_context(e) if c.empty_context is not None else None for e in events]
            if any(s is None for s in snapshots):
                raise RuntimeError("warmup needs Components.empty_context")
            _score(c, events, snapshots, False, _StageClock(BatchTimings()))
        return time.perf_counter() - t0

    def _enrich(self, c: Components, events: Sequence[TransactionEvent]) -> tuple[list[Any], bool]:
        try:
            snapshots = list(c.store.enrich(events))
        except self._unavailable:
            if c.empty_context is None:
                raise
            return [c.empty_context(e) for e in events], True
        if len(snapshots) != len(events):
            raise RuntimeError(f"feature store returned {len(snapshots)} snapshots for {len(events)} events")
        return snapshots, False


class _StageClock:
    """``with clock("infer"): ...`` adds the block's wall time to that stage."""

    __slots__ = ("_timings", "_stage", "_t0")

    def __init__(self, timings: BatchTimings):
        self._timings = timings

    def __call__(self, stage: str) -> "_StageClock":
        self._stage = stage
        return self

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()

    def __exit__(self, *exc: Any) -> None:
        self._timings.stage_ms[self._stage] += (time.perf_counter() - self._t0) * 1000.0


def _score(c: Components, events: Sequence[TransactionEvent], snapshots: Sequence[Any], degraded: bool,
           clock: _StageClock) -> tuple[list[Any], list[PolicyDecision], list[tuple[Any, tuple[Reason, ...], str | None]]]:
    """encode → infer → detect → decide → guard, each timed. Rows with user text are
    also scored text-blind, in the same forward pass; the more severe outcome wins."""
    n = len(events)
    with clock("encode"):
        encoded = c.encoder.encode(events, snapshots)
        text_rows = _rows_with_text(encoded)
        if text_rows:
            encoded = type(encoded).concat([encoded, _text_blind(encoded[text_rows])])
    with clock("infer"):
        all_rows = _score_rows(c.inference(encoded), n + len(text_rows))
    rows, blind_rows = all_rows[:n], all_rows[n:]
    with clock("detect"):
        detections = _detect(c.detector, events)
    with clock("decide"):
        proposals = [decide(r, d, c.policy, degraded) for r, d in zip(rows, detections)]
        blind = [decide(r, detections[i], c.policy, degraded) for r, i in zip(blind_rows, text_rows)]
    with clock("guard"):
        finals = _guard(c.guard, events, snapshots, proposals)
        if text_rows:
            blind_finals = _guard(c.guard, [events[i] for i in text_rows],
                                  [snapshots[i] for i in text_rows], blind)
            for i, proposal, final in zip(text_rows, blind, blind_finals):
                if SEVERITY[final[0]] > SEVERITY[finals[i][0]]:
                    proposals[i] = _trusted_only(proposal, proposals[i])
                    finals[i] = final
    return detections, proposals, finals


def _rows_with_text(encoded: Any) -> list[int]:
    mask = getattr(encoded, "text_mask", None)
    if mask is None:
        return []
    return [int(i) for i in mask.any(dim=1).nonzero().flatten().tolist()]


def _text_blind(encoded: Any) -> Any:
    """The same rows with the untrusted segment emptied: what the trusted fields alone say."""
    return replace(encoded, text_ids=encoded.text_ids.new_zeros(encoded.text_ids.shape),
                   text_mask=encoded.text_mask.new_zeros(encoded.text_mask.shape))


def _trusted_only(blind: PolicyDecision, with_text: PolicyDecision) -> PolicyDecision:
    reason = Reason(ReasonKind.POLICY, "user_text_cannot_lower",
                    f"with its user text the model proposed {with_text.verdict.value}; on trusted "
                    f"fields alone {blind.verdict.value} — untrusted text may only add suspicion")
    return replace(blind, reasons=blind.reasons + (reason,))


def _warmup_event(i: int) -> TransactionEvent:
    return TransactionEvent(
        event_id=f"warmup-{i}", event_time_ms=1_700_000_000_000 + i, customer_id="warmup",
        account_id="warmup", terminal_id="warmup", merchant_category="5411", amount=10.0 * (i + 1),
        currency="EUR", channel="ecommerce", country="BE", memo="invoice 4411" if i % 2 else None)


def _context_unavailable_types() -> tuple[type[BaseException], ...]:
    try:
        from engine.features.store import ContextUnavailable
    except ImportError:  # the feature package defines it; without it nothing can raise it
        return ()
    return (ContextUnavailable,)


def _score_rows(outputs: Any, n: int) -> list[ScoreRow]:
    """``ModelOutputs`` (tensors or arrays) → one ``ScoreRow`` per event."""
    probs = _to_list(outputs.probs)
    risk = _to_list(outputs.risk)
    exit_layer = getattr(outputs, "exit_layer", None)
    exits = _to_list(exit_layer) if exit_layer is not None else [-1] * n
    if len(probs) != n or len(risk) != n:
        raise RuntimeError(f"model returned {len(probs)} rows for {n} events")
    return [ScoreRow(tuple(float(x) for x in p), float(r), int(e)) for p, r, e in zip(probs, risk, exits)]


def _to_list(value: Any) -> list:
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    if hasattr(value, "tolist"):
        return value.tolist()
    return list(value)


def _detect(detector: Any | None, events: Sequence[TransactionEvent]) -> list[Any]:
    """One result per event: the worst of its untrusted text fields (memo, descriptor)."""
    if detector is None:
        return [None] * len(events)
    screen_events = getattr(detector, "screen_events", None)
    if screen_events is not None:  # engine.detect.InjectionDetector combines fields itself
        results = list(screen_events(events))
        return [r if getattr(r, "field", True) is not None else None for r in results]
    texts: list[str | None] = []
    for e in events:
        texts.extend((e.memo, e.merchant_descriptor))
    results = detector.score_texts(texts)
    out: list[EventDetection | None] = []
    for i, e in enumerate(events):
        pair = [r for t, r in zip((e.memo, e.merchant_descriptor), results[2 * i:2 * i + 2]) if t]
        if not pair:
            out.append(None)
            continue
        out.append(EventDetection(
            score=max(float(r.score) for r in pair),
            flagged=any(bool(r.flagged) for r in pair),
            reasons=tuple(dict.fromkeys(x for r in pair for x in (getattr(r, "reasons", ()) or ()))),
        ))
    return out


def _guard(guard: Any | None, events: Sequence[TransactionEvent], snapshots: Sequence[Any],
           proposals: Sequence[PolicyDecision]) -> list[tuple[Any, tuple[Reason, ...], str | None]]:
    """Hard rules last: they always win. Returns (final verdict, rule reasons, rule-set
    version if the guard reports one) per event."""
    if guard is None:
        return [(p.verdict, (), None) for p in proposals]
    contexts = [_rule_inputs(s) for s in snapshots]
    views = [p.model_view() for p in proposals]
    apply_batch = getattr(guard, "apply_batch", None)
    if apply_batch is not None:
        guarded = apply_batch(list(events), contexts, views, list(proposals))
    else:
        guarded = [guard.apply(e, ctx, v, p) for e, ctx, v, p in zip(events, contexts, views, proposals)]
    return [_unpack_guarded(g, p) for g, p in zip(guarded, proposals)]


def _rule_inputs(snapshot: Any) -> dict[str, float]:
    as_inputs = getattr(snapshot, "as_rule_inputs", None)
    return dict(as_inputs()) if as_inputs is not None else dict(snapshot or {})


def _unpack_guarded(guarded: Any, proposal: PolicyDecision) -> tuple[Any, tuple[Reason, ...], str | None]:
    """The guard's verdict, the reasons it *added* (the proposal's are kept first), and
    the version of the rule set that decided (a reload may land between batches)."""
    reasons = tuple(getattr(guarded, "reasons", ()) or ())
    already = set(proposal.reasons)
    added = tuple(r for r in reasons if r not in already)
    version = getattr(guarded, "rules_version", None)
    return guarded.verdict, added, (str(version) if version else None)


def _input_reasons(event: TransactionEvent, detection: Any | None) -> tuple[Reason, ...]:
    """What cleaning did to the user text (truncated, invisible characters, …). The
    detector reports it when it ran (same ``clean_user_text``); otherwise clean here."""
    if detection is not None:
        return tuple(r for r in (getattr(detection, "reasons", ()) or ())
                     if isinstance(r, Reason) and r.kind is ReasonKind.INPUT)
    out: list[Reason] = []
    for name in ("memo", "merchant_descriptor"):
        value = getattr(event, name)
        if value:
            for issue in clean_user_text(value).issues:
                out.append(Reason(ReasonKind.INPUT, f"{name}_{issue}", f"{name}: {issue.replace('_', ' ')}"))
    return tuple(out)
