"""The peers of ``ops/bench/peers.py`` are what they claim to be, checked without
building or running them (CI runs no peer): Kafka Streams from Apache Kafka's own jar at
the broker's version with exactly_once_v2, quix-streams with exactly-once, each at its
defaults and tuned down."""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET

from ops.bench import peers as bench_peers

NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _kafka_version(pom) -> str:
    return ET.parse(pom).getroot().find("m:properties/m:kafka.version", NS).text


def test_kstreams_is_built_from_apache_kafkas_jar_at_the_brokers_version():
    root = ET.parse(bench_peers.KSTREAMS / "pom.xml").getroot()
    deps = {(d.find("m:groupId", NS).text, d.find("m:artifactId", NS).text): d.find("m:version", NS).text
            for d in root.findall("m:dependencies/m:dependency", NS)}
    assert deps[("org.apache.kafka", "kafka-streams")] == "${kafka.version}"
    broker = bench_peers.REPO / "ops" / "kafka" / "pom.xml"
    assert _kafka_version(bench_peers.KSTREAMS / "pom.xml") == _kafka_version(broker)


def test_kstreams_source_is_an_exactly_once_v2_pass_through():
    java = (bench_peers.KSTREAMS / "src/main/java/dev/tollgate/bench/PassThrough.java").read_text()
    assert "props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);" in java
    assert ".stream(args[1]" in java and ".to(args[2]" in java  # nothing between: it decides nothing
    assert 'if (!"default".equals(args[4]))' in java  # the default run sets no commit interval


def test_quix_app_runs_exactly_once():
    tree = ast.parse((bench_peers.QUIX / "passthrough.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Application"]
    assert len(calls) == 1
    kwargs = {k.arg: k.value for k in calls[0].keywords}
    assert ast.literal_eval(kwargs["processing_guarantee"]) == "exactly-once"


def test_each_peer_runs_at_its_defaults_and_tuned_down():
    t = bench_peers.Topics("b:1", "ev", "out", "g")
    apps = bench_peers.peers(tuned_commit_ms=10)
    assert set(apps) == {"relay", "kstreams-default", "kstreams-tuned", "quix-default", "quix-tuned"}
    assert apps["kstreams-default"].command(t)[-2:] == ["default", "false"]
    assert apps["kstreams-tuned"].command(t)[-2:] == ["10", "true"]
    assert apps["kstreams-tuned"].command(t)[-6:-2] == ["b:1", "ev", "out", "g"]
    assert apps["quix-default"].command(t)[-1] == "default"
    assert float(apps["quix-tuned"].command(t)[-1]) == 0.01
    assert apps["relay"].command(t)[-1] == "ops.bench.engine_relay"


def test_summary_gives_tollgates_ratios_per_rate():
    from ops.bench.engine_report import STAGES, RunResult

    def run(label, rate, p, eps):
        return RunResult(label, rate, 100, eps, [] if p is None else [p] * 100, dict.fromkeys(STAGES, float("nan")), float("nan"),
                         cpu_us_per_event=1.0)

    rows = bench_peers.summary([run("relay", 250.0, 20.0, 250.0), run("tollgate", 250.0, 30.0, 250.0),
                                run("relay", None, None, 4000.0), run("tollgate", None, None, 2000.0)],
                               ["relay", "tollgate"])
    relay_250 = next(r for r in rows if r["app"] == "relay" and r["rate"] == 250)
    assert relay_250["tollgate_p99_ratio"] == 1.5 and relay_250["tollgate_events_s_ratio"] == 1.0
    relay_sat = next(r for r in rows if r["app"] == "relay" and r["rate"] == "saturation")
    assert relay_sat["tollgate_events_s_ratio"] == 0.5 and "tollgate_p99_ratio" not in relay_sat
