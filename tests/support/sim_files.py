"""Simulated event files for CLI tests, written as `tollgate simulate --out X.parquet` writes
them (events plus an outcomes Parquet beside them)."""

from __future__ import annotations

from pathlib import Path

from engine.offline.simulate.simulator import SimConfig, Simulator
from engine.offline.simulate.sinks import ParquetSink


def write_simulated_parquet(path: Path, config: SimConfig) -> Path:
    sink = ParquetSink(path)
    for day in Simulator(config).days():
        sink.write(day)
    sink.close()
    return path
