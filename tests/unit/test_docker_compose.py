"""docker-compose.yml cannot run here (no Docker engine), so check it statically:
every reference resolves, the broker is KRaft with transactions on one node, the
commands the containers run are real `tollgate` commands, and Prometheus scrapes the
ports the workers really serve."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from engine.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_services_present_and_dependencies_resolve() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"kafka", "redis", "engine", "feedback", "prometheus", "grafana"} <= set(services)
    for name, svc in services.items():
        for dep in (svc.get("depends_on") or {}):
            assert dep in services, f"{name} depends on unknown service {dep}"
        for volume in svc.get("volumes") or []:
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), f"{name} mounts missing path {source}"
            else:
                assert source in compose["volumes"], f"{name} uses undeclared volume {source}"


def test_kafka_is_official_image_in_kraft_mode_with_single_node_transactions() -> None:
    kafka = _compose()["services"]["kafka"]
    image, tag = kafka["image"].split(":")
    assert image == "apache/kafka" and tag.startswith("4.")
    env = kafka["environment"]
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert "ZOOKEEPER" not in " ".join(env).upper()
    assert str(env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"]) == "1"
    assert str(env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"]) == "1"
    assert str(env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"]).lower() == "false"
    # Every listener named in the map is defined, and the controller listener exists.
    names = {entry.split(":")[0] for entry in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(",")}
    listeners = {entry.split("://")[0] for entry in env["KAFKA_LISTENERS"].split(",")}
    assert listeners <= names and env["KAFKA_CONTROLLER_LISTENER_NAMES"] in listeners
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] in listeners


def test_redis_persists() -> None:
    redis = _compose()["services"]["redis"]
    assert "--appendonly" in redis["command"] and "yes" in redis["command"]
    assert any(v.endswith(":/data") for v in redis["volumes"])


def test_containers_run_real_tollgate_commands() -> None:
    import typer

    from engine import cli

    cli._register_all()
    root = typer.main.get_command(cli.app)
    for name in ("topics", "engine", "feedback", "scheduler", "serve"):
        argv = _compose()["services"][name]["command"]
        assert argv[0] == "tollgate"
        command = root
        for word in argv[1:]:
            assert hasattr(command, "commands"), f"{argv}: {word} is not a subcommand"
            assert word in command.commands, f"{argv}: unknown command {word}"
            command = command.commands[word]


def test_prometheus_scrapes_the_worker_port_and_grafana_is_provisioned() -> None:
    prom = yaml.safe_load((REPO / "ops/prometheus/prometheus.yml").read_text())
    engine_job = next(j for j in prom["scrape_configs"] if j["job_name"] == "tollgate-engine")
    assert engine_job["dns_sd_configs"][0]["port"] == Settings().http.worker_port
    datasource = yaml.safe_load((REPO / "ops/grafana/provisioning/datasources/prometheus.yml").read_text())
    assert datasource["datasources"][0]["url"] == "http://prometheus:9090"
    dashboards = list((REPO / "ops/grafana/dashboards").glob("*.json"))
    assert dashboards, "the Grafana dashboard JSON must be provisioned"
    for path in dashboards:
        board = json.loads(path.read_text())
        assert board["panels"], f"{path.name} has no panels"


def test_dockerfile_copies_existing_paths() -> None:
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (REPO / source).exists(), f"Dockerfile copies missing {source}"
