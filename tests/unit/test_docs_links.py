"""Every link from the README or a page in docs/ to a heading of a page in the
repository lands on a heading that exists, with GitHub's anchors: lower case, spaces to
hyphens, every other character that is not a letter, mark, number, underscore or hyphen
dropped (so an en dash in "20:41–20:53" leaves "20412053"), "-1", "-2"... after repeats."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """
    >>> github_anchor("Before/after in one run: warm-up off Redis (2026-12-01 20:41–20:53 UTC)")
    'beforeafter-in-one-run-warm-up-off-redis-2026-12-01-20412053-utc'
    >>> github_anchor("The write script's `HDEL`, and the collector")
    'the-write-scripts-hdel-and-the-collector'
    """
    kept = (ch for ch in heading.strip().lower()
            if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc")
    return "".join(kept).replace(" ", "-")


def anchors_of(page: Path) -> set[str]:
    out: set[str] = set()
    repeats: dict[str, int] = {}
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        heading = None if in_code else re.match(r"#{1,6} (.+)", line)
        if heading:
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))  # a link's text only
            anchor = github_anchor(text)
            n = repeats.get(anchor, 0)
            repeats[anchor] = n + 1
            out.add(anchor if n == 0 else f"{anchor}-{n}")
    return out


def test_the_anchor_rule_is_githubs():
    assert github_anchor("Verdicts from columns, the write script's no-op calls (2026-12-06, late night)") == \
        "verdicts-from-columns-the-write-scripts-no-op-calls-2026-12-06-late-night"


def test_every_link_to_a_heading_lands_on_one():
    anchors = {page.resolve(): anchors_of(page) for page in PAGES}
    broken = []
    for page in PAGES:
        for match in LINK.finditer(page.read_text(encoding="utf-8")):
            target = (page.parent / match.group(1)).resolve() if match.group(1) else page.resolve()
            if target in anchors and match.group(2) not in anchors[target]:
                broken.append(f"{page.relative_to(REPO)} -> {match.group(1) or '(itself)'}#{match.group(2)}")
    assert not broken, "\n".join(broken)
