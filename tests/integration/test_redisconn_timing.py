"""``engine.wire.redisconn.TimedConnection``: a timed-out Redis reply is logged with the
thread that waited for it, and the command still fails as redis-py's own would (the
worker treats that as Redis unavailable). Real Redis: BLPOP on an empty key blocks only
this client, past its socket timeout."""

from __future__ import annotations

import logging
import threading

import redis

from engine.wire.redisconn import TimedConnection, connect


def test_a_timed_out_reply_is_logged_with_its_thread_and_still_raises(stack, unique, caplog):
    client = connect(stack.redis_url, socket_timeout_s=0.2)
    assert isinstance(client.connection_pool.make_connection(), TimedConnection)
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            client.blpop([f"{unique}:empty"], timeout=2)
        except BaseException as exc:  # noqa: BLE001 - the assertion below names it
            raised.append(exc)

    with caplog.at_level(logging.WARNING, logger="tollgate.redis"):
        waiter = threading.Thread(target=wait, name=f"waiter-{unique}")
        waiter.start()
        waiter.join(30)
    assert len(raised) == 1 and isinstance(raised[0], redis.exceptions.TimeoutError)
    slow = [r for r in caplog.records if r.getMessage() == "slow Redis reply"]
    assert slow and slow[0].__dict__["waiting_thread"] == f"waiter-{unique}"
    assert slow[0].__dict__["outcome"] == "timeout" and slow[0].__dict__["command"] == "BLPOP"
    assert client.ping() is True  # a fast reply afterwards is not logged
    assert len([r for r in caplog.records if r.getMessage() == "slow Redis reply"]) == len(slow)
    client.close()

