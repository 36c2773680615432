"""The hand-written training memos T (``engine/assets/detector/training_t``): what they are
drawn as, and that none is an evaluation text, a near copy of one, or a text of set V."""

from __future__ import annotations

from collections import Counter

from engine.offline.detector_corpus.data import (
    HAND_TRAINING,
    HAND_VALIDATION,
    OUTSIDE_SETS,
    _hand_training_rows,
    read_corpus_file,
    read_outside_set,
)
from engine.offline.detector_corpus.train import KIND_WEIGHTS
from tests.support.near_copies import near_copy, normalised


def test_every_language_and_family_is_written_and_both_labels_are_there():
    items = read_outside_set(HAND_TRAINING)
    languages = Counter(it.language for it in items)
    assert len(languages) == 24 and min(languages.values()) >= 55
    assert {it.family for it in items if it.label} == set(HAND_TRAINING.attack_families)
    assert {it.family for it in items if not it.label} == set(HAND_TRAINING.benign_families)
    assert {it.field for it in items} == {"memo"}


def test_drawn_as_their_own_kind_grouped_by_language_and_family_less_what_is_seen():
    rows = _hand_training_rows(set())
    assert set(rows.kinds) == {"hand_memo"} and "hand_memo" in KIND_WEIGHTS
    assert all(g.startswith("hand/") and g.count("/") == 2 for g in rows.groups)
    assert set(rows.labels) == {0, 1}
    first = rows.texts[0]
    assert first not in _hand_training_rows({first.casefold()}).texts


def test_no_text_is_a_near_copy_of_an_evaluation_text_or_of_set_v():
    # docs/detector.md, "Memos people wrote, for training": checked before any fit.
    others = {normalised(it.text) for which in (*OUTSIDE_SETS, HAND_VALIDATION) for it in read_outside_set(which)}
    others |= {normalised(t) for t in read_corpus_file("benign_heldout.txt") + read_corpus_file("attacks_heldout.txt")}
    for item in read_outside_set(HAND_TRAINING):
        assert near_copy(item.text, others) is None, (item.text, near_copy(item.text, others))
