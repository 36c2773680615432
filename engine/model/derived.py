"""Card means and amount-to-mean ratios derived inside the model from the encoded fields.

The book's trees read the card's mean amount over 1, 7 and 30 days as inputs
(``engine/offline/handbook_features.py``); the stream serves counts and sums per window
(``velocity_<w>_count`` / ``velocity_<w>_amount``) and only the 30-day mean. A mean is a
quotient, which additive piecewise-linear codes cannot form, so a fraud whose amount is
five times the card's usual (the book's compromised-card scenario) is hard for the
network to see from sums and counts alone. ``DerivedNumeric`` appends, per window w in
1h / 1d / 7d, log1p(mean amount) and log(amount / mean) (clipped to [-8, 8]; 0 when the
window is empty), computed from the encoded fields themselves: no new feature in the
stream, so replay == live holds by construction and every interface serves it.

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

from engine.model.config import DERIVED_INPUTS

WINDOWS = ("1h", "1d", "7d")
DERIVED_NAMES: tuple[str, ...] = tuple(f"card_mean_amount_{w}_log" for w in WINDOWS) + tuple(
    f"amount_to_mean_{w}_log" for w in WINDOWS)


class DerivedNumeric(nn.Module):
    """[B, F] encoded numeric fields -> [B, F + 6]: the fields, then ``DERIVED_NAMES``."""

    def __init__(self, numeric_names: tuple[str, ...]):
        super().__init__()
        missing = [n for n in DERIVED_INPUTS if n not in numeric_names]
        if missing:
            raise ValueError(f"derived_numeric needs the encoded fields {missing}")
        self.amount = numeric_names.index("amount_log")
        self.counts = [numeric_names.index(f"velocity_{w}_count") for w in WINDOWS]
        self.sums = [numeric_names.index(f"velocity_{w}_amount") for w in WINDOWS]

    def forward(self, x: Tensor) -> Tensor:
        x = torch.nan_to_num(x.float(), nan=0.0, posinf=50.0, neginf=0.0)
        # exp(x) - 1, not expm1: ONNX has no expm1 (opset 17), and on these log1p-scaled
        # fields the two differ by float rounding only.
        amount = (torch.exp(x[:, self.amount].clamp(0, 50)) - 1)[:, None]
        count = torch.exp(x[:, self.counts].clamp(0, 50)) - 1
        total = torch.exp(x[:, self.sums].clamp(0, 50)) - 1
        seen = count > 0.5
        mean = torch.where(seen, total / count.clamp_min(1.0), torch.zeros_like(total))
        ratio = torch.log(amount.clamp_min(1e-6) / mean.clamp_min(1e-6)).clamp(-8.0, 8.0)
        ratio = torch.where(seen & (mean > 0), ratio, torch.zeros_like(ratio))
        return torch.cat([x, torch.log1p(mean), ratio], dim=1)
