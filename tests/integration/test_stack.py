"""ops/stack against the real programs: restart keeps data; bad setup fails clearly.

This test runs its own private stack (own ports, own state dir) because it stops and
restarts it; the session's shared stack is never touched.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STACK = str(REPO / "ops" / "stack")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stack_env(tmp_path: Path) -> dict[str, str]:
    return dict(
        os.environ,
        TOLLGATE_STATE_DIR=str(tmp_path / "state"),
        TOLLGATE_KAFKA_PORT=str(_free_port()),
        TOLLGATE_KAFKA_CONTROLLER_PORT=str(_free_port()),
        TOLLGATE_REDIS_PORT=str(_free_port()),
)


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STACK, *args], env=env, capture_output=True, text=True, timeout=300)


def test_restart_keeps_topics_and_messages(tmp_path: Path) -> None:
    import redis
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    env = _stack_env(tmp_path)
    bootstrap = f"127.0.0.1:{env['TOLLGATE_KAFKA_PORT']}"
    redis_url = f"redis://127.0.0.1:{env['TOLLGATE_REDIS_PORT']}/0"
    try:
        up = _run(env, "up")
        assert up.returncode == 0, up.stderr
        assert f"export TOLLGATE_KAFKA_BOOTSTRAP={bootstrap}\n" in up.stdout
        assert f"export TOLLGATE_REDIS_URL={redis_url}\n" in up.stdout
        # What the README and .ci/run do: eval the output, then a child process sees it.
        child = subprocess.run(["bash", "-c", 'eval "$1"; exec env', "_", up.stdout], capture_output=True,
                               text=True, timeout=30, env={"PATH": env["PATH"]})
        assert f"TOLLGATE_KAFKA_BOOTSTRAP={bootstrap}" in child.stdout.splitlines()
        assert _run(env, "up").returncode == 0, "up twice must be fine"

        topic = f"restart.{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for i in range(50):
            producer.produce(topic, key=str(i % 5), value=f"message-{i}".encode())
        assert producer.flush(30) == 0
        redis.Redis.from_url(redis_url).set("tollgate:restart-check", "kept")

        down = _run(env, "down")
        assert down.returncode == 0, down.stderr
        assert _run(env, "status").returncode != 0
        # As after a reboot: pid files left behind whose pids now belong to something
        # else. `up` must see through them and start the broker and Redis again.
        with _unrelated_process() as stranger:
            _plant_pid_files(tmp_path / "state", stranger.pid)
            up = _run(env, "up")
            assert up.returncode == 0, up.stderr
            assert stranger.poll() is None, "up must not touch the process a stale pid file names"
            assert "stale pid file" in up.stderr

        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert topic in admin.list_topics(timeout=30).topics
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe([topic])
        seen: set[bytes] = set()
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.add(msg.value())
            if len(seen) == 50:
                break
        consumer.close()
        assert seen == {f"message-{i}".encode() for i in range(50)}
        assert redis.Redis.from_url(redis_url).get("tollgate:restart-check") == b"kept"
    finally:
        _run(env, "down")


@contextlib.contextmanager
def _unrelated_process() -> Iterator[subprocess.Popen]:
    """A process that is neither a Kafka broker nor Redis, to own a stale pid file's pid."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def _plant_pid_files(state_dir: Path, pid: int) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    for name in ("kafka.pid", "redis.pid"):
        (state_dir / name).write_text(f"{pid}\n")


def test_stale_pid_files_are_removed_and_their_process_is_never_signalled(tmp_path: Path) -> None:
    env = _stack_env(tmp_path)
    state = tmp_path / "state"
    with _unrelated_process() as stranger:
        _plant_pid_files(state, stranger.pid)
        status = _run(env, "status")
        assert status.returncode != 0 and "kafka: stopped" in status.stdout and "redis: stopped" in status.stdout
        _plant_pid_files(state, stranger.pid)
        down = _run(env, "down")
        assert down.returncode == 0, down.stderr
        assert stranger.poll() is None, "down signalled a process it did not start"
        assert f"pid {stranger.pid} is not our kafka" in down.stderr
        assert f"pid {stranger.pid} is not our redis" in down.stderr
        assert not (state / "kafka.pid").exists() and not (state / "redis.pid").exists()
    # A pid that no longer runs at all is stale too.
    (state / "redis.pid").write_text(f"{stranger.pid}\n")
    down = _run(env, "down")
    assert down.returncode == 0 and f"pid {stranger.pid} is not running" in down.stderr
    assert not (state / "redis.pid").exists()


def test_port_taken_is_named_and_nothing_starts(tmp_path: Path) -> None:
    env = _stack_env(tmp_path)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        env["TOLLGATE_REDIS_PORT"] = str(port)
        result = _run(env, "up")
    assert result.returncode != 0
    assert f"port {port}" in result.stderr and "Redis" in result.stderr
    assert not (tmp_path / "state" / "kafka.pid").exists(), "preflight must fail before starting anything"


def test_missing_java_is_named(tmp_path: Path) -> None:
    env = _stack_env(tmp_path)
    env["TOLLGATE_JAVA"] = str(tmp_path / "no-such-java")
    result = _run(env, "up")
    assert result.returncode != 0
    assert "Java is missing" in result.stderr


def test_missing_maven_is_named_when_jars_must_be_fetched(tmp_path: Path) -> None:
    env = _stack_env(tmp_path)
    env["TOLLGATE_CACHE_DIR"] = str(tmp_path / "empty-cache")
    env["TOLLGATE_MVN"] = str(tmp_path / "no-such-mvn")
    result = _run(env, "up")
    assert result.returncode != 0
    assert "Maven is missing" in result.stderr
