"""Prometheus metrics of the feedback worker, served on ``settings.feedback.metrics_port``
(docker-compose's Prometheus scrapes ``feedback:9401``)."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, start_http_server


class FeedbackMetrics:
    def __init__(self, registry: CollectorRegistry = REGISTRY):
        self.messages = Counter("tollgate_feedback_messages_total",
                                "Verdicts, outcomes and events consumed by the feedback worker",
                                ["kind"], registry=registry)
        self.undecodable = Counter("tollgate_feedback_undecodable_total",
                                   "Messages skipped because they could not be decoded",
                                   ["kind"], registry=registry)
        self.joined = Counter("tollgate_feedback_joined_total",
                              "Outcomes joined to their verdict and decision log", registry=registry)
        self.labels_written = Counter("tollgate_feedback_labels_written_total",
                                      "Labelled examples appended to the Parquet store", registry=registry)
        self.decisions_written = Counter("tollgate_feedback_decisions_written_total",
                                         "Decisions appended to the Parquet store", registry=registry)
        # Past the snapshots' time in Redis (redis.decision_log_redis_hours) a decision is
        # written without its inputs; ops/prometheus/alerts.yml fires at half of it.
        self.decision_lag = Gauge("tollgate_feedback_decision_lag_seconds",
                                  "Age of the oldest decision in the last flush (now minus decided_at)",
                                  registry=registry)
        self.decision_log_redis = Gauge("tollgate_feedback_decision_log_redis_seconds",
                                        "How long a snapshot stays in Redis (redis.decision_log_redis_hours, "
                                        "or the retention)", registry=registry)
        self.pending = Gauge("tollgate_feedback_pending",
                             "Join records waiting for the next flush, by store", ["store"], registry=registry)
        self.awaiting_verdict = Gauge("tollgate_feedback_awaiting_verdict",
                                      "Outcomes waiting for a verdict Redis may no longer hold "
                                      "(redis.decision_log_redis_hours)", registry=registry)
        self.last_flush = Gauge("tollgate_feedback_last_flush_timestamp_seconds",
                                "Wall-clock time of the last Parquet flush", registry=registry)

    @staticmethod
    def serve(port: int, host: str = "0.0.0.0") -> None:
        """Expose /metrics on ``host:port`` from a daemon thread."""
        start_http_server(port, addr=host)
