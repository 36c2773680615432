"""A broker crash while a backlog is being decided (issue 20, item 1).

The broker is SIGKILLed mid-backlog and restarted with ``ops/stack up``. The worker
must not hang: either it recovers in its own process, or a bounded wait runs out and
it exits non-zero — the documented design (``docs/operations.md``) — and its
supervisor restarts it. Here the test is that supervisor, and only that: it restarts
an exited worker, exactly as Compose's ``restart: unless-stopped`` would, and never
kills or restarts a running one. In the end every event has exactly one committed
verdict, and SIGTERM ends the worker within its stop deadline.

This test stops a broker, so it runs on a PRIVATE stack (own ports, own state dir);
the session's shared stack is never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from collections import Counter
from pathlib import Path

import pytest
import redis

from engine.wire.codec import Codec
from tests.conftest import _free_ports, stack_up
from tests.support.worker_support import (
    REPO,
    WorkerEnv,
    WorkerProcess,
    make_events,
    produce_events,
    read_committed,
    read_verdicts,
    save_fresh_model,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N_EVENTS = 6_000
#: Short bounds so the test needs minutes, not the production defaults' tens of seconds.
WORKER_ENV = {"TOLLGATE_WORKER__KAFKA_CALL_TIMEOUT_S": "5", "TOLLGATE_WORKER__KAFKA_CALL_BOUND_S": "10",
              "TOLLGATE_WORKER__STALL_AFTER_S": "30", "TOLLGATE_WORKER__STOP_TIMEOUT_S": "15",
              "TOLLGATE_KAFKA__TRANSACTION_TIMEOUT_MS": "30000"}


class PrivateStack:
    def __init__(self) -> None:
        self.state_dir = Path(tempfile.mkdtemp(prefix="tollgate-crash-stack-"))
        kafka_port, controller_port, redis_port = _free_ports(3)
        self.env = dict(os.environ, TOLLGATE_STATE_DIR=str(self.state_dir), TOLLGATE_KAFKA_PORT=str(kafka_port),
                        TOLLGATE_KAFKA_CONTROLLER_PORT=str(controller_port), TOLLGATE_REDIS_PORT=str(redis_port))
        self.bootstrap = f"127.0.0.1:{kafka_port}"
        self.redis_url = f"redis://127.0.0.1:{redis_port}/0"

    def up(self) -> None:
        stack_up(["up"], self.env)

    def down(self) -> None:
        subprocess.run([str(REPO / "ops" / "stack"), "down"], env=self.env, timeout=180, capture_output=True)

    def sigkill_broker(self) -> None:
        pid = int((self.state_dir / "kafka.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 60, "the broker to die")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class Supervisor:
    """Restarts the worker whenever it has exited, as Compose's restart policy does."""

    def __init__(self, wenv: WorkerEnv, log_dir: Path):
        self.wenv, self.log_dir = wenv, log_dir
        self.worker = WorkerProcess(wenv, "w1", log_dir, **WORKER_ENV)
        self.exits: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            rc = self.worker.proc.poll()
            if rc is not None and not self._stop.is_set():
                self.exits.append(rc)
                self.worker = WorkerProcess(self.wenv, "w1", self.log_dir, **WORKER_ENV)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _topics(bootstrap: str, unique: str) -> tuple[str, str, str]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = (f"tx.events.{unique}", f"tx.verdicts.{unique}", f"tx.events.dlq.{unique}")
    futures = admin.create_topics([NewTopic(names[0], 4, 1), NewTopic(names[1], 4, 1), NewTopic(names[2], 1, 1)])
    for f in futures.values():
        f.result(timeout=60)
    return names


def test_broker_sigkill_mid_backlog_never_hangs_the_worker_and_loses_or_doubles_nothing(tmp_path, unique):
    stack = PrivateStack()
    supervisor = None
    try:  # `down` even when the first `up` fails half-way: no node is left running
        stack.up()
        events_topic, verdicts_topic, dlq_topic = _topics(stack.bootstrap, unique)
        wenv = WorkerEnv(stack.bootstrap, stack.redis_url, unique, events_topic, verdicts_topic, dlq_topic,
                         models_dir=tmp_path / "models")
        save_fresh_model(wenv.models_dir, "v1")
        redis.Redis.from_url(stack.redis_url).set(f"{wenv.key_prefix}:model:serving", "v1")
        codec = Codec()
        events = make_events(unique, N_EVENTS)
        # A first part to get the worker deciding, the rest produced right before the kill:
        # a fast worker cannot drain 4,000 events between the producer's flush and the
        # SIGKILL, so the broker always dies under a backlog (checking it by reading the
        # verdicts first gave the worker time to finish them).
        first, rest = events[:2_000], events[2_000:]
        produce_events(stack.bootstrap, events_topic, first, codec)
        supervisor = Supervisor(wenv, tmp_path)
        supervisor.worker.wait_for("worker ready", timeout=180)
        wait_until(lambda: len(read_committed(stack.bootstrap, verdicts_topic, 1, timeout=3, settle_s=0)) >= 500,
                   180, "the first verdicts")
        produce_events(stack.bootstrap, events_topic, rest, codec)  # the backlog
        stack.sigkill_broker()
        stack.up()  # the same state dir: topics, offsets and transaction state survive
        verdicts = read_verdicts(stack.bootstrap, verdicts_topic, N_EVENTS, codec, timeout=420, settle_s=5)
        counts = Counter(v.event_id for v in verdicts)
        assert set(counts) == {e.event_id for e in events}, \
            f"{N_EVENTS - len(counts)} events without a verdict; exits {supervisor.exits}\n{supervisor.worker.tail()}"
        assert sum(counts.values()) == N_EVENTS, f"duplicates: {[k for k, n in counts.items() if n > 1][:5]}"
        print(f"worker exits (restarted by the supervisor): {supervisor.exits}")
        # A non-zero exit is how a bounded wait ends; a clean exit would be a bug.
        assert all(rc != 0 for rc in supervisor.exits), supervisor.exits
        supervisor.stop()
        worker = supervisor.worker
        if worker.proc.poll() is None:
            worker.wait_for("worker ready", timeout=180)
        # SIGTERM ends it within its stop deadline (generous margin for a loaded machine).
        rc = worker.terminate(timeout=float(WORKER_ENV["TOLLGATE_WORKER__STOP_TIMEOUT_S"]) + 30)
        assert rc is not None
        assert read_committed(stack.bootstrap, dlq_topic, 0, timeout=3, settle_s=1) == []
    finally:
        if supervisor is not None:
            supervisor.stop()
            supervisor.worker.stop_quietly()
        stack.down()
