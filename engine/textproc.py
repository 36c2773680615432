"""Untrusted user text: the one place it is cleaned before anything reads it.

Both the encoder (which tokenises it into the untrusted segment) and the
adversarial-input detector (which scores it) call ``clean_user_text`` so that they
see exactly the same string. Cleaning never raises: bad input becomes a shorter
string plus the reasons why, which end up in the verdict.

>>> clean_user_text("rent\\u200b June").text
'rent June'
>>> clean_user_text("ｐａｙ").text          # NFKC folds full-width letters
'pay'
>>> clean_user_text("e\\u200b\\u0301").text  # invisible removed before NFKC composes
'é'
>>> r = clean_user_text(b"\\xff\\xfeinvoice")
>>> r.text, r.issues
('invoice', ('invalid_utf8',))
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

#: Longest user text we keep, in characters after normalisation. Longer text is cut
#: (reason ``truncated``); extreme length is itself a detector signal.
MAX_TEXT_CHARS = 512
#: Raw inputs beyond this many bytes are not even normalised (reason ``oversized``):
#: NFKC on megabytes is a cheap denial of service.
MAX_RAW_BYTES = 16_384

# Zero-width and invisible formatting characters that hide text from humans but not
# from models: ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen, bidi controls.
_INVISIBLE = {
    0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD, 0x180E,
    0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069,
}
_DELETE_INVISIBLE = {cp: None for cp in _INVISIBLE}
# ``str.translate`` with a dict walks non-ASCII text char by char in Python-object land
# (~18 µs for a 256-character memo with one emoji); a regex scan says first whether
# there is anything to delete (~1 µs), and ASCII text can hold none of them.
_ANY_INVISIBLE = re.compile("[" + "".join(map(chr, sorted(_INVISIBLE))) + "]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0/C1 controls except tab/newline/CR, which become plain whitespace via str.split().
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@dataclass(slots=True, frozen=True)
class CleanText:
    """Normalised user text plus what cleaning had to do to it."""

    text: str
    issues: tuple[str, ...] = ()
    #: Characters removed as invisible (zero-width, bidi controls): a detector feature.
    invisible_removed: int = 0
    #: Length before truncation, in characters (or bytes for undecodable input).
    original_length: int = 0


def clean_user_text(value: str | bytes | None, max_chars: int = MAX_TEXT_CHARS) -> CleanText:
    """Decode, NFKC-normalise, drop invisible and control characters, cap the length."""
    if value is None:
        return CleanText("", (), 0, 0)
    issues: list[str] = []
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        if len(raw) > MAX_RAW_BYTES:
            raw = raw[:MAX_RAW_BYTES]
            issues.append("oversized")
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            value = raw.decode("utf-8", errors="ignore")
            issues.append("invalid_utf8")
    elif len(value) > MAX_RAW_BYTES:
        value = value[:MAX_RAW_BYTES]
        issues.append("oversized")
    original_length = len(value)
    if value.isascii():
        # Fast path, same result: ASCII holds no surrogate and no invisible character,
        # and NFKC maps every ASCII string to itself.
        text, invisible = value, 0
    else:
        # Lone surrogates cannot be encoded anywhere downstream (Avro, JSON, Kafka headers).
        if _SURROGATE.search(value):
            value = value.encode("utf-8", errors="ignore").decode("utf-8")
            issues.append("invalid_utf8")
        # Invisible characters go BEFORE NFKC: "e\u200b\u0301" must compose to "é", as a
        # reader sees it, not stay "e" + a dangling combining accent.
        text = value.translate(_DELETE_INVISIBLE) if _ANY_INVISIBLE.search(value) else value
        invisible = len(value) - len(text)
        text = unicodedata.normalize("NFKC", text)
    # Other control characters (NUL, ESC, ...) carry no meaning in a memo.
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
        issues.append("control_chars")
    text = " ".join(text.split())
    if len(text) > max_chars:
        text = text[:max_chars]
        issues.append("truncated")
    if invisible:
        issues.append("invisible_chars")
    return CleanText(text, tuple(dict.fromkeys(issues)), invisible, original_length)
