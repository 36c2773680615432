"""Typed records that cross stage boundaries.

Every stage of the hot path takes and returns these, never loose dicts, so a failure
anywhere can be traced back to the Kafka position it came from (``SourcePosition``)
and dead-lettered with everything needed to replay it.

Times are integers in epoch milliseconds (UTC), matching Avro ``timestamp-millis``:
no timezone surprises, and arithmetic on windows stays exact.

>>> e = TransactionEvent(event_id="e1", event_time_ms=0, customer_id="c1", account_id="a1",
...     terminal_id="t1", merchant_category="5411", amount=12.5, currency="EUR",
...     channel="card_present", country="BE")
>>> TransactionEvent.from_dict(e.to_dict()) == e
True
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, overload


class Decision(str, enum.Enum):
    """The three verdicts, ordered by severity (see ``SEVERITY``)."""

    PASS = "pass"
    REVIEW = "review"
    REJECT = "reject"


#: Verdict labels in the fixed order used by every model head and probability vector.
DECISIONS: tuple[Decision, ...] = (Decision.PASS, Decision.REVIEW, Decision.REJECT)
SEVERITY: dict[Decision, int] = {Decision.PASS: 0, Decision.REVIEW: 1, Decision.REJECT: 2}
#: Event ids (and customer/terminal ids) of the synthetic events a worker decides while
#: warming up (``engine.worker.warmup``): kept out of everything that counts real traffic.
WARMUP_PREFIX = "__warmup__"


class OutcomeKind(str, enum.Enum):
    """What eventually happened to a transaction. Arrives days or weeks later."""

    CONFIRMED_FRAUD = "confirmed_fraud"
    CHARGEBACK = "chargeback"
    CONFIRMED_LEGITIMATE = "confirmed_legitimate"
    REVIEW_APPROVED = "review_approved"
    REVIEW_REJECTED = "review_rejected"

    @property
    def is_bad(self) -> bool:
        """True when the outcome proves the transaction was fraudulent or abusive."""
        return self in (OutcomeKind.CONFIRMED_FRAUD, OutcomeKind.CHARGEBACK, OutcomeKind.REVIEW_REJECTED)


#: Channels the simulator produces and the encoder knows; others are accepted and
#: hashed like any other categorical value.
CHANNELS: tuple[str, ...] = ("card_present", "ecommerce", "mobile_app", "transfer")


@dataclass(slots=True, frozen=True)
class SourcePosition:
    """Where a record was read from, so any failure can name it."""

    topic: str
    partition: int
    offset: int


class EventValidationError(ValueError):
    """A decoded event has a missing or out-of-range field. It is dead-lettered."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field_name = field_name


# Bounds that make an event "in range". Outside them the event is dead-lettered rather
# than scored: a negative or astronomically large amount is an upstream bug, not fraud.
MAX_AMOUNT = 1_000_000_000.0
MIN_EVENT_TIME_MS = 946_684_800_000  # 2000-01-01
MAX_EVENT_TIME_MS = 4_102_444_800_000  # 2100-01-01
MAX_ID_LENGTH = 128
MAX_ATTRIBUTES = 64
_SURROGATE = re.compile("[\ud800-\udfff]")
#: Never in an id: C0 and C1 control characters (NUL, newline, ESC, DEL, ...), dangerous in
#: logs, Redis keys and Kafka headers, and lone surrogates, which UTF-8 cannot carry.
_BAD_ID_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def check_identifier(name: str, value: object) -> str:
    """The rule for every id and code, at every entry point (Kafka, HTTP, files, Python):
    a string with no lone surrogate and no control character.

    >>> check_identifier("customer_id", "c-42")
    'c-42'
    >>> check_identifier("customer_id", "c\\x0042")
    Traceback (most recent call last):
    ...
    engine.records.EventValidationError: customer_id: contains a control character (U+0000)
    """
    if not isinstance(value, str):
        raise EventValidationError(name, f"must be a string, got {type(value).__name__}")
    bad = _BAD_ID_CHAR.search(value)  # one scan on the hot path; which rule only when it fails
    if bad:
        if _SURROGATE.match(bad.group()):
            raise EventValidationError(name, "contains a lone surrogate (not valid Unicode)")
        raise EventValidationError(name, f"contains a control character (U+{ord(bad.group()):04X})")
    return value


@dataclass(slots=True, frozen=True)
class TransactionEvent:
    """One payment or transfer as published by an upstream service on ``tx.events``.

    ``memo`` and ``merchant_descriptor`` are written by end users and are untrusted:
    the encoder keeps them in a separate segment, the detector screens them, and no
    rule may be steered by them except through the detector's score.
    """

    event_id: str
    event_time_ms: int
    customer_id: str
    account_id: str
    terminal_id: str
    merchant_category: str
    amount: float
    currency: str
    channel: str
    country: str
    device_id: str | None = None
    ip: str | None = None
    memo: str | None = None
    merchant_descriptor: str | None = None
    attributes: Mapping[str, str] = field(default_factory=dict)
    source: SourcePosition | None = field(default=None, compare=False)

    def validate(self) -> TransactionEvent:
        """Raise ``EventValidationError`` naming the first bad field; return self if fine."""
        # The character rule of the eight trusted strings, in one scan of them joined: a
        # bad character in the join is a bad character in one of them. Only then is each
        # checked on its own, in field order, so the error names the same field as it did
        # (tests/unit/test_event_validation.py; ``python ops/bench/codec.py``, the decode rows).
        try:
            joined = "".join((self.event_id, self.customer_id, self.account_id, self.terminal_id, self.channel,
                              self.merchant_category, "" if self.device_id is None else self.device_id,
                              "" if self.ip is None else self.ip))
        except TypeError:  # a non-string: the checks name it
            return self._validate(each_id=True)
        return self._validate(each_id=_BAD_ID_CHAR.search(joined) is not None)

    def _validate(self, each_id: bool) -> TransactionEvent:
        """``validate``; ``each_id``: apply ``check_identifier`` to each trusted string (else
        the caller's one scan found no bad character in any of them)."""
        for name in ("event_id", "customer_id", "account_id", "terminal_id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise EventValidationError(name, "must be a non-empty string")
            if len(value) > MAX_ID_LENGTH:
                raise EventValidationError(name, f"longer than {MAX_ID_LENGTH} characters")
            if each_id:
                check_identifier(name, value)
        if not isinstance(self.event_time_ms, int) or isinstance(self.event_time_ms, bool):
            raise EventValidationError("event_time_ms", "must be an integer (epoch milliseconds)")
        if not MIN_EVENT_TIME_MS <= self.event_time_ms <= MAX_EVENT_TIME_MS:
            raise EventValidationError("event_time_ms", f"{self.event_time_ms} is outside 2000..2100")
        if not isinstance(self.amount, (int, float)) or isinstance(self.amount, bool):
            raise EventValidationError("amount", "must be a number")
        if not math.isfinite(self.amount):
            raise EventValidationError("amount", "must be finite (NaN/inf never reach the model)")
        if not 0.0 <= self.amount <= MAX_AMOUNT:
            raise EventValidationError("amount", f"{self.amount} is outside [0, {MAX_AMOUNT:g}]")
        if not (isinstance(self.currency, str) and len(self.currency) == 3 and self.currency.isalpha()):
            raise EventValidationError("currency", "must be a 3-letter ISO 4217 code")
        if not (isinstance(self.country, str) and len(self.country) == 2 and self.country.isalpha()):
            raise EventValidationError("country", "must be a 2-letter ISO 3166 code")
        if not isinstance(self.channel, str) or not self.channel:
            raise EventValidationError("channel", "must be a non-empty string")
        if not isinstance(self.merchant_category, str) or not self.merchant_category:
            raise EventValidationError("merchant_category", "must be a non-empty string")
        if len(self.attributes) > MAX_ATTRIBUTES:
            raise EventValidationError("attributes", f"more than {MAX_ATTRIBUTES} entries")
        # Trusted string fields end up in Redis keys, Avro and Kafka headers, none of which
        # can carry a lone surrogate. (Untrusted text is cleaned instead: engine/text/textproc.py.)
        if each_id:
            for name in ("channel", "merchant_category", "device_id", "ip"):
                value = getattr(self, name)
                if value is not None:
                    check_identifier(name, value)
        for name in ("memo", "merchant_descriptor"):  # untrusted text, but text: never a number or a map
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise EventValidationError(name, f"must be a string or null, got {type(value).__name__}")
        for key, value in self.attributes.items():
            if not (isinstance(key, str) and isinstance(value, str)) or _SURROGATE.search(key + value):
                raise EventValidationError("attributes", f"entry {key!r} is not valid Unicode")
            check_identifier("attributes", key)
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain dict in the Avro/JSON field layout (no ``source``)."""
        out = {name: getattr(self, name) for name in _EVENT_FIELD_NAMES}
        out["attributes"] = dict(self.attributes)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: SourcePosition | None = None) -> TransactionEvent:
        """Build from the Avro/JSON layout. Unknown keys are ignored (forward compatible);
        missing required keys raise ``EventValidationError``."""
        kwargs: dict[str, Any] = {}
        for name in _EVENT_FIELD_NAMES:
            value = data.get(name)
            if value is not None:
                kwargs[name] = value
            elif name in _REQUIRED_EVENT_FIELDS:
                raise EventValidationError(name, "is required")
        if "attributes" in kwargs:
            kwargs["attributes"] = {str(k): str(v) for k, v in dict(kwargs["attributes"]).items()}
        return cls(**kwargs, source=source)


#: The record's fields in the Avro/JSON layout, resolved once instead of calling
#: ``dataclasses.fields`` for every event decoded or logged.
_EVENT_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(TransactionEvent) if f.name != "source")
_REQUIRED_EVENT_FIELDS = frozenset({
    "event_id", "event_time_ms", "customer_id", "account_id", "terminal_id",
    "merchant_category", "amount", "currency", "channel", "country",
})
_EVENT_STRINGS = ("event_id", "customer_id", "account_id", "terminal_id", "merchant_category",
                  "currency", "channel", "country")
_EVENT_OPTIONAL_STRINGS = ("device_id", "ip", "memo", "merchant_descriptor")


def event_from_json(data: Mapping[str, Any], source: SourcePosition | None = None) -> TransactionEvent:
    """A validated event from JSON-typed values: the one set of rules for every entry point
    that is not Avro (a JSON message on tx.events, ``POST /v1/decide``, ``tollgate score``
    files, ``engine.interfaces.api``). JSON has no schema, so types are checked here: a string field
    must be a string (a memo of ``12345`` or ``{"a": 1}``, a list-valued channel, a
    numeric id are refused, never converted), ``attributes`` an object of strings,
    ``event_time_ms`` whole epoch ms (or ISO-8601 with a zone), ``amount`` a number.

    >>> event_from_json({"event_id": "e1", "event_time_ms": 1722470400000, "customer_id": "c1",
    ...     "account_id": "a1", "terminal_id": "t1", "merchant_category": "5411", "amount": 12,
    ...     "currency": "EUR", "channel": "ecommerce", "country": "NA", "memo": 12345})
    Traceback (most recent call last):
    ...
    engine.records.EventValidationError: memo: must be a string or null, got int
    """
    data = dict(data)
    for name in _EVENT_STRINGS:
        if data.get(name) is not None and not isinstance(data[name], str):
            raise EventValidationError(name, f"must be a string, got {type(data[name]).__name__}")
    for name in _EVENT_OPTIONAL_STRINGS:
        if data.get(name) is not None and not isinstance(data[name], str):
            raise EventValidationError(name, f"must be a string or null, got {type(data[name]).__name__}")
    if "event_time_ms" in data:
        data["event_time_ms"] = json_time_ms(data["event_time_ms"])
    amount = data.get("amount")
    if isinstance(amount, int) and not isinstance(amount, bool):
        data["amount"] = float(amount)
    attributes = data.get("attributes")
    if attributes is not None:
        if not isinstance(attributes, Mapping):
            raise EventValidationError("attributes", "must be an object of strings")
        for key, value in attributes.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise EventValidationError("attributes", f"entry {key!r} must map a string to a string, "
                                                         f"got {type(value).__name__}")
    return TransactionEvent.from_dict(data, source).validate()


def json_time_ms(value: Any) -> Any:
    """Epoch milliseconds as given (a whole float becomes an int), or an ISO-8601 time with
    an explicit zone."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise EventValidationError("event_time_ms", f"{value!r} is not ISO-8601") from None
        if parsed.tzinfo is None:
            raise EventValidationError("event_time_ms", "ISO-8601 time needs a zone (e.g. Z)")
        return int(parsed.timestamp() * 1000)
    return value  # validate() rejects non-integers



@dataclass(slots=True, frozen=True)
class Outcome:
    """A real-world outcome for an earlier event, published on ``tx.outcomes``.

    A later outcome for the same ``event_id`` corrects (replaces) an earlier one.
    ``customer_id``/``terminal_id`` are optional conveniences; the feedback worker
    joins by ``event_id`` to the decision log either way.
    """

    event_id: str
    kind: OutcomeKind
    outcome_time_ms: int
    source: str
    customer_id: str | None = None
    terminal_id: str | None = None
    #: When the judged transaction happened, if the source knows it (a chargeback notice
    #: carries the transaction's date). Lets the delayed-label state take an outcome whose
    #: verdict has left Redis (``redis.decision_log_redis_hours``).
    event_time_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["kind"] = self.kind.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(
            event_id=str(data["event_id"]),
            kind=OutcomeKind(data["kind"]),
            outcome_time_ms=int(data["outcome_time_ms"]),
            source=str(data.get("source") or "unknown"),
            customer_id=data.get("customer_id"),
            terminal_id=data.get("terminal_id"),
            event_time_ms=None if data.get("event_time_ms") is None else int(data["event_time_ms"]),
        )


class ReasonKind(str, enum.Enum):
    """Which stage put a reason on a verdict."""

    MODEL = "model"  # the verdict follows the calibrated probabilities
    POLICY = "policy"  # tie margin, abstain threshold, degraded mode
    DETECTOR = "detector"  # adversarial-input detector flagged user text
    RULE = "rule"  # an enforced YAML rule fired
    SHADOW_RULE = "shadow_rule"  # a shadow rule would have fired (not applied)
    INPUT = "input"  # user text truncated or rejected before scoring


@dataclass(slots=True, frozen=True)
class Reason:
    kind: ReasonKind
    code: str
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "code": self.code, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reason:
        return cls(ReasonKind(data["kind"]), str(data["code"]), str(data.get("detail") or ""))


@dataclass(slots=True, frozen=True)
class Verdict:
    """The engine's answer for one event, published on ``tx.verdicts`` keyed by customer."""

    event_id: str
    customer_id: str
    verdict: Decision
    confidence: float
    probabilities: Mapping[str, float]
    risk_score: float
    reasons: tuple[Reason, ...]
    model_version: str
    rules_version: str
    decision_latency_ms: float
    decided_at_ms: int
    event_time_ms: int
    detector_score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "customer_id": self.customer_id,
            "verdict": self.verdict.value,
            "confidence": float(self.confidence),
            "probabilities": {k: float(v) for k, v in self.probabilities.items()},
            "risk_score": float(self.risk_score),
            "reasons": [r.to_dict() for r in self.reasons],
            "model_version": self.model_version,
            "rules_version": self.rules_version,
            "decision_latency_ms": float(self.decision_latency_ms),
            "decided_at_ms": int(self.decided_at_ms),
            "event_time_ms": int(self.event_time_ms),
            "detector_score": None if self.detector_score is None else float(self.detector_score),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(
            event_id=str(data["event_id"]),
            customer_id=str(data["customer_id"]),
            verdict=Decision(data["verdict"]),
            confidence=float(data["confidence"]),
            probabilities={str(k): float(v) for k, v in data["probabilities"].items()},
            risk_score=float(data["risk_score"]),
            reasons=tuple(Reason.from_dict(r) for r in data.get("reasons") or ()),
            model_version=str(data["model_version"]),
            rules_version=str(data["rules_version"]),
            decision_latency_ms=float(data["decision_latency_ms"]),
            decided_at_ms=int(data["decided_at_ms"]),
            event_time_ms=int(data["event_time_ms"]),
            detector_score=None if data.get("detector_score") is None else float(data["detector_score"]),
        )


@dataclass(slots=True, frozen=True, eq=False)
class VerdictBatch(Sequence[Verdict]):
    """The verdicts of one micro-batch as columns, row i = the batch's event i.

    What the pipeline hands the worker: the emitter writes each verdict's Avro body from
    these columns (``engine.wire.verdict_avro.write_verdicts``) and the metrics count them,
    without a ``Verdict`` record per event. It is also a ``Sequence[Verdict]``: indexing
    or iterating builds the typed records the edges hand out (the Python API, HTTP, the
    batch CLI), equal to what ``Verdict``'s own fields give.

    >>> v = Verdict("e1", "c1", Decision.PASS, 0.9, {"pass": 0.9}, 0.1, (), "m", "r", 1.0, 2, 3)
    >>> batch = VerdictBatch.of([v])
    >>> batch[0] == v, batch == [v], len(batch.take([]))
    (True, True, 0)
    """

    event_ids: list[str]
    customer_ids: list[str]
    verdicts: list[Decision]
    confidences: list[float]
    probabilities: list[Mapping[str, float]]
    risk_scores: list[float]
    reasons: list[tuple[Reason, ...]]
    model_versions: list[str]
    rules_versions: list[str]
    decision_latencies_ms: list[float]
    decided_at_ms: list[int]
    event_times_ms: list[int]
    detector_scores: list[float | None]

    def __post_init__(self) -> None:
        n = len(self.event_ids)
        if any(len(getattr(self, f)) != n for f in _VERDICT_COLUMNS):
            raise ValueError("verdict columns differ in length: "
                             + ", ".join(f"{f} {len(getattr(self, f))}" for f in _VERDICT_COLUMNS))

    @classmethod
    def of(cls, verdicts: Iterable[Verdict]) -> VerdictBatch:
        """The batch of these records (the same object when it already is one)."""
        if isinstance(verdicts, VerdictBatch):
            return verdicts
        rows = list(verdicts)
        # As ``Verdict.to_dict`` writes them: Python floats and ints (a NumPy integer
        # would wrap in the Avro writer's shifts), a verdict as its ``Decision``.
        return cls([v.event_id for v in rows], [v.customer_id for v in rows], [Decision(v.verdict) for v in rows],
                   [float(v.confidence) for v in rows],
                   [{k: float(p) for k, p in v.probabilities.items()} for v in rows],
                   [float(v.risk_score) for v in rows], [tuple(v.reasons) for v in rows],
                   [v.model_version for v in rows], [v.rules_version for v in rows],
                   [float(v.decision_latency_ms) for v in rows], [int(v.decided_at_ms) for v in rows],
                   [int(v.event_time_ms) for v in rows],
                   [None if v.detector_score is None else float(v.detector_score) for v in rows])

    def take(self, index: Iterable[int]) -> VerdictBatch:
        """The rows ``index`` names, in that order, as a batch."""
        rows = list(index)
        return VerdictBatch(*([column[i] for i in rows] for column in self._columns()))

    def _columns(self) -> tuple[list[Any], ...]:
        return tuple(getattr(self, f) for f in _VERDICT_COLUMNS)

    def __len__(self) -> int:
        return len(self.event_ids)

    @overload
    def __getitem__(self, index: int) -> Verdict: ...
    @overload
    def __getitem__(self, index: slice) -> list[Verdict]: ...
    def __getitem__(self, index: int | slice) -> Verdict | list[Verdict]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return Verdict(*(column[index] for column in self._columns()))

    def __iter__(self) -> Iterator[Verdict]:
        return (Verdict(*row) for row in zip(*self._columns()))

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same verdicts (a list of records included)."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable


#: ``VerdictBatch``'s columns, in ``Verdict``'s field order (a row is ``Verdict(*row)``).
_VERDICT_COLUMNS: tuple[str, ...] = ("event_ids", "customer_ids", "verdicts", "confidences", "probabilities",
                                     "risk_scores", "reasons", "model_versions", "rules_versions",
                                     "decision_latencies_ms", "decided_at_ms", "event_times_ms", "detector_scores")
assert len(_VERDICT_COLUMNS) == len(fields(Verdict))
