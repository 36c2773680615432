"""Word tokens of a (lower-cased) text: exactly ``re.findall(r"\\w+", text)``, as UTF-8 bytes.

Both the signal prefilter (``signals``: which rule can possibly match) and the word
n-grams (``features``) read the words of every memo, so this sits on the hot path. A
regex ``findall`` costs several times what this does (docs/performance.md, "Small figures
behind code comments"); here the ASCII part is split
at C speed (``bytes.translate`` maps every ASCII non-word byte to a space, then
``bytes.split``) and only the rare token that holds non-ASCII bytes is re-split with
the regex, so Unicode word rules (``\\w`` = ``str.isalnum()`` or ``_``) still hold:
"you’re" is "you", "re"; "🍕" is no word at all; "аренда" is one.

>>> word_tokens("rent june, 🍕 you’re ok_1")
[b'rent', b'june', b'you', b're', b'ok_1']
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")

# ASCII bytes that are not word characters become spaces; bytes >= 0x80 (UTF-8 of
# non-ASCII characters) are left alone and handled per token.
_ASCII_WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPLIT_TABLE = bytes(b if b in _ASCII_WORD_BYTES or b >= 0x80 else 0x20 for b in range(256))


def word_tokens(text: str, encoded: bytes | None = None) -> list[bytes]:
    """The ``\\w+`` runs of ``text`` in order, UTF-8 encoded (lone surrogates kept).
    ``encoded`` is ``text``'s UTF-8 when the caller already has it."""
    raw = text.encode("utf-8", "surrogatepass") if encoded is None else encoded
    tokens = raw.translate(_SPLIT_TABLE).split()
    if raw.isascii():
        return tokens
    # Re-split only the runs holding non-ASCII bytes (an emoji, "’", an accented word),
    # last first so the earlier indices stay valid.
    for i in reversed([i for i, ok in enumerate(map(bytes.isascii, tokens)) if not ok]):
        text_run = tokens[i].decode("utf-8", "surrogatepass")
        tokens[i:i + 1] = [w.encode("utf-8", "surrogatepass") for w in _WORD.findall(text_run)]
    return tokens
