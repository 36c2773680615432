"""Stored rows → the exact model inputs, and models → gate scores.

A labelled example or decision row keeps the event and the context snapshot the engine
used, so re-encoding them with ``engine.stages.encode`` gives the very tensors the serving
model saw (the encoder is deterministic: crc32 category ids, a pinned tokenizer).
Rows without them — a decision log that expired, a degraded-mode decision — cannot be
re-encoded and are dropped, with a count, rather than guessed.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.features.snapshot import ContextSnapshot
from engine.model.inputs import take_rows
from engine.records import DECISIONS, TransactionEvent
from engine.stages.decide import Policy, ScoreRow, decide
from feedback.learn.gate import Scores


@dataclass(slots=True)
class EncodedRows:
    rows: pd.DataFrame  # the rows that could be encoded, in batch order
    batch: Any  # EncodedBatch
    dropped: int  # rows without event or snapshot


def encode_rows(df: pd.DataFrame, encoder: Any) -> EncodedRows:
    """Rebuild ``TransactionEvent`` + ``ContextSnapshot`` per row and encode them."""
    usable = df[df["event_json"].notna() & df["snapshot_json"].notna()].reset_index(drop=True)
    events = [TransactionEvent.from_dict(json.loads(s)) for s in usable["event_json"]]
    snaps = [ContextSnapshot.from_dict(json.loads(s)) for s in usable["snapshot_json"]]
    batch = encoder.encode(events, snaps)
    return EncodedRows(usable, batch, int(len(df) - len(usable)))


def score(model: Any, card: Any, batch: Any, policy: Any | None = None, *, chunk: int = 2048) -> Scores:
    """Calibrated probabilities and risk (the card's temperatures, as ``engine.stages.infer``
    applies them) and the policy's verdict for every row; no early exit, no int8, so old
    and new are compared on the same footing."""
    n = len(batch) if hasattr(batch, "__len__") else batch.batch_size
    probs_parts, risk_parts = [], []
    model = model.eval()
    with torch.inference_mode():
        for start in range(0, n, chunk):
            out = model(take_rows(batch, torch.arange(start, min(n, start + chunk))))
            probs_parts.append(torch.softmax(out["verdict"].float() / card.temperature.verdict, -1))
            risk_parts.append(torch.sigmoid(out["risk"].float() / card.temperature.risk))
    probs = torch.cat(probs_parts).numpy() if probs_parts else np.zeros((0, 3))
    risk = torch.cat(risk_parts).numpy() if risk_parts else np.zeros(0)
    policy = policy or Policy()
    index = {d: i for i, d in enumerate(DECISIONS)}
    verdicts = np.array([index[decide(ScoreRow(tuple(p), float(r)), None, policy).verdict]
                         for p, r in zip(probs, risk)], dtype=int)
    return Scores(probs, risk, verdicts)


def stored_scores(df: pd.DataFrame) -> Scores:
    """The scores the engine recorded at decision time (from the verdicts themselves)."""
    index = {d.value: i for i, d in enumerate(DECISIONS)}
    probs = df[["p_pass", "p_review", "p_reject"]].to_numpy(dtype=float)
    return Scores(probs, df["risk_score"].to_numpy(dtype=float),
                  np.array([index[v] for v in df["verdict"]], dtype=int))


def held_out(event_ids: Sequence[str], share: float) -> np.ndarray:
    """Deterministic held-out mask by event id: the same events are held out in every
    cycle, so no fine-tune ever trains on an example some later gate is judged on.

    >>> held_out(["a", "b", "c", "d"], 0.5).tolist()
    [False, False, True, False]
    """
    cut = int(share * 10_000)
    return np.array([zlib.crc32(e.encode()) % 10_000 < cut for e in event_ids], dtype=bool)
