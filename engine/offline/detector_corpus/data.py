"""Training and evaluation data for the detector, with splits that do not leak.

Sources:

* ``../shared/data/injection/injection_train.csv`` (225 rows): bare BIPIA attack
  instructions, clean e-mails, and e-mails with an attack inserted. The same e-mail
  body appears clean *and* attacked, and the same attack appears bare *and* inserted,
  so a plain row split would score the model on texts it has half-seen. Rows are
  therefore grouped (union of e-mail row and attack id) and split with
  ``StratifiedGroupKFold`` (stratified by ``kind``, seeded): one fold is the held-out
  test split, the rest is for training and threshold selection.
* Generated benign memos and templated attacks (``corpus.py``), seeded.
* Generated benign prose (``business.py``): e-mail, notice and invoice sentences, so
  the model does not learn "an English sentence is an attack" from BIPIA; and
  generated tasks for an AI reader (``tasks.py``), the BIPIA attack shape on our own
  topics, so it learns the shape rather than BIPIA's few topics.
* Hand-written held-out lists in ``engine/assets/detector/corpus/`` — benign memos and
  classic attacks — never used for training.
* The outside sets in ``engine/assets/detector/outside/``, ``outside_b/``, ``outside_c/`` to ``outside_f/``
  (``OUTSIDE_SETS``, ``read_outside_set``): attacks and benign texts in 24 languages written
  by hand on 2026-12-05, each by a helper session that had not read this package's
  generators or templates (B and C also no earlier set). Evaluation only: reserved like the
  held-out lists, never trained on, never used to choose a threshold, an epoch or an
  artifact.

Threshold and model choices are made on the training side only (grouped out-of-fold
scores, including whole training e-mails: ``validation_emails``); the held-out sets are
for the figures reported.

>>> d = LabelledTexts(["a", "b"], [0, 1], ["memo", "attack"])
>>> len(d), d.labels
(2, [0, 1])
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from engine.offline.detector_corpus.business import business_texts
from engine.offline.detector_corpus.corpus import benign_memos, injection_memos, person_names
from engine.offline.detector_corpus.forged import forged_memos
from engine.offline.detector_corpus.multilingual import (
    ATTACK_FAMILIES,
    BASE_ATTACK_FAMILIES,
    GeneratedText,
    generate,
    is_everyday_keyword,
    template_concept,
)
from engine.offline.detector_corpus.tasks import ai_task_attacks
from engine.offline.shared_data import injection_held_out_files, injection_train_file, require


@dataclass(slots=True)
class LabelledTexts:
    texts: list[str]
    labels: list[int]
    kinds: list[str]
    groups: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def extend(self, other: LabelledTexts) -> LabelledTexts:
        n = len(self.groups)
        return LabelledTexts(self.texts + other.texts, self.labels + other.labels, self.kinds + other.kinds,
                             (self.groups or [f"g{i}" for i in range(len(self))]) +
                             (other.groups or [f"h{n + i}" for i in range(len(other))]))

    def subset(self, idx) -> LabelledTexts:
        idx = list(idx)
        return LabelledTexts([self.texts[i] for i in idx], [self.labels[i] for i in idx],
                             [self.kinds[i] for i in idx], [self.groups[i] for i in idx] if self.groups else [])


@dataclass(slots=True)
class DetectorData:
    """Everything ``train.py`` needs; ``train`` is the only part the model may fit on."""

    train: LabelledTexts
    test_injection: LabelledTexts  # held-out split of the shared injection data
    heldout_benign: list[str]  # hand-written benign memos
    heldout_attacks: list[str]  # hand-written classic attacks
    generated_test: LabelledTexts  # generated with seeds disjoint from training (same templates)
    summary: dict = field(default_factory=dict)
    #: Whole e-mails (clean and attacked) of the *training* split, as served: scored
    #: out-of-fold during training to check e-mail false positives without touching
    #: the held-out split.
    validation_emails: LabelledTexts | None = None
    #: Generated business prose from unseen seeds (same templates, so optimistic).
    generated_business_test: list[str] = field(default_factory=list)
    #: Attacks and benign memos in 20+ languages from template families that never reach
    #: training (``multilingual.generate("heldout")``): the generalisation figure.
    multilingual_heldout: list[GeneratedText] = field(default_factory=list)
    #: The injection data's published test/eval splits, when present (``--test-csv``).
    official_test: LabelledTexts | None = None
    #: The outside sets by name (``OUTSIDE_SETS``): written independently of the
    #: generators, evaluation only.
    outside: dict[str, list[OutsideText]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class OutsideSet:
    """One hand-written evaluation set: ``engine/assets/detector/<folder>/{attacks,benign}.tsv``."""

    name: str                            # its key in reports and in ``DetectorData.outside``
    folder: str
    title: str                           # how ``tollgate detector eval`` names it
    attack_families: tuple[str, ...]     # the vocabulary its writer used
    benign_families: tuple[str, ...]
    #: The fields its texts are written for (``OUTSIDE_FIELDS`` unless the set is narrower).
    fields: tuple[str, ...] = ("memo", "descriptor", "display_name")

    @property
    def path(self) -> tuple[str, ...]:
        return ("assets", "detector", self.folder)


OUTSIDE_FILES: tuple[tuple[str, int], ...] = (("attacks.tsv", 1), ("benign.tsv", 0))
OUTSIDE_FIELDS: tuple[str, ...] = ("memo", "descriptor", "display_name")
#: The first set was written before the merchant-descriptor families joined the generator;
#: B and C after, each by a writer who had read neither the generator nor an earlier set:
#: the clean readings of the shipped artifact (docs/detector.md, "Outside sets B and C").
#: B's writer chose these families; C's was given them, so the two sets read alike.
_LATER_ATTACK_FAMILIES = ("override", "paraphrase", "roleplay", "fake_header", "addressed_to_model",
                          "descriptor_command", "obfuscated")
_LATER_BENIGN_FAMILIES = ("everyday", "imperative", "keyword_everyday_sense", "reference", "shop_name",
                          "payment_facilitator", "person_name", "emoji", "mixed_language")
#: H, I and J were asked for memos most of all, forged fields among the attacks and
#: machine-like ("structured") memos among the benign.
_MEMO_SET_ATTACK_FAMILIES = (*_LATER_ATTACK_FAMILIES, "forged_field")
_MEMO_SET_BENIGN_FAMILIES = ("everyday", "imperative", "keyword_everyday_sense", "structured", "reference",
                             "shop_name", "payment_facilitator", "person_name", "emoji", "mixed_language")
OUTSIDE_SETS: tuple[OutsideSet, ...] = (
    OutsideSet("outside", "outside", "outside set (written independently, 2026-12-05)",
               ("override", "paraphrase", "roleplay", "header", "obfuscated"),
               ("everyday", "imperative", "keyword", "reference", "payee", "mixed")),
    OutsideSet("outside_b", "outside_b", "outside set B (written independently, 2026-12-05 evening)",
               _LATER_ATTACK_FAMILIES, _LATER_BENIGN_FAMILIES),
    OutsideSet("outside_c", "outside_c", "outside set C (written independently, 2026-12-05 evening)",
               _LATER_ATTACK_FAMILIES, _LATER_BENIGN_FAMILIES),
    # D was written while the descriptor head was built, and read only after it was chosen.
    OutsideSet("outside_d", "outside_d", "outside set D (written independently, 2026-12-07)",
               _LATER_ATTACK_FAMILIES, _LATER_BENIGN_FAMILIES),
    # E was written while the head's second version was chosen (out of fold), and read after.
    OutsideSet("outside_e", "outside_e", "outside set E (written independently, 2026-12-07 afternoon)",
               _LATER_ATTACK_FAMILIES, _LATER_BENIGN_FAMILIES),
    # F, merchant descriptors most of all, was written while more statement-line commands
    # were, and read after the head trained on them was chosen.
    OutsideSet("outside_f", "outside_f", "outside set F (written independently, 2026-12-07 evening; descriptors)",
               _LATER_ATTACK_FAMILIES,
               ("shop_name", "payment_facilitator", "reference", "keyword_everyday_sense", "everyday", "imperative"),
               fields=("memo", "descriptor")),
    # G, benign memos that use the attacks' words most of all, was written while the memos of
    # ``everyday_keywords`` were, and read after the detector trained on them was judged.
    OutsideSet("outside_g", "outside_g", "outside set G (written independently, 2026-12-07 night; memos)",
               _LATER_ATTACK_FAMILIES,
               ("everyday", "imperative", "keyword_everyday_sense", "reference", "shop_name", "payment_facilitator",
                "person_name", "emoji", "mixed_language"),
               fields=("memo", "descriptor")),
    # H, with forged control fields and machine-like benign memos, was written while the
    # keyword memos' weight was chosen (on validation), and read after.
    OutsideSet("outside_h", "outside_h", "outside set H (written independently, 2026-12-07 night; memos)",
               _MEMO_SET_ATTACK_FAMILIES, _MEMO_SET_BENIGN_FAMILIES, fields=("memo", "descriptor")),
    # I was written while set V (hand-written validation memos) was, and read after the
    # thresholds held to V had been computed.
    OutsideSet("outside_i", "outside_i", "outside set I (written independently, 2026-12-07 night; memos)",
               _MEMO_SET_ATTACK_FAMILIES, _MEMO_SET_BENIGN_FAMILIES, fields=("memo", "descriptor")),
    # J was written while forged-field weights were tried (held to V, chosen on validation),
    # and read after none of them passed.
    OutsideSet("outside_j", "outside_j", "outside set J (written independently, 2026-12-07 night; memos)",
               _MEMO_SET_ATTACK_FAMILIES, _MEMO_SET_BENIGN_FAMILIES, fields=("memo", "descriptor")),
    # K was written by two writers while the hand-written training memos T were, and read
    # once after the detector trained on T was judged on V (docs/detector.md).
    OutsideSet("outside_k", "outside_k", "outside set K (written independently, 2026-12-07 night; memos)",
               _MEMO_SET_ATTACK_FAMILIES, _MEMO_SET_BENIGN_FAMILIES, fields=("memo", "descriptor")),
    # L was written after the CLI's detector trained on T existed, and read once after the rule
    # it was judged by had already failed on a held-out set (docs/detector.md).
    OutsideSet("outside_l", "outside_l", "outside set L (written independently, 2026-12-07 night; memos)",
               _MEMO_SET_ATTACK_FAMILIES, _MEMO_SET_BENIGN_FAMILIES, fields=("memo", "descriptor")),
)


#: Hand-written memos for *choosing* (the threshold's second budget, docs/detector.md,
#: "A threshold held on memos people wrote"): written like the outside sets, by a helper
#: who read none of them, and never read as an evaluation set. Not in ``OUTSIDE_SETS``.
HAND_VALIDATION = OutsideSet(
    "validation_v", "validation_v", "hand-written validation set V (2026-12-07 night; memos)",
    ("override", "paraphrase", "roleplay", "fake_header", "forged_field", "addressed_to_model", "obfuscated"),
    ("everyday", "imperative", "keyword_everyday_sense", "structured", "other"), fields=("memo",))

#: Hand-written memos for *training* (docs/detector.md, "Memos people wrote, for training"):
#: four writers, six languages each, who read nothing of the project, wrote benign memos
#: (the attacks' words in their everyday sense among them) and memo attacks, some as near
#: pairs ("ignore the previous transfer" / "ignore the previous rules"). Near copies of every
#: evaluation text and of V were removed before any fit read them. Drawn only with
#: ``assemble(hand_memos=True)``.
HAND_TRAINING = OutsideSet(
    "training_t", "training_t", "hand-written training memos T (2026-12-07 night)",
    ("override", "paraphrase", "roleplay", "fake_header", "addressed_to_model", "forged_field", "hidden"),
    ("everyday", "imperative", "keyword_everyday_sense", "structured", "other"), fields=("memo",))


@dataclass(slots=True, frozen=True)
class OutsideText:
    """One line of the outside set: ``lang<TAB>family<TAB>field<TAB>text``."""

    text: str
    label: int           # 1 attack, 0 benign
    language: str
    family: str
    field: str           # memo | descriptor | display_name
    obfuscation: str = ""  # not recorded per text (the family says "obfuscated")

    @property
    def row(self) -> tuple[str | None, str | None]:
        """The ``(memo, merchant_descriptor)`` row the stream screens: a descriptor is
        scored as the merchant descriptor; a display name, which events do not carry, as
        a memo."""
        return (None, self.text) if self.field == "descriptor" else (self.text, None)


def read_outside_set(which: OutsideSet = OUTSIDE_SETS[0], folder: Path | None = None) -> list[OutsideText]:
    """One outside evaluation set, attacks first, from its folder under the package or from
    ``folder`` (files of the same shape: a team's own memos); ValueError on a malformed line
    or a family outside its vocabulary. Comments as in ``read_corpus_file``."""
    base: Any = resources.files("engine").joinpath(*which.path) if folder is None else folder
    out: list[OutsideText] = []
    for name, label in OUTSIDE_FILES:
        families = which.attack_families if label else which.benign_families
        for n, line in _text_lines((base / name).read_text(encoding="utf-8")):
            parts = line.split("\t")
            if len(parts) != 4 or parts[1] not in families or parts[2] not in OUTSIDE_FIELDS or not parts[3]:
                raise ValueError(f"{name}:{n}: expected lang<TAB>family<TAB>field<TAB>text, got {line[:80]!r}")
            lang, family, where, text = parts
            out.append(OutsideText(text, label, lang, family, where))
    return out


def read_corpus_file(name: str) -> list[str]:
    """A hand-written list from ``engine/assets/detector/corpus/``, one text per line."""
    text = (resources.files("engine") / "assets" / "detector" / "corpus" / name).read_text(encoding="utf-8")
    return [line for _, line in _text_lines(text)]


def _text_lines(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a hand-written file that are neither blank nor comments. A
    comment is a line that is ``#`` or starts with ``# ``: a text may begin with ``#``
    ("### instruction: ...", a fake header, is an attack of its own)."""
    return [(n, line) for n, line in enumerate(text.split("\n"), 1)
            if line.strip() and line.rstrip() != "#" and not line.startswith("# ")]


def _injection_groups(frame) -> list[str]:
    """Connected components over (e-mail row, attack id), so related rows split together."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    keys: list[list[str]] = []
    counters: dict[tuple[str, str], int] = {}
    for kind, source, category in zip(frame["kind"], frame["source"], frame["category"]):
        row_keys = []
        if kind in ("bipia_text_attack_instruction", "bipia_code_attack_instruction"):
            prefix = "text" if kind.startswith("bipia_text") else "code"
            i = counters.get((prefix, category), 0)
            counters[(prefix, category)] = i + 1
            row_keys.append(f"{prefix}:{category}-{i}")
        email = re.search(r"email/train\.jsonl row (\d+)", source)
        if email:
            row_keys.append(f"email:{email.group(1)}")
        attack = re.search(r"(text|code)_attack_train\.json (.+?-\d+)", source)
        if attack:
            row_keys.append(f"{attack.group(1)}:{attack.group(2)}")
        for k in row_keys[1:]:
            union(row_keys[0], k)
        keys.append(row_keys or [f"row:{len(keys)}"])
    return [find(k[0]) for k in keys]


def _attack_lines(data: LabelledTexts) -> LabelledTexts:
    """E-mails with an inserted attack are trained on as the attack line alone.

    The detector scores multi-line text line by line (max over lines), so the unit it
    must learn is the line; training on the whole attacked e-mail would instead teach
    it that e-mail boilerplate (the same bodies appear clean) is an attack.
    """
    texts = []
    for text, kind in zip(data.texts, data.kinds):
        if kind == "email_context_with_attack_start":
            text = text.split("\n", 1)[0]
        elif kind == "email_context_with_attack_end":
            text = text.rsplit("\n", 1)[-1]
        texts.append(text)
    return LabelledTexts(texts, list(data.labels), list(data.kinds), list(data.groups))


def _email_segments(data: LabelledTexts, min_chars: int = 20) -> LabelledTexts:
    """Lines of the clean training e-mails as extra benign text: long, real, full of
    money words (charged, credited, approve), and in the same group as their e-mail."""
    texts, groups = [], []
    for text, label, kind, group in zip(data.texts, data.labels, data.kinds, data.groups):
        if label == 0 and kind == "email_context_clean":
            for line in re.split(r"\n+|\|", text):
                # Long lines also give their sentences: the detector scores pieces that size.
                pieces = [line] + (re.split(r"(?<=[.!?])\s+", line) if len(line) > 120 else [])
                for piece in (p.strip() for p in pieces):
                    if len(piece) >= min_chars and piece not in texts:
                        texts.append(piece)
                        groups.append(group)
    return LabelledTexts(texts, [0] * len(texts), ["email_segment"] * len(texts), groups)


def load_injection_csv(path: Path | None = None) -> LabelledTexts:
    """The injection CSV (default: the shared training split, ``engine.offline.shared_data``)."""
    path = path or require(injection_train_file(), "the injection training split")
    # local: pandas loads only for tables
    import pandas as pd

    frame = pd.read_csv(path)
    missing = {"text", "label", "kind", "source", "category"} - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    return LabelledTexts([str(t) for t in frame["text"]], [int(x) for x in frame["label"]],
                         [str(k) for k in frame["kind"]], _injection_groups(frame))


def split_injection(data: LabelledTexts, test_share: float = 0.25, seed: int = 7) -> tuple[LabelledTexts, LabelledTexts]:
    """Stratified (by kind), grouped, seeded split into (train, test)."""
    # local: scikit-learn loads only for training and evaluation
    from sklearn.model_selection import StratifiedGroupKFold

    n_splits = max(2, round(1 / test_share))
    sgkf = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    train_idx, test_idx = next(sgkf.split(np.zeros(len(data)), data.kinds, data.groups))
    return data.subset(train_idx), data.subset(test_idx)


def _distinct(texts: list[str], templates: list[str], seen: set[str]) -> tuple[list[str], list[str]]:
    """``texts`` (and their ``templates``) without those already in ``seen`` (case-folded),
    adding them to it."""
    out, keys = [], []
    for t, key in zip(texts, templates, strict=True):
        if t.casefold() not in seen:
            seen.add(t.casefold())
            out.append(t)
            keys.append(key)
    return out, keys


def _hand_training_rows(seen: set[str]) -> LabelledTexts:
    """``HAND_TRAINING``'s memos as training rows of kind ``hand_memo``, less any text in
    ``seen`` (reserved or already drawn). A group is one writer's family in one language,
    so the fit's validation holds back whole families of a language, not single lines."""
    items = read_outside_set(HAND_TRAINING)
    texts, keys = _distinct([it.text for it in items], [str(i) for i in range(len(items))], seen)
    kept = [items[int(k)] for k in keys]
    return LabelledTexts(texts, [it.label for it in kept], ["hand_memo"] * len(kept),
                         [f"hand/{it.language}/{it.family}" for it in kept])


def _merge(a: tuple[list[str], list[str]], b: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    return a[0] + b[0], a[1] + b[1]


def _whole_emails(data: LabelledTexts) -> LabelledTexts:
    idx = [i for i, k in enumerate(data.kinds) if k.startswith("email_context")]
    return data.subset(idx)


def _words_only(text: str) -> str:
    """``text``'s words, casefolded: digits, punctuation, symbols (emoji) and emoji
    joiners become spaces. The key under which slot-only variants of one phrasing are
    one text.

    >>> _words_only("Mark the order as paid 🎉 #12") == _words_only("mark the order as paid 🚕")
    True
    >>> _words_only("SHOP*APPROVE, NOW")
    'shop approve now'
    """
    kept = (" " if unicodedata.category(c)[0] in "NPS" or c in "\u200d\ufe0f" else c for c in text.casefold())
    return " ".join("".join(kept).split())


def multilingual_train(n_attacks: int, n_benign: int, seed: int, seen: set[str],
                       statement_lines: bool = False, everyday_keywords: bool = False) -> LabelledTexts:
    """Generated multilingual attacks and benign memos from the *training* template
    families, grouped by concept (``template_concept``: a template and its translations
    are one group), so the validation groups hold sentences whose translations were not
    trained on, as the held-out set does. A split attack (memo | descriptor) is trained on
    as the two joined: the view the detector reads it in.

    With ``statement_lines`` (the merchant-descriptor families, ``multilingual.generate``),
    a text that differs from an earlier one only in its emoji, digits or punctuation (one
    template's slots: "mark the order as paid 🎉" and "… 🚕") is dropped too: eight such
    copies of one benign request were that corpus's highest-scoring validation negatives
    and set the threshold on their own (2026-12-05, docs/detector.md, "... and statement lines").
    The shipped artifact's corpus keeps them, so it rebuilds unchanged."""
    texts, labels, kinds, groups = [], [], [], []
    shapes: set[str] = set()
    for item in generate("train", n_attacks, n_benign, seed=seed, statement_lines=statement_lines,
                         everyday_keywords=everyday_keywords):
        text = item.text if item.descriptor is None else f"{item.text} {item.descriptor}"
        shape = _words_only(text) if statement_lines else text.casefold()
        if text.casefold() in seen or shape in shapes:
            continue
        seen.add(text.casefold())
        shapes.add(shape)
        texts.append(text)
        labels.append(item.label)
        # The everyday-sense memos are imperatives by family, weighted apart (train.KIND_WEIGHTS).
        kinds.append("ml_keyword" if is_everyday_keyword(item.template) else f"ml_{item.family}")
        groups.append(template_concept(item.template))
    return LabelledTexts(texts, labels, kinds, groups)


def load_official_tests(paths: list[Path] | None = None) -> LabelledTexts | None:
    """The injection data's published test/eval splits (given, or found beside the
    training split), concatenated; None when there are none."""
    found = paths if paths is not None else injection_held_out_files()
    parts = [load_injection_csv(p) for p in found]
    if not parts:
        return None
    out = parts[0]
    for part in parts[1:]:
        out = out.extend(part)
    return out


def assemble(csv_path: Path | None = None, seed: int = 7, n_benign: int = 1500,
             n_attacks: int = 700, n_generated_test: int = 300, n_names: int = 500,
             n_business: int = 900, n_tasks: int = 400, n_multilingual: int = 12000,
             n_multilingual_test: int = 4000, n_forged: int = 2500,
             test_csvs: list[Path] | None = None, statement_lines: bool = False,
             everyday_keywords: bool = False, hand_memos: bool = False) -> DetectorData:
    """Build the training set and every evaluation set, reproducibly from ``seed``.

    ``statement_lines`` adds the merchant-descriptor families to the multilingual text
    (``multilingual.generate``), with a sixth more attacks so that each other family
    keeps its 2,400 training and 800 held-out texts; off, the corpus is the one the
    shipped artifact was trained on (its card records which). ``everyday_keywords`` adds
    the memos of ``everyday_keywords`` to the benign side, training and held-out; off, as shipped.
    ``hand_memos`` adds the hand-written training memos (``HAND_TRAINING``) to training alone."""
    ml_share = len(ATTACK_FAMILIES if statement_lines else BASE_ATTACK_FAMILIES) / len(BASE_ATTACK_FAMILIES)
    injection_train, injection_test = split_injection(load_injection_csv(csv_path), seed=seed)
    fit_rows = _attack_lines(injection_train)
    heldout_benign = read_corpus_file("benign_heldout.txt")
    heldout_attacks = read_corpus_file("attacks_heldout.txt")
    # A template can regenerate a hand-written held-out memo ("rent June"): such texts
    # are dropped from training so the held-out rates stay honest.
    reserved = {t.casefold() for t in heldout_benign + heldout_attacks}
    # The outside sets are reserved the same way: none of their texts may reach training.
    outside = {which.name: read_outside_set(which) for which in OUTSIDE_SETS}
    outside_keys = {it.text.casefold() for texts in outside.values() for it in texts}
    reserved |= outside_keys
    # The hand-written validation memos choose a threshold: the fit never sees them either.
    reserved |= {it.text.casefold() for it in read_outside_set(HAND_VALIDATION)}
    # Templates repeat ("no memo", "answer phone bill"): each distinct text counts once,
    # so a few recurring templates do not outweigh the rest or set the threshold. Each
    # generated text's group is its *template*: cross-validation then scores every text
    # with a model that never saw its phrasing, which is what the held-out sets and real
    # traffic ask of it (grouping by text let templated duplicates inflate the scores).
    seen = set(reserved)
    heldout_ml = generate("heldout", round(n_multilingual_test * ml_share), n_multilingual_test, seed=seed + 2000,
                          statement_lines=statement_lines, everyday_keywords=everyday_keywords)
    # A held-out family's text never reaches training, even when a training template
    # happens to produce the same string.
    seen |= {(it.text if it.descriptor is None else f"{it.text} {it.descriptor}").casefold() for it in heldout_ml}
    keys: list[str] = []
    benign = _distinct(benign_memos(n_benign, seed=seed, templates=keys), keys, seen)
    # Payee names ("Sander V.", "kwame") are most transfer descriptors; see person_names.
    benign = _merge(benign, _distinct(person_names(n_names, seed=seed + 2, templates=(k := [])), k, seen))
    business = _distinct(business_texts(n_business, seed=seed + 3, templates=(k := [])), k, seen)
    pairs = injection_memos(n_attacks, seed=seed + 1, templates=(k := []))
    family = dict(pairs)
    attacks = _distinct([t for t, _ in pairs], k, seen)
    tasks = _distinct(ai_task_attacks(n_tasks, seed=seed + 4, templates=(k := [])), k, seen)
    texts = benign[0] + business[0] + attacks[0] + tasks[0]
    generated = LabelledTexts(
        texts, [0] * (len(benign[0]) + len(business[0])) + [1] * (len(attacks[0]) + len(tasks[0])),
        ["generated_memo"] * len(benign[0]) + ["business_text"] * len(business[0])
        + [f"generated_{family[t]}" for t in attacks[0]] + ["generated_ai_task"] * len(tasks[0]),
        benign[1] + business[1] + attacks[1] + tasks[1])
    test_benign = benign_memos(n_generated_test, seed=seed + 1000)
    test_attacks = injection_memos(n_generated_test, seed=seed + 1001)
    test_attacks += [(t, "ai_task") for t in ai_task_attacks(n_generated_test // 3, seed=seed + 1004)]
    generated_test = LabelledTexts(test_benign + [t for t, _ in test_attacks],
                                   [0] * len(test_benign) + [1] * len(test_attacks),
                                   ["generated_memo"] * len(test_benign) + [f"generated_{f}" for _, f in test_attacks])
    ml_train = multilingual_train(round(n_multilingual * ml_share), n_multilingual, seed + 5, seen,
                                  statement_lines=statement_lines, everyday_keywords=everyday_keywords)
    forged_pairs = forged_memos(n_forged, seed=seed + 6, statement_lines=statement_lines,
                                everyday_keywords=everyday_keywords)
    forged = _distinct([t for t, _ in forged_pairs], [form for _, form in forged_pairs], seen)
    forged_rows = LabelledTexts(forged[0], [1] * len(forged[0]), ["forged_field"] * len(forged[0]), forged[1])
    train = (fit_rows.extend(generated).extend(_email_segments(injection_train)).extend(ml_train)
             .extend(forged_rows))
    hand_rows = _hand_training_rows(seen) if hand_memos else None
    if hand_rows is not None:
        train = train.extend(hand_rows)
    train_keys = {t.casefold() for t in train.texts}
    overlap = (reserved - outside_keys) & train_keys
    summary = {
        "seed": seed, "statement_lines": statement_lines, "everyday_keywords": everyday_keywords,
        **({"hand_memos": len(hand_rows)} if hand_rows is not None else {}),
        "injection_csv": str(csv_path),
        "train_rows": len(train), "email_segments": sum(k == "email_segment" for k in train.kinds), "train_positive": int(sum(train.labels)),
        "injection_train_rows": len(injection_train), "injection_test_rows": len(injection_test),
        "injection_test_positive": int(sum(injection_test.labels)),
        "generated_benign": len(benign[0]), "generated_names": n_names, "generated_business": len(business[0]),
        "generated_attacks": len(attacks[0]) + len(tasks[0]), "generated_templates": len(set(generated.groups)),
        "heldout_benign": len(heldout_benign), "heldout_attacks": len(heldout_attacks),
        "heldout_texts_in_train": len(overlap),
        "outside_texts": {name: len(texts) for name, texts in outside.items()},
        "outside_texts_in_train": len(outside_keys & train_keys),
        "multilingual_train": len(ml_train), "multilingual_train_positive": int(sum(ml_train.labels)),
        "multilingual_heldout": len(heldout_ml), "multilingual_templates_train": len(set(ml_train.groups)),
        "forged_fields": len(forged_rows),
    }
    return DetectorData(train, injection_test, heldout_benign, heldout_attacks, generated_test, summary,
                        validation_emails=_whole_emails(injection_train),
                        generated_business_test=business_texts(n_generated_test, seed=seed + 1003),
                        multilingual_heldout=heldout_ml, official_test=load_official_tests(test_csvs),
                        outside=outside)
