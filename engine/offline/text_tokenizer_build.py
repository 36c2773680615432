"""Building the untrusted-text tokenizer (``engine.text.tokenizer``): the corpus it is
trained on and the training itself. Offline only; the worker loads the shipped
``engine/assets/text_tokenizer.json``.

Retrain (deterministic for a given corpus)::

    python -m engine.offline.text_tokenizer_build --out engine/assets/text_tokenizer.json
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections.abc import Iterator
from pathlib import Path

from engine.offline.shared_data import injection_train_file
from engine.text.tokenizer import ASSET, SPECIALS, TextTokenizer, load_text_tokenizer

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
