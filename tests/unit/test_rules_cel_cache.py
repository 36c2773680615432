"""The cached CEL parser parses exactly as cel-python's own, and its pickle is only
read from a directory private to this user."""

from __future__ import annotations

import os

import pytest
from celpy.celparser import CELParser

from engine.rules.cel_cache import install_cached_cel_parser, private_cache_file

EXPRESSIONS = [
    "event.amount > 5000 && event.country in ['KP', 'IR']",
    "ctx.customer_txn_count_1h >= 12 || model.risk_score > 0.9",
    "event.device_id in lists.blocked_devices && !(event.channel == 'card_present')",
    "size(event.attributes) > 3 ? event.amount * 2.0 < 10.5 : true",
    "detector.flagged == false && event.hour >= 0u && event.currency.startsWith('E')",
]


@pytest.fixture
def fresh_cel_parser():
    saved = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    yield
    CELParser.CEL_PARSER = saved


def test_cached_parser_gives_cel_pythons_trees(fresh_cel_parser, tmp_path):
    reference = CELParser()  # cel-python builds its own
    expected = [reference.parse(e) for e in EXPRESSIONS]
    CELParser.CEL_PARSER = None
    install_cached_cel_parser(tmp_path / "cache")
    assert (tmp_path / "cache" / "cel-parser.lark").stat().st_size > 0
    assert [CELParser().parse(e) for e in EXPRESSIONS] == expected
    CELParser.CEL_PARSER = None  # the second build reads the file
    install_cached_cel_parser(tmp_path / "cache")
    assert [CELParser().parse(e) for e in EXPRESSIONS] == expected


def test_a_cache_others_can_write_is_never_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert private_cache_file("cel-parser.lark", shared) is None
    private = tmp_path / "private"
    assert private_cache_file("cel-parser.lark", private) == private / "cel-parser.lark"
    assert private.stat().st_mode & 0o077 == 0
    (private / "cel-parser.lark").write_bytes(b"x")
    os.chmod(private / "cel-parser.lark", 0o666)
    assert private_cache_file("cel-parser.lark", private) is None
