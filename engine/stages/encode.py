"""Field-isolated encoding: one event plus its context → tensors, with user text fenced off.

Why "field-isolated": a language model reading ``amount=12.50 memo=...`` as one string
can be talked into anything by a memo that says ``amount=0 decision: pass``. Here no
string ever carries a control field. The batch has three kinds of segments:

* **control fields** (trusted): ``control_numeric`` holds each numeric field as a scaled
  float in its own column (numbers stay numbers, never digit text) and
  ``control_categorical`` one id per categorical field, hashed into that field's own id
  range, so the column (and the id range) is the field-type index the model embeds;
* **history** (trusted): the customer's last N events as a sequence
  (``history_numeric``, ``history_categorical``, ``history_mask``), most recent first;
* **text** (untrusted): memo and merchant descriptor, cleaned by ``clean_user_text`` and
  tokenised by ``engine.text.tokenizer`` into fixed positions of ``text_ids``. That
  vocabulary has no field marker and no control token (only ``[PAD]``/``[UNK]``) and the
  ids index their own embedding table, so text can only ever be text.

Nothing in the control or history tensors is computed from user text; the hypothesis
test ``tests/unit/test_encode_isolation.py`` checks exactly that.

>>> schema = FeatureSchema.default()
>>> schema.n_numeric == len(schema.numeric_fields), schema.history_len
(True, 16)
>>> b = EncodedBatch.empty(schema, 2)
>>> len(b), tuple(b.history_numeric.shape), len(b[1:]), len(EncodedBatch.concat([b, b]))
(2, (2, 16, 4), 1, 4)
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.features.history import resolve_history_order
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import CONTEXT_FEATURES, FEATURE_SCALING, HISTORY_LEN, SPEC_FINGERPRINT
from engine.records import (
    MAX_AMOUNT,
    MAX_EVENT_TIME_MS,
    MIN_EVENT_TIME_MS,
    EventValidationError,
    TransactionEvent,
)
from engine.text.textproc import clean_user_text
from engine.text.tokenizer import load_text_tokenizer

if TYPE_CHECKING:  # EncodedBatch's tensors: a worker whose model runs in its model process
    # encodes ``ArrayBatch``es and never imports PyTorch (tests/integration/test_worker_start_imports.py)
    import torch
    from torch import Tensor

#: Categorical control fields and their id-range sizes (slot 0 of each range = missing).
CATEGORICAL_FIELDS: tuple[tuple[str, int], ...] = (
    ("channel", 16), ("currency", 64), ("country", 512), ("merchant_category", 1024),
    ("terminal", 8192), ("hour", 25), ("weekday", 8),
)
#: History categorical columns reuse the control ranges of the same name.
HISTORY_CATEGORICAL: tuple[str, ...] = ("terminal", "hour", "weekday")
HISTORY_NUMERIC: tuple[str, ...] = ("amount_log", "seconds_since_prev_log", "age_log", "same_terminal")
#: Untrusted text fields and how many token positions each owns in ``text_ids``.
TEXT_FIELDS: tuple[tuple[str, int], ...] = (("memo", 48), ("merchant_descriptor", 16))


def _offsets() -> dict[str, int]:
    # Global id 0 is the padding id (empty history slots); ranges start at 1.
    out, start = {}, 1
    for name, size in CATEGORICAL_FIELDS:
        out[name] = start
        start += size
    return out


@dataclass(frozen=True, slots=True)
class FeatureSchema:
    """Sizes and names of every tensor in an ``EncodedBatch``; its hash goes in the model card.

    ``categorical_buckets`` is the size of the one shared categorical id space: each field
    owns the range ``[categorical_offsets[i], categorical_offsets[i] + categorical_sizes[i])``.
    """

    numeric_fields: tuple[str, ...]
    categorical_fields: tuple[str, ...]
    categorical_sizes: tuple[int, ...]
    categorical_offsets: tuple[int, ...]
    categorical_buckets: int
    history_len: int
    history_numeric_fields: tuple[str, ...]
    history_categorical_fields: tuple[str, ...]
    text_fields: tuple[tuple[str, int], ...]
    text_vocab_size: int
    tokenizer_sha256: str
    feature_spec: str = SPEC_FINGERPRINT
    #: Which past events fill the history window, and in what order
    #: (``engine.features.history``); the store that enriches must use the same.
    history_order: str = "recent"

    @property
    def n_numeric(self) -> int:
        return len(self.numeric_fields)

    @property
    def n_categorical(self) -> int:
        return len(self.categorical_fields)

    @property
    def n_history_numeric(self) -> int:
        return len(self.history_numeric_fields)

    @property
    def n_history_categorical(self) -> int:
        return len(self.history_categorical_fields)

    @property
    def text_len(self) -> int:
        return sum(n for _, n in self.text_fields)

    @property
    def text_vocab(self) -> int:
        return self.text_vocab_size

    def field_types(self) -> tuple[str, ...]:
        """One name per field-type embedding index: control numeric, control categorical,
        then the history segment and each text field."""
        return (self.numeric_fields + self.categorical_fields + ("history",)
                + tuple(f"text:{name}" for name, _ in self.text_fields))

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["history_order"] == "recent":  # the order before it was a choice: same hash as then
            del out["history_order"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSchema:
        conv: dict[str, Any] = {
            k: (tuple(tuple(x) if isinstance(x, list) else x for x in v) if isinstance(v, list) else v)
            for k, v in data.items()}
        return cls(**conv)

    def schema_hash(self) -> str:
        """Stable hash of everything that decides what a tensor column means."""
        blob = json.dumps(self.to_dict(), sort_keys=True, default=list).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @classmethod
    def default(cls, history_order: str | None = None) -> FeatureSchema:
        """The schema this code encodes; ``history_order`` None = the deployment's
        (``settings.features.history_order``), so every entry point agrees."""
        history_order = resolve_history_order(history_order)
        tok = load_text_tokenizer()
        offs = _offsets()
        return cls(
            numeric_fields=("amount_log",) + CONTEXT_FEATURES,
            categorical_fields=tuple(n for n, _ in CATEGORICAL_FIELDS),
            categorical_sizes=tuple(s for _, s in CATEGORICAL_FIELDS),
            categorical_offsets=tuple(offs[n] for n, _ in CATEGORICAL_FIELDS),
            categorical_buckets=1 + sum(s for _, s in CATEGORICAL_FIELDS),
            history_len=HISTORY_LEN,
            history_numeric_fields=HISTORY_NUMERIC,
            history_categorical_fields=HISTORY_CATEGORICAL,
            text_fields=TEXT_FIELDS,
            text_vocab_size=tok.vocab_size,
            tokenizer_sha256=tok.sha256,
            history_order=history_order,
        )


#: The seven arrays of the encoded-batch contract, in a fixed order (the model's
#: ``engine.model.inputs.TENSOR_FIELDS`` names the same ones).
ENCODED_FIELDS: tuple[str, ...] = ("control_numeric", "control_categorical", "history_numeric",
                                   "history_categorical", "history_mask", "text_ids", "text_mask")


@dataclass(slots=True)
class ArrayBatch:
    """The same seven arrays as ``EncodedBatch``, as NumPy arrays: what a worker whose
    forward passes all run in its model process encodes, so that it never imports
    PyTorch and holds no copy of the model (``python ops/bench/worker_memory.py``).
    ``engine.model.inputs.as_inputs`` reads it as tensors."""

    control_numeric: np.ndarray  # [B, Fn] float32
    control_categorical: np.ndarray  # [B, Fc] int64
    history_numeric: np.ndarray  # [B, N, Hn] float32
    history_categorical: np.ndarray  # [B, N, Hc] int64
    history_mask: np.ndarray  # [B, N] bool
    text_ids: np.ndarray  # [B, T] int64
    text_mask: np.ndarray  # [B, T] bool

    def __len__(self) -> int:
        return int(self.control_numeric.shape[0])

    @property
    def batch_size(self) -> int:
        return len(self)

    def arrays(self) -> dict[str, np.ndarray]:
        return {n: getattr(self, n) for n in ENCODED_FIELDS}

    def to_tensors(self) -> EncodedBatch:
        """The same batch as tensors (zero-copy: ``torch.from_numpy``)."""
        torch = _torch()
        return EncodedBatch(*(torch.from_numpy(getattr(self, n)) for n in ENCODED_FIELDS))

    @classmethod
    def empty(cls, schema: FeatureSchema, batch_size: int = 0) -> ArrayBatch:
        """All-padding batch of the right shapes and dtypes (``EncodedBatch.empty`` as tensors)."""
        B, N, T = batch_size, schema.history_len, schema.text_len
        return cls(np.zeros((B, schema.n_numeric), np.float32), np.zeros((B, schema.n_categorical), np.int64),
                   np.zeros((B, N, schema.n_history_numeric), np.float32),
                   np.zeros((B, N, schema.n_history_categorical), np.int64), np.zeros((B, N), bool),
                   np.zeros((B, T), np.int64), np.zeros((B, T), bool))

    def assert_finite(self) -> None:
        _assert_finite(self, np.isfinite)


def _assert_finite(batch: Any, isfinite: Any) -> None:
    """The float arrays of either batch form hold no NaN or inf (``isfinite``: NumPy's or PyTorch's)."""
    for name in ("control_numeric", "history_numeric"):
        if not bool(isfinite(getattr(batch, name)).all()):
            raise AssertionError(f"{name} holds NaN or inf: refusing to feed the model")


def _torch() -> Any:
    # local: only EncodedBatch's tensor methods need PyTorch; a worker with a model process never calls them
    import torch

    return torch


@dataclass(slots=True)
class EncodedBatch:
    """The model's input: tensors only, first dimension = events (see docs/architecture.md)."""

    control_numeric: Tensor  # [B, Fn] float32
    control_categorical: Tensor  # [B, Fc] int64
    history_numeric: Tensor  # [B, N, Hn] float32
    history_categorical: Tensor  # [B, N, Hc] int64
    history_mask: Tensor  # [B, N] bool, True = a real past event
    text_ids: Tensor  # [B, T] int64 (untrusted segment)
    text_mask: Tensor  # [B, T] bool, True = a real token

    def __len__(self) -> int:
        return int(self.control_numeric.shape[0])

    @property
    def batch_size(self) -> int:
        return len(self)

    def __getitem__(self, index: int | slice | Tensor | Sequence[int]) -> EncodedBatch:
        """Rows of the batch; an int keeps the batch dimension (a batch of one)."""
        if isinstance(index, int):
            index = slice(index, index + 1) if index != -1 else slice(-1, None)
        elif not isinstance(index, slice) and not hasattr(index, "dtype"):
            torch = _torch()
            index = torch.as_tensor(list(index), dtype=torch.long)
        return EncodedBatch(*(getattr(self, n)[index] for n in ENCODED_FIELDS))

    def to(self, device: torch.device | str, non_blocking: bool = False) -> EncodedBatch:
        return EncodedBatch(*(getattr(self, n).to(device, non_blocking=non_blocking) for n in ENCODED_FIELDS))

    def tensors(self) -> dict[str, Tensor]:
        return {n: getattr(self, n) for n in ENCODED_FIELDS}

    @staticmethod
    def concat(batches: Sequence[EncodedBatch]) -> EncodedBatch:
        if not batches:
            raise ValueError("concat needs at least one batch")
        torch = _torch()
        return EncodedBatch(*(torch.cat([getattr(b, n) for b in batches]) for n in ENCODED_FIELDS))

    @classmethod
    def empty(cls, schema: FeatureSchema, batch_size: int = 0) -> EncodedBatch:
        """All-padding batch of the right shapes (warm-up, degraded paths, tests)."""
        return ArrayBatch.empty(schema, batch_size).to_tensors()

    def assert_finite(self) -> None:
        _assert_finite(self, _torch().isfinite)


_UNIT = np.array([FEATURE_SCALING[n] == "unit" for n in CONTEXT_FEATURES])
_LOG1P = np.array([FEATURE_SCALING[n] == "log1p" for n in CONTEXT_FEATURES])
_LOGRATIO = np.array([FEATURE_SCALING[n] == "logratio" for n in CONTEXT_FEATURES])
_HOUR_MS, _DAY_MS = 3_600_000, 86_400_000
#: ``seconds_since_prev`` for the oldest history entry, whose predecessor is not kept.
_UNKNOWN_GAP_S = 30 * 86_400.0


def scale_context(values: np.ndarray) -> np.ndarray:
    """Raw context features [B, F] → model scale: log1p for heavy tails, clipped log for
    ratios, [0, 1] for shares and flags. Negative or non-finite raw values cannot occur
    (the stores guarantee it) but are clamped anyway so scaling itself never makes NaN."""
    x = np.nan_to_num(values, nan=0.0, posinf=1e12, neginf=0.0)
    out = np.empty_like(x, dtype=np.float32)
    out[:, _LOG1P] = np.log1p(np.maximum(x[:, _LOG1P], 0.0))
    out[:, _UNIT] = np.clip(x[:, _UNIT], 0.0, 1.0)
    out[:, _LOGRATIO] = np.clip(np.log(np.maximum(x[:, _LOGRATIO], 1e-6)), -8.0, 8.0)
    return out


def _checked_numbers(events: Sequence[TransactionEvent]) -> tuple[np.ndarray, np.ndarray]:
    """Amounts and times as arrays, with a typed error naming the first bad event."""
    for e in events:  # numpy would happily parse "12" or True; the contract says float
        if type(e.amount) not in (float, int) or type(e.event_time_ms) is not int:
            name = "amount" if type(e.amount) not in (float, int) else "event_time_ms"
            raise EventValidationError(name, f"event {e.event_id!r}: {getattr(e, name)!r} has the wrong type")
    amounts = np.fromiter((e.amount for e in events), dtype=np.float64, count=len(events))
    bad = ~np.isfinite(amounts) | (amounts < 0) | (amounts > MAX_AMOUNT)
    if bad.any():
        e = events[int(np.argmax(bad))]
        raise EventValidationError("amount", f"event {e.event_id!r}: {e.amount!r} is not a finite "
                                   f"amount in [0, {MAX_AMOUNT:g}]")
    try:
        times = np.fromiter((e.event_time_ms for e in events), dtype=np.int64, count=len(events))
    except OverflowError:
        raise EventValidationError("event_time_ms", "is outside 2000..2100") from None
    bad = (times < MIN_EVENT_TIME_MS) | (times > MAX_EVENT_TIME_MS)
    if bad.any():
        e = events[int(np.argmax(bad))]
        raise EventValidationError("event_time_ms", f"event {e.event_id!r}: {e.event_time_ms} is outside 2000..2100")
    return amounts, times


def _older_neighbours(times: Sequence[int]) -> list[int]:
    """For each entry of a window not in time order, the time of the next-older entry in
    the window (the oldest gets the unknown gap), so ``seconds_since_prev`` keeps meaning
    "time since the previous event this window shows".

    >>> _older_neighbours((50, 10, 40))
    [40, -2591999990, 10]
    """
    order = sorted(range(len(times)), key=lambda x: -times[x])
    out = [0] * len(times)
    for rank, x in enumerate(order):
        out[x] = times[order[rank + 1]] if rank + 1 < len(order) else times[x] - int(_UNKNOWN_GAP_S * 1000)
    return out


class FieldIsolatedEncoder:
    """Events + their snapshots → ``EncodedBatch``. Stateless apart from the hash cache."""

    def __init__(self, schema: FeatureSchema | None = None):
        self.schema = schema or FeatureSchema.default()
        self.tokenizer = load_text_tokenizer()
        if self.tokenizer.sha256 != self.schema.tokenizer_sha256:
            raise ValueError(f"schema expects tokenizer {self.schema.tokenizer_sha256}, "
                             f"engine/assets has {self.tokenizer.sha256}")
        self._offset = dict(zip(self.schema.categorical_fields, self.schema.categorical_offsets))
        self._size = dict(zip(self.schema.categorical_fields, self.schema.categorical_sizes))
        #: Per field, the ids of the values seen: a column's ids are one dict lookup each.
        self._ids: dict[str, dict[str | None, int]] = {name: {} for name in self.schema.categorical_fields}
        self._text_cache: dict[str | bytes, np.ndarray] = {}

    def category_id(self, field_name: str, value: str | None) -> int:
        """Global id of a categorical value: crc32 into the field's own range (slot 0 =
        missing). crc32, not ``hash()``, so ids are identical in every process."""
        return self.category_ids(field_name, [value])[0]

    def category_ids(self, field_name: str, values: Sequence[str | None]) -> list[int]:
        """``category_id`` of each value of a column, computed once per distinct value."""
        ids = self._ids[field_name]
        get = ids.get
        out = [get(v) for v in values]
        if None in out:
            if len(ids) > 200_000:  # unbounded ids (terminals) must not grow memory
                ids.clear()
            size, offset = self._size[field_name], self._offset[field_name]
            for i, got in enumerate(out):
                if got is None:
                    value = values[i]
                    got = offset if not value else offset + 1 + zlib.crc32(value.encode("utf-8")) % (size - 1)
                    ids[value] = out[i] = got
        return out  # type: ignore[return-value]  # every None was filled above

    def encode(self, events: Sequence[TransactionEvent],
               snapshots: Sequence[ContextSnapshot]) -> EncodedBatch:
        """The batch as tensors (training, the in-process model)."""
        return self.encode_arrays(events, snapshots).to_tensors()

    def encode_arrays(self, events: Sequence[TransactionEvent],
                      snapshots: Sequence[ContextSnapshot]) -> ArrayBatch:
        """The batch as NumPy arrays: the same values as ``encode``, no PyTorch."""
        if len(events) != len(snapshots):
            raise ValueError(f"{len(events)} events but {len(snapshots)} snapshots")
        for e, s in zip(events, snapshots):
            if s.event_id and s.event_id != e.event_id:
                raise ValueError(f"snapshot for {s.event_id!r} paired with event {e.event_id!r}")
        B = len(events)
        if B == 0:
            return ArrayBatch.empty(self.schema, 0)
        amounts, times = _checked_numbers(events)
        values = np.array([s.values for s in snapshots], dtype=np.float64).reshape(B, -1)
        numeric = np.empty((B, self.schema.n_numeric), dtype=np.float32)
        numeric[:, 0] = np.log1p(amounts)
        numeric[:, 1:] = scale_context(values)

        ids = self.category_ids
        categorical = np.array([
            ids("channel", [e.channel for e in events]), ids("currency", [e.currency for e in events]),
            ids("country", [e.country for e in events]),
            ids("merchant_category", [e.merchant_category for e in events]),
            ids("terminal", [e.terminal_id for e in events])], dtype=np.int64).reshape(5, B).T
        hours = (times // _HOUR_MS) % 24
        weekdays = (times // _DAY_MS + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
        categorical = np.concatenate([
            categorical, (self._offset["hour"] + 1 + hours)[:, None],
            (self._offset["weekday"] + 1 + weekdays)[:, None]], axis=1)

        h_num, h_cat, h_mask = self._history(events, snapshots, times)
        text_ids, text_mask = self._text(events)
        batch = ArrayBatch(numeric, categorical, h_num, h_cat, h_mask, text_ids, text_mask)
        batch.assert_finite()
        return batch

    def _history(self, events: Sequence[TransactionEvent], snapshots: Sequence[ContextSnapshot],
                 times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        B, N = len(events), self.schema.history_len
        rows: list[int] = []
        cols: list[int] = []
        amts: list[float] = []
        ts: list[int] = []
        same: list[float] = []
        terms: list[str] = []
        prev: list[int] = []
        time_ordered = self.schema.history_order == "recent"
        for i, (e, s) in enumerate(zip(events, snapshots)):
            k = min(N, len(s.history_amounts))
            if not k:
                continue
            rows.extend([i] * k)
            cols.extend(range(k))
            amts.extend(s.history_amounts[:k])
            ht = s.history_times_ms[:k]
            ts.extend(ht)
            if time_ordered:
                # gap to the next-older entry; the oldest kept one has no known predecessor
                prev.extend(ht[1:k] + ((ht[k - 1] - int(_UNKNOWN_GAP_S * 1000)),))
            else:
                prev.extend(_older_neighbours(ht))
            terminals, own = s.history_terminals[:k], e.terminal_id
            same.extend([1.0 if terminal == own else 0.0 for terminal in terminals])
            terms.extend(terminals)
        h_num = np.zeros((B, N, self.schema.n_history_numeric), dtype=np.float32)
        h_cat = np.zeros((B, N, self.schema.n_history_categorical), dtype=np.int64)
        h_mask = np.zeros((B, N), dtype=bool)
        if rows:
            r, c = np.asarray(rows), np.asarray(cols)
            t = np.asarray(ts, dtype=np.int64)
            h_num[r, c, 0] = np.log1p(np.maximum(np.asarray(amts, dtype=np.float64), 0.0))
            h_num[r, c, 1] = np.log1p(np.maximum(t - np.asarray(prev, dtype=np.int64), 0) / 1000.0)
            h_num[r, c, 2] = np.log1p(np.maximum(times[r] - t, 0) / 1000.0)
            h_num[r, c, 3] = np.asarray(same, dtype=np.float32)
            h_cat[r, c, 0] = np.asarray(self.category_ids("terminal", terms), dtype=np.int64)
            h_cat[r, c, 1] = self._offset["hour"] + 1 + (t // _HOUR_MS) % 24
            h_cat[r, c, 2] = self._offset["weekday"] + 1 + (t // _DAY_MS + 3) % 7
            h_mask[r, c] = True
        return h_num, h_cat, h_mask

    def _text(self, events: Sequence[TransactionEvent]) -> tuple[np.ndarray, np.ndarray]:
        """Clean → tokenise → fixed positions per text field. Results are cached per raw
        string (descriptors and many memos repeat), bounded like the hash cache."""
        B = len(events)
        ids = np.zeros((B, self.schema.text_len), dtype=np.int64)
        cache = self._text_cache
        start = 0
        for name, length in self.schema.text_fields:
            raws = [getattr(e, name) for e in events]
            missing = list(dict.fromkeys(r for r in raws if r and r not in cache))
            if missing:
                cleaned = [clean_user_text(r).text for r in missing]
                nonempty = [c for c in cleaned if c]
                pieces = iter(self.tokenizer.token_ids(nonempty)) if nonempty else iter(())
                if len(cache) > 50_000:
                    cache.clear()
                for raw, text in zip(missing, cleaned):
                    cache[raw] = np.asarray(next(pieces) if text else (), dtype=np.int64)
            for i, raw in enumerate(raws):
                if raw:
                    piece = cache[raw][:length]
                    ids[i, start:start + len(piece)] = piece
            start += length
        return ids, ids != 0


class ArrayEncoder:
    """The encode stage of a worker whose forward passes all run in its model process:
    ``FieldIsolatedEncoder``'s encoding, handed over as an ``ArrayBatch`` (no PyTorch in
    the worker; ``engine.assemble.load_model_components`` chooses it)."""

    def __init__(self, encoder: FieldIsolatedEncoder | None = None):
        self.inner = encoder or FieldIsolatedEncoder()
        self.schema = self.inner.schema

    def encode(self, events: Sequence[TransactionEvent], snapshots: Sequence[ContextSnapshot]) -> ArrayBatch:
        return self.inner.encode_arrays(events, snapshots)
