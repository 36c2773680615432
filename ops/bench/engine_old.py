"""The worker's path before the columnar changes of #19, for old-vs-new in one run.

    python ops/bench/engine.py --old-pipeline ops.bench.engine_old:old_pipeline

``old_pipeline`` is the worker's own pipeline factory with the guard evaluating every
rule row by row, as ``Guard.apply_batch`` did before ``engine.rules.columns``. It is
loaded by the worker subprocess (``tollgate run --pipeline``), so the change is
confined to that process; the rule watcher's reloads build ``Guard`` objects too, which
is why the class's method is replaced rather than one instance's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.records import TransactionEvent
from engine.stages.guard import Guard, GuardedDecision, Proposal


def rows_apply_batch(self: Guard, events: Sequence[TransactionEvent], contexts: Sequence[Mapping[str, float]],
                     model_views: Sequence[Mapping[str, Any]], proposed: Sequence[Proposal]) -> list[GuardedDecision]:
    """``Guard.apply_batch`` before #19: one ``RuleSet.evaluate`` per event."""
    ruleset = self.ruleset  # one version for the whole batch
    return [self._apply(ruleset, e, c, m, p)
            for e, c, m, p in zip(events, contexts, model_views, proposed, strict=True)]


def old_pipeline(settings: Any, *, model: str | None = None) -> Any:
    from engine.interfaces.commands.run import build_worker_pipeline

    Guard.apply_batch = rows_apply_batch  # type: ignore[method-assign]  # this worker process only
    return build_worker_pipeline(settings, model=model)
