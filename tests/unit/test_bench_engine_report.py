"""The engine benchmark's own logic: the sweep's recommendation (``ops/bench``). Its CPU
accounting starts processes: tests/integration/test_bench_machine_cpu.py."""

from __future__ import annotations

from ops.bench.engine_report import RunResult, recommend


def _run(b: int, w: float, offered: float | None, throughput: float, p99: float = float("nan")) -> RunResult:
    latencies = [] if offered is None else [p99] * 100
    return RunResult(f"sweep B={b} W={w:g}", offered, 1000, throughput, latencies, {}, float(b))


def test_recommend_takes_the_best_median_saturation_and_then_the_best_w_for_that_b(capsys):
    results = [
        # B=512 has one bad saturation run but the better median; B=128 one lucky run.
        _run(128, 5, None, 3_500), _run(128, 5, None, 1_800), _run(128, 5, None, 1_900),
        _run(512, 5, None, 1_700), _run(512, 5, None, 2_700), _run(512, 5, None, 2_800),
        _run(512, 10, None, 2_000), _run(512, 10, None, 2_100), _run(512, 10, None, 2_200),
        _run(128, 5, 1000.0, 1000, p99=100), _run(128, 5, 1000.0, 1000, p99=100),
        _run(512, 5, 1000.0, 1000, p99=400), _run(512, 5, 1000.0, 1000, p99=300),
        # W=10 has the lowest p99 with B=512, once: its median is higher.
        _run(512, 10, 1000.0, 1000, p99=50), _run(512, 10, 1000.0, 1000, p99=900),
        _run(512, 10, 1000.0, 1000, p99=800),
    ]
    recommend(results)
    out = capsys.readouterr().out
    assert "recommended settings.batch: max_events=512 (best median saturation 2700 ev/s)" in out
    assert "max_wait_ms=5 (best median p99 at 1000 ev/s with B=512: 350.0 ms)" in out


def test_recommend_does_not_choose_w_from_runs_that_fell_behind(capsys):
    results = [_run(256, 5, None, 2_000), _run(256, 5, 1000.0, 700, p99=90)]  # 700 of 1000 ev/s
    recommend(results)
    assert "max_wait_ms=5 (no run with that B kept up" in capsys.readouterr().out
