"""docker-compose.yml cannot run here (no Docker engine), so check it statically:
every reference resolves, the broker is KRaft with transactions on one node, the
commands the containers run are real `tollgate` commands, Prometheus scrapes the
ports the workers really serve, the paths the code uses are the volumes' mount points,
those mount points exist in the image owned by its user, and nothing that needs a model
starts before the init service has put one in place."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path, PurePosixPath

import pytest
import yaml

from engine.settings import PathSettings, Settings

REPO = Path(__file__).resolve().parents[2]


#: Services that load the serving model (or fine-tune from it) when they start.
NEEDS_MODEL = ("engine", "serve", "feedback", "scheduler")
INIT_COMMAND = ["tollgate", "model", "bootstrap"]


def _compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _tollgate_services() -> dict[str, dict]:
    """The services that run the Tollgate image (every one but the third-party ones)."""
    return {name: svc for name, svc in _compose()["services"].items()
            if str(svc.get("image", "")).split(":")[0] == "tollgate"}


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in (REPO / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in _dockerfile():
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def _image_filesystem() -> tuple[set[PurePosixPath], dict[PurePosixPath, str], str]:
    """What the Dockerfile's RUN lines create: directories made with ``mkdir``, owners
    given with ``chown -R`` (path -> user), and the user the image runs as."""
    made: set[PurePosixPath] = set()
    owned: dict[PurePosixPath, str] = {}
    user = "root"
    for word, rest in _dockerfile():
        if word == "USER":
            user = rest.split(":")[0]
        if word != "RUN":
            continue
        for command in rest.split("&&"):
            argv = shlex.split(command)
            if argv and argv[0] == "mkdir":
                dirs = [PurePosixPath(a) for a in argv[1:] if not a.startswith("-")]
                made |= set(dirs)
                if "-p" in argv:  # and every missing parent
                    made |= {parent for d in dirs for parent in d.parents}
            if argv and argv[0] == "chown" and "-R" in argv:
                args = [a for a in argv[1:] if not a.startswith("-")]
                owned.update({PurePosixPath(a): args[0].split(":")[0] for a in args[1:]})
    return made, owned, user


def _service_env(svc: dict) -> dict[str, str]:
    """The environment a container of ``svc`` sees: the image's ENV, then Compose's."""
    env = dict(_image_env())
    assert isinstance(svc.get("environment", {}), dict), "write environment as a mapping"
    env.update({k: str(v) for k, v in (svc.get("environment") or {}).items()})
    return env


def _mounts(svc: dict) -> list[tuple[str, PurePosixPath]]:
    """(source, target) of each volume entry in short syntax."""
    return [(v.split(":")[0], PurePosixPath(v.split(":")[1])) for v in svc.get("volumes") or []]


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
    assert "--appendonly yes" in " ".join(redis["command"])
    assert any(v.endswith(":/data") for v in redis["volumes"])


# -- closed by default (issue #20, item 6; docs/security.md) ---------------------------------

def _required_variable(value: str) -> str:
    """The name in ``${NAME:?message}``: Compose refuses to start while NAME is unset or
    empty, so there is no default secret."""
    assert value.startswith("${") and ":?" in value, f"{value!r} must be ${{NAME:?...}} (no default)"
    return value[2:value.index(":?")]


def test_redis_needs_a_password_and_every_tollgate_service_passes_it() -> None:
    redis = _compose()["services"]["redis"]
    password_var = _required_variable(redis["environment"]["REDIS_PASSWORD"])
    script = " ".join(redis["command"])
    assert "requirepass" in script and "$$REDIS_PASSWORD" in script
    assert "REDISCLI_AUTH" in " ".join(redis["healthcheck"]["test"]), "the healthcheck must authenticate"
    for name, svc in _tollgate_services().items():
        url = _service_env(svc)["TOLLGATE_REDIS_URL"]
        scheme = url.split("://", 1)[0] + "://:"
        assert url.startswith(scheme + "${"), f"{name}: {url}"
        assert url.endswith("}@redis:6379/0") or scheme == "redis+cluster://:", f"{name}: {url}"
        assert _required_variable(url[len(scheme):url.index("}@") + 1]) == password_var
    shards = {n: s for n, s in _compose()["services"].items() if n.startswith("redis-shard-")}
    assert shards, "the redis-cluster profile's shards"
    for name, shard in shards.items():  # the cluster profile is closed too
        assert _required_variable(shard["environment"]["REDIS_PASSWORD"]) == password_var
        script = " ".join(shard["command"])
        assert "requirepass" in script and "masterauth" in script and "--cluster-enabled yes" in script
        assert "REDISCLI_AUTH" in " ".join(shard["healthcheck"]["test"]), name


def test_only_the_http_service_is_published_beyond_loopback() -> None:
    services = _compose()["services"]
    for name, svc in services.items():
        for port in svc.get("ports") or []:
            text = str(port)
            if name == "serve":
                continue
            assert text.startswith("127.0.0.1:"), f"{name} publishes {text} on every interface"
    assert not services["redis"].get("ports"), "Redis must not be published"
    assert [str(p) for p in services["serve"]["ports"]] == ["8080:8080"]


def test_the_http_service_gets_its_token_from_a_variable_with_no_default() -> None:
    services = _compose()["services"]
    serve_env = _service_env(services["serve"])
    token_var = _required_variable(serve_env["TOLLGATE_HTTP__API_TOKEN"])
    assert _compose()["secrets"]["api_token"]["environment"] == token_var
    for name, svc in _tollgate_services().items():  # the token is the service's alone
        if name != "serve":
            assert "TOLLGATE_HTTP__API_TOKEN" not in _service_env(svc), name
    prom = yaml.safe_load((REPO / "ops/prometheus/prometheus.yml").read_text())
    serve_job = next(j for j in prom["scrape_configs"] if j["job_name"] == "tollgate-serve")
    assert serve_job["authorization"]["credentials_file"] == "/run/secrets/api_token"
    assert "api_token" in services["prometheus"]["secrets"]


def test_grafana_has_no_anonymous_access_and_no_default_admin_password() -> None:
    env = _compose()["services"]["grafana"]["environment"]
    assert str(env.get("GF_AUTH_ANONYMOUS_ENABLED", "false")).lower() == "false"
    _required_variable(env["GF_SECURITY_ADMIN_PASSWORD"])


def test_the_example_env_file_names_every_required_variable() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    required = {m.split(":?")[0] for m in text.split("${")[1:] if ":?" in m.split("}")[0]}
    example = {line.split("=")[0] for line in (REPO / ".env.example").read_text().splitlines()
               if line and not line.startswith("#")}
    assert required == example == {"TOLLGATE_API_TOKEN", "TOLLGATE_REDIS_PASSWORD", "GRAFANA_ADMIN_PASSWORD"}
    assert ".env" in (REPO / ".gitignore").read_text().splitlines()


def test_containers_run_real_tollgate_commands() -> None:
    import typer

    from engine.interfaces import cli

    cli._register_all()
    root = typer.main.get_command(cli.app)
    for name in ("topics", "model-init", "engine", "feedback", "scheduler", "serve"):
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


def test_tollgate_services_build_their_image_and_never_pull_it() -> None:
    services = _tollgate_services()
    assert {"topics", "model-init", *NEEDS_MODEL} <= set(services)
    for name, svc in services.items():
        build = svc.get("build")
        assert build is not None, f"{name}: tollgate:latest is a local image; give the service a build"
        context = build if isinstance(build, str) else build["context"]
        dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
        assert (REPO / context / dockerfile).is_file()
        # Without it, Compose first tries to pull tollgate:latest from Docker Hub.
        assert svc.get("pull_policy") == "build", f"{name}: pull_policy must be build"


@pytest.mark.parametrize("name", sorted(_tollgate_services()))
def test_every_path_setting_is_set_and_each_mount_is_where_the_code_looks(name: str, monkeypatch) -> None:
    svc = _tollgate_services()[name]
    env = _service_env(svc)
    paths = {key.removeprefix("TOLLGATE_PATHS__").lower(): PurePosixPath(value)
             for key, value in env.items() if key.startswith("TOLLGATE_PATHS__")}
    # Every path setting is given: the defaults point into the image's read-only /app.
    assert set(paths) == set(PathSettings.model_fields), f"{name}: set every TOLLGATE_PATHS__*"
    # ... under names the settings really read.
    for key, value in env.items():
        if key.startswith("TOLLGATE_"):
            monkeypatch.setenv(key, value)
    settings = Settings()
    for field, value in paths.items():
        assert PurePosixPath(getattr(settings.paths, field)) == value
    # Every mount is exactly the directory of one path setting, so what the service
    # writes lands in the volume (and what it reads comes from it).
    for source, target in _mounts(svc):
        assert target in paths.values(), (
            f"{name} mounts {source} at {target}, but no TOLLGATE_PATHS__* points there: {paths}")


def test_a_volume_is_mounted_at_the_same_path_in_every_service() -> None:
    where: dict[str, set[PurePosixPath]] = {}
    for svc in _tollgate_services().values():
        for source, target in _mounts(svc):
            where.setdefault(source, set()).add(target)
    for source, targets in where.items():
        assert len(targets) == 1, f"{source} is mounted at {sorted(map(str, targets))}"


def test_mount_points_exist_in_the_image_and_belong_to_its_user() -> None:
    made, owned, user = _image_filesystem()
    assert user != "root", "the image must not run as root"
    volumes = set(_compose()["volumes"])
    for name, svc in _tollgate_services().items():
        state_dir = PurePosixPath(_service_env(svc)["TOLLGATE_PATHS__STATE_DIR"])
        writable = [state_dir] + [target for source, target in _mounts(svc) if source in volumes]
        for target in writable:
            # A named volume takes the ownership of the directory it mounts over; a
            # mount point missing from the image is created owned by root.
            assert target in made, f"{name}: the Dockerfile does not create {target}"
            owner = next((owned[p] for p in (target, *target.parents) if p in owned), None)
            assert owner == user, f"{name}: {target} is not chown -R'd to {user} in the Dockerfile"


def test_services_that_need_a_model_start_after_the_init_service_put_one_there() -> None:
    services = _compose()["services"]
    inits = [name for name, svc in services.items() if svc.get("command") == INIT_COMMAND]
    assert len(inits) == 1, f"one service must run {' '.join(INIT_COMMAND)}"
    init = services[inits[0]]
    assert init.get("restart") == "no", "the init service runs once"
    # The registry's serving pointer lives in Redis.
    assert init["depends_on"]["redis"]["condition"] == "service_healthy"
    init_models = dict((s, t) for s, t in _mounts(init))["models"]
    assert init_models == PurePosixPath(_service_env(init)["TOLLGATE_PATHS__MODELS_DIR"])
    for name in NEEDS_MODEL:
        svc = services[name]
        assert svc["depends_on"][inits[0]]["condition"] == "service_completed_successfully", name
        assert dict(_mounts(svc)).get("models") == init_models, f"{name} must see the init service's models"


def test_a_stalled_engine_worker_is_restarted_not_only_reported():
    """Compose's ``restart:`` ignores health: the worker exits by itself when stalled, and
    its probe turns a 503 from /healthz (which reports a stall; /readyz did not) into a
    SIGTERM to PID 1, which the stop deadline turns into an exit within the grace period."""
    from engine.settings import WorkerSettings

    engine = _compose()["services"]["engine"]
    assert engine["restart"] in ("unless-stopped", "always", "on-failure")
    argv = engine["healthcheck"]["test"]
    assert argv[:4] == ["CMD", "python", "-m", "engine.observe.probe"], argv
    assert argv[4].endswith(f":{Settings().http.worker_port}/healthz")
    # The image runs `tollgate run` as PID 1 (no ENTRYPOINT wraps it), which the probe signals.
    assert not any(word == "ENTRYPOINT" for word, _ in _dockerfile())
    env = _service_env(engine)
    assert env.get("TOLLGATE_WORKER__EXIT_WHEN_STALLED", "true").lower() == "true"
    grace = engine["stop_grace_period"]
    assert grace.endswith("s") and float(grace[:-1]) > WorkerSettings().stop_timeout_s


def test_the_probe_signals_only_a_worker_that_answered_503(monkeypatch):
    import http.server
    import threading

    from engine.observe import probe

    status = {"code": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(status["code"])
            self.end_headers()

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/healthz"
    killed: list[tuple[int, int]] = []
    monkeypatch.setattr(probe.os, "kill", lambda pid, sig: killed.append((pid, sig)))
    try:
        assert probe.probe(url, pid=1) == 0 and killed == []
        status["code"] = 503
        assert probe.probe(url, pid=1) == 1 and killed == [(1, probe.signal.SIGTERM)]
        server.shutdown()
        server.server_close()
        assert probe.probe(url, pid=1, timeout_s=1) == 1 and len(killed) == 1  # refused: no signal
    finally:
        server.server_close()


# ---- scale-out profiles (#18): the same settings ops/stack and the cluster tests use ----

def test_cluster_topics_and_engine_use_replication_three_and_the_redis_cluster() -> None:
    from engine.wire.redisconn import cluster_nodes, is_cluster_url

    services = _compose()["services"]
    topics = _service_env(services["topics-cluster"])
    assert topics["TOLLGATE_KAFKA_BOOTSTRAP"] == "kafka-1:19092,kafka-2:19092,kafka-3:19092"
    settings = Settings(topics={"replication_factor": topics["TOLLGATE_TOPICS__REPLICATION_FACTOR"],
                                "min_insync_replicas": topics["TOLLGATE_TOPICS__MIN_INSYNC_REPLICAS"]})
    assert (settings.topics.replication_factor, settings.topics.min_insync_replicas) == (3, 2)
    engine = _service_env(services["engine-cluster"])
    assert engine["TOLLGATE_KAFKA_BOOTSTRAP"] == topics["TOLLGATE_KAFKA_BOOTSTRAP"]
    assert is_cluster_url(engine["TOLLGATE_REDIS_URL"])
    shards = {name for name in services if name.startswith("redis-shard-")}
    url = re.sub(r"\$\{[^}]*\}", "secret", engine["TOLLGATE_REDIS_URL"])  # as compose substitutes it
    assert {host for host, _ in cluster_nodes(url)} == shards
    for name in shards:
        assert "--cluster-enabled yes" in " ".join(services[name]["command"])
    init = " ".join(services["redis-cluster-init"]["command"])
    assert "--cluster create" in init and "--cluster-replicas 0" in init
    assert all(f"getent hosts {name}" in init for name in shards)
    assert set(services["engine-cluster"]["depends_on"]) >= {"topics-cluster", "redis-cluster-init", "model-init"}
    # The cluster's feedback loop runs on the same broker and Redis as its workers, with
    # the same decision-log horizon (a snapshot's TTL and the join's must agree).
    for name in ("feedback-cluster", "scheduler-cluster"):
        env = _service_env(services[name])
        assert env["TOLLGATE_REDIS_URL"] == engine["TOLLGATE_REDIS_URL"], name
        assert env["TOLLGATE_KAFKA_BOOTSTRAP"] == engine["TOLLGATE_KAFKA_BOOTSTRAP"], name
        assert env["TOLLGATE_REDIS__DECISION_LOG_REDIS_HOURS"] == engine["TOLLGATE_REDIS__DECISION_LOG_REDIS_HOURS"]
        assert services[name]["profiles"] == ["cluster"]
    Settings(redis={"decision_log_redis_hours": engine["TOLLGATE_REDIS__DECISION_LOG_REDIS_HOURS"]})


def test_prometheus_loads_the_alert_rules_and_they_name_metrics_the_workers_export() -> None:
    from prometheus_client import CollectorRegistry

    from feedback.stream.feedback_metrics import FeedbackMetrics

    prom = yaml.safe_load((REPO / "ops/prometheus/prometheus.yml").read_text())
    mounts = _compose()["services"]["prometheus"]["volumes"]
    for rule_file in prom["rule_files"]:  # every rule file Prometheus reads is mounted there
        assert any(m.endswith(f":{rule_file}:ro") for m in mounts), rule_file
    registry = CollectorRegistry()
    FeedbackMetrics(registry)
    exported = {sample.name for metric in registry.collect() for sample in metric.samples}
    rules = yaml.safe_load((REPO / "ops/prometheus/alerts.yml").read_text())
    named = {name for group in rules["groups"] for rule in group["rules"]
             for name in re.findall(r"tollgate_[a-z_]+", rule["expr"])}
    assert "tollgate_feedback_decision_lag_seconds" in named
    assert named <= exported, named - exported
