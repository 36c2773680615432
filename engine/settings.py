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
from typing import Any, Literal

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
    #: (AddOffsetsToTxn: ``engine.stages.emit`` sends the offsets first) is answered
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
    def _isr_fits(self) -> TopicSettings:
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(f"topics.min_insync_replicas ({self.min_insync_replicas}) exceeds "
                             f"topics.replication_factor ({self.replication_factor}): no write could succeed")
        return self


class RedisSettings(_Frozen):
    url: str = "redis://127.0.0.1:6379/0"
    key_prefix: str = "tg"
    socket_timeout_s: float = 0.5
    #: How long the decision log is kept: the days an outcome may take to arrive and
    #: still find its verdict's inputs.
    decision_log_retention_days: int = 45
    #: Hours each decision's snapshot (``{p}:snap:{event}``) and a verdict-only join record
    #: (``{p}:fb:join:{event}``) stay in Redis. 0 keeps them for the whole retention (one
    #: machine). At scale, hours: Redis then holds hours of decisions, not 45 days (the
    #: memory per event: docs/scaling.md), and the decision store (Parquet, written by the
    #: feedback worker within seconds) keeps the rest; a late outcome is joined to it when
    #: the fine-tune reads its labels (``feedback.store.complete_from_decisions``).
    decision_log_redis_hours: int = Field(default=0, ge=0)
    #: Customer states a worker keeps from its own writes, counted in events (their
    #: memory: docs/performance.md, "Small figures behind code comments"), so enrich reads
    #: a returning customer's rows only when another writer changed them
    #: (engine.features.customer_cache; ``python ops/bench/customer_cache.py``). 0 reads
    #: every customer back.
    customer_cache_events: int = Field(default=200_000, ge=0)

    @model_validator(mode="after")
    def _horizon_fits(self) -> RedisSettings:
        if self.decision_log_redis_hours > self.decision_log_retention_days * 24:
            raise ValueError(f"redis.decision_log_redis_hours ({self.decision_log_redis_hours}) exceeds "
                             f"the retention ({self.decision_log_retention_days} days)")
        return self

    @property
    def decision_log_redis_ms(self) -> int:
        """How long a snapshot or a verdict-only join record stays in Redis, in ms."""
        hours = self.decision_log_redis_hours or self.decision_log_retention_days * 24
        return hours * 3_600_000

    @property
    def decision_log_retention_ms(self) -> int:
        return self.decision_log_retention_days * 86_400_000


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
    #: previous ones are decided (the worker overlaps them; see engine/worker/loop.py).
    close_when_idle: bool = True
    #: Open a quiet stream's transaction (begin it, add the batch's offsets) on the
    #: commit thread while the batch is decided, instead of after: its round trips to
    #: the coordinator then overlap the decision (``engine.worker.commit.BatchCommitter.open_early``;
    #: ``python ops/bench/engine.py --rates 250 500 --modes no-early-open --mode-rates 250 500``).
    open_transaction_early: bool = True
    #: Score each batch on a thread of its own while the main thread prepares the next
    #: batch and finishes the previous one. ``infer_process`` turns it on (the thread
    #: waits for the model process). With the model in the worker's own process it is
    #: off by default: the forward pass's many short ops then wait for the GIL behind
    #: the main thread's Python (ops/bench/engine.py measured more worker CPU per event).
    infer_thread: bool = False
    #: Run the forward pass in a child process (``engine.worker.infer_process``), so it uses a
    #: core the loop's Python cannot (the GIL); it turns ``infer_thread`` on (that thread
    #: waits for the child while the main thread prepares the next batch). On by default
    #: because it raises saturation throughput; it costs a second process per worker
    #: (PyTorch and the model). ``python ops/bench/engine.py --modes`` compares it with
    #: one process; figures in docs/performance.md.
    infer_process: bool = True
    #: With ``infer_process``: only batches of at least this many rows (events plus the
    #: text-blind twins of those with a memo) go to the model process; smaller ones are
    #: scored in the worker's own process (``engine.worker.infer_process.SplitInference``),
    #: where a quiet stream's batch is quicker than a round trip to the child (p50 at
    #: 250 events/s: ``python ops/bench/engine.py --rates 250 --modes split-64 --mode-rates
    #: 250``). 1 sends every batch to the child and keeps PyTorch and a second copy of the
    #: model out of the worker (``python ops/bench/worker_memory.py`` measures the memory);
    #: figures for both in docs/performance-worker.md.
    process_min_rows: int = Field(default=64, ge=1)
    #: With ``infer_process``: a model process that a hot swap replaced stays, PyTorch
    #: imported, as the spare the next swap loads its model into, so a swap after the
    #: first starts no interpreter: the import is what paused the stream around a swap
    #: (``python ops/bench/hotswap.py --modes import-control,model-process``). Costs a
    #: second, idle model process per worker once one swap has happened
    #: (``python ops/bench/worker_memory.py``; figures in docs/performance-worker.md).
    spare_model_process: bool = True
    #: PyTorch intra-op threads for the forward pass (0 = PyTorch's default, one per
    #: core). 1 by default: the worker shares its cores with the Kafka client's threads
    #: (and, on small hosts, the broker and Redis), where spinning OpenMP threads cost
    #: more than they gain. ``python ops/bench/engine.py --modes`` compares 0 against 1;
    #: figures in docs/performance.md.
    torch_threads: int = Field(default=1, ge=0)
    #: BLAS (OpenBLAS) threads in the worker's own process, where NumPy's matrix products
    #: run the detector's n-gram network and the sentence encoder's numpy code (0 = the
    #: library's default, one per core). 1 by default: OpenBLAS's second thread spent a
    #: second core on the batched detector for no more texts per second, CPU the model
    #: process, the broker and Redis share (``python ops/bench/detector.py --blas-threads
    #: 0`` against ``1``; the stream at 5 % memos could not tell them apart, ``python
    #: ops/bench/engine.py --modes blas-threads-per-core``; figures in docs/performance.md).
    blas_threads: int = Field(default=1, ge=0)
    #: With ``infer_thread``: how many of a backlog's batches may be on the threads (being
    #: prepared or scored) while the main thread finishes an older one. 2 keeps the
    #: model process fed: one batch is scored while the next is prepared.
    #: ``python ops/bench/engine.py --modes`` compares it with 1; figures in docs/performance.md.
    backlog_depth: int = Field(default=2, ge=1, le=4)


class ModelSettings(_Frozen):
    #: What serves a model directory: ``auto`` = the graph its card names (``tollgate
    #: model export``), else PyTorch; ``torch`` = always the safetensors weights;
    #: ``onnx`` / ``torchscript`` = that exported graph, refused if the directory has none.
    #: ``python ops/bench/model.py --runtimes`` compares them.
    runtime: Literal["auto", "torch", "onnx", "torchscript"] = "auto"
    #: ``onnx``: every version the registry stores (quickstart, ``tollgate model
    #: bootstrap``, a fine-tune's candidate) and every ``tollgate train`` output gets an
    #: ONNX fp32 graph of its own weights beside them (``engine.model.export.add_serving_graph``),
    #: which ``auto`` serves without PyTorch: faster restarts and less CPU per event
    #: (``python ops/bench/restart.py --runtimes torch,onnx``, ``python ops/bench/engine.py
    #: --modes torch-runtime``; figures in docs/performance-worker.md).
    #: ``none``: weights only, served by PyTorch.
    serving_graph: Literal["onnx", "none"] = "onnx"


class WorkerSettings(_Frozen):
    """Supervision of the engine worker: bounds, stop time, stall exit, re-send dedupe and
    the Redis hold (``docs/operations.md`` explains each)."""

    #: Timeout handed to each transactional librdkafka call (init, send offsets, commit, abort).
    kafka_call_timeout_s: float = Field(default=10.0, gt=0)
    #: Watchdog bound on each such call: some ignore their timeout (librdkafka #5456,
    #: #5511); past this the worker exits non-zero and is restarted (engine.worker.watchdog).
    kafka_call_bound_s: float = Field(default=20.0, gt=0)
    #: SIGTERM ends the process within this: drain and commit what it can, then exit
    #: anyway (exit code 5). Keep it below the orchestrator's grace period (compose: 30 s).
    stop_timeout_s: float = Field(default=20.0, gt=0)
    #: No committed transaction and no idle poll for this long: /healthz and /readyz say
    #: 503 and, with ``exit_when_stalled``, the process exits (code 4) to be restarted.
    stall_after_s: float = Field(default=60.0, gt=0)
    #: Exit when stalled, so any supervisor that restarts exited processes (compose
    #: ``restart:``, systemd, Kubernetes) also restarts a stalled worker.
    exit_when_stalled: bool = True
    #: A re-sent event id (same id, any partition or offset) is dropped and counted for
    #: this long after its first record; 0 turns the check off (engine.worker.dedupe).
    dedupe_horizon_s: int = Field(default=7 * 24 * 3600, ge=0)
    #: Redis down: hold a batch and retry with back-off until its events have waited this
    #: long; only then decide them without context (review). 0: degrade at once.
    redis_hold_s: float = Field(default=5.0, ge=0)
    #: Join the group with ``group.instance.id`` = worker id (KIP-345), so a worker
    #: restarted under the same id after a crash gets its partitions back without
    #: waiting for the dead one's session timeout (10 s; ``python ops/bench/restart.py
    #: --modes static,dynamic --stops kill,term``, figures in docs/performance-worker.md).
    #: A clean stop still leaves the group, so a scaled-down worker's partitions move at
    #: once (``EventConsumer.close``). The worker id must be unique per group either
    #: way: it is the transactional id too. False: dynamic membership.
    static_membership: bool = True
    #: The cyclic garbage collector's youngest-generation threshold once the worker is
    #: ready (Python's default: 700 allocations). A batch allocates tens of thousands of
    #: containers, so at 700 the main thread stopped for a young collection dozens of times
    #: per batch, and for a middle-aged one every tenth, though reference counting frees
    #: nearly all of those objects anyway (the collector only looks for cycles).
    #: ``python ops/bench/engine_ab.py`` against a tree at 700, or ``python
    #: ops/bench/engine.py --modes gc-python-default``; figures in docs/performance.md.
    gc_young_threshold: int = Field(default=20_000, ge=1)


class PolicySettings(_Frozen):
    """Defaults for the decision policy; a rule set may override them (rules/policy.yaml)."""

    #: Verdict thresholds on the calibrated probabilities (see engine/stages/decide.py):
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


class DetectorSettings(_Frozen):
    #: Judge screened-in user text with the multilingual sentence encoder (the shipped
    #: detector's quality). False serves the screen head alone at its own validated
    #: threshold: far less CPU for long text, lower recall on paraphrases and unfamiliar
    #: languages (``python ops/bench/detector.py``; docs/detector.md, "Two modes").
    sentence_encoder: bool = True
    #: How the sentence encoder's arithmetic runs. ``onnx-fp32``: its graph in onnxruntime,
    #: the numpy embeddings to float rounding, at the artifact's threshold, faster than
    #: ``numpy`` (the package's own code). ``onnx-int8``: its products in int8, faster
    #: again, at a threshold chosen for it on the same validation rows, with a little less
    #: recall, so not the default (``python ops/bench/detector.py --encoder-runtimes numpy
    #: onnx-fp32 onnx-int8``; figures in docs/detector.md, "Encoder runtimes").
    encoder_runtime: Literal["numpy", "onnx-fp32", "onnx-int8"] = "onnx-fp32"
    #: Give the merchant descriptor its own head's opinion too (it can only add flags;
    #: docs/detector.md, "The descriptor head"). False serves the network alone: fewer
    #: descriptor attacks caught, a little less CPU per new shop line
    #: (``python ops/bench/engine_profile.py``).
    descriptor_head: bool = True


class FeatureSettings(_Frozen):
    #: Which of a customer's past events fill the history window the model reads:
    #: ``recent`` = the last 16; ``relevance`` = a pre-filtered, time-decayed choice from
    #: the 30 days the store keeps (``engine.features.history``). Part of the feature
    #: schema: a model serves only with the order it was trained on, so the stream,
    #: training, backtests and every entry point read this one setting.
    history_order: Literal["recent", "relevance"] = "recent"


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
    #: Bearer token for /v1/decide and /metrics. ``tollgate serve`` refuses to bind a
    #: non-loopback address without one; an empty token is an error, never "no auth".
    api_token: SecretStr | None = None
    #: Record the events scored over HTTP into the stream's live Redis context (its
    #: customer history and decision log), as the stream would. Off: the service only
    #: reads context, so a caller can never change what the stream decides. Needs a token.
    record_context: bool = False
    max_request_bytes: int = Field(default=1_048_576, ge=1)
    max_events_per_request: int = Field(default=1000, ge=1)
    #: A request body must arrive whole within this many seconds (else 408): a client
    #: that stalls mid-body must not hold a connection and its memory for ever.
    body_timeout_s: float = Field(default=10.0, gt=0)
    #: Events waiting to be scored, all clients together. A request that would pass it
    #: is answered 503 at once (with Retry-After) instead of waiting behind the backlog.
    max_queued_events: int = Field(default=4096, ge=1)
    #: Events one client (its bearer token and peer address) may have waiting or being
    #: scored; beyond it 429 at once. Clients are served round-robin, a chunk of at most
    #: ``batch.max_events`` events each, so a client looping huge batches only slows itself.
    max_client_queued_events: int = Field(default=2048, ge=1)
    #: Memo and descriptor characters one client's turn (and one batch) may carry: long
    #: memos are what make an event slow to score, so a heavy client's turn stays short.
    #: One longest memo (16 Ki): a healthy client waited less behind memo-heavy ones than
    #: with 64 Ki, for less throughput of theirs
    #: (``python ops/bench/serve_fairness.py --turn-chars 65536 16384``).
    turn_text_chars: int = Field(default=16_384, ge=1)

    @model_validator(mode="after")
    def _closed_by_default(self) -> HttpSettings:
        if self.api_token is not None and not self.api_token.get_secret_value().strip():
            raise ValueError("http.api_token (TOLLGATE_HTTP__API_TOKEN) is set but empty: an empty token "
                             "would accept every caller; unset it or set a real token")
        if self.max_client_queued_events > self.max_queued_events:
            raise ValueError("http.max_client_queued_events must not exceed http.max_queued_events")
        if self.record_context and self.api_token is None:
            raise ValueError("http.record_context (TOLLGATE_HTTP__RECORD_CONTEXT) writes into the stream's "
                             "state and needs http.api_token (TOLLGATE_HTTP__API_TOKEN)")
        return self


class GateSettings(_Frozen):
    """The promotion gate's bars (``feedback.learn.gate``): how much worse than the serving
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
    #: Which verdicts the recall, F1 and migration bars judge: "final" (after detector
    #: and hard rules, what consumers receive) or "model" (model + policy alone).
    judge: Literal["final", "model"] = "final"


class TrustSettings(_Frozen):
    """What outcomes may teach the model (``feedback.trust``; ``docs/feedback.md``).
    ``TOLLGATE_FEEDBACK__TRUST__TRUSTED_SOURCES='["review_queue"]'``."""

    #: Sources whose outcomes form the gate's held-out set and are never trained on:
    #: analysts' confirmed reviews by default (the simulator and quickstart publish them
    #: on ``trusted_topic``). Without any trusted held-out outcome nothing is promoted,
    #: unless ``allow_untrusted_heldout``: a yardstick the poisoner writes cannot clear a
    #: model trained on the same poison (docs/feedback.md).
    trusted_sources: tuple[str, ...] = ("review_queue",)
    #: The topic only trusted sources may write (Kafka ACLs). An outcome that claims a
    #: trusted source on any other topic is demoted to ``untrusted:<source>``.
    trusted_topic: str | None = "tx.outcomes.trusted"
    #: Opt back in to the old hash share of event ids as the held-out set when no trusted
    #: source is configured (the gate's report says ``heldout.trusted: false``).
    allow_untrusted_heldout: bool = False
    #: One customer's rows weigh at most this many examples per cycle.
    max_customer_examples: float = 20.0
    #: One source holds at most this share of a cycle's training weight.
    max_source_share: float = 0.7
    #: Label-shift alarm: the new window's bad rate (overall or one source's) may move
    #: at most this far from the recent past's, unless within noise (z <= min_z).
    max_bad_rate_shift: float = 0.1
    #: The same bound for one source's labels. Sources are nearly pure by kind (an
    #: issuer sends chargebacks, customers confirm good payments), so a flip moves them
    #: far more than the mix: ``ops/bench/label_shift.py``.
    max_source_shift: float = 0.05
    min_z: float = 4.0
    shift_min_examples: int = 30
    #: How far back the "recent past" of the label-shift alarm reaches.
    shift_past_days: float = 14.0


class FeedbackSettings(_Frozen):
    fine_tune_interval_hours: float = 4.0
    consumer_group: str = "tollgate-feedback"
    gate: GateSettings = Field(default_factory=GateSettings)
    trust: TrustSettings = Field(default_factory=TrustSettings)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TOLLGATE_", env_nested_delimiter="__", frozen=True, extra="ignore"
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicSettings = Field(default_factory=TopicSettings)
    redis: RedisSettings = Field(default_factory=RedisSettings)
    batch: BatchSettings = Field(default_factory=BatchSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    detector: DetectorSettings = Field(default_factory=DetectorSettings)
    features: FeatureSettings = Field(default_factory=FeatureSettings)
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
