"""The CPU serving path of ``Inference`` (serving encoder layers, length-sorted chunks)
gives the outputs of the plain model call, row for row, and leaves the model untouched."""

from __future__ import annotations

import torch

from engine.infer import CPU_CHUNK_ROWS, Inference
from engine.infer_layers import ServingEncoderLayer
from engine.model import InputSpec, fresh_model, random_inputs
from engine.model.inputs import concat_inputs

SPEC = InputSpec(n_numeric=5, n_categorical=3, categorical_buckets=64, history_len=6, history_numeric=2,
                 history_categorical=1, text_len=12, text_vocab=50, schema_hash="s")


def test_serving_path_matches_the_plain_model_call_row_for_row():
    model, card = fresh_model(SPEC, version="v0", seed=3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    plain = Inference(model, card, serving_layers=False)
    served = Inference(model, card)
    assert any(isinstance(m, ServingEncoderLayer) for m in served.model.modules())
    assert not any(isinstance(m, ServingEncoderLayer) for m in model.modules())  # a copy was wrapped
    # More rows than one chunk, with and without text, short and long histories.
    batch = concat_inputs([random_inputs(SPEC, CPU_CHUNK_ROWS, seed=1, text_fill=0.0),
                           random_inputs(SPEC, CPU_CHUNK_ROWS + 7, seed=2, text_fill=0.6)])
    a, b = plain(batch), served(batch)
    assert a.probs.shape == b.probs.shape == (2 * CPU_CHUNK_ROWS + 7, 3)
    assert torch.allclose(a.probs, b.probs, atol=1e-5) and torch.allclose(a.risk, b.risk, atol=1e-5)
    assert torch.equal(a.exit_layer, b.exit_layer)
    small = random_inputs(SPEC, 5, seed=4)  # one call below the chunk size
    assert torch.allclose(plain(small).probs, served(small).probs, atol=1e-5)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
