"""The untrusted-text tokenizer: byte-level BPE whose vocabulary cannot name a control token.

Memos and merchant descriptors are tokenised with a small byte-level BPE trained
offline (``engine.offline.text_tokenizer_build``) and shipped as ``engine/assets/text_tokenizer.json``;
nothing is fetched at run time. Why byte-level: every string, in any script, becomes
ordinary byte tokens, so there is no ``[UNK]`` blind spot an attacker can hide in.

Why it is safe to feed user text: the vocabulary's only specials are ``[PAD]`` (id 0)
and ``[UNK]`` (id 1), and they are *not* registered as "added tokens", so the literal
text ``[PAD]`` in a memo is split into ordinary byte pieces instead of being matched as
padding. There is no ``[CLS]``/``[SEP]``/field marker at all, and these ids index the
model's text embedding table only. ``token_ids`` asserts that no real token is ever the
padding id, so the text mask (``ids != 0``) is exact.

Retrain (deterministic for a given corpus)::

    python -m engine.offline.text_tokenizer_build --out engine/assets/text_tokenizer.json

>>> tok = load_text_tokenizer()
>>> ids, mask = tok.encode(["rent June", None, "[PAD] [CLS]"], max_len=8)
>>> ids.shape, bool(mask[1].any()), bool((ids[2][mask[2]] > 1).all())
((3, 8), False, True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

ASSET = Path(__file__).resolve().parent.parent / "assets" / "text_tokenizer.json"
PAD_ID, UNK_ID = 0, 1
SPECIALS = ("[PAD]", "[UNK]")
#: Strings that must never be a vocabulary entry (checked when loading).
FORBIDDEN_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "<s>", "</s>", "<|endoftext|>", "<pad>", "<unk>")


class TextTokenizer:
    """Thin wrapper: padded id/mask arrays from a list of (already cleaned) texts."""

    def __init__(self, path: Path = ASSET):
        # local: tokenizers loads only to build or load the tokenizer
        from tokenizers import Tokenizer

        raw = path.read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()[:16]
        self._tok = Tokenizer.from_str(raw.decode("utf-8"))
        self._tok.no_padding()
        self._tok.no_truncation()
        vocab = self._tok.get_vocab()
        self.vocab_size = len(vocab)
        if vocab.get("[PAD]") != PAD_ID or vocab.get("[UNK]") != UNK_ID:
            raise ValueError(f"{path}: [PAD]/[UNK] must be ids 0/1")
        if self._tok.get_added_tokens_decoder():
            raise ValueError(f"{path}: added tokens would be matched inside user text; remove them")
        bad = [t for t in FORBIDDEN_TOKENS if t in vocab]
        if bad:
            raise ValueError(f"{path}: vocabulary holds control tokens {bad}")

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Ids of each (non-empty, cleaned) text, uncut. A real token is never PAD/UNK-free
        by accident: PAD cannot be produced (no added tokens) and this is asserted."""
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        out = [enc.ids for enc in encs]
        assert all(PAD_ID not in ids for ids in out), "tokenizer produced the padding id"
        return out

    def encode(self, texts: Sequence[str | None], max_len: int) -> tuple[np.ndarray, np.ndarray]:
        """ids [B, max_len] int64 (0 = padding) and mask [B, max_len] bool; long texts are cut."""
        ids = np.zeros((len(texts), max_len), dtype=np.int64)
        rows = [i for i, t in enumerate(texts) if t]
        if rows:
            for i, piece in zip(rows, self.token_ids([texts[i] for i in rows])):
                piece = piece[:max_len]
                ids[i, : len(piece)] = piece
        return ids, ids != PAD_ID


@lru_cache(maxsize=4)
def load_text_tokenizer(path: str | None = None) -> TextTokenizer:
    return TextTokenizer(Path(path) if path else ASSET)


# --- training (offline, reproducible) ---------------------------------------------------
