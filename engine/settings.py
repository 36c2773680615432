"""One frozen settings object, read from the environment with the ``TOLLGATE_`` prefix.

Nested keys use ``__``: ``TOLLGATE_KAFKA__BOOTSTRAP=host:9092``,
``TOLLGATE_BATCH__MAX_EVENTS=64``. A few flat aliases that ops scripts and the test
fixtures print (``TOLLGATE_KAFKA_BOOTSTRAP``, ``TOLLGATE_REDIS_URL``,
``TOLLGATE_SCHEMA_REGISTRY_URL``) are honoured too, so ``eval "$(ops/stack up)"`` works.

>>> s = Settings()
>>> s.topics.events
'tx.events'
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Frozen):
    bootstrap: str = "127.0.0.1:9092"
    schema_registry_url: str | None = None
    schema_registry_auth: SecretStr | None = Field(
        default=None, description="user:password for the Schema Registry, if it needs basic auth"
    )
    #: Extra librdkafka properties passed through verbatim to every client
    #: (e.g. {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", ...}).
    extra: dict[str, Any] = Field(default_factory=dict)
    consumer_group: str = "tollgate-engine"
    transactional_id_prefix: str = "tollgate-engine"
    #: Kafka transaction timeout. A SIGKILLed worker's open transaction is aborted by the
    #: broker after this long, or at once when a worker with the same transactional id
    #: starts (fencing) — which is how restarts stay exactly-once.
    transaction_timeout_ms: int = 60_000
    #: First retry backoff of the worker's transactional producer (librdkafka
    #: ``retry.backoff.ms``; it doubles per retry up to 100 ms, so a broker that is away is
    #: not hammered). Back-to-back micro-batch transactions often find the coordinator
    #: still writing the previous commit's markers: the first request of the next one
    #: (AddOffsetsToTxn: ``engine.emit`` sends the offsets first) is answered
    #: CONCURRENT_TRANSACTIONS and retried after this long; librdkafka's default, 100 ms,
    #: was most of our p99. ``python ops/bench/transactions.py`` measures the backoff alone,
    #: ``python ops/bench/engine.py --rates 1000 --floor-ab 3`` under a stream.
    producer_retry_backoff_ms: int = Field(default=1, ge=1, le=1000)


class TopicSettings(_Frozen):
    events: str = "tx.events"
    verdicts: str = "tx.verdicts"
    outcomes: str = "tx.outcomes"
    dead_letters: str = "tx.events.dlq"
    events_partitions: int = 6
    verdicts_partitions: int = 6
    outcomes_partitions: int = 3
    dead_letters_partitions: int = 1
    #: Copies of every partition, and how many must hold a write before it is
    #: acknowledged (``acks=all``). 1/1 for the single-broker quickstart; 3/2 on a
    #: cluster (``ops/stack up --brokers 3`` prints them), so one broker can be lost
    #: without losing a committed verdict or stopping writes (docs/scaling.md).
    replication_factor: int = Field(default=1, ge=1)
    min_insync_replicas: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _isr_fits(self) -> "TopicSettings":
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(f"topics.min_insync_replicas ({self.min_insync_replicas}) exceeds "
                             f"topics.replication_factor ({self.replication_factor}): no write could succeed")
        return self


class RedisSettings(_Frozen):
    url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = "tg"
    socket_timeout_s: float = 0.5
    #: How long per-event decision-log entries (context snapshots) are kept.
    decision_log_retention_days: int = 45


class BatchSettings(_Frozen):
    #: A micro-batch closes at ``max_events`` or after ``max_wait_ms``, whichever first.
    #: B only caps a backlog's batches (a quiet stream's close at W or when the consumer
    #: runs dry); a larger one amortises what every batch costs whatever its size: a
    #: transaction, two Redis round trips, a model call. Chosen by
    #: ``python ops/bench/engine.py --sweep --rounds 2`` (B: best median saturation; W: best
    #: median p99 at 1,000 events/s); figures in docs/performance.md.
    max_events: int = 512
    max_wait_ms: float = 5.0
    #: Also close a batch as soon as the consumer has nothing more fetched: a quiet
    #: stream then waits for no company, and under load batches still fill while the
    #: previous ones are decided (the worker overlaps them; see engine/worker.py).
    close_when_idle: bool = True
    #: Score each batch on a thread of its own while the main thread prepares the next
    #: batch and finishes the previous one. ``infer_process`` turns it on (the thread
    #: waits for the model process). With the model in the worker's own process it is
    #: off by default: the forward pass's many short ops then wait for the GIL behind
    #: the main thread's Python (ops/bench/engine.py measured more worker CPU per event).
    infer_thread: bool = False
    #: Run the forward pass in a child process (``engine.infer_process``), so it uses a
    #: core the loop's Python cannot (the GIL); it turns ``infer_thread`` on (that thread
    #: waits for the child while the main thread prepares the next batch). On by default
    #: because it raises saturation throughput; it costs a second process per worker
    #: (PyTorch and the model). ``python ops/bench/engine.py --modes`` compares it with
    #: one process; figures in docs/performance.md.
    infer_process: bool = True
    #: With ``infer_process``: only batches of at least this many rows (events plus the
    #: text-blind twins of those with a memo) go to the model process; smaller ones are
    #: scored in the worker's own process, on the main thread, where a quiet stream's
    #: batch is quicker than a round trip to the child (``engine.infer_process.SplitInference``;
    #: measured at 250 events/s with ``python ops/bench/engine.py``, docs/performance.md).
    process_min_rows: int = Field(default=64, ge=1)
    #: PyTorch intra-op threads for the forward pass (0 = PyTorch's default, one per
    #: core). 1 by default: the worker shares its cores with the Kafka client's threads
    #: (and, on small hosts, the broker and Redis), where spinning OpenMP threads cost
    #: more than they gain. ``python ops/bench/engine.py --modes`` compares 0 against 1;
    #: figures in docs/performance.md.
    torch_threads: int = Field(default=1, ge=0)
    #: With ``infer_thread``: how many of a backlog's batches may be on the threads (being
    #: prepared or scored) while the main thread finishes an older one. 2 keeps the
    #: model process fed: one batch is scored while the next is prepared.
    #: ``python ops/bench/engine.py --modes`` compares it with 1; figures in docs/performance.md.
    backlog_depth: int = Field(default=2, ge=1, le=4)


class PolicySettings(_Frozen):
    """Defaults for the decision policy; a rule set may override them (rules/policy.yaml)."""

    #: Verdict thresholds on the calibrated probabilities (see engine/decide.py):
    #: reject when p(reject) reaches reject_threshold, else review when
    #: p(review) + p(reject) reaches review_threshold.
    reject_threshold: float = 0.5
    review_threshold: float = 0.5
    tie_margin: float = 0.05
    abstain_threshold: float = 0.5
    #: With Redis down: "review" (rules + review, reason context_unavailable) or "model"
    #: (decide on the model with an empty context).
    degraded_mode: str = "review"
    #: A detector-flagged event is at least this verdict: "review" or "reject" (never
    #: "pass": a flagged event must not pass on the model alone).
    detector_floor: str = "review"


class PathSettings(_Frozen):
    state_dir: Path = REPO_ROOT / ".tollgate"
    models_dir: Path = REPO_ROOT / ".tollgate" / "models"
    rules_dir: Path = REPO_ROOT / "rules"
    reports_dir: Path = REPO_ROOT / ".tollgate" / "reports"
    examples_dir: Path = REPO_ROOT / ".tollgate" / "examples"


class HttpSettings(_Frozen):
    host: str = "127.0.0.1"
    #: The worker's health/metrics port (/healthz, /readyz, /metrics).
    worker_port: int = 9400
    #: The scoring service (tollgate serve).
    serve_port: int = 8080
    api_token: SecretStr | None = None
    max_request_bytes: int = 1_048_576
    max_events_per_request: int = 1000


class GateSettings(_Frozen):
    """The promotion gate's bars (``feedback.gate``): how much worse than the serving
    model a fine-tuned candidate may be before it is refused.

    Held-out margins compare candidate and serving on recent held-out outcomes; replay
    bounds apply to the last 24 h of decisions replayed through both. Override with
    ``TOLLGATE_FEEDBACK__GATE__MAX_AP_DROP=0.005``, and
    ``TOLLGATE_FEEDBACK__GATE__CELL_OVERRIDES='{"pass->reject": 0.01}'``.
    """

    #: Recall of each outcome class (bad stopped, good passed) may drop at most this.
    max_recall_drop: float = 0.02
    #: Minority-class (bad) F1 may drop at most this.
    max_f1_drop: float = 0.02
    #: Expected calibration error of the risk score may rise at most this.
    max_ece_increase: float = 0.02
    #: Average precision of the risk score may drop at most this.
    max_ap_drop: float = 0.01
    #: At most this share of the replayed verdicts may change.
    max_changed_share: float = 0.10
    #: Each off-diagonal cell of the label-migration matrix, as a share of the replay.
    max_cell_share: float = 0.05
    #: Tighter (or looser) bounds for named cells, "from->to".
    cell_overrides: dict[str, float] = Field(default_factory=lambda: {"pass->reject": 0.02})
    #: Below these sizes the figures mean nothing, and the candidate is refused.
    min_heldout: int = 50
    min_heldout_bad: int = 5
    min_replay: int = 20
    ece_bins: int = 10


class FeedbackSettings(_Frozen):
    fine_tune_interval_hours: float = 4.0
    consumer_group: str = "tollgate-feedback"
    gate: GateSettings = Field(default_factory=GateSettings)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TOLLGATE_", env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicSettings = Field(default_factory=TopicSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    batch: BatchSettings = Field(default_factory=BatchSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    paths: PathSettings = Field(default_factory=PathSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    feedback: FeedbackSettings = Field(default_factory=FeedbackSettings)

    @model_validator(mode="before")
    @classmethod
    def _flat_aliases(cls, data: Any) -> Any:
        # The flat names printed by ops/stack and used by the test fixtures.
        if not isinstance(data, dict):
            return data
        aliases = {
            "TOLLGATE_KAFKA_BOOTSTRAP": ("kafka", "bootstrap"),
            "TOLLGATE_SCHEMA_REGISTRY_URL": ("kafka", "schema_registry_url"),
            "TOLLGATE_REDIS_URL": ("redis", "url"),
        }
        for env_name, (section, key) in aliases.items():
            value = os.environ.get(env_name)
            if value:
                current = data.get(section)
                if current is None:
                    data[section] = {key: value}
                elif isinstance(current, dict):
                    current.setdefault(key, value)
        return data

    def librdkafka(self, **overrides: Any) -> dict[str, Any]:
        """Base client config: bootstrap, pass-through extras, then per-client overrides."""
        conf: dict[str, Any] = {"bootstrap.servers": self.kafka.bootstrap}
        conf.update(self.kafka.extra)
        conf.update(overrides)
        return conf


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings. Tests build their own ``Settings(...)`` instead."""
    return Settings()
