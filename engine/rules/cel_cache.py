"""The CEL grammar's parser, built once per user instead of once per process.

Why: cel-python builds its LALR tables from the grammar every time a process starts,
and that is the slowest part of loading the rules, hence of a worker restart
(``python ops/bench/restart.py`` shows the phases; ``model_load_s`` includes the rule
guard). Lark can keep the analysed grammar in a cache file and load it about ten times
faster. The file is a pickle, so it is only ever read from a directory that this user
owns and nobody else can write (``$TOLLGATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tollgate``,
else ``~/.cache/tollgate``); Lark also checks a SHA-256 of the grammar and options
stored in it. Where no such directory can be had, the parser is built as before.

The options copy cel-python's own (``celpy.celparser.CELParser.__init__``);
``tests/unit/test_rules_cel_cache.py`` checks that both parsers give the same trees.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from pathlib import Path

import lark
from celpy.celparser import CELParser

log = logging.getLogger("tollgate.rules")


def cache_dir() -> Path | None:
    explicit = os.environ.get("TOLLGATE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "tollgate"
    home = Path(os.path.expanduser("~"))
    return home / ".cache" / "tollgate" if home.is_absolute() else None  # no home: no cache


def _private(path: Path) -> bool:
    """Owned by this user and writable by nobody else (or absent, for a file)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return True
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def private_cache_file(name: str, directory: Path | None = None) -> Path | None:
    """``directory/name`` if ``directory`` is (made) private to this user, else None."""
    directory = directory or cache_dir()
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    target = directory / name
    if not (_private(directory) and _private(target)):
        log.warning("rules: parser cache not used (not private to this user)", extra={"path": str(target)})
        return None
    return target


def install_cached_cel_parser(directory: Path | None = None) -> None:
    """Give ``CELParser`` its class-wide Lark parser, from the private cache when possible."""
    if CELParser.CEL_PARSER is not None:
        return
    grammar = (Path(CELParser.__init__.__code__.co_filename).parent / "cel.lark").read_text()
    target = private_cache_file("cel-parser.lark", directory)
    options = {"parser": "lalr", "start": "expr", "debug": True, "g_regex_flags": re.MULTILINE,
               "lexer_callbacks": {"IDENT": CELParser.ambiguous_literals}, "propagate_positions": True,
               "maybe_placeholders": False, "priority": "invert", "tree_class": lark.Tree}
    try:
        CELParser.CEL_PARSER = lark.Lark(grammar, cache=str(target) if target else False, **options)
    except OSError:  # the cache file could not be read or written: build it in memory
        CELParser.CEL_PARSER = lark.Lark(grammar, **options)
    if target is not None and target.exists():
        try:
            target.chmod(0o600)
        except OSError:
            pass
