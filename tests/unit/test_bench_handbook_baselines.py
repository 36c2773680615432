"""``ops/bench/handbook_baselines.py --inputs network``: the trees read, row by row, what the
decision model's layers read for that very transaction (its encoded fields after its
derivations), whatever order the replay left the rows in."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pandas as pd

from engine.offline.backtest.run import DAY_MS, Window

# The benchmarks import their shared module by its bare name (run as ops/bench/X.py).
sys.modules.setdefault("_common", importlib.import_module("ops.bench._common"))
from ops.bench import handbook_baselines as hb  # noqa: E402

T0 = Window.from_date("2018-05-01").train_start_ms


def test_network_inputs_are_each_rows_own_fields_and_derivations(tmp_path):
    from engine.model import InputSpec, ModelConfig
    from engine.model.derived import DERIVATION_MODULES
    from engine.offline.backtest.families import schema_for

    rng = np.random.default_rng(3)
    t = np.sort(T0 - DAY_MS + rng.integers(0, 4 * DAY_MS, 400))
    customer = rng.integers(0, 25, len(t)).astype(str)
    frame = pd.DataFrame({"event_id": [f"e{i}" for i in range(len(t))], "event_time_ms": t,
                          "customer_id": customer, "account_id": customer,
                          "terminal_id": rng.integers(0, 10, len(t)).astype(str), "merchant_category": "0000",
                          "amount": rng.gamma(2.0, 30.0, len(t)).round(2), "currency": "EUR",
                          "channel": "card_present", "country": "BE",
                          "tx_fraud": (rng.random(len(t)) < 0.1).astype(int)})
    window = Window(T0, train_days=1, delay_days=1, test_days=1, history_days=1)
    (train_ids, x_train), (test_ids, x_test) = hb.network_inputs(frame, window, str(tmp_path), {})

    in_days = frame["event_time_ms"].to_numpy()
    train_rows = (in_days >= window.train_start_ms) & (in_days < window.train_end_ms)
    test_rows = (in_days >= window.test_start_ms) & (in_days < window.test_end_ms)
    assert sorted(train_ids) == sorted(frame["event_id"][train_rows])
    assert sorted(test_ids) == sorted(frame["event_id"][test_rows])
    # the encoded fields, then every derivation the default model appends, then hour and weekday
    config = ModelConfig.default_for(InputSpec.from_schema(schema_for({})))
    derived = sum(len(names) for flag, (_, names) in DERIVATION_MODULES.items() if getattr(config, flag))
    assert derived > 0
    assert x_train.shape == (len(train_ids), len(config.inputs.numeric_names) + derived + 2)
    # row i of each table is transaction ids[i]: its own amount, its own hour of the day
    amount = frame.set_index("event_id")["amount"]
    hours = pd.Series((in_days // 3_600_000) % 24, index=frame["event_id"])
    for ids, x in ((train_ids, x_train), (test_ids, x_test)):
        np.testing.assert_allclose(np.expm1(x[:, 0]), amount.loc[ids].to_numpy(), rtol=1e-4)
        # the hour field's ids run in the hours' order from a vocabulary offset
        assert len(set(x[:, -2] - hours.loc[ids].to_numpy())) == 1
