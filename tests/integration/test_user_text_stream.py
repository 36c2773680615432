"""User text can never lower a verdict or a risk score, through the stream (issue 22): a
real ``tollgate run`` worker on the real broker and Redis.

The cases are ``tests/support/user_text_cases.py``'s (the API, HTTP and CLI run them in
``tests/unit/test_user_text_cannot_lower.py``): each simulated event first without any
user text, then once per text variant with the same event id, so the Redis feature
store gives every variant the snapshot it recorded first and only the text differs
(the worker's re-send filter is off here: each variant is a re-send of its event id).
One partition in and out, so verdicts come back in the order the events were sent
(``violations`` checks every event id against its position).
"""

from __future__ import annotations

import pytest

from engine.wire.codec import Codec
from tests.integration.test_serve import make_model_dir
from tests.support.user_text_cases import lowered_count, variant_events, variants, violations
from tests.support.worker_support import (
    WorkerEnv,
    WorkerProcess,
    delete_prefix,
    produce_events,
    read_verdicts,
)

pytestmark = [pytest.mark.integration]

N_EVENTS = 15


def test_stream_worker_never_lets_user_text_lower_a_verdict(stack, unique, kafka_topics, redis_client, tmp_path):
    from engine.offline.simulate.frames import events_from_frame
    from engine.offline.simulate.simulator import SimConfig, Simulator

    day = next(iter(Simulator(SimConfig(customers=60, terminals=120, days=1, seed=22)).days()))
    events = events_from_frame(day.events)[:N_EVENTS]
    plan = variants()
    batches = variant_events(events, plan)
    models_dir = tmp_path / "models"
    make_model_dir(models_dir, "t-usertext")
    wenv = WorkerEnv(stack.kafka_bootstrap, stack.redis_url, unique,
                     events=kafka_topics("tx.events", 1), verdicts=kafka_topics("tx.verdicts", 1),
                     dead_letters=kafka_topics("tx.events.dlq", 1), models_dir=models_dir,
                     # Every variant re-sends its event's id on purpose (same context, other
                     # text); the worker's re-send filter would answer all but the first.
                     extra={"TOLLGATE_WORKER__DEDUPE_HORIZON_S": "0"})
    redis_client.set(f"{wenv.key_prefix}:model:serving", "t-usertext")
    flat_events = [e for batch in batches for e in batch]
    try:
        worker = WorkerProcess(wenv, f"usertext-{unique}", tmp_path, "--no-hot-swap", "--pinned-rules")
        try:
            produce_events(stack.kafka_bootstrap, wenv.events, flat_events, Codec())
            flat = read_verdicts(stack.kafka_bootstrap, wenv.verdicts, len(flat_events), Codec(),
                                 timeout=120 + len(flat_events) / 10, settle_s=1.0)  # generous: shared CI machines
        finally:
            worker.terminate()
        assert len(flat) == len(flat_events), worker.tail()
        verdicts = [flat[k * len(events):(k + 1) * len(events)] for k in range(len(plan))]
        bad = violations(events, plan, verdicts)
        assert not bad, f"{len(bad)} violations, e.g. " + "; ".join(bad[:5])
        assert lowered_count(verdicts) > 0  # the text really would have lowered some: not vacuous
        assert len({v.verdict for v in flat}) >= 2
    finally:
        delete_prefix(redis_client, wenv.key_prefix)
