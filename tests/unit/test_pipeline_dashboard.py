"""The Grafana dashboard (ops/grafana/dashboards/tollgate.json) only charts metrics that
the engine worker, the HTTP service or the rule engine really export."""

from __future__ import annotations

import json
import re
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "ops" / "grafana" / "dashboards" / "tollgate.json"
_SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_info")


def exported_names() -> set[str]:
    from prometheus_client import CollectorRegistry

    from engine.interfaces.http import ServeMetrics
    from engine.observe.metrics import EngineMetrics
    from engine.rules.rule_metrics import RuleMetrics

    names: set[str] = set()
    for registry in (EngineMetrics().registry, ServeMetrics().registry, RuleMetrics(CollectorRegistry()).registry):
        for family in registry.collect():
            names.add(family.name)
            names.update(sample.name for sample in family.samples)
    return names


def test_dashboard_is_valid_and_every_metric_exists():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["panels"]
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 20
    used = {m for e in exprs for m in re.findall(r"\b(tollgate_[a-z0-9_]+)", e)}
    known = exported_names()
    missing = sorted(m for m in used if m not in known and not any(m.removesuffix(s) in known for s in _SUFFIXES))
    assert not missing, f"dashboard charts metrics nobody exports: {missing}"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
