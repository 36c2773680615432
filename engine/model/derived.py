"""Card means, amount-to-mean ratios, terminal fraud counts and the card's older baselines,
derived inside the model from the encoded fields.

The book's trees read the card's mean amount over 1, 7 and 30 days as inputs
(``engine/offline/handbook_features.py``); the stream serves counts and sums per window
(``velocity_<w>_count`` / ``velocity_<w>_amount``) and only the 30-day mean. A mean is a
quotient, which additive piecewise-linear codes cannot form, so a fraud whose amount is
five times the card's usual (the book's compromised-card scenario) is hard for the
network to see from sums and counts alone. ``DerivedNumeric`` appends, per window w in
1h / 1d / 7d, log1p(mean amount) and log(amount / mean) (clipped to [-8, 8]; 0 when the
window is empty), computed from the encoded fields themselves: no new feature in the
stream, so replay == live holds by construction and every interface serves it.
``DerivedTerminal`` and ``DerivedCardBaseline`` (below) follow the same rule.

>>> names = ("amount_log", "velocity_1h_count", "velocity_1h_amount", "velocity_1d_count",
...          "velocity_1d_amount", "velocity_7d_count", "velocity_7d_amount")
>>> x = torch.log1p(torch.tensor([[100.0, 0.0, 0.0, 2.0, 40.0, 4.0, 100.0]]))
>>> out = DerivedNumeric(names)(x)
>>> out.shape[1] == len(names) + len(DERIVED_NAMES)
True
>>> [round(v, 3) for v in out[0, len(names):].tolist()]
[0.0, 3.045, 3.258, 0.0, 1.609, 1.386]
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from engine.model.config import DERIVATIONS, DERIVED_BASELINE_WINDOWS, DERIVED_TERMINAL_WINDOWS, DERIVED_WINDOWS

WINDOWS = DERIVED_WINDOWS
DERIVED_NAMES: tuple[str, ...] = tuple(f"card_mean_amount_{w}_log" for w in WINDOWS) + tuple(
    f"amount_to_mean_{w}_log" for w in WINDOWS)
TERMINAL_WINDOWS = DERIVED_TERMINAL_WINDOWS
TERMINAL_DERIVED_NAMES: tuple[str, ...] = tuple(f"terminal_bad_{w}_log" for w in TERMINAL_WINDOWS) + tuple(
    f"terminal_bad_logodds_{w}" for w in TERMINAL_WINDOWS)

BASELINE_WINDOWS = DERIVED_BASELINE_WINDOWS
BASELINE_DERIVED_NAMES: tuple[str, ...] = tuple(f"amount_to_older_mean_{w}_log" for w in BASELINE_WINDOWS) + tuple(
    f"recent_to_older_mean_{w}_log" for w in BASELINE_WINDOWS)


def _require(numeric_names: tuple[str, ...], option: str) -> None:
    missing = [n for n in DERIVATIONS[option] if n not in numeric_names]
    if missing:
        raise ValueError(f"{option} needs the encoded fields {missing}")


def _unlog1p(x: Tensor, columns: int | list[int]) -> Tensor:
    """The raw values of log1p-scaled fields. exp(x) - 1, not expm1: ONNX has no expm1
    (opset 17), and on these fields the two differ by float rounding only."""
    return torch.exp(x[:, columns].clamp(0, 50)) - 1


class DerivedNumeric(nn.Module):
    """[B, F] encoded numeric fields -> [B, F + 6]: the fields, then ``DERIVED_NAMES``."""

    def __init__(self, numeric_names: tuple[str, ...]):
        super().__init__()
        _require(numeric_names, "derived_numeric")
        self.amount = numeric_names.index("amount_log")
        self.counts = [numeric_names.index(f"velocity_{w}_count") for w in WINDOWS]
        self.sums = [numeric_names.index(f"velocity_{w}_amount") for w in WINDOWS]

    def forward(self, x: Tensor) -> Tensor:
        x = torch.nan_to_num(x.float(), nan=0.0, posinf=50.0, neginf=0.0)
        amount = _unlog1p(x, self.amount)[:, None]
        count = _unlog1p(x, self.counts)
        total = _unlog1p(x, self.sums)
        seen = count > 0.5
        mean = torch.where(seen, total / count.clamp_min(1.0), torch.zeros_like(total))
        ratio = torch.log(amount.clamp_min(1e-6) / mean.clamp_min(1e-6)).clamp(-8.0, 8.0)
        ratio = torch.where(seen & (mean > 0), ratio, torch.zeros_like(ratio))
        return torch.cat([x, torch.log1p(mean), ratio], dim=1)


class DerivedTerminal(nn.Module):
    """[B, F] encoded numeric fields -> [B, F + 6]: the fields, then ``TERMINAL_DERIVED_NAMES``.

    The stream serves a terminal's delayed fraud *share* (``terminal_risk_<w>``, in [0, 1])
    and how many outcomes it is a share of (``terminal_labelled_<w>``, log1p). One fraud in
    one outcome and ten in ten are the same share; their product, the number of known
    frauds, is again something additive codes cannot form. Per window w in 1d / 7d / 30d:
    log1p(bad) and the smoothed log-odds log((bad + 0.5) / (good + 0.5)), clipped to
    [-8, 8] (0 when nothing arrived). Measured on the validation folds by ``python
    ops/bench/quality_sweep.py --variant terminal='{"derived_terminal": true}'``
    (docs/decision-quality.md).

    >>> names = ("terminal_risk_1d", "terminal_labelled_1d", "terminal_risk_7d",
    ...          "terminal_labelled_7d", "terminal_risk_30d", "terminal_labelled_30d")
    >>> x = torch.log1p(torch.tensor([[0.0, 0.0, 0.0, 4.0, 0.0, 10.0]]))
    >>> x[0, [2, 4]] = torch.tensor([0.5, 1.0])  # the shares, unscaled
    >>> [round(v, 3) for v in DerivedTerminal(names)(x)[0, len(names):].tolist()]
    [0.0, 1.099, 2.398, 0.0, 0.0, 3.045]
    """

    def __init__(self, numeric_names: tuple[str, ...]):
        super().__init__()
        _require(numeric_names, "derived_terminal")
        self.risk = [numeric_names.index(f"terminal_risk_{w}") for w in TERMINAL_WINDOWS]
        self.labelled = [numeric_names.index(f"terminal_labelled_{w}") for w in TERMINAL_WINDOWS]

    def forward(self, x: Tensor) -> Tensor:
        x = torch.nan_to_num(x.float(), nan=0.0, posinf=50.0, neginf=0.0)
        labelled = _unlog1p(x, self.labelled)
        bad = x[:, self.risk].clamp(0.0, 1.0) * labelled.clamp_min(0.0)
        good = (labelled - bad).clamp_min(0.0)
        odds = torch.log((bad + 0.5) / (good + 0.5)).clamp(-8.0, 8.0)
        return torch.cat([x, torch.log1p(bad), odds], dim=1)


class DerivedCardBaseline(nn.Module):
    """[B, F] encoded numeric fields -> [B, F + 4]: the fields, then ``BASELINE_DERIVED_NAMES``.

    A compromised card's frauds (the book's scenario 3: a third of its payments for two
    weeks, at five times the usual amount) raise the very means the amount is compared
    with, so a card's 7- and 30-day means are least like its usual spending just when it
    matters. The part of the 30-day window before the last w (w in 1 d / 7 d) is a
    baseline the latest frauds have not reached: per w, log(amount / that mean) and
    log(the last w's mean / that mean), clipped to [-8, 8] (0 when either part is empty).
    Both are differences of counts and sums before a quotient, which additive codes cannot
    form. Measured on the validation folds by ``python ops/bench/quality_sweep.py
    --variant baseline='{"derived_card_baseline": true}'`` (docs/decision-quality.md).

    >>> names = ("amount_log", "velocity_1d_count", "velocity_1d_amount", "velocity_7d_count",
    ...          "velocity_7d_amount", "velocity_30d_count", "velocity_30d_amount")
    >>> x = torch.log1p(torch.tensor([[100.0, 1.0, 100.0, 3.0, 300.0, 13.0, 400.0]]))
    >>> [round(v, 3) for v in DerivedCardBaseline(names)(x)[0, len(names):].tolist()]
    [1.386, 2.303, 1.386, 2.303]
    """

    def __init__(self, numeric_names: tuple[str, ...]):
        super().__init__()
        _require(numeric_names, "derived_card_baseline")
        self.amount = numeric_names.index("amount_log")
        self.counts = [numeric_names.index(f"velocity_{w}_count") for w in BASELINE_WINDOWS]
        self.sums = [numeric_names.index(f"velocity_{w}_amount") for w in BASELINE_WINDOWS]
        self.count_30d = numeric_names.index("velocity_30d_count")
        self.sum_30d = numeric_names.index("velocity_30d_amount")

    def forward(self, x: Tensor) -> Tensor:
        x = torch.nan_to_num(x.float(), nan=0.0, posinf=50.0, neginf=0.0)
        amount = _unlog1p(x, self.amount)[:, None]
        count, total = _unlog1p(x, self.counts), _unlog1p(x, self.sums)
        older_count = _unlog1p(x, self.count_30d)[:, None] - count
        older_total = _unlog1p(x, self.sum_30d)[:, None] - total
        older_mean = older_total.clamp_min(0.0) / older_count.clamp_min(1.0)
        recent_mean = total / count.clamp_min(1.0)
        has_older = (older_count > 0.5) & (older_mean > 0)
        has_recent = has_older & (count > 0.5) & (recent_mean > 0)
        base = older_mean.clamp_min(1e-6)
        to_amount = torch.log(amount.clamp_min(1e-6) / base).clamp(-8.0, 8.0)
        to_recent = torch.log(recent_mean.clamp_min(1e-6) / base).clamp(-8.0, 8.0)
        return torch.cat([x, torch.where(has_older, to_amount, torch.zeros_like(to_amount)),
                          torch.where(has_recent, to_recent, torch.zeros_like(to_recent))], dim=1)


#: Each derivation's module and the fields it appends, by its ``ModelConfig`` flag, in the
#: order the model applies them: a saved model's layers are sized and ordered for it.
DERIVATION_MODULES: dict[str, tuple[type[nn.Module], tuple[str, ...]]] = {
    "derived_numeric": (DerivedNumeric, DERIVED_NAMES),
    "derived_terminal": (DerivedTerminal, TERMINAL_DERIVED_NAMES),
    "derived_card_baseline": (DerivedCardBaseline, BASELINE_DERIVED_NAMES),
}
