"""The Python API: score events from a notebook or a script with the stream's pipeline.

>>> from engine import load_model                      # doctest: +SKIP
>>> model = load_model()                               # doctest: +SKIP
>>> model.decide({"event_id": "e1", "event_time_ms": 1722470400000, "customer_id": "c1",
...               "account_id": "a1", "terminal_id": "t1", "merchant_category": "5411",
...               "amount": 54.2, "currency": "EUR", "channel": "ecommerce", "country": "BE"})
... # doctest: +SKIP
Verdict(event_id='e1', customer_id='c1', verdict=<Decision.PASS: 'pass'>, confidence=0.97, ...)
>>> model                                              # doctest: +SKIP
<TollgateModel m-20260801 · rules rules-3f2a… · context memory · policy reject≥0.5 review≥0.5 …>

``model.decide`` takes one event or many (``TransactionEvent``, dicts in the Avro/JSON
layout, or a pandas ``DataFrame`` with those columns) and returns one ``Verdict`` or a
``Verdicts`` list in the same order. It runs ``engine.pipeline.DecisionPipeline`` — the
same model, policy, detector and hard rules as the stream — so a verdict here is the
verdict the stream gives for the same event and context.

Context: by default the model keeps its own in-memory context (``context="memory"``),
which starts empty and learns from every event you score, in the order you score them
— so score a customer's history in event-time order, as the stream would see it. Like
the stream's Redis keys, it forgets customers and terminals idle for 31 days (of event
time), so a long-lived model's memory stays bounded. Delayed outcomes
(``model.decide(events, outcomes=...)`` or ``model.add_outcomes``) are fed into it in
outcome-time order as later events are scored, as the stream's feedback worker feeds
Redis, so ``terminal_risk_*`` match the stream's (``engine.interfaces.outcome_feed``).
``context="redis"`` reads the live feature state of the stream and writes nothing to
it; ``load_model(context="redis", record=True)`` also records every event scored into
it (history, decision log), as the stream does — only for a process that stands in for
the stream.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, overload

from engine.assemble import ContextSource, build_pipeline, make_store
from engine.features.memory import MemoryFeatureStore
from engine.interfaces.outcome_feed import OutcomeFeed
from engine.pipeline import DecisionPipeline
from engine.records import Decision, Outcome, TransactionEvent, Verdict, event_from_json
from engine.settings import Settings, get_settings


class Verdicts(list):
    """A list of ``Verdict`` with a readable table for notebooks and ``to_frame()``."""

    def counts(self) -> dict[str, int]:
        c = Counter(v.verdict.value for v in self)
        return {d.value: c.get(d.value, 0) for d in Decision}

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per verdict (reasons as ``kind:code`` strings)."""
        # local: pandas loads only for tables
        import pandas as pd

        rows = []
        for v in self:
            row = v.to_dict()
            row["reasons"] = "; ".join(f"{r.kind.value}:{r.code}" for r in v.reasons)
            probs = row.pop("probabilities")
            row.update({f"p_{k}": p for k, p in probs.items()})
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        head = f"Verdicts({len(self)}: " + ", ".join(f"{n} {k}" for k, n in self.counts().items()) + ")"
        lines = [head]
        for v in self[:10]:
            lines.append("  " + _one_line(v))
        if len(self) > 10:
            lines.append(f"  … {len(self) - 10} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.to_frame().head(50).to_html(index=False)


def _one_line(v: Verdict) -> str:
    why = ", ".join(r.code for r in v.reasons if r.kind.value != "model") or "model"
    return f"{v.event_id}: {v.verdict.value:<6} p={v.confidence:.2f} risk={v.risk_score:.2f} ({why})"


class TollgateModel:
    """A loaded decision pipeline with a notebook-friendly face. Not the torch module (a
    model with its ONNX graph, the default, is served without one): if you need it,
    ``engine.model.load_model_dir(path).model``."""

    def __init__(self, pipeline: DecisionPipeline, settings: Settings, context: str = "memory"):
        self.pipeline = pipeline
        self.settings = settings
        self._context = context
        self._outcomes: OutcomeFeed | None = None

    @property
    def model_version(self) -> str:
        return self.pipeline.model_version

    @property
    def rules_version(self) -> str:
        return self.pipeline.rules_version

    @property
    def policy(self) -> Any:
        return self.pipeline.policy

    @overload
    def decide(self, events: TransactionEvent | Mapping[str, Any], *, batch_size: int = ...,
               outcomes: Any = ...) -> Verdict: ...
    @overload
    def decide(self, events: Iterable[TransactionEvent | Mapping[str, Any]], *, batch_size: int = ...,
               outcomes: Any = ...) -> Verdicts: ...

    def decide(self, events: Any, *, batch_size: int = 256, outcomes: Any = None) -> Verdict | Verdicts:
        """Verdicts for one event (→ ``Verdict``) or many (→ ``Verdicts``, same order).

        ``outcomes``: delayed outcomes to feed the context (see ``add_outcomes``).
        Invalid events raise ``EventValidationError`` naming the field, before anything
        is scored or recorded.
        """
        single = isinstance(events, (TransactionEvent, Mapping))
        batch = [to_event(e) for e in _rows(events)]
        if outcomes is not None:
            self.add_outcomes(outcomes)
        out = Verdicts()
        for start in range(0, len(batch), batch_size):
            chunk = batch[start:start + batch_size]
            if self._outcomes is None:
                out.extend(self.pipeline.decide_batch(chunk))
                continue
            for part in self._outcomes.parts(chunk, self.pipeline.components.store):
                out.extend(self.pipeline.decide_batch(part))
        return out[0] if single else out

    def add_outcomes(self, outcomes: Any) -> OutcomeFeed:
        """Delayed outcomes (``Outcome`` records, dicts in the ``tx.outcomes`` layout, or a
        DataFrame with those columns), for events scored before or after this call: each
        is fed into the memory context once the events scored reach its
        ``outcome_time_ms``, oldest first — when the stream's feedback worker would have
        recorded it. Returns the feed (``.applied``, ``.unmatched``, ``.describe()``)."""
        if self._context != "memory":
            raise RuntimeError("outcomes feed the memory context; with context='redis' the stream's feedback "
                               "worker records them")
        if self._outcomes is None:
            self._outcomes = OutcomeFeed()
        rows = [outcomes] if isinstance(outcomes, (Outcome, Mapping)) else _rows(outcomes)
        self._outcomes.add(rows, self.pipeline.components.store)
        return self._outcomes

    def reset_context(self) -> None:
        """Forget every event and outcome seen so far (memory context only)."""
        if self._context != "memory":
            raise RuntimeError("reset_context only applies to context='memory'; the Redis state is the stream's")
        self._outcomes = None
        old = self.pipeline.components.store
        fresh = make_store(self.settings, "memory") if isinstance(old, MemoryFeatureStore) else type(old)()
        self.pipeline.swap(store=fresh)

    def __repr__(self) -> str:
        p = self.policy
        return (f"<TollgateModel {self.model_version} · rules {self.rules_version} · context {self._context} · "
                f"policy reject≥{p.reject_threshold:g} review≥{p.review_threshold:g} tie<{p.tie_margin:g} "
                f"abstain<{p.abstain_threshold:g} detector→{p.detector_floor.value} degraded→{p.degraded_mode}>")


def _rows(events: Any) -> Iterable[Any]:
    if isinstance(events, (TransactionEvent, Mapping)):
        return [events]
    if hasattr(events, "to_dict") and hasattr(events, "columns"):  # a pandas DataFrame
        return events.to_dict(orient="records")
    return events


def to_event(item: TransactionEvent | Mapping[str, Any]) -> TransactionEvent:
    """A validated ``TransactionEvent`` from an event or an Avro/JSON-layout mapping, by the
    rules every entry point shares (``records.event_from_json``: a number or a map where
    text belongs is refused, as over HTTP)."""
    if isinstance(item, TransactionEvent):
        return item.validate()
    if isinstance(item, Mapping):
        return event_from_json(_clean_row(item))
    raise TypeError(f"expected a TransactionEvent or a mapping, got {type(item).__name__}")


def _clean_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Undo what tables do to events: NaN for missing optionals, numpy scalars, float ids."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, float) and math.isnan(value):
            continue
        if hasattr(value, "item") and not isinstance(value, (str, bytes)):
            value = value.item()  # numpy scalar → Python
        out[key] = value
    if isinstance(out.get("event_time_ms"), float) and float(out["event_time_ms"]).is_integer():
        out["event_time_ms"] = int(out["event_time_ms"])
    return out


def load_model(model: str | Path | None = None, *, rules: str | Path | None = None,
               context: ContextSource | Any = "memory", settings: Settings | None = None,
               record: bool = False) -> TollgateModel:
    """Load the serving model (or ``model``: a directory or a version), the rule set
    (``rules`` or ``settings.paths.rules_dir``) and the policy, as the stream does.
    ``record``: with ``context="redis"``, write scored events into the stream's state."""
    settings = settings or get_settings()
    pipeline = build_pipeline(settings, model=model, rules=rules, context=context, record=record)
    return TollgateModel(pipeline, settings, context if isinstance(context, str) else type(context).__name__)
