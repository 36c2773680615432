"""The CPU serving path of ``Inference`` (serving encoder layers, length-sorted chunks)
gives the outputs of the plain model call, row for row, and leaves the model untouched."""

from __future__ import annotations

import torch

from engine.model import InputSpec, fresh_model, random_inputs
from engine.model.inputs import concat_inputs
from engine.model.serving_layers import ServingEncoderLayer
from engine.stages.infer import CPU_CHUNK_ROWS, Inference

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


def test_the_last_layer_computes_the_cls_token_alone_with_the_same_outputs():
    """CLS pooling reads position 0 of the last layer only: the serving layer computes that
    position alone (``forward_first``); PyTorch's layer computes all and keeps the first.
    Early exits and extra heads see the same values either way."""
    from engine.model.config import ModelConfig
    from engine.model.decision import DecisionModel
    from engine.model.serving_layers import with_serving_layers

    model = DecisionModel(ModelConfig(inputs=SPEC, n_layers=3, early_exit_layers=(1,))).eval()
    batch = random_inputs(SPEC, 40, seed=5, text_fill=0.5)
    first_only, full_last = with_serving_layers(model), with_serving_layers(model, first_only=False)
    last = first_only.backbone.layers[-1]
    calls = []
    last.forward_first = lambda *a, _f=last.forward_first, **k: calls.append(1) or _f(*a, **k)
    with torch.inference_mode():
        h, pad = model.backbone.embed_inputs(batch)
        assert tuple(model.backbone.run_layer(0, h, pad, first_only=True).shape) == (40, 1, h.shape[-1])
        ref, ours, full = model(batch), first_only(batch), full_last(batch)
        assert calls == [1]  # the last layer, once
        ref_exit, ours_exit = (m.forward_early_exit(batch, 0.4)[0] for m in (model, first_only))
    for name in ref:
        assert torch.allclose(ref[name], ours[name], atol=1e-5) and torch.allclose(full[name], ours[name], atol=1e-5)
    assert all(torch.allclose(ref_exit[k], ours_exit[k], atol=1e-5, equal_nan=True) for k in ref_exit)
