"""The untrusted-text tokenizer: byte-level BPE whose vocabulary cannot name a control token.

Memos and merchant descriptors are tokenised with a small byte-level BPE trained
offline (``train_text_tokenizer``) and shipped as ``engine/assets/text_tokenizer.json``;
nothing is fetched at run time. Why byte-level: every string, in any script, becomes
ordinary byte tokens, so there is no ``[UNK]`` blind spot an attacker can hide in.

Why it is safe to feed user text: the vocabulary's only specials are ``[PAD]`` (id 0)
and ``[UNK]`` (id 1), and they are *not* registered as "added tokens", so the literal
text ``[PAD]`` in a memo is split into ordinary byte pieces instead of being matched as
padding. There is no ``[CLS]``/``[SEP]``/field marker at all, and these ids index the
model's text embedding table only. ``token_ids`` asserts that no real token is ever the
padding id, so the text mask (``ids != 0``) is exact.

Retrain (deterministic for a given corpus)::

    python -m engine.text.tokenizer --out engine/assets/text_tokenizer.json

>>> tok = load_text_tokenizer()
>>> ids, mask = tok.encode(["rent June", None, "[PAD] [CLS]"], max_len=8)
>>> ids.shape, bool(mask[1].any()), bool((ids[2][mask[2]] > 1).all())
((3, 8), False, True)
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
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

_MEMO_TEMPLATES = (
    "rent {month}", "invoice {n}", "inv #{n}", "groceries", "dinner with {name}", "split bill {name}",
    "gift for {name}", "thanks!", "coffee", "ticket {n}", "order {n}", "refund order {n}",
    "school fees {month}", "electricity bill {month}", "phone top-up", "gym membership",
    "birthday present", "loan repayment {n}", "deposit flat {n}", "taxi", "parking {n}",
    "subscription {month}", "payroll {month} {year}", "reimbursement {n}", "insurance {year}",
    "utilities {month}", "pocket money", "car repair", "books", "concert tickets", "vet bill",
)
_MULTILINGUAL = (
    "loyer {month}", "facture {n}", "courses", "Miete {month}", "Rechnung {n}", "Einkauf",
    "alquiler {month}", "factura {n}", "compras", "affitto {month}", "fattura {n}", "spesa",
    "huur {month}", "factuur {n}", "boodschappen", "czynsz {month}", "faktura {n}", "zakupy",
    "aluguel {month}", "fatura {n}", "mercado", "hyra {month}", "faktura {n}", "matvaror",
    "аренда {month}", "счёт {n}", "продукты", "房租", "发票 {n}", "买菜", "家賃", "請求書 {n}",
    "買い物", "إيجار", "فاتورة {n}", "किराया", "चालान {n}", "kira {month}", "fatura {n}",
    "월세", "청구서 {n}", "ενοίκιο", "τιμολόγιο {n}", "שכר דירה", "חשבונית {n}", "tiền nhà",
)
_DESCRIPTORS = (
    "AMZN MKTP {cc}*{code}", "SQ *{shop}", "PAYPAL *{shop}", "UBER *TRIP {code}", "NETFLIX.COM",
    "SPOTIFY {cc}", "APPLE.COM/BILL", "GOOGLE *{shop}", "{shop} {city}", "POS {shop} {n}",
    "TST* {shop}", "SHELL {n} {city}", "IKEA {city}", "ALDI {n}", "LIDL {city}", "STEAM PURCHASE",
)
_WORDS = {
    "month": ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December", "jan", "feb", "mar", "apr"),
    "name": ("Anna", "Ben", "Chloé", "Dmitri", "Fatima", "Giulia", "Hiro", "Jan", "Lena", "Marco"),
    "shop": ("COFFEE BAR", "BOOKSHOP", "PIZZERIA", "BAKERY", "PHARMACY", "FLORIST", "GARAGE",
             "CINEMA", "HOTEL", "BISTRO", "MARKET", "TAILOR"),
    "city": ("BRUXELLES", "PARIS", "BERLIN", "MADRID", "ROMA", "LONDON", "WARSZAWA", "LISBOA"),
    "cc": ("US", "BE", "FR", "DE", "NL", "ES", "IT", "GB"),
}


def training_corpus(seed: int = 7, n_synthetic: int = 20_000,
                    injection_csv: Path | None = None) -> Iterator[str]:
    """Simulated memos and descriptors in many languages, plus the labelled injection texts
    (benign e-mails and attacks), so attack vocabulary is represented, not UNK."""
    rng = random.Random(seed)
    templates = _MEMO_TEMPLATES + _MULTILINGUAL + _DESCRIPTORS
    for _ in range(n_synthetic):
        template = rng.choice(templates)
        yield template.format(
            n=rng.randint(1, 99999), year=rng.randint(2015, 2030),
            code=f"{rng.randint(0, 36 ** 4):X}", **{k: rng.choice(v) for k, v in _WORDS.items()})
    if injection_csv is None:
        # local: the offline data locator, only when building a tokenizer
        from engine.offline.shared_data import injection_train_file

        injection_csv = injection_train_file()
    if injection_csv is not None and injection_csv.exists():
        with injection_csv.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                yield row["text"]


def train_text_tokenizer(out: Path = ASSET, vocab_size: int = 3000, seed: int = 7,
                         n_synthetic: int = 20_000) -> Path:
    """Train the byte-level BPE and write it with NO added tokens (see module docstring)."""
    # local: tokenizers loads only to build or load the tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(training_corpus(seed, n_synthetic), trainer=trainer)
    spec = json.loads(tok.to_str())
    spec["added_tokens"] = []  # keep [PAD]/[UNK] in the model vocab only: never matched in text
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(spec, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    TextTokenizer(out)  # validate what we wrote
    load_text_tokenizer.cache_clear()
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=train_text_tokenizer.__doc__)
    parser.add_argument("--out", type=Path, default=ASSET)
    parser.add_argument("--vocab-size", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(train_text_tokenizer(args.out, args.vocab_size, args.seed))
