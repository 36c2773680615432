"""Session-wide fixtures: the real Kafka broker and Redis server.

Integration tests never mock the broker or Redis. When ``TOLLGATE_KAFKA_BOOTSTRAP``
and ``TOLLGATE_REDIS_URL`` are set (CI starts the stack once with ``ops/stack up``),
they are reused; otherwise this starts a private stack with ``ops/stack`` on free
loopback ports (chosen at start) in a temporary state directory, and stops it at the
end of the session.
Each test gets its own topic names, consumer group and Redis key prefix.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stack:
    kafka_bootstrap: str
    redis_url: str
    #: Only set when this session started the stack itself (needed by restart tests).
    state_dir: Path | None = None
    env: dict[str, str] | None = None

    def run(self, *args: str) -> subprocess.CompletedProcess:
        """Run ``ops/stack ARGS`` against this stack (only for a stack we own)."""
        if self.env is None:
            raise RuntimeError("this stack is shared (TOLLGATE_* set); the test may not restart it")
        return subprocess.run([str(REPO / "ops" / "stack"), *args], env=self.env,
                              capture_output=True, text=True, timeout=300, check=True)


def _free_ports(count: int, highest: int | None = None) -> list[int]:
    """``count`` distinct loopback ports that are free at this moment (all held open
    together while choosing, so the kernel cannot hand out the same one twice).
    ``highest``: none above it (a Redis Cluster node also listens on its port + 10000,
    so its port must be 55535 or less)."""
    import random

    with contextlib.ExitStack() as held:
        ports: list[int] = []
        for _ in range(count * 200):
            if len(ports) == count:
                break
            s = held.enter_context(socket.socket())
            try:
                s.bind(("127.0.0.1", 0 if highest is None else random.randint(20_000, highest)))
            except OSError:
                continue
            ports.append(s.getsockname()[1])
        if len(ports) < count:
            raise RuntimeError(f"could not find {count} free loopback ports")
        return ports


#: A Redis Cluster node's bus listens on port + 10000.
REDIS_CLUSTER_MAX_PORT = 55_535


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    bootstrap = os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP")
    redis_url = os.environ.get("TOLLGATE_REDIS_URL")
    if bootstrap and redis_url:
        yield Stack(bootstrap, redis_url)
        return
    state_dir = Path(tempfile.mkdtemp(prefix="tollgate-test-stack-"))
    # Ports the kernel says are free now, so a second test session or a default stack
    # on 9092/6379 does not collide with this one.
    kafka_port, controller_port, redis_port = _free_ports(3)
    env = dict(os.environ,
               TOLLGATE_STATE_DIR=str(state_dir),
               TOLLGATE_KAFKA_PORT=str(kafka_port), TOLLGATE_KAFKA_CONTROLLER_PORT=str(controller_port),
               TOLLGATE_REDIS_PORT=str(redis_port))
    subprocess.run([str(REPO / "ops" / "stack"), "up"], env=env, check=True, timeout=600)
    try:
        yield Stack(f"127.0.0.1:{kafka_port}", f"redis://127.0.0.1:{redis_port}/0", state_dir, env)
    finally:
        subprocess.run([str(REPO / "ops" / "stack"), "down"], env=env, timeout=120)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """A three-master Redis Cluster (``redis+cluster://`` URL): ``TOLLGATE_TEST_REDIS_CLUSTER_URL``
    when set, else one started here with ``ops/stack up --brokers 0 --redis-shards 3`` on
    free loopback ports, stopped at the end of the session."""
    url = os.environ.get("TOLLGATE_TEST_REDIS_CLUSTER_URL")
    if url:
        yield url
        return
    state_dir = Path(tempfile.mkdtemp(prefix="tollgate-test-rcluster-"))
    env = dict(os.environ, TOLLGATE_STATE_DIR=str(state_dir),
               TOLLGATE_REDIS_PORTS=",".join(map(str, _free_ports(3, REDIS_CLUSTER_MAX_PORT))))
    try:  # `down` even when `up` fails half-way: no shard is left running
        up = subprocess.run([str(REPO / "ops" / "stack"), "up", "--brokers", "0", "--redis-shards", "3"],
                            env=env, check=True, timeout=300, capture_output=True, text=True)
        yield up.stdout.split("TOLLGATE_REDIS_URL=", 1)[1].split()[0]
    finally:
        subprocess.run([str(REPO / "ops" / "stack"), "down"], env=env, timeout=120, check=False)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture
def unique() -> str:
    """A short unique suffix for this test's topics, group and Redis keys."""
    return uuid.uuid4().hex[:10]


@pytest.fixture
def kafka_topics(stack: Stack, unique: str):
    """Factory: create this test's topics on the real broker; deleted after the test."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    created: list[str] = []

    def make(base: str, partitions: int = 1) -> str:
        name = f"{base}.{unique}"
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        futures[name].result(timeout=30)
        created.append(name)
        return name

    yield make
    if created:
        for f in admin.delete_topics(created).values():
            try:
                f.result(timeout=30)
            except Exception:  # noqa: BLE001 - cleanup must not fail the test
                pass


@pytest.fixture
def redis_client(stack: Stack, unique: str):
    """A Redis client on the real server; every key under this test's prefix is removed after."""
    import redis

    client = redis.Redis.from_url(stack.redis_url)
    yield client
    for key in client.scan_iter(f"*{unique}*", count=10_000):
        client.delete(key)
    client.close()
