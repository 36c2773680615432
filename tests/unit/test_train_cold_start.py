"""Cold start: a rule engine's verdicts as soft labels, with no outcomes yet.

The rule set is run over simulated events as the guard would run it (``event.*`` and
the context at that moment, no model); the model trained on its verdicts alone must
learn to agree with it, and events without an outcome must never reach the risk loss.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from engine.model import InputSpec, ModelConfig
from engine.model.decision import DecisionModel
from engine.offline.simulate.simulator import SimConfig, Simulator
from engine.offline.train.data import (
    build_training_set,
    no_arrivals,
    outcome_labels,
    read_rule_verdicts,
    rule_judge,
    soft_verdicts,
)
from engine.offline.train.fit import TargetStats, _losses, _target_stats, train_model
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.stages.encode import FeatureSchema

# Amount thresholds and a velocity rule: both visible in the encoded fields.
RULES = """rules:
  - {id: big, description: big amounts, owner: t, when: "event.amount >= 150", then: reject}
  - {id: mid, description: mid amounts, owner: t, when: "event.amount >= 90", then: review}
  - {id: busy, description: busy card, owner: t, when: "ctx.velocity_1d_count >= 4", then: review}
"""


def simulated_events(customers: int = 200, days: int = 4, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = list(Simulator(SimConfig(customers=customers, terminals=2 * customers, days=days, seed=seed)).days())
    events = pd.concat([d.events for d in sim if len(d.events)], ignore_index=True)
    outcomes = pd.concat([d.outcomes for d in sim], ignore_index=True)
    return events.sort_values("event_time_ms", kind="stable").reset_index(drop=True), outcomes


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("rules")
    (d / "cold.yaml").write_text(RULES)
    return d


def test_soft_label_only_cold_start_learns_to_agree_with_the_rules(rules_dir):
    events, _ = simulated_events()
    built = build_training_set(events, no_arrivals(), judge=rule_judge(rules_dir))
    data = built.dataset
    assert built.n_outcomes == 0 and torch.isnan(data.is_bad).all()  # nothing presumed good
    assert built.n_rule_verdicts == len(events) and not torch.isnan(data.soft_verdict).any()
    rule = data.soft_verdict.argmax(-1)
    # the rules really were applied: the amount thresholds decide as written
    amount = torch.tensor(events["amount"].to_numpy())
    assert bool((rule[amount >= 150] == 2).all()) and bool((rule[(amount >= 90) & (amount < 150)] == 1).all())
    majority = float(torch.bincount(rule, minlength=3).max()) / len(rule)

    model_cfg = ModelConfig(inputs=InputSpec.from_schema(FeatureSchema.default()), d_model=32, n_heads=2,
                            n_layers=1, max_history=4)
    result = train_model(data, model_cfg, TrainConfig(epochs=5, batch_size=128, lr=1e-2, threads=1,
                                                      progress=False))
    m = result.val_metrics
    # chance: the majority verdict for raw agreement, 1/3 for the class-balanced one
    assert m["rule_agreement"] > majority + 0.1, (m, majority)
    assert m["rule_balanced_agreement"] > 0.5, m
    assert m["n_val"] == 0 and "auc_roc" not in m  # no outcome, no risk metrics
    assert result.card.temperature.risk == 1.0  # nothing to calibrate the risk head on
    assert result.card.training["n_train_outcomes"] == 0
    assert result.card.training["n_train_rule_verdicts"] == result.card.training["n_train"]


def _tiny_batch(n: int = 64) -> tuple[DecisionModel, LabelledSet]:
    from engine.model.inputs import random_inputs

    spec = InputSpec(n_numeric=3, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                     history_categorical=1, text_len=2, text_vocab=10, schema_hash="tiny")
    inputs = random_inputs(spec, n, seed=0)
    verdicts = ["reject" if x > 1.0 else "pass" for x in inputs.control_numeric[:, 0].tolist()]
    data = LabelledSet(inputs, torch.full((n,), float("nan")), torch.full((n,), 80.0),
                       torch.arange(n, dtype=torch.int64), soft_verdicts(verdicts))
    model = DecisionModel(ModelConfig(inputs=spec, d_model=16, n_heads=2, n_layers=1, numeric_tokens=0))
    return model, data


def test_events_without_an_outcome_never_reach_the_risk_loss():
    model, data = _tiny_batch()
    cfg = TrainConfig(progress=False)
    stats = _target_stats(data, cfg)

    def risk_grad(batch: LabelledSet, stats: TargetStats) -> float:
        model.zero_grad(set_to_none=True)
        loss, _ = _losses(model, model(batch.inputs), batch, cfg, 0.0, stats)
        loss.backward()
        grad = model.heads.risk.weight.grad  # None: the risk head is not even in the graph
        return 0.0 if grad is None else float(grad.abs().sum())

    assert risk_grad(data, stats) == 0.0  # only the verdict head learns from rule verdicts
    # the old behaviour, unknown outcome = good, would train the risk head on them
    presumed_good = LabelledSet(data.inputs, torch.zeros(len(data)), data.amount, data.event_time_ms,
                                data.soft_verdict)
    assert risk_grad(presumed_good, _target_stats(presumed_good, cfg)) > 0.0
    # a row without a rule verdict (NaN) adds nothing to the soft-label loss either
    no_rules = LabelledSet(data.inputs, data.is_bad, data.amount, data.event_time_ms,
                           torch.full_like(data.soft_verdict, float("nan")))
    loss, _ = _losses(model, model(no_rules.inputs), no_rules, cfg, 0.0, _target_stats(no_rules, cfg))
    assert float(loss) == 0.0


def test_with_rule_verdicts_unknown_outcomes_stay_unlabelled():
    frame = pd.DataFrame({"event_id": ["a", "b", "c"]})
    arrivals = pd.DataFrame({"event_id": ["a", "b", "b"], "arrival_time_ms": [5, 1, 9], "is_bad": [True, True, False]})
    labels = outcome_labels(frame, arrivals, unknown_as_good=False)
    assert labels[:2].tolist() == [1.0, 0.0] and np.isnan(labels[2])  # b: its latest outcome wins
    assert outcome_labels(frame, arrivals, unknown_as_good=True).tolist() == [1.0, 0.0, 0.0]


def test_rule_verdict_file_is_read_and_checked(tmp_path):
    good = tmp_path / "v.csv"
    good.write_text("event_id,verdict\n007,Reject\n8,pass\n")
    assert read_rule_verdicts(good) == {"007": "reject", "8": "pass"}
    bad = tmp_path / "bad.csv"
    bad.write_text("event_id,verdict\n1,block\n")
    with pytest.raises(ValueError, match="block"):
        read_rule_verdicts(bad)
    with pytest.raises(ValueError, match="columns"):
        (tmp_path / "cols.csv").write_text("id,verdict\n1,pass\n")
        read_rule_verdicts(tmp_path / "cols.csv")
    soft = soft_verdicts(["review", None], confidence=0.9)
    assert torch.allclose(soft[0], torch.tensor([0.05, 0.9, 0.05])) and torch.isnan(soft[1]).all()
