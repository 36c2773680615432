"""Prometheus metrics of the hard rules: active version, reloads, hits, errors.

A ``RuleMetrics`` lives on the registry it is given, so a worker that keeps its own
``CollectorRegistry`` (see ``engine.observe.metrics``) passes it in; without one the
process-wide default registry is used, created once. Label values are rule ids and
list names only, so cardinality is bounded by the rule set.

>>> from prometheus_client import CollectorRegistry, generate_latest
>>> m = RuleMetrics(CollectorRegistry())
>>> m.active("rules-abc")
>>> b'tollgate_rules_active_version{version="rules-abc"} 1.0' in generate_latest(m.registry)
True
"""

from __future__ import annotations

import threading
import time
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge


class RuleMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        r = self.registry = registry if registry is not None else REGISTRY
        self.version = Gauge("tollgate_rules_active_version", "1 for the rule-set version in use.",
                             ["version"], registry=r)
        self.reloads = Counter("tollgate_rules_reloads_total", "Rule sets loaded and swapped in.", registry=r)
        self.reload_failures = Counter("tollgate_rules_reload_failures_total",
                                       "Changed rule sets refused (the last good set kept running).", registry=r)
        self.last_reload_ok = Gauge("tollgate_rules_last_reload_ok",
                                    "1 if the latest change to the rules loaded, 0 if it was refused.", registry=r)
        self.last_reload_time = Gauge("tollgate_rules_last_reload_timestamp_seconds",
                                      "When a rule set was last swapped in.", registry=r)
        self.hits = Counter("tollgate_rule_hits_total", "Events a rule fired on (shadow hits are not applied).",
                            ["rule", "mode"], registry=r)
        self.eval_errors = Counter("tollgate_rule_eval_errors_total",
                                   "Rule conditions that failed to evaluate (the rule did not fire).",
                                   ["rule"], registry=r)
        self.over_budget = Counter("tollgate_rules_over_budget_total",
                                   "Events whose rule evaluation took longer than the time budget.", registry=r)
        self.list_size = Gauge("tollgate_rules_list_size", "Entries in a named list.", ["list"], registry=r)
        self.list_stale = Gauge("tollgate_rules_list_stale", "1 if a Redis list could not be refreshed.",
                                ["list"], registry=r)
        self._children: dict[tuple[str, str], Any] = {}
        self._active: str | None = None
        self._lock = threading.Lock()

    def active(self, version: str) -> None:
        with self._lock:
            if self._active is not None and self._active != version:
                self.version.remove(self._active)
            self._active = version
            self.version.labels(version).set(1)

    def reloaded(self, version: str) -> None:
        self.active(version)
        self.reloads.inc()
        self.last_reload_ok.set(1)
        self.last_reload_time.set(time.time())

    def refused(self) -> None:
        self.reload_failures.inc()
        self.last_reload_ok.set(0)

    def recovered(self) -> None:
        """The refused change was undone: the files on disk are the running set again."""
        self.last_reload_ok.set(1)

    def hit(self, rule: str, mode: str) -> None:
        child = self._children.get((rule, mode))
        if child is None:
            child = self._children[(rule, mode)] = self.hits.labels(rule, mode)
        child.inc()

    def lists(self, lists: Any) -> None:
        for name, lst in lists.items():
            self.list_size.labels(name).set(len(lst.values))
            self.list_stale.labels(name).set(1 if lst.stale else 0)


_DEFAULT: RuleMetrics | None = None
_DEFAULT_LOCK = threading.Lock()


def default_metrics() -> RuleMetrics:
    """The process-wide instance on the default registry (created on first use)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = RuleMetrics()
        return _DEFAULT
