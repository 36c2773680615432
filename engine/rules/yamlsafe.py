"""Reading an ops-written YAML file without trusting it.

Rule files are edited by hand and reloaded into a running worker, so reading one
must never crash, hang or exhaust memory, and every problem must point at a line:

* bytes are decoded as strict UTF-8 (the error names the line of the bad byte);
* anchors and aliases are refused outright: an alias "bomb" (billion laughs) costs
  nothing to parse but explodes in whatever walks the result, and hand-edited rule
  files gain nothing from them;
* only plain scalars, lists and string-keyed mappings are built (``SafeLoader``
  composition, our own construction), with a cap on the number of nodes and depth;
* booleans are YAML 1.2's ``true``/``false`` only: ``NO`` (Norway) stays a string;
* every mapping and sequence item remembers its line, so a pydantic error at
  ``("rules", 3, "when")`` can be reported as ``file:line``.

>>> doc = read_yaml(b"rules:\\n  - id: a\\n    when: 'true'\\n", "x.yaml")
>>> doc.data["rules"][0]["id"], doc.line_of(("rules", 0, "when"))
('a', 3)
>>> read_yaml(b"a: &x [1]\\nb: *x\\n", "x.yaml")
Traceback (most recent call last):
...
engine.rules.yamlsafe.YamlFileError: x.yaml:1: YAML anchors and aliases (&x / *x) are not allowed in rule files
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

#: A rule set is a few hundred nodes; a hundred thousand is a hostile or broken file.
MAX_NODES = 100_000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 32

Path_ = tuple[Any, ...]


class YamlFileError(ValueError):
    """A file that is not acceptable YAML; the message starts with ``file:line:``."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file, self.line, self.reason = file, line, message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")


@dataclass(slots=True)
class YamlDoc:
    """Plain Python data plus the line (1-based) of every node, by path."""

    file: str
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    blocks: set[Path_] = field(default_factory=set)  # scalars written as | blocks
    folded: set[Path_] = field(default_factory=set)  # scalars written as > blocks

    def line_of(self, path: Path_) -> int | None:
        """Line of the deepest node on ``path`` that exists (pydantic ``loc`` works)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def block_scalar(self, path: Path_) -> bool:
        return tuple(path) in self.blocks


def decode_utf8(raw: bytes, file: str) -> str:
    """Strict UTF-8 decoding with an error that says where the bad byte is."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise YamlFileError(file, line, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                                        "save the file as UTF-8") from None


def read_yaml(raw: bytes, file: str) -> YamlDoc:
    """Parse one document from ``raw`` bytes; raise ``YamlFileError`` naming file and line."""
    if len(raw) > MAX_FILE_BYTES:
        raise YamlFileError(file, None, f"file is {len(raw)} bytes; rule files are limited to {MAX_FILE_BYTES}")
    text = decode_utf8(raw, file)
    if "\x00" in text:
        raise YamlFileError(file, text[: text.index("\x00")].count("\n") + 1, "NUL byte in file")
    try:
        # Refuse aliases and deep nesting at the event level (PyYAML's event parser is
        # iterative; its composer is recursive), before anything is composed.
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                raise YamlFileError(file, event.start_mark.line + 1,
                                    f"YAML anchors and aliases (&{anchor} / *{anchor}) are not allowed in rule files")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlFileError(file, event.start_mark.line + 1,
                                        f"YAML is nested more than {MAX_DEPTH} levels deep")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise YamlFileError(file, line, f"YAML syntax error: {problem}") from None
    except yaml.YAMLError as exc:
        raise YamlFileError(file, None, f"YAML error: {exc}") from None
    except RecursionError:
        raise YamlFileError(file, None, "YAML is nested too deeply") from None
    doc = YamlDoc(file=file, data=None)
    if node is None:
        return doc
    counter = [0]
    try:
        doc.data = _build(node, (), doc, counter)
    except RecursionError:
        raise YamlFileError(file, None, "YAML is nested too deeply") from None
    return doc


_BOOL_TAG = "tag:yaml.org,2002:bool"
_SCALAR = yaml.SafeLoader(" ")  # only used for its scalar constructors (int, float, bool, null)


def _build(node: yaml.Node, path: Path_, doc: YamlDoc, counter: list[int]) -> Any:
    counter[0] += 1
    if counter[0] > MAX_NODES:
        raise YamlFileError(doc.file, node.start_mark.line + 1, f"more than {MAX_NODES} YAML nodes")
    doc.lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode):
        if node.style == "|":  # literal block: lines inside map 1:1 to file lines
            doc.blocks.add(path)
        elif node.style == ">":
            doc.folded.add(path)
        if node.tag == _BOOL_TAG and node.value.lower() not in ("true", "false"):
            # YAML 1.1 reads yes/no/on/off as booleans: `id: off` or the country `NO`
            # (Norway) would silently become False. Rule files use YAML 1.2 booleans.
            return node.value
        try:
            return _SCALAR.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise YamlFileError(doc.file, node.start_mark.line + 1, f"bad value: {exc}") from None
    if isinstance(node, yaml.SequenceNode):
        return [_build(child, path + (i,), doc, counter) for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlFileError(doc.file, key_node.start_mark.line + 1, "mapping keys must be plain strings")
            key = str(key_node.value)
            if key == "<<":
                raise YamlFileError(doc.file, key_node.start_mark.line + 1, "YAML merge keys (<<) are not allowed")
            if key in out:
                raise YamlFileError(doc.file, key_node.start_mark.line + 1, f"key {key!r} appears twice in one mapping")
            out[key] = _build(value_node, path + (key,), doc, counter)
        return out
    raise YamlFileError(doc.file, node.start_mark.line + 1, f"unsupported YAML node {type(node).__name__}")
