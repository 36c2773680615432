"""FieldIsolatedEncoder, EncodedBatch and FeatureSchema (no servers)."""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.model.inputs import TENSOR_FIELDS
from engine.records import EventValidationError
from engine.stages.encode import (
    ENCODED_FIELDS,
    ArrayBatch,
    ArrayEncoder,
    EncodedBatch,
    FeatureSchema,
    FieldIsolatedEncoder,
)
from engine.text.tokenizer import FORBIDDEN_TOKENS, PAD_ID, UNK_ID, load_text_tokenizer
from tests.support.events import event

T0 = 1_700_000_000_000
MIN = 60_000


def ev(eid, t, amount=10.0, customer="c1", terminal="t1", memo=None, descriptor=None, **kw):
    return event(0, event_id=eid, event_time_ms=t, customer_id=customer, terminal_id=terminal, amount=amount,
                 channel="card_present", device_id="d1", memo=memo, merchant_descriptor=descriptor, **kw)


@pytest.fixture(scope="module")
def encoder() -> FieldIsolatedEncoder:
    return FieldIsolatedEncoder()


def enriched(events):
    return events, MemoryFeatureStore().enrich(events)


def test_shapes_and_dtypes_follow_the_schema(encoder):
    s = encoder.schema
    events, snaps = enriched([ev(f"e{i}", T0 + i * MIN, 5.0 * (i + 1), memo="rent June" if i % 2 else None)
                              for i in range(5)])
    b = encoder.encode(events, snaps)
    assert b.control_numeric.shape == (5, s.n_numeric) and b.control_numeric.dtype == torch.float32
    assert b.control_categorical.shape == (5, s.n_categorical) and b.control_categorical.dtype == torch.int64
    assert b.history_numeric.shape == (5, s.history_len, s.n_history_numeric)
    assert b.history_categorical.shape == (5, s.history_len, s.n_history_categorical)
    assert b.history_mask.dtype == torch.bool and b.text_mask.dtype == torch.bool
    assert b.text_ids.shape == (5, s.text_len)
    assert b.history_mask.sum(1).tolist() == [0, 1, 2, 3, 4]
    assert b.text_mask[0].sum() == 0 and b.text_mask[1, :48].sum() > 0 and b.text_mask[1, 48:].sum() == 0


def test_numbers_are_numbers(encoder):
    events, snaps = enriched([ev("a", T0, 99.0), ev("b", T0 + MIN, 1.0)])
    b = encoder.encode(events, snaps)
    assert b.control_numeric[0, 0].item() == pytest.approx(math.log1p(99.0))
    vel = encoder.schema.numeric_fields.index("velocity_1h_amount")
    assert b.control_numeric[1, vel].item() == pytest.approx(math.log1p(99.0))
    # history of "b": one past event, amount 99, one minute old, same terminal
    assert b.history_numeric[1, 0, 0].item() == pytest.approx(math.log1p(99.0))
    assert b.history_numeric[1, 0, 2].item() == pytest.approx(math.log1p(60.0))
    assert b.history_numeric[1, 0, 3].item() == 1.0


def test_categorical_ids_stay_in_their_field_range(encoder):
    s = encoder.schema
    events, snaps = enriched([ev(f"e{i}", T0 + i * MIN, terminal=f"t{i}") for i in range(50)])
    b = encoder.encode(events, snaps)
    for j, (off, size) in enumerate(zip(s.categorical_offsets, s.categorical_sizes)):
        col = b.control_categorical[:, j]
        assert bool(((col >= off) & (col < off + size)).all()), s.categorical_fields[j]
    assert int(b.history_categorical.max()) < s.categorical_buckets
    # ids are process-independent (crc32), not Python's salted hash
    assert FieldIsolatedEncoder().category_id("terminal", "t7") == encoder.category_id("terminal", "t7")


def test_hour_and_weekday(encoder):
    # 2023-11-14 22:13:20 UTC is a Tuesday
    events, snaps = enriched([ev("a", T0)])
    b = encoder.encode(events, snaps)
    s = encoder.schema
    hour = b.control_categorical[0, s.categorical_fields.index("hour")] - s.categorical_offsets[-2] - 1
    weekday = b.control_categorical[0, s.categorical_fields.index("weekday")] - s.categorical_offsets[-1] - 1
    assert (int(hour), int(weekday)) == (22, 1)


def test_bad_input_gets_typed_errors(encoder):
    events, snaps = enriched([ev("a", T0)])
    with pytest.raises(EventValidationError, match="amount"):
        encoder.encode([dataclasses.replace(events[0], amount=float("nan"))], snaps)
    with pytest.raises(EventValidationError, match="amount"):
        encoder.encode([dataclasses.replace(events[0], amount=-1.0)], snaps)
    with pytest.raises(EventValidationError, match="event_time_ms"):
        encoder.encode([dataclasses.replace(events[0], event_time_ms=5)], snaps)
    with pytest.raises(EventValidationError, match="amount"):
        encoder.encode([dataclasses.replace(events[0], amount="12")], snaps)
    with pytest.raises(ValueError, match="paired"):
        encoder.encode([ev("other", T0)], snaps)
    with pytest.raises(ValueError, match="snapshots"):
        encoder.encode(events, [])


def test_non_finite_context_never_reaches_the_model(encoder):
    events, snaps = enriched([ev("a", T0)])
    poisoned = dataclasses.replace(snaps[0], values=(float("nan"), float("inf")) + snaps[0].values[2:])
    b = encoder.encode(events, [poisoned])
    assert bool(torch.isfinite(b.control_numeric).all())
    with pytest.raises(AssertionError, match="NaN"):
        dataclasses.replace(b, control_numeric=b.control_numeric * float("nan")).assert_finite()


def test_degraded_empty_snapshot_encodes(encoder):
    e = ev("a", T0)
    b = encoder.encode([e], [ContextSnapshot.empty(e)])
    assert len(b) == 1 and not b.history_mask.any()


def test_batch_slicing_concat_and_device(encoder):
    events, snaps = enriched([ev(f"e{i}", T0 + i * MIN) for i in range(6)])
    b = encoder.encode(events, snaps)
    assert len(b[2]) == 1 and torch.equal(b[2].control_numeric, b.control_numeric[2:3])
    assert len(b[-1]) == 1 and torch.equal(b[-1].history_mask, b.history_mask[5:6])
    assert len(b[1:4]) == 3 and len(b[[0, 5]]) == 2 and len(b[torch.tensor([1, 2])]) == 2
    whole = EncodedBatch.concat([b[:2], b[2:]])
    assert all(torch.equal(x, y) for x, y in zip(whole.tensors().values(), b.tensors().values()))
    assert b.to("cpu").text_ids.device.type == "cpu"
    assert len(encoder.encode([], [])) == 0


def test_array_batches_hold_the_same_values_as_tensor_batches(encoder):
    """A worker whose model runs in its model process encodes NumPy arrays
    (ArrayEncoder); the model must see exactly what the tensor path gives it."""
    events, snaps = enriched([ev(f"e{i}", T0 + i * MIN, memo="rent June" if i % 2 else None) for i in range(5)])
    arrays, tensors = ArrayEncoder(encoder).encode(events, snaps), encoder.encode(events, snaps)
    assert isinstance(arrays, ArrayBatch) and len(arrays) == arrays.batch_size == 5
    assert ENCODED_FIELDS == TENSOR_FIELDS  # the encoder's names are the model's (engine.model.inputs)
    empty = ArrayBatch.empty(encoder.schema, 2)
    assert {n: (v.shape, v.dtype) for n, v in empty.arrays().items()} == {
        n: (tuple(t.shape), t.numpy().dtype) for n, t in EncodedBatch.empty(encoder.schema, 2).tensors().items()}
    for name, value in arrays.arrays().items():
        assert isinstance(value, np.ndarray)
        assert np.array_equal(value, getattr(tensors, name).numpy()), name
        assert value.dtype == getattr(tensors, name).numpy().dtype, name
    assert len(ArrayEncoder(encoder).encode([], [])) == 0
    with pytest.raises(AssertionError, match="NaN"):
        dataclasses.replace(arrays, history_numeric=arrays.history_numeric * np.nan).assert_finite()


def test_schema_hash_is_stable_and_sensitive():
    a, b = FeatureSchema.default(), FeatureSchema.default()
    assert a.schema_hash() == b.schema_hash() and len(a.schema_hash()) == 16
    assert FeatureSchema.from_dict(a.to_dict()) == a
    assert dataclasses.replace(a, history_len=8).schema_hash() != a.schema_hash()
    assert dataclasses.replace(a, tokenizer_sha256="x").schema_hash() != a.schema_hash()
    assert len(a.field_types()) == a.n_numeric + a.n_categorical + 1 + len(a.text_fields)


def test_tokenizer_vocabulary_has_no_control_tokens():
    tok = load_text_tokenizer()
    vocab = tok._tok.get_vocab()
    assert not tok._tok.get_added_tokens_decoder()
    assert not any(t in vocab for t in FORBIDDEN_TOKENS)
    specials = [t for t, i in vocab.items() if t.startswith("[") and t.endswith("]") and len(t) > 2]
    assert sorted(specials) == ["[PAD]", "[UNK]"] and vocab["[PAD]"] == PAD_ID and vocab["[UNK]"] == UNK_ID
    ids, mask = tok.encode(["[PAD] [UNK] [PAD]", "\u2028decision: pass", "日本語のメモ 🚀"], 32)
    assert bool((ids[mask] > UNK_ID).all())  # literal specials become plain byte pieces


def test_tokenizer_training_is_reproducible(tmp_path):
    from engine.offline.text_tokenizer_build import train_text_tokenizer
    from engine.text.tokenizer import TextTokenizer

    out = train_text_tokenizer(tmp_path / "tok.json", vocab_size=400, n_synthetic=2000)
    again = train_text_tokenizer(tmp_path / "tok2.json", vocab_size=400, n_synthetic=2000)
    assert out.read_bytes() == again.read_bytes()
    assert TextTokenizer(out).vocab_size == 400


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(["", "t7", "ecommerce", "BE", "5411"]),
                                  st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)), max_size=40),
       field=st.sampled_from(["channel", "currency", "country", "merchant_category", "terminal"]))
def test_category_ids_are_crc32_into_the_fields_range(values, field):
    """A column's ids, cached or not, are the definition's: slot 0 of the field's range for
    a missing value, else crc32 of the UTF-8 into the rest of it (what served models were
    trained on)."""
    encoder = FieldIsolatedEncoder()
    schema = encoder.schema
    offset = dict(zip(schema.categorical_fields, schema.categorical_offsets))[field]
    size = dict(zip(schema.categorical_fields, schema.categorical_sizes))[field]
    expected = [offset if not v else offset + 1 + zlib.crc32(v.encode("utf-8")) % (size - 1) for v in values]
    assert encoder.category_ids(field, values) == expected  # cold
    assert encoder.category_ids(field, values) == expected  # every value cached
    assert [encoder.category_id(field, v) for v in values] == expected
