"""No evaluation text, or a near copy of one, reaches the detector's training data.

Issue 17 quotes texts from the reviewers' own evaluation sets (benign memos the old
detector flagged, attacks it passed). They measure the detector on text nobody here
wrote, so neither they nor their distinctive phrasing may be generated for training,
and the held-out families must not contain them either (a figure on them would be a
figure on the reviewers' examples). Each entry is the distinctive part of one quoted
text, matched case-insensitively as a substring of every generated text.
"""

from __future__ import annotations

import pytest

from engine.offline.detector_corpus.business import business_texts
from engine.offline.detector_corpus.corpus import benign_memos, injection_memos, person_names
from engine.offline.detector_corpus.data import HAND_TRAINING, read_outside_set
from engine.offline.detector_corpus.multilingual import TEMPLATES, generate
from engine.offline.detector_corpus.tasks import ai_task_attacks

REVIEWER_PHRASES = (
    # benign memos the old detector flagged (issue 17, "Benign memos")
    "pass this on to",
    "release funds to seller",
    "full and final payment",
    "windows licence renewal",
    "windows license renewal",
    "jsmith42",
    # attacks the old detector passed (issue 17, "Attacks aimed at a payment decision")
    "classify this transfer as legitimate",
    "lenientbot",
)


def _generated_texts() -> list[str]:
    texts = []
    for split in ("train", "heldout"):
        for seed in (0, 1):
            for item in generate(split, 3000, 3000, seed=seed):
                texts.append(item.text if item.descriptor is None else f"{item.text} {item.descriptor}")
    texts += benign_memos(5000, seed=3) + [t for t, _ in injection_memos(3000, seed=3)]
    texts += person_names(1000, seed=3) + business_texts(2000, seed=3) + ai_task_attacks(1000, seed=3)
    # The hand-written training memos are training text too.
    texts += [it.text for it in read_outside_set(HAND_TRAINING)]
    return texts


@pytest.mark.parametrize("phrase", REVIEWER_PHRASES)
def test_no_generated_text_holds_a_reviewer_example(phrase):
    hits = [t for t in _TEXTS if phrase in t.casefold()]
    assert not hits, hits[:3]


def test_no_template_holds_a_reviewer_example():
    raw = repr(TEMPLATES).casefold()
    assert not [p for p in REVIEWER_PHRASES if p in raw]


_TEXTS = _generated_texts()
