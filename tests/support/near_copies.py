"""The near-copy check the detector's training texts are held to: no training text may be an
evaluation text, or within a difflib ratio of 0.9 of one, after NFKC, case folding and
collapsed spaces (docs/detector.md: the check the helpers' sets went through before use).

>>> near_copy("Rent  June", {normalised("rent june"), normalised("gym")})
'rent june'
>>> near_copy("rent June", {normalised("invoice 4411")}) is None
True
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable

#: At or above this ratio a text counts as a near copy.
NEAR = 0.9


def normalised(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def near_copy(text: str, others: Iterable[str]) -> str | None:
    """The first of ``others`` (already ``normalised``) that ``text`` is a near copy of, or
    None. Only texts of 0.8x to 1.25x its length can reach the ratio, and difflib's two cheap
    upper bounds rule most of the rest out before the exact ratio."""
    mine = normalised(text)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(mine)
    for other in others:
        if not 0.8 * len(mine) <= len(other) <= 1.25 * len(mine):
            continue
        matcher.set_seq1(other)
        if matcher.real_quick_ratio() >= NEAR and matcher.quick_ratio() >= NEAR and matcher.ratio() >= NEAR:
            return other
    return None
