"""The rule file format, as pydantic models (``extra="forbid"``: a typo is an error).

Every ``*.yaml`` file in a rules directory (``tests/`` aside) is one ``RuleFile``
with up to three sections; a set may spread them over files as ops like::

    rules:
      - id: very-large-amount
        description: Amounts this large are never approved automatically.
        owner: fraud-ops
        mode: enforce          # or shadow: logged and counted, never applied
        priority: 100          # higher wins among rules with the same action
        when: event.amount >= 10000
        then: reject           # reject | review | pass | {constraint: never_pass}
    lists:
      blocked_devices:
        description: Devices tied to confirmed fraud.
        values: [dev-123, dev-456]
      blocked_terminals_live:
        source: redis          # a Redis set, re-read every refresh_s
        key: tg:lists:blocked_terminals
    policy:
      reject_threshold: 0.6    # the decide stage's thresholds, versioned with the rules

>>> RuleSpec(id="r1", description="d", owner="o", when="true", then="review").action
'review'
>>> RuleSpec(id="r1", description="d", owner="o", when="true", then={"constraint": "never_pass"}).action
'never_pass'
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

RULE_ID_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
LIST_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class ConstraintSpec(_Strict):
    """A limit on the final verdict rather than a verdict of its own.

    ``never_pass``: whatever the model or an allowlist says, the event is not passed
    (it goes to review unless something rejects it), e.g. "never pass above 1,000 EUR
    on a device first seen today".
    """

    constraint: Literal["never_pass"]


Action = Literal["reject", "review", "pass"]


class RuleSpec(_Strict):
    id: str = Field(pattern=RULE_ID_PATTERN, description="unique across the whole rule set")
    description: str = Field(min_length=1, max_length=500)
    owner: str = Field(min_length=1, max_length=100, description="team or person to ask about this rule")
    enabled: bool = True
    mode: Literal["enforce", "shadow"] = "enforce"
    priority: int = Field(default=0, ge=-1000, le=1000)
    when: str = Field(min_length=1, description="CEL condition; see engine/rules/expr.py")
    then: Action | ConstraintSpec

    @field_validator("when", mode="before")
    @classmethod
    def _when_is_text(cls, value: Any) -> Any:
        if isinstance(value, bool):  # `when: true` in YAML is a bool, not CEL text
            return "true" if value else "false"
        return value

    @property
    def action(self) -> str:
        """``reject``, ``review``, ``pass`` or the constraint name (``never_pass``)."""
        return self.then if isinstance(self.then, str) else self.then.constraint


class ListSpec(_Strict):
    """A named set of strings: inline ``values`` or a Redis set (``source: redis``)."""

    description: str = ""
    owner: str = ""
    source: Literal["yaml", "redis"] = "yaml"
    values: list[str] | None = None
    key: str | None = Field(default=None, min_length=1, max_length=256)
    url: str | None = Field(default=None, description="Redis URL; default: the engine's TOLLGATE_REDIS_URL")
    refresh_s: float = Field(default=10.0, ge=1.0, le=3600.0)

    @field_validator("values", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        # Terminal ids like 4711 are written bare in YAML; compare them as strings.
        if isinstance(value, list):
            return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
        return value

    @model_validator(mode="after")
    def _source_fields(self) -> ListSpec:
        if self.source == "yaml":
            if self.values is None:
                raise ValueError("a yaml list needs `values: [...]` (or `source: redis` with a `key`)")
            if self.key is not None or self.url is not None:
                raise ValueError("`key`/`url` only apply to `source: redis`")
        else:
            if self.key is None:
                raise ValueError("a redis list needs `key:` (the Redis set to read)")
            if self.values is not None:
                raise ValueError("a redis list takes its values from Redis; remove `values`")
        return self


class PolicySpec(_Strict):
    """Overrides of the decide stage's ``engine.stages.decide.Policy`` (unset keys keep defaults)."""

    reject_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    review_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    tie_margin: float | None = Field(default=None, ge=0.0, le=1.0)
    abstain_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    #: review or reject: a flagged event never passes on the model alone (engine.stages.decide).
    detector_floor: Literal["review", "reject"] | None = None
    degraded_mode: Literal["review", "model"] | None = None

    def overrides(self) -> dict[str, Any]:
        """Only the keys the file sets, in the shape ``engine.stages.decide.Policy.coerce`` takes."""
        return self.model_dump(exclude_none=True)


class RuleFile(_Strict):
    rules: list[RuleSpec] = Field(default_factory=list)
    lists: dict[str, ListSpec] = Field(default_factory=dict)
    policy: PolicySpec | None = None

    @field_validator("lists")
    @classmethod
    def _list_names(cls, value: dict[str, ListSpec]) -> dict[str, ListSpec]:
        for name in value:
            if not re.match(LIST_NAME_PATTERN, name):
                raise ValueError(f"list name {name!r} must match {LIST_NAME_PATTERN} (it is used as lists.{name})")
        return value
