"""One verdict per event id: an upstream re-send is dropped, and counted.

Payment gateways retry, so the same event id can arrive again — on another partition,
at another offset, after a restart. ``ReSendFilter`` gives each event id to the Kafka
record that first carried it: one ``SET {p}:seen:{event_id} <topic:partition:offset>
NX GET EX horizon`` per event, all in one round trip per batch (on one Redis, one script
call with the batch as a single argument and a single reply; on a Redis Cluster, whose
keys spread over slots, a pipeline). The record that
set the key *owns* the id; any other record with that id is a re-send, dropped (no
verdict; its offset still commits) and counted in ``tollgate_resent_events_total``.

Why keyed by position and not "already decided": a worker killed after this write but
before its Kafka transaction committed leaves the claim behind with no verdict. The
owner record was not committed, so Kafka gives it again — to the restarted worker or,
after a rebalance, to another one — and it matches its own claim, so it is decided
(exactly once, by the transaction). A re-send never owns the id, so it can never take
the verdict away from the original, whichever of them is read first after a crash.

The claim lives ``settings.worker.dedupe_horizon_s`` (default 7 days): about 100 bytes
of Redis per event id for that long. A re-send after the horizon, or after Redis lost
its data, is decided again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import redis
from redis.cluster import RedisCluster

from engine.features.store import ContextUnavailable
from engine.records import TransactionEvent
from engine.wire.redisconn import reply_text

#: The batch's claims in order (so a second record of an id in the same batch sees the
#: first's claim), answered as one string of "1" (owns its id) and "0" (a re-send): a
#: redis-py pipeline packs each command and parses each reply in Python, on the main
#: thread (py-spy on ``python ops/bench/engine.py --rates``; docs/performance.md, "The
#: worker's own CPU at saturation").
_CLAIM = """
local claims, ttl, out = cjson.decode(ARGV[2]), ARGV[1], {}
for i, c in ipairs(claims) do
  local old = redis.call('SET', c[1], c[2], 'NX', 'GET', 'EX', ttl)
  if (not old) or old == c[2] then out[i] = '1' else out[i] = '0' end
end
return table.concat(out)
"""


def position_of(event: TransactionEvent) -> str:
    """The identity of the record that carried ``event``: topic:partition:offset."""
    src = event.source
    if src is None:
        raise ValueError(f"event {event.event_id} has no source position")
    return f"{src.topic}:{src.partition}:{src.offset}"


class ReSendFilter:
    """Which events of a batch own their id (keep) and which are re-sends (drop)."""

    def __init__(self, client: redis.Redis | RedisCluster, key_prefix: str, horizon_s: int):
        if horizon_s <= 0:
            raise ValueError("horizon_s must be positive (0 means: build no filter)")
        self._client = client
        self._prefix = f"{key_prefix}:seen:"
        self.horizon_s = int(horizon_s)
        self._claim = None if isinstance(client, RedisCluster) else client.register_script(_CLAIM)

    def owners(self, events: Sequence[TransactionEvent]) -> list[bool]:
        """True per event that owns its id (first record to carry it, or that record
        again after a redo). Raises ``ContextUnavailable`` when Redis cannot answer."""
        if not events:
            return []
        positions = [position_of(e) for e in events]
        prefix = self._prefix
        try:
            if self._claim is not None:
                claims = [[prefix + e.event_id, p] for e, p in zip(events, positions)]
                answer = self._claim(args=[self.horizon_s, orjson.dumps(claims)])
                if len(answer) != len(events):
                    raise ContextUnavailable(f"re-send check: {len(answer)} answers for {len(events)} events")
                return [c in (49, "1") for c in answer]  # bytes iterate as ints, str as characters
            pipe = self._client.pipeline(transaction=False)
            for event, position in zip(events, positions):
                pipe.set(prefix + event.event_id, position, nx=True, get=True, ex=self.horizon_s)
            previous: list[Any] = pipe.execute()
        except redis.exceptions.RedisError as exc:
            raise ContextUnavailable(f"re-send check: {exc}") from exc
        return [old is None or reply_text(old) == position for old, position in zip(previous, positions)]
