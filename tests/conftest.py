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


#: The lowest port ``_free_ports`` hands out.
PORTS_FROM = 20_000
#: A Redis Cluster node's bus listens on its port + 10000.
REDIS_CLUSTER_BUS_OFFSET = 10_000


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when unreadable)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def _free_ports(count: int, bus_offset: int = 0, avoid: tuple[int, ...] | list[int] = ()) -> list[int]:
    """``count`` distinct loopback ports that are free at this moment, held open together
    while choosing, none in ``avoid``.

    They are drawn below the kernel's ephemeral range where it leaves room: a port the kernel
    may hand to any outgoing connection as its source port (a Kafka client's, a broker's
    own) can be taken between this choice and the stack binding it, and a broker that cannot
    bind fails its start. ``bus_offset``: each port + offset must be free too (a Redis Cluster
    node's bus, ``REDIS_CLUSTER_BUS_OFFSET``)."""
    import random

    top = _ephemeral_low() - 1 - bus_offset
    if top - PORTS_FROM < 1_000:  # an ephemeral range starting low: draw from above it instead
        top = 65_535 - bus_offset
    with contextlib.ExitStack() as held:
        ports: list[int] = []
        for _ in range(count * 200):
            if len(ports) == count:
                break
            port = random.randint(PORTS_FROM, top)
            if port in ports or port in avoid or (bus_offset and port + bus_offset in avoid):
                continue
            try:
                for p in (port, port + bus_offset) if bus_offset else (port,):
                    s = held.enter_context(socket.socket())
                    s.bind(("127.0.0.1", p))
            except OSError:
                continue
            ports.append(port)
        if len(ports) < count:
            raise RuntimeError(f"could not find {count} free loopback ports")
        return ports


def stack_up(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """``ops/stack ARGS`` (an ``up``), its exports on stdout. When it fails, the error holds
    its stderr and the tail of every node's log: the fixtures remove the state directory
    afterwards, and a failed start is otherwise unreadable."""
    up = subprocess.run([str(REPO / "ops" / "stack"), *args], env=env, timeout=timeout, capture_output=True,
                        text=True, check=False)
    if up.returncode != 0:
        logs = Path(env["TOLLGATE_STATE_DIR"]) / "logs"
        tails = [f"--- {log.name} (last 40 lines)\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:])
                 for log in sorted(logs.glob("*.log"))] if logs.is_dir() else []
        raise RuntimeError(f"ops/stack {' '.join(args)} exited {up.returncode}:\n{up.stderr[-4000:]}\n"
                           + "\n".join(tails))
    return up


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
    try:  # `down` even when `up` fails half-way: no node is left running
        stack_up(["up"], env)
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
               TOLLGATE_REDIS_PORTS=",".join(map(str, _free_ports(3, REDIS_CLUSTER_BUS_OFFSET))))
    try:  # `down` even when `up` fails half-way: no shard is left running
        up = stack_up(["up", "--brokers", "0", "--redis-shards", "3"], env, timeout=300)
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
