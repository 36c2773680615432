"""Loading a rules directory into a ``RuleSet`` — all of it, or none of it.

Two phases, so a reload can never see half a directory:

1. ``read_snapshot``: list ``*.yaml``/``*.yml`` (``tests/`` and hidden files aside)
   and read every file's bytes into memory. A file that vanishes between listing and
   reading (an editor's save-by-rename, a ``git checkout``) makes the snapshot fail
   with a clear message; the watcher simply tries again on its next poll.
2. ``build_ruleset``: parse, validate, compile. Every problem found is collected (not
   just the first), each naming ``file:line`` and the rule id, and the whole set is
   refused with ``RuleSetError`` if there is any.

The version is a content hash of the snapshot: the same files give the same version
on every worker, and touching a file without changing it is not a new version.

>>> rs = build_ruleset({"a.yaml": b"rules:\\n- {id: r1, description: d, owner: o, when: 'event.amount > 1', then: review}\\n"})
>>> [r.id for r in rs.enforce], rs.version.startswith("rules-")
(['r1'], True)
>>> try:
...     build_ruleset({"a.yaml": b"rules:\\n- {id: r1, description: d, owner: o, whn: 'true', then: review}\\n"})
... except RuleSetError as exc:
...     print(exc.problems[0])
a.yaml:2: rule 'r1': unknown field 'whn' (did you mean 'when'?)
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.rules.expr import ExpressionError, compile_condition
from engine.rules.lists import NamedList
from engine.rules.ruleset import CompiledRule, RuleSet
from engine.rules.spec import ConstraintSpec, ListSpec, PolicySpec, RuleFile, RuleSpec
from engine.rules.yamlsafe import YamlDoc, YamlFileError, read_yaml

RULE_SUFFIXES = (".yaml", ".yml")
TESTS_DIR = "tests"
MAX_FILES = 200
#: Compiling a condition takes about a millisecond; this keeps a reload under a second or so.
MAX_RULES = 1000


@dataclass(slots=True, frozen=True)
class RuleProblem:
    file: str
    line: int | None
    rule: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        who = f" rule {self.rule!r}:" if self.rule else ""
        return f"{where}:{who} {self.message}"


class RuleSetError(ValueError):
    """The rule set was refused; ``problems`` lists every reason, each with file and line."""

    def __init__(self, problems: list[RuleProblem]):
        self.problems = tuple(problems)
        count = len(problems)
        head = f"{count} problem{'s' if count != 1 else ''} in the rule set:"
        super().__init__("\n  ".join([head, *map(str, problems)]))


def rule_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The files that make up a rule set, sorted by relative path."""
    root = Path(directory)
    if not root.is_dir():
        raise RuleSetError([RuleProblem(str(root), None, None, "rules directory does not exist")])
    out = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if rel.parts[0] == TESTS_DIR or any(p.startswith(".") for p in rel.parts):
            continue
        if path.suffix in RULE_SUFFIXES and path.is_file():
            out.append(path)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def read_snapshot(directory: str | os.PathLike[str]) -> dict[str, bytes]:
    """Relative path → bytes of every rule file, read in one pass."""
    root = Path(directory)
    files = rule_files(root)
    if len(files) > MAX_FILES:
        raise RuleSetError([RuleProblem(str(root), None, None, f"{len(files)} files; the limit is {MAX_FILES}")])
    snapshot: dict[str, bytes] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            snapshot[rel] = path.read_bytes()
        except FileNotFoundError:
            raise RuleSetError([RuleProblem(rel, None, None, "file disappeared while the rule set was being "
                                                             "read; it will be read again on the next change")]) from None
        except OSError as exc:
            raise RuleSetError([RuleProblem(rel, None, None, f"cannot read file: {exc.strerror or exc}")]) from None
    return snapshot


def content_version(snapshot: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(snapshot):
        data = snapshot[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return "rules-" + digest.hexdigest()[:12]


def load_ruleset(directory: str | os.PathLike[str], **kwargs: Any) -> RuleSet:
    """``read_snapshot`` + ``build_ruleset``; raises ``RuleSetError`` naming every problem."""
    return build_ruleset(read_snapshot(directory), directory=str(directory), **kwargs)


def default_ctx_names() -> frozenset[str] | None:
    """Context feature names rules may read, from ``engine.features.spec``."""
    try:  # local: guarded by ImportError, so the rules load without the feature package
        from engine.features.spec import CONTEXT_FEATURES
    except ImportError:  # features not installed: accept any ctx name, fail at evaluation
        return None
    return frozenset(CONTEXT_FEATURES) | {"context_available", "history_length"}


def build_ruleset(snapshot: Mapping[str, bytes], *, directory: str = "",
                  ctx_names: frozenset[str] | None = None,
                  redis_clients: Callable[[str | None], Any] | None = None,
                  previous: RuleSet | None = None) -> RuleSet:
    """Validate and compile a snapshot. ``previous`` lends its Redis list values when
    Redis cannot be read now; ``redis_clients`` maps a URL to a client."""
    problems: list[RuleProblem] = []
    ctx_names = default_ctx_names() if ctx_names is None else ctx_names
    parsed: list[tuple[str, YamlDoc, RuleFile]] = []
    for name in sorted(snapshot):
        try:
            doc = read_yaml(snapshot[name], name)
        except YamlFileError as exc:
            problems.append(RuleProblem(name, exc.line, None, exc.reason))
            continue
        data = {} if doc.data is None else doc.data
        if not isinstance(data, dict):
            problems.append(RuleProblem(name, doc.line_of(()), None,
                                        "the file must be a mapping with `rules:`, `lists:` and/or `policy:`"))
            continue
        try:
            parsed.append((name, doc, RuleFile.model_validate(data)))
        except ValidationError as exc:
            problems.extend(_pydantic_problems(exc, doc))
    total = sum(len(rule_file.rules) for _, _, rule_file in parsed)
    if total > MAX_RULES:
        raise RuleSetError([*problems, RuleProblem(directory or "rule set", None, None,
                                                   f"{total} rules; the limit is {MAX_RULES}")])
    lists, policy = _collect_lists_and_policy(parsed, problems, redis_clients, previous)
    enforce, shadow, disabled = _compile_rules(parsed, lists, ctx_names, problems)
    if problems:
        raise RuleSetError(problems)
    return RuleSet(
        version=content_version(snapshot), enforce=tuple(enforce), shadow=tuple(shadow),
        disabled=tuple(disabled), lists=lists, policy=policy, files=tuple(sorted(snapshot)),
        directory=directory, ctx_names=ctx_names or frozenset(),
    )


def _collect_lists_and_policy(parsed: list[tuple[str, YamlDoc, RuleFile]], problems: list[RuleProblem],
                              redis_clients: Callable[[str | None], Any] | None,
                              previous: RuleSet | None) -> tuple[dict[str, NamedList], dict[str, Any]]:
    lists: dict[str, NamedList] = {}
    seen_list: dict[str, str] = {}
    policy: dict[str, Any] = {}
    policy_file: str | None = None
    for name, doc, rule_file in parsed:
        for list_name, spec in rule_file.lists.items():
            where = f"{name}:{doc.line_of(('lists', list_name))}"
            if list_name in seen_list:
                problems.append(RuleProblem(name, doc.line_of(("lists", list_name)), None,
                                            f"list {list_name!r} is defined twice (first at {seen_list[list_name]})"))
                continue
            seen_list[list_name] = where
            lists[list_name] = _make_list(list_name, spec, redis_clients, previous)
        if rule_file.policy is not None:
            if policy_file is not None:
                problems.append(RuleProblem(name, doc.line_of(("policy",)), None,
                                            f"`policy:` is already set in {policy_file}; keep one policy section"))
            else:
                policy_file, policy = name, rule_file.policy.overrides()
    return lists, policy


def _make_list(name: str, spec: ListSpec, redis_clients: Callable[[str | None], Any] | None,
               previous: RuleSet | None) -> NamedList:
    if spec.source == "yaml":
        return NamedList(name, frozenset(spec.values or ()))
    lst = NamedList(name, frozenset(), "redis", spec.key, spec.url, spec.refresh_s)
    old = previous.lists.get(name) if previous is not None else None
    if old is not None and old.source == "redis" and old.key == spec.key:
        lst.values = old.values  # start from what we had; refreshed below
    if redis_clients is not None:
        lst.refresh(redis_clients)
    else:
        lst.stale, lst.error = True, "no Redis client configured"
    return lst


def _compile_rules(parsed: list[tuple[str, YamlDoc, RuleFile]], lists: Mapping[str, NamedList],
                   ctx_names: frozenset[str] | None, problems: list[RuleProblem]):
    enforce: list[CompiledRule] = []
    shadow: list[CompiledRule] = []
    disabled: list[str] = []
    seen: dict[str, str] = {}
    for name, doc, rule_file in parsed:
        for index, spec in enumerate(rule_file.rules):
            line = doc.line_of(("rules", index))
            if spec.id in seen:
                problems.append(RuleProblem(name, line, spec.id, f"duplicate rule id (first defined at {seen[spec.id]})"))
                continue
            seen[spec.id] = f"{name}:{line}"
            try:
                condition = compile_condition(spec.when, lists=lists, ctx_names=ctx_names)
            except ExpressionError as exc:
                when_line = _expression_line(doc, index, exc.line)
                problems.append(RuleProblem(name, when_line, spec.id, f"`when` does not compile: {exc}"))
                continue
            rule = _compiled(spec, condition, name, line)
            if not spec.enabled:
                disabled.append(spec.id)
            elif spec.mode == "shadow":
                shadow.append(rule)
            else:
                enforce.append(rule)
    return enforce, shadow, disabled


def _compiled(spec: RuleSpec, condition: Any, file: str, line: int | None) -> CompiledRule:
    return CompiledRule(id=spec.id, description=spec.description, owner=spec.owner, mode=spec.mode,
                        priority=spec.priority, action=spec.action, condition=condition, file=file, line=line)


def _expression_line(doc: YamlDoc, index: int, expr_line: int | None) -> int | None:
    """File line of a line inside a rule's ``when``. A literal block (``|``) keeps its
    lines; a folded one (``>``) joins them, so the best we can name is its first line."""
    path = ("rules", index, "when")
    base = doc.line_of(path)
    if base is None:
        return base
    if doc.block_scalar(path):
        return base + (expr_line or 1)
    return base + 1 if path in doc.folded else base


def _pydantic_problems(exc: ValidationError, doc: YamlDoc) -> list[RuleProblem]:
    out: list[RuleProblem] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        # pydantic adds the union branch names to loc (e.g. ... 'then', 'literal[...]'); drop them
        clean = tuple(p for p in loc if not (isinstance(p, str) and ("[" in p or p in ("ConstraintSpec",))))
        rule_id = None
        raw = None
        if len(clean) >= 2 and clean[0] == "rules" and isinstance(clean[1], int):
            raw = doc.data.get("rules")
            if isinstance(raw, list) and clean[1] < len(raw) and isinstance(raw[clean[1]], dict):
                rule_id = raw[clean[1]].get("id")
                rule_id = str(rule_id) if rule_id is not None else f"#{clean[1] + 1}"
        field = clean[-1] if clean else ""
        if "then" in clean and rule_id is not None:
            got = raw[clean[1]].get("then")  # type: ignore[index]
            message = (f"`then` must be reject, review, pass or {{constraint: never_pass}}; got {got!r}")
        elif err["type"] == "extra_forbidden":
            allowed = _allowed_fields(clean)
            hint = difflib.get_close_matches(str(field), allowed, n=1)
            message = f"unknown field {field!r}" + (f" (did you mean {hint[0]!r}?)" if hint else
                                                    f" (allowed: {', '.join(allowed)})" if allowed else "")
        elif err["type"] == "missing":
            message = f"missing required field {field!r}"
        else:
            message = f"{'.'.join(map(str, clean[2:] if rule_id else clean)) or 'value'}: {err['msg']}"
        problem = RuleProblem(doc.file, doc.line_of(clean), rule_id, message)
        if problem not in out:
            out.append(problem)
    # An unknown field usually explains a missing one (a typo): list it first.
    return sorted(out, key=lambda p: not p.message.startswith("unknown field"))


def _allowed_fields(loc: tuple[Any, ...]) -> list[str]:
    if len(loc) == 1:
        model: Any = RuleFile
    elif loc[0] == "rules":
        model = ConstraintSpec if "then" in loc else RuleSpec
    elif loc[0] == "lists":
        model = ListSpec
    elif loc[0] == "policy":
        model = PolicySpec
    else:
        return []
    return list(model.model_fields)
