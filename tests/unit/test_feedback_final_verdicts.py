"""The gate judges final verdicts: detector → policy → hard rules, per rule set (no servers)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from engine.features.snapshot import ContextSnapshot
from engine.rules.loader import build_ruleset
from engine.stages.decide import Policy
from engine.stages.guard import Guard
from feedback.learn.final_verdicts import FinalReplay
from feedback.learn.gate import FinalPair, GateConfig, Scores, evaluate
from tests.support.events import event

RULES = b'''
rules:
  - {id: big, description: big amounts, owner: ops, when: "event.amount >= 10000", then: reject}
'''


def _rows(amounts, rules_version):
    events = [event(i, customer_id="c", account_id="a", terminal_id="t", amount=float(a))
              for i, a in enumerate(amounts)]
    return pd.DataFrame({
        "event_json": [json.dumps(e.to_dict()) for e in events],
        "snapshot_json": [json.dumps(ContextSnapshot.empty(e).to_dict()) for e in events],
        "rules_version": [rules_version] * len(events),
    })


def _scores(p_reject):
    p = np.asarray(p_reject, float)
    return Scores(np.stack([1 - p, np.zeros_like(p), p], 1), p, np.where(p >= 0.5, 2, 0))


def test_final_replay_applies_each_decisions_rule_set_and_counts_unknown_versions():
    guard = Guard(build_ruleset({"r.yaml": RULES}))
    replay = FinalReplay(Policy(), {}, guard, detector=None)
    scores = _scores([0.1, 0.1, 0.9])
    known = replay.verdicts(replay.prepare(_rows([20_000, 50, 50], guard.version)), scores)
    assert known.verdicts.tolist() == [2, 0, 2] and known.missing_rules == 0  # the rule rejects row 0
    unknown = replay.verdicts(replay.prepare(_rows([20_000, 50, 50], "gone-v0")), scores)
    assert unknown.verdicts.tolist() == [2, 0, 2] and unknown.missing_rules == 3


def test_gate_bars_judge_final_verdicts_by_default_and_report_both_matrices():
    """The model's own verdicts move pass->reject on 30 % of the replay, but a hard rule
    already rejects those events on both sides: consumers see no change, so the gate
    (judging final verdicts) passes; told to judge the model's verdicts, it refuses."""
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.2).astype(int)
    risk = np.clip(0.1 + 0.7 * y + rng.normal(0, 0.05, 200), 0, 1)
    held = _scores(risk)
    old_rep = _scores(np.full(100, 0.1))
    new_rep = _scores(np.r_[np.full(30, 0.9), np.full(70, 0.1)])
    final_rep = np.r_[np.full(30, 2), np.zeros(70, int)]  # the rule rejects the first 30 either way
    final = FinalPair(held.verdicts, held.verdicts, final_rep, final_rep)

    judged_final = evaluate(held, held, y, old_rep, new_rep, GateConfig(), final=final)
    assert judged_final.passed, judged_final.reasons
    assert judged_final.judged == "final" and judged_final.changed_share == 0.0
    assert judged_final.migration_model[0][2] == 30 and judged_final.migration_final[0][2] == 0

    judged_model = evaluate(held, held, y, old_rep, new_rep, GateConfig(judge="model"), final=final)
    assert not judged_model.passed and judged_model.judged == "model"
    assert any(r.startswith("migration pass->reject") for r in judged_model.reasons)
