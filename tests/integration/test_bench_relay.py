"""The benchmark's floor (``ops/bench/engine_relay.py``) against the real broker: what
``ops/bench/engine.py`` reports as "what exactly-once costs before the worker decides
anything" must itself be exactly once — every event relayed once, in committed
transactions, with the group's offsets committed up to the last one — in both orders of
calls it can compare (``--floor-ab``)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from engine.wire.codec import Codec
from tests.support.worker_support import (
    REPO,
    make_events,
    produce_events,
    read_committed,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("relay_args", [(), ("--records-first",)], ids=["offsets-first", "records-first"])
def test_the_relay_passes_every_event_once_and_commits_the_group_offsets(wenv, relay_args):
    codec, n = Codec(), 300
    relay = subprocess.Popen([sys.executable, "-m", "ops.bench.engine_relay", *relay_args], env=wenv.env(),
                             cwd=str(REPO), stdout=subprocess.PIPE, text=True)
    try:
        assert relay.stdout.readline().strip() == "relay ready"
        produce_events(wenv.bootstrap, wenv.events, make_events(wenv.unique, n), codec)
        relayed = read_committed(wenv.bootstrap, wenv.verdicts, n, timeout=60)
        ids = Counter(codec.decode_event(m.value()).event_id for m in relayed)
        assert len(relayed) == n and len(ids) == n  # each once, unchanged

        group = Consumer({"bootstrap.servers": wenv.bootstrap, "group.id": f"engine-{wenv.unique}"})
        try:
            parts = group.list_topics(wenv.events, timeout=10).topics[wenv.events].partitions

            def committed() -> int:
                got = group.committed([TopicPartition(wenv.events, p) for p in parts], timeout=10)
                return sum(max(tp.offset, 0) for tp in got)

            wait_until(lambda: committed() == n, 20, "the group's offsets to reach every event")
        finally:
            group.close()
    finally:
        relay.terminate()
        assert relay.wait(30) == 0
