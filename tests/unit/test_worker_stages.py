"""The worker's own stages without servers: decode → dead letters, offsets bookkeeping,
emit configuration and headers, hot-swap watcher, health endpoints, metrics."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from engine.observe.health import HealthServer, HealthState
from engine.observe.metrics import EngineMetrics
from engine.records import Decision, Reason, ReasonKind, TransactionEvent, Verdict
from engine.settings import KafkaSettings, Settings
from engine.stages.consume import RawRecord, consumer_config
from engine.stages.decode import Decoded, DecodeStage
from engine.stages.emit import dead_letter_headers, producer_config
from engine.wire.codec import JSON_HEADERS, Codec
from engine.worker.hotswap import ModelWatcher
from engine.worker.inflight import InFlight, first_offsets
from engine.worker.warmup import synthetic_events
from tests.support.events import event
from tests.support.fake_redis import FakeRedis


def _event(i: int, **kw) -> TransactionEvent:
    return event(i, **{"customer_id": f"c{i % 3}", "account_id": "a", "terminal_id": "t", "amount": 10.0 + i, **kw})


def _rec(offset: int, value: bytes | None, partition: int = 0, headers=()) -> RawRecord:
    return RawRecord("tx.events", partition, offset, b"key", value, tuple(headers), 0, 1000.0 + offset)


def test_decode_keeps_good_events_in_order_and_dead_letters_the_rest():
    codec = Codec()
    good = [codec.encode_event(_event(i)) for i in range(3)]
    out_of_range = codec.events.encode(_event(9, amount=-5.0), validate=False)
    records = [_rec(0, good[0]), _rec(1, b"\x00\x00\x00\x00\x01garbage"), _rec(2, good[1]),
               _rec(3, out_of_range), _rec(4, None), _rec(5, b'{"event_id": 1}', headers=JSON_HEADERS),
               _rec(6, good[2])]
    out = DecodeStage(codec)(records)
    assert [e.event_id for e in out.events] == ["e0", "e1", "e2"]
    assert [e.source.offset for e in out.events] == [0, 2, 6]
    assert out.arrival_ms == [1000.0, 1002.0, 1006.0]
    by_offset = {d.source_offset: d for d in out.dead_letters}
    assert sorted(by_offset) == [1, 3, 4, 5]
    assert by_offset[1].stage == "decode"
    assert by_offset[3].stage == "validate" and by_offset[3].error_class == "EventValidationError"
    assert "amount" in by_offset[3].error_message
    assert by_offset[3].original_value == out_of_range  # byte for byte
    assert by_offset[3].original_key == b"key"
    assert by_offset[5].stage == "validate"


def test_dead_letter_headers_name_stage_error_and_source():
    codec = Codec()
    dl = DecodeStage(codec)([_rec(41, b"junk", partition=2)]).dead_letters[0]
    h = dict(dead_letter_headers(dl))
    assert h["tollgate.dlq.stage"] == b"decode"
    assert h["tollgate.dlq.error_class"] == b"ValueError"
    assert b"magic byte" in h["tollgate.dlq.error_message"]
    assert (h["tollgate.dlq.source_topic"], h["tollgate.dlq.source_partition"],
            h["tollgate.dlq.source_offset"]) == (b"tx.events", b"2", b"41")
    body = codec.decode_dead_letter(codec.encode_dead_letter(dl))
    assert body.original_value == b"junk" and body.source_offset == 41


def test_offsets_cover_every_record_of_the_batch_including_dead_letters():
    records = [_rec(5, b"", 0), _rec(9, b"", 1), _rec(6, b"", 0), _rec(7, b"", 0), _rec(8, b"", 1)]
    assert InFlight(records, Decoded([], [], [])).next_offsets() == {("tx.events", 0): 8, ("tx.events", 1): 10}
    assert first_offsets([records]) == {("tx.events", 0): 5, ("tx.events", 1): 8}


def test_client_configs_are_exactly_once_shaped():
    s = Settings(kafka=KafkaSettings(transactional_id_prefix="tg-test", extra={"client.rack": "r1"}))
    c = consumer_config(s, "g1")
    assert c["group.id"] == "g1" and c["isolation.level"] == "read_committed"
    assert c["enable.auto.commit"] is False and c["enable.auto.offset.store"] is False
    assert c["client.rack"] == "r1"  # librdkafka extras pass through
    p = producer_config(s, "worker-3")
    assert p["transactional.id"] == "tg-test-worker-3"  # stable per worker: fences its zombie
    assert p["enable.idempotence"] is True and p["acks"] == "all"


def test_synthetic_events_are_valid_and_reserved():
    evs = synthetic_events(10)
    assert len({e.event_id for e in evs}) == 10
    for e in evs:
        e.validate()
        assert e.customer_id.startswith("__warmup__") and e.terminal_id.startswith("__warmup__")


class _Pipeline:
    def __init__(self):
        self.swaps: list[dict] = []
        self.model_version, self.rules_version = "v1", "r1"

    def swap(self, **changes):
        self.swaps.append(changes)
        self.model_version = changes["model_version"]


def test_hotswap_loads_in_background_swaps_between_batches_and_refuses_bad_models(tmp_path: Path):
    redis = FakeRedis()
    loaded: list[Path] = []

    def load(path: Path) -> dict:
        loaded.append(path)
        if path.name == "broken":
            raise ValueError("weights do not match card")
        return {"inference": object(), "model_version": path.name}

    watcher = ModelWatcher(redis, "tg", tmp_path, load, current_version="v1")
    metrics, pipeline = EngineMetrics(), _Pipeline()
    assert watcher.check_once(metrics) is None  # no pointer yet
    redis.set("tg:model:serving", "v1")
    assert watcher.check_once(metrics) is None and loaded == []  # already serving
    redis.set("tg:model:serving", "v2")
    assert watcher.check_once(metrics) == "v2"
    assert pipeline.swaps == []  # loading never touches the live pipeline
    assert watcher.apply_ready(pipeline, metrics) == "v2"
    assert pipeline.swaps[0]["model_version"] == "v2" and watcher.current_version == "v2"
    assert watcher.apply_ready(pipeline, metrics) is None  # nothing pending
    redis.set("tg:model:serving", "broken")
    assert watcher.check_once(metrics) is None
    assert "broken" in watcher.refused and watcher.current_version == "v2"
    assert watcher.check_once(metrics) is None and loaded.count(tmp_path / "broken") == 1  # not retried
    text = metrics.render().decode()
    assert 'tollgate_model_swaps_total{result="refused"} 1.0' in text
    assert 'tollgate_model_info{version="v2"} 1.0' in text


def test_health_endpoints_follow_warmup_and_stop():
    state = HealthState(stall_after_s=60)
    metrics = EngineMetrics()
    server = HealthServer(state, metrics.render, port=0).start()
    base = f"http://127.0.0.1:{server.port}"

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        assert get("/healthz")[0] == 200
        assert get("/readyz") == (503, "warming up\n")
        state.mark_ready()
        assert get("/readyz")[0] == 200
        assert "tollgate_batch_size" in get("/metrics")[1]
        state.mark_stopping()
        assert get("/readyz") == (503, "stopping\n")
        assert get("/nope")[0] == 404
    finally:
        server.stop()


def test_liveness_fails_when_the_loop_stalls():
    t = [0.0]
    state = HealthState(stall_after_s=5, clock=lambda: t[0])
    t[0] = 6.0
    assert state.liveness()[0] is False
    state.beat()
    assert state.liveness() == (True, "ok")


def test_committed_verdict_metrics_count_outcomes_reasons_and_degraded_mode():
    m = EngineMetrics()
    def verdict(i: int, code: str) -> Verdict:
        return Verdict(event_id=f"e{i}", customer_id="c", verdict=Decision.REVIEW, confidence=0.5,
                       probabilities={"pass": 0.5, "review": 0.3, "reject": 0.2}, risk_score=0.1,
                       reasons=(Reason(ReasonKind.POLICY, code),), model_version="m7",
                       rules_version="r3", decision_latency_ms=1.0, decided_at_ms=0, event_time_ms=1000)
    m.observe_committed([verdict(1, "context_unavailable"), verdict(2, "abstain")], [990.0, 995.0],
                        committed_ms=1000.0)
    text = m.render().decode()
    assert 'tollgate_verdicts_total{reason="policy:context_unavailable",verdict="review"} 1.0' in text
    assert "tollgate_degraded 1.0" in text and "tollgate_degraded_verdicts_total 1.0" in text
    assert 'tollgate_e2e_from_arrival_ms_bucket{le="5.0"} 1.0' in text  # 5 ms and 10 ms
    assert 'tollgate_rules_info{version="r3"} 1.0' in text


def test_json_log_lines_carry_extra_fields(capsys):
    import logging

    from engine.observe.metrics import JsonFormatter
    rec = logging.LogRecord("tollgate.worker", logging.INFO, __file__, 1, "batch", (), None)
    rec.partition = 3
    line = json.loads(JsonFormatter().format(rec))
    assert line["msg"] == "batch" and line["partition"] == 3 and line["level"] == "info"
