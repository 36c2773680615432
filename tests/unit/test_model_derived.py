"""Derived card means, amount-to-mean ratios and terminal fraud counts: computed from the
encoded fields inside the model, so a model that reads them is served by the same inputs
as any other."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from engine.model import InputSpec, ModelConfig, fresh_model, load_model_dir, random_inputs, save_model_dir
from engine.model.derived import (
    BASELINE_DERIVED_NAMES,
    DERIVED_NAMES,
    TERMINAL_DERIVED_NAMES,
    DerivedCardBaseline,
    DerivedNumeric,
    DerivedTerminal,
)
from engine.stages.encode import FeatureSchema
from engine.stages.infer import Inference

torch.set_num_threads(1)
SPEC = InputSpec.from_schema(FeatureSchema.default())


def encoded_row(amount: float, windows: dict[str, tuple[float, float]]) -> torch.Tensor:
    """One row of encoded numeric fields (log1p scale, as the encoder writes them)."""
    row = torch.zeros(1, SPEC.n_numeric)
    names = SPEC.numeric_names
    row[0, names.index("amount_log")] = torch.log1p(torch.tensor(amount))
    for w, (count, total) in windows.items():
        row[0, names.index(f"velocity_{w}_count")] = torch.log1p(torch.tensor(count))
        row[0, names.index(f"velocity_{w}_amount")] = torch.log1p(torch.tensor(total))
    return row


def test_means_and_ratios_follow_the_windows():
    derive = DerivedNumeric(SPEC.numeric_names)
    out = derive(encoded_row(500.0, {"1h": (0, 0), "1d": (1, 100.0), "7d": (5, 250.0)}))
    got = dict(zip(DERIVED_NAMES, out[0, SPEC.n_numeric:].tolist()))
    assert got["card_mean_amount_1h_log"] == 0.0 and got["amount_to_mean_1h_log"] == 0.0  # empty window
    assert got["card_mean_amount_1d_log"] == pytest.approx(torch.log1p(torch.tensor(100.0)).item(), abs=1e-4)
    assert got["amount_to_mean_1d_log"] == pytest.approx(torch.log(torch.tensor(5.0)).item(), abs=1e-4)
    assert got["amount_to_mean_7d_log"] == pytest.approx(torch.log(torch.tensor(10.0)).item(), abs=1e-4)
    assert torch.equal(out[:, :SPEC.n_numeric], encoded_row(500.0, {"1h": (0, 0), "1d": (1, 100.0),
                                                                      "7d": (5, 250.0)}))


def test_the_older_baseline_is_the_30_day_window_before_the_recent_one():
    # a card whose last day holds two payments of 500 (its frauds, say) and whose month
    # before held ten of 50: against the 7-day mean the amount looks less unusual than it is
    row = encoded_row(500.0, {"1d": (2, 1000.0), "7d": (3, 1050.0), "30d": (12, 1500.0)})
    got = dict(zip(BASELINE_DERIVED_NAMES, DerivedCardBaseline(SPEC.numeric_names)(row)[0, SPEC.n_numeric:].tolist()))
    log = torch.log
    assert got["amount_to_older_mean_1d_log"] == pytest.approx(log(torch.tensor(500 / 50.0)).item(), abs=1e-4)
    assert got["amount_to_older_mean_7d_log"] == pytest.approx(log(torch.tensor(500 / 50.0)).item(), abs=1e-4)
    assert got["recent_to_older_mean_1d_log"] == pytest.approx(log(torch.tensor(500 / 50.0)).item(), abs=1e-4)
    assert got["recent_to_older_mean_7d_log"] == pytest.approx(log(torch.tensor(350 / 50.0)).item(), abs=1e-4)
    # nothing older than the window, or nothing at all: no evidence either way
    young = encoded_row(500.0, {"1d": (2, 1000.0), "7d": (3, 1050.0), "30d": (3, 1050.0)})
    got = dict(zip(BASELINE_DERIVED_NAMES, DerivedCardBaseline(SPEC.numeric_names)(young)[0, SPEC.n_numeric:].tolist()))
    assert got["amount_to_older_mean_7d_log"] == 0.0 and got["recent_to_older_mean_7d_log"] == 0.0
    assert got["amount_to_older_mean_1d_log"] == pytest.approx(log(torch.tensor(500 / 50.0)).item(), abs=1e-4)
    new = encoded_row(500.0, {})
    assert DerivedCardBaseline(SPEC.numeric_names)(new)[0, SPEC.n_numeric:].abs().sum() == 0.0


def test_terminal_frauds_follow_the_share_and_the_count():
    row = torch.zeros(1, SPEC.n_numeric)
    names = SPEC.numeric_names
    for w, (share, labelled) in {"1d": (0.0, 0.0), "7d": (0.25, 8.0), "30d": (1.0, 1.0)}.items():
        row[0, names.index(f"terminal_risk_{w}")] = share  # a share is served unscaled
        row[0, names.index(f"terminal_labelled_{w}")] = torch.log1p(torch.tensor(labelled))
    out = DerivedTerminal(names)(row)
    got = dict(zip(TERMINAL_DERIVED_NAMES, out[0, SPEC.n_numeric:].tolist()))
    assert got["terminal_bad_1d_log"] == 0.0 and got["terminal_bad_logodds_1d"] == 0.0  # nothing arrived
    assert got["terminal_bad_7d_log"] == pytest.approx(torch.log1p(torch.tensor(2.0)).item(), abs=1e-4)
    assert got["terminal_bad_logodds_7d"] == pytest.approx(torch.log(torch.tensor(2.5 / 6.5)).item(), abs=1e-4)
    # one fraud in one outcome is the same share as ten in ten, not the same evidence
    row10 = row.clone()
    row10[0, names.index("terminal_labelled_30d")] = torch.log1p(torch.tensor(10.0))
    got10 = dict(zip(TERMINAL_DERIVED_NAMES, DerivedTerminal(names)(row10)[0, SPEC.n_numeric:].tolist()))
    assert got10["terminal_bad_logodds_30d"] > got["terminal_bad_logodds_30d"] > 0.0
    assert torch.equal(out[:, :SPEC.n_numeric], row)


def test_a_model_reading_them_round_trips_and_serves_fp32_and_int8(tmp_path):
    model, card = fresh_model(SPEC, version="d1", d_model=16, n_heads=2, derived_numeric=True, derived_terminal=True,
                              derived_card_baseline=True)
    assert card.architecture.derived_numeric and card.architecture.derived_terminal
    assert card.architecture.derived_card_baseline
    batch = random_inputs(SPEC, 6, seed=4)
    model.fit_input_statistics(batch, torch.tensor([0.0, 1.0, 0.0, 0.0, 1.0, 0.0]))
    save_model_dir(model, card, tmp_path / "d1")
    loaded = load_model_dir(tmp_path / "d1", expected_schema_hash=SPEC.schema_hash)
    a, b = Inference(model, card)(batch), Inference.from_loaded(loaded)(batch)
    assert torch.allclose(a.risk, b.risk) and torch.isfinite(Inference(model, card, int8=True)(batch).risk).all()
    # the derived fields really enter: the wide path is sized for them
    plain, _ = fresh_model(SPEC, version="p", d_model=16, n_heads=2, derived_numeric=False, derived_terminal=False,
                           derived_card_baseline=False)
    assert model.wide[0].in_features - plain.wide[0].in_features == (
        len(DERIVED_NAMES) + len(TERMINAL_DERIVED_NAMES) + len(BASELINE_DERIVED_NAMES)) * 16


def test_missing_fields_are_refused():
    spec = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=1, history_numeric=1,
                     history_categorical=1, text_len=1, text_vocab=4, schema_hash="x", numeric_names=("a", "b"))
    with pytest.raises(ValueError, match="velocity_1h_count"):
        fresh_model(spec, derived_numeric=True)
    with pytest.raises(ValueError, match="terminal_risk_1d"):
        fresh_model(spec, derived_numeric=False, derived_terminal=True)
    with pytest.raises(ValidationError, match="derived_numeric"):
        ModelConfig(inputs=spec, backbone="hf", hf_path="/nowhere", derived_numeric=True)
    with pytest.raises(ValueError, match="velocity_1d_count"):
        fresh_model(spec, derived_numeric=False, derived_terminal=False, derived_card_baseline=True)
    with pytest.raises(ValidationError, match="derived_terminal"):
        ModelConfig(inputs=spec, backbone="hf", hf_path="/nowhere", derived_terminal=True)
    with pytest.raises(ValidationError, match="derived_card_baseline"):
        ModelConfig(inputs=spec, backbone="hf", hf_path="/nowhere", derived_card_baseline=True)


def test_trainers_start_with_them_where_the_inputs_allow():
    default = ModelConfig.default_for(SPEC)
    assert default.derived_numeric and default.derived_terminal and default.derived_card_baseline
    assert not ModelConfig.default_for(SPEC, derived_numeric=False).derived_numeric
    assert not ModelConfig.default_for(SPEC, derived_terminal=False).derived_terminal
    assert not ModelConfig.default_for(SPEC, derived_card_baseline=False).derived_card_baseline
    bare = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=1, history_numeric=1,
                     history_categorical=1, text_len=1, text_vocab=4, schema_hash="x", numeric_names=("a", "b"))
    bare_default = ModelConfig.default_for(bare)
    assert not (bare_default.derived_numeric or bare_default.derived_terminal or bare_default.derived_card_baseline)
    # a card written before the option existed still loads as the model it describes
    old_card = ModelConfig(inputs=SPEC)
    assert not (old_card.derived_numeric or old_card.derived_terminal or old_card.derived_card_baseline)
    assert fresh_model(SPEC, d_model=16, n_heads=2)[1].architecture.derived_numeric  # as trainers build it
    hf = ModelConfig.default_for(SPEC, backbone="hf", hf_path="x")
    assert not (hf.derived_numeric or hf.derived_terminal or hf.derived_card_baseline)  # field transformer only


@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
def test_an_exported_graph_computes_them_as_the_module_does(tmp_path, fmt):
    from engine.model.export import export_model_dir

    model, card = fresh_model(SPEC, version="d2", d_model=16, n_heads=2, derived_numeric=True, derived_terminal=True,
                              derived_card_baseline=True)
    batch = random_inputs(SPEC, 64, seed=5)
    model.fit_input_statistics(batch, (torch.arange(64) % 7 == 0).float())
    source = save_model_dir(model, card, tmp_path / "d2")
    result = export_model_dir(source, tmp_path / "out", fmt, "fp32", samples=64)  # refuses a graph that disagrees
    served = Inference.from_dir(result.path, runtime="auto")
    assert served.graph is not None
    other = random_inputs(SPEC, 50, seed=9)
    assert torch.allclose(served(other).risk, Inference(model, card)(other).risk, atol=1e-4)
