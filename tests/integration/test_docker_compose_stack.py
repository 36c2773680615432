"""The compose file's three-node Kafka profile has the broker settings ``ops/stack up
--brokers 3`` gives its nodes (the rest of the compose checks: ``tests/unit/test_docker_compose.py``).
Here, not among the unit tests: it runs ``ops/stack config`` (bash; starts no broker)."""

from __future__ import annotations

import os
import subprocess
import tempfile

from tests.unit.test_docker_compose import REPO, _compose


def _stack_cluster_settings() -> dict[str, str]:
    """The broker settings `ops/stack up --brokers 3` gives node 2 (`ops/stack config`:
    bash only, starts nothing)."""
    with tempfile.TemporaryDirectory() as state:
        out = subprocess.run([str(REPO / "ops" / "stack"), "config", "2", "--brokers", "3"],
                             env=dict(os.environ, TOLLGATE_STATE_DIR=state),
                             capture_output=True, text=True, timeout=60, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("#"))


def test_kafka_cluster_profile_matches_ops_stack_three_nodes() -> None:
    services = _compose()["services"]
    nodes = {name: svc for name, svc in services.items() if name.startswith("kafka-")}
    assert sorted(nodes) == ["kafka-1", "kafka-2", "kafka-3"]
    stack = _stack_cluster_settings()
    assert stack["controller.quorum.voters"].count("@") == 3 and stack["process.roles"] == "broker,controller"
    for name, svc in nodes.items():
        assert "kafka-cluster" in svc["profiles"] and "cluster" in svc["profiles"]
        env = {k: str(v) for k, v in svc["environment"].items()}
        assert env["KAFKA_NODE_ID"] == name.split("-")[1]
        assert env["KAFKA_PROCESS_ROLES"] == stack["process.roles"]
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"
        for prop in ("default.replication.factor", "min.insync.replicas", "offsets.topic.replication.factor",
                     "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
                     "share.coordinator.state.topic.replication.factor", "share.coordinator.state.topic.min.isr",
                     "unclean.leader.election.enable", "auto.create.topics.enable"):
            assert env["KAFKA_" + prop.replace(".", "_").upper()] == stack[prop], (name, prop)
    assert stack["min.insync.replicas"] == "2" and stack["transaction.state.log.replication.factor"] == "3"
