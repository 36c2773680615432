"""Prometheus metrics of the engine worker, and JSON logs.

Why it looks like this:

* Each worker owns one ``CollectorRegistry`` (not the process-global default), so two
  workers in one test process, or a benchmark that runs the loop twice, never collide.
  ``/metrics`` serves it followed by the process-global registry, which holds what
  other stages register there (rule hits and reloads, process CPU and memory).
* Latency histograms use millisecond buckets dense around the 30 ms target; the
  end-to-end histograms go to minutes because "from event time" includes upstream
  delay (and a replay of an old day is legitimately hours late: +Inf counts it).
* Verdict reasons are labelled by ``kind:code`` only — never by free text — so label
  cardinality stays bounded by the rule set's size.
* Logs are one JSON object per line with the ``extra=`` fields merged in, so a log
  shipper can index ``partition`` or ``batch_size`` without parsing prose.

>>> m = EngineMetrics()
>>> m.batch_size.observe(3)
>>> b"tollgate_batch_size_count 1.0" in m.render()
True
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable, Sequence

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, Info, generate_latest

from engine.records import Reason, Verdict, VerdictBatch

STAGE_BUCKETS_MS = (0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 250, 500, 1000, 5000)
E2E_BUCKETS_MS = (1, 2, 5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 250, 500, 1000, 2500, 5000,
                  10_000, 30_000, 60_000, 300_000)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class EngineMetrics:
    """Every metric the worker exports, on its own registry."""

    def __init__(self, registry: CollectorRegistry | None = None, include_global: bool = True):
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.include_global = include_global
        r = self.registry
        self.stage_latency = Histogram(
            "tollgate_stage_latency_ms", "Time spent per pipeline stage per batch (ms).",
            ["stage"], buckets=STAGE_BUCKETS_MS, registry=r)
        self.e2e_from_arrival = Histogram(
            "tollgate_e2e_from_arrival_ms", "Arrival at the worker → verdict committed (ms).",
            buckets=E2E_BUCKETS_MS, registry=r)
        self.e2e_from_event_time = Histogram(
            "tollgate_e2e_from_event_time_ms", "Event time → verdict committed (ms).",
            buckets=E2E_BUCKETS_MS, registry=r)
        self.batch_size = Histogram(
            "tollgate_batch_size", "Records per micro-batch.", buckets=BATCH_BUCKETS, registry=r)
        self.verdicts = Counter(
            "tollgate_verdicts", "Committed verdicts by outcome and reason.",
            ["verdict", "reason"], registry=r)
        self.dead_letters = Counter(
            "tollgate_dead_letters", "Committed dead letters by stage and error class.",
            ["stage", "error_class"], registry=r)
        self.transactions = Counter(
            "tollgate_transactions", "Kafka transactions by result.", ["result"], registry=r)
        self.consumer_lag = Gauge(
            "tollgate_consumer_lag", "Records behind the high watermark.", ["partition"], registry=r)
        self.degraded = Gauge(
            "tollgate_degraded", "1 while the last batch was decided without Redis context.",
            registry=r)
        self.degraded_verdicts = Counter(
            "tollgate_degraded_verdicts", "Verdicts decided in degraded mode (context_unavailable).",
            registry=r)
        self.resent_events = Counter(
            "tollgate_resent_events", "Re-sent event ids dropped: another record owns the id (engine.worker.dedupe).",
            registry=r)
        self.resend_unchecked = Counter(
            "tollgate_resend_unchecked_events",
            "Events decided without the re-send check (Redis down past settings.worker.redis_hold_s).",
            registry=r)
        self.ready = Gauge("tollgate_ready", "1 once warmup is done and the worker is consuming.",
                           registry=r)
        self.model_info = Info("tollgate_model", "Serving model version.", registry=r)
        self.rules_info = Info("tollgate_rules", "Active rule-set version.", registry=r)
        self.model_swaps = Counter("tollgate_model_swaps", "Hot swaps by result.", ["result"],
                                   registry=r)
        self._versions: tuple[str, str] = ("", "")

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.stage_latency.labels(stage).observe(seconds * 1000.0)

    def observe_committed(self, verdicts: Sequence[Verdict], arrival_ms: Iterable[float],
                          committed_ms: float | None = None) -> None:
        """Per-verdict metrics, recorded only after the transaction committed. The verdict
        counter is incremented once per (verdict, first reason) of the batch, not per event."""
        batch = VerdictBatch.of(verdicts)
        now = time.time() * 1000.0 if committed_ms is None else committed_ms
        counts: dict[tuple[str, str], int] = {}
        degraded = 0
        for verdict, reasons in zip(batch.verdicts, batch.reasons):
            key = (verdict.value, _reason_label(reasons[0]) if reasons else "none")
            counts[key] = counts.get(key, 0) + 1
            if any(r.code == "context_unavailable" for r in reasons):
                degraded += 1
        for (verdict_name, label), n in counts.items():
            self.verdicts.labels(verdict_name, label).inc(n)
        observe = self.e2e_from_arrival.observe
        for arrived in arrival_ms:
            observe(max(0.0, now - arrived))
        observe = self.e2e_from_event_time.observe
        for event_time in batch.event_times_ms:
            observe(max(0.0, now - event_time))
        if degraded:
            self.degraded_verdicts.inc(degraded)
        if len(batch):
            self.degraded.set(1 if degraded else 0)
            self.set_versions(batch.model_versions[-1], batch.rules_versions[-1] or "")

    def set_versions(self, model_version: str, rules_version: str) -> None:
        if (model_version, rules_version) != self._versions:
            self._versions = (model_version, rules_version)
            self.model_info.info({"version": model_version})
            self.rules_info.info({"version": rules_version})

    def set_lag(self, lag: dict[tuple[str, int], int]) -> None:
        """Replace the lag series: partitions that moved away must not keep a stale value."""
        self.consumer_lag.clear()
        for (_topic, partition), value in lag.items():
            self.consumer_lag.labels(str(partition)).set(value)

    def render(self) -> bytes:
        own = generate_latest(self.registry)
        return own + generate_latest(REGISTRY) if self.include_global else own


def _reason_label(reason: Reason) -> str:
    """A verdict's first reason as the counter's label: ``kind:code``, never free text."""
    return f"{reason.kind.value}:{reason.code}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, plus every ``extra`` field."""

    _STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None)).keys()) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": round(record.created, 3), "level": record.levelname.lower(),
            "logger": record.name, "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self._STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_json_logging(level: str = "INFO") -> None:
    """Route the root logger to stderr as JSON lines (idempotent)."""
    root = logging.getLogger()
    root.setLevel(level.upper())
    for h in list(root.handlers):
        if getattr(h, "_tollgate_json", False):
            return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._tollgate_json = True  # type: ignore[attr-defined]
    root.addHandler(handler)
