"""Request and response bodies of the HTTP service, as pydantic models.

They mirror ``TransactionEvent`` and ``Verdict`` field for field (the Avro layout), and
carry the same bounds as ``TransactionEvent.validate`` so the published OpenAPI document
tells a caller — and schemathesis — exactly what is accepted.

>>> EventIn.model_validate({"event_id": "e1", "event_time_ms": 1700000000000, "customer_id": "c1",
...     "account_id": "a1", "terminal_id": "t1", "merchant_category": "5411", "amount": 12.5,
...     "currency": "EUR", "channel": "ecommerce", "country": "BE"}).amount
12.5
"""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
)

from engine.records import (
    MAX_AMOUNT,
    MAX_ATTRIBUTES,
    MAX_EVENT_TIME_MS,
    MAX_ID_LENGTH,
    MIN_EVENT_TIME_MS,
    EventValidationError,
    check_identifier,
    json_time_ms,
)

#: Longest memo or descriptor taken, in characters: what one request may carry. Text over
#: ``engine.text.textproc.MAX_RAW_BYTES`` is cut there, with an input reason, exactly as on
#: the stream and in files (one rule for every entry point).
MAX_USER_TEXT_CHARS = 1_048_576


def _event_time(value: object) -> object:
    """``records.json_time_ms``, the rule every entry point shares: JSON has one number
    type, so 1722470400000.0 is an integer; ISO-8601 text with a zone is converted; "17…"
    digits as text and true are refused."""
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        raise ValueError("epoch milliseconds must be a JSON number, not text")
    try:
        return json_time_ms(value)
    except EventValidationError as exc:
        raise ValueError(str(exc).removeprefix("event_time_ms: ")) from None


def _valid_unicode(value: str) -> str:
    """Lone surrogates cannot be encoded as UTF-8 (Avro, Redis keys, the encoder's hash):
    refuse them in identifiers instead of failing deep in the pipeline."""
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise ValueError("contains a lone UTF-16 surrogate (not valid Unicode)")
    return value


def _identifier(value: str) -> str:
    """``records.check_identifier``, the rule every entry point shares (no control
    characters, no lone surrogates), as a pydantic error."""
    try:
        return check_identifier("value", value)
    except EventValidationError as exc:
        raise ValueError(str(exc).removeprefix("value: ")) from None


#: No C0/C1 control character: published in the OpenAPI document, so fuzzers know.
_NO_CONTROL = r"^[^\x00-\x1f\x7f-\x9f]*$"
Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=_NO_CONTROL), AfterValidator(_identifier)]
Code = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=_NO_CONTROL), AfterValidator(_identifier)]
UserText = Annotated[str, Field(max_length=MAX_USER_TEXT_CHARS,
                                 description="Untrusted user text (screened by the detector; cut at 16,384 characters).")]


class EventIn(BaseModel):
    """One transaction event, as on ``tx.events``. Unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"examples": [{
        "event_id": "e-1001", "event_time_ms": 1_722_470_400_000, "customer_id": "c-42",
        "account_id": "a-42", "terminal_id": "t-7", "merchant_category": "5411", "amount": 54.2,
        "currency": "EUR", "channel": "card_present", "country": "BE", "memo": "groceries"}]})

    event_id: Id
    event_time_ms: Annotated[StrictInt, Field(ge=MIN_EVENT_TIME_MS, le=MAX_EVENT_TIME_MS),
                             BeforeValidator(_event_time),
                             # The schema publishes the integer form only: JSON Schema cannot bound an
                             # ISO string's date to the accepted range, and a fuzzer would take any
                             # well-formed one as valid.
                             WithJsonSchema({"type": "integer", "minimum": MIN_EVENT_TIME_MS,
                                             "maximum": MAX_EVENT_TIME_MS,
                                             "description": "Event time, epoch milliseconds (UTC). ISO-8601 text "
                                                            "with a zone (2024-08-01T00:00:00Z) is also accepted, "
                                                            "as on the stream and in files."})]
    customer_id: Id
    account_id: Id
    terminal_id: Id
    merchant_category: Code
    amount: Annotated[StrictFloat, Field(ge=0, le=MAX_AMOUNT, allow_inf_nan=False)]
    currency: Annotated[str, Field(pattern=r"^[A-Za-z]{3}$", description="ISO 4217 code")]
    channel: Code
    country: Annotated[str, Field(pattern=r"^[A-Za-z]{2}$", description="ISO 3166 alpha-2 code")]
    device_id: Annotated[str, Field(max_length=MAX_ID_LENGTH, pattern=_NO_CONTROL), AfterValidator(_identifier)] | None = None
    ip: Annotated[str, Field(max_length=64, pattern=_NO_CONTROL), AfterValidator(_identifier)] | None = None
    memo: UserText | None = None
    merchant_descriptor: UserText | None = None
    attributes: Annotated[dict[Annotated[str, Field(max_length=MAX_ID_LENGTH), AfterValidator(_identifier)],
                               Annotated[str, Field(max_length=1024), AfterValidator(_valid_unicode)]],
                          Field(max_length=MAX_ATTRIBUTES),
                          # Written out: pydantic would publish a key pattern as patternProperties,
                          # which lets a key that breaks it carry any value at all.
                          WithJsonSchema({"type": "object", "maxProperties": MAX_ATTRIBUTES,
                                          "propertyNames": {"maxLength": MAX_ID_LENGTH, "pattern": _NO_CONTROL},
                                          "additionalProperties": {"type": "string", "maxLength": 1024}})
                          ] = Field(default_factory=dict)


class ReasonOut(BaseModel):
    kind: str = Field(description="model, policy, detector, rule, shadow_rule or input")
    code: str
    detail: str = ""


class VerdictOut(BaseModel):
    """The verdict for one event (the ``tx.verdicts`` layout)."""

    event_id: str
    customer_id: str
    verdict: Annotated[str, Field(pattern="^(pass|review|reject)$")]
    confidence: float
    probabilities: dict[str, float]
    risk_score: float
    reasons: list[ReasonOut]
    model_version: str
    rules_version: str
    decision_latency_ms: float
    decided_at_ms: int
    event_time_ms: int
    detector_score: float | None = None


class ErrorOut(BaseModel):
    detail: str | list[dict]


ERROR_RESPONSES: dict[int | str, dict] = {
    400: {"model": ErrorOut, "description": "Malformed JSON or invalid UTF-8 (the line and column are named)"},
    401: {"model": ErrorOut, "description": "API token missing or wrong (only when one is configured)"},
    408: {"model": ErrorOut, "description": "The body did not arrive whole within the configured time"},
    413: {"model": ErrorOut, "description": "Body larger than the configured limit"},
    415: {"model": ErrorOut, "description": "The body is not declared as JSON (Content-Type: application/json)"},
    422: {"model": ErrorOut, "description": "An event field is missing or out of range (the field is named)"},
    429: {"model": ErrorOut, "description": "This client has too many events waiting; retry after Retry-After"},
    503: {"model": ErrorOut, "description": "Warming up, or the queue is full; retry after Retry-After"},
}
