"""Loading rule sets: the default set, exact error messages, hostile files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.rules.loader import RuleSetError, build_ruleset, load_ruleset, read_snapshot

REPO = Path(__file__).resolve().parents[2]
GOOD = b"""rules:
  - id: big
    description: big amounts
    owner: ops
    when: event.amount >= 10000
    then: reject
"""


def problems(files: dict[str, bytes]) -> list[str]:
    with pytest.raises(RuleSetError) as info:
        build_ruleset(files)
    return [str(p) for p in info.value.problems]


def test_default_rule_set_loads() -> None:
    rs = load_ruleset(REPO / "rules")
    ids = {r.id for r in rs.rules}
    assert {"very-large-amount", "impossible-velocity", "blocked-device", "blocked-terminal",
            "detector-flagged-text", "new-device-large-amount"} <= ids
    assert rs.policy["tie_margin"] == 0.05 and rs.policy["detector_floor"] == "review"
    assert rs.lists["sanctioned_countries"].values == {"KP", "IR", "SY", "CU"}
    assert rs.lists["blocked_customers_live"].source == "redis"
    assert not any(f.startswith("tests/") for f in rs.files)


def test_version_is_a_content_hash(tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "r")
    v1 = load_ruleset(tmp_path / "r").version
    assert load_ruleset(REPO / "rules").version == v1  # same content, same version anywhere
    (tmp_path / "r" / "policy.yaml").touch()
    assert load_ruleset(tmp_path / "r").version == v1
    policy = tmp_path / "r" / "policy.yaml"
    policy.write_text(policy.read_text().replace("tie_margin: 0.05", "tie_margin: 0.08"))
    rs = load_ruleset(tmp_path / "r")
    assert rs.version != v1 and rs.policy["tie_margin"] == 0.08


def test_unknown_field_names_file_line_rule_and_suggests() -> None:
    bad = GOOD.replace(b"    when:", b"    whne:")
    out = problems({"amounts.yaml": bad})
    assert out[0] == "amounts.yaml:5: rule 'big': unknown field 'whne' (did you mean 'when'?)"
    assert "amounts.yaml:2: rule 'big': missing required field 'when'" in out


def test_yaml_syntax_error_names_the_line() -> None:
    out = problems({"a.yaml": GOOD + b"  - id: [unclosed\n"})
    assert len(out) == 1 and out[0].startswith("a.yaml:8: YAML syntax error")


def test_expression_error_points_into_a_block_scalar() -> None:
    src = b"""rules:
  - id: multi
    description: d
    owner: o
    when: >
      event.amount > 10 &&
      event.amount >> 3
    then: review
"""
    out = problems({"m.yaml": src})  # folded (>): lines are joined, the block's first line is named
    assert out == ["m.yaml:6: rule 'multi': `when` does not compile: CEL syntax error at line 1, column 36: "
                   "near '> 3'"]
    out = problems({"m.yaml": src.replace(b"when: >", b"when: |")})  # literal (|): the exact line
    assert out == ["m.yaml:7: rule 'multi': `when` does not compile: CEL syntax error at line 2, column 15: "
                   "near '> 3'"]


def test_bad_action_and_bad_values() -> None:
    out = problems({"a.yaml": GOOD.replace(b"then: reject", b"then: block")})
    assert out == ["a.yaml:6: rule 'big': `then` must be reject, review, pass or {constraint: never_pass}; "
                   "got 'block'"]
    out = problems({"a.yaml": GOOD.replace(b"then: reject", b"then: {constraint: never_reject}")})
    assert out == ["a.yaml:6: rule 'big': `then` must be reject, review, pass or {constraint: never_pass}; "
                   "got {'constraint': 'never_reject'}"]
    out = problems({"a.yaml": GOOD.replace(b"id: big", b"id: Big Rule")})
    assert out[0].startswith("a.yaml:2: rule 'Big Rule': id: String should match pattern")


def test_duplicate_ids_across_files_name_both_places() -> None:
    out = problems({"a.yaml": GOOD, "b.yaml": b"\n" + GOOD})
    assert out == ["b.yaml:3: rule 'big': duplicate rule id (first defined at a.yaml:2)"]


def test_lists_and_policy_problems() -> None:
    out = problems({"l.yaml": b"lists:\n  bad:\n    values: [a]\n    key: k\n"})
    assert out[0].startswith("l.yaml:3: lists.bad: Value error, `key`/`url` only apply to `source: redis`")
    out = problems({"l.yaml": b"lists:\n  Bad-Name:\n    values: [a]\n"})
    assert "list name 'Bad-Name' must match" in out[0]
    out = problems({"a.yaml": b"policy: {tie_margin: 0.1}\n", "b.yaml": b"policy: {tie_margin: 0.2}\n"})
    assert out == ["b.yaml:1: `policy:` is already set in a.yaml; keep one policy section"]
    out = problems({"a.yaml": b"policy: {tie_margin: 1.5}\n"})
    assert out[0].startswith("a.yaml:1: policy.tie_margin: Input should be less than or equal to 1")
    out = problems({"a.yaml": b"policy: {tie_margn: 0.1}\n"})
    assert out == ["a.yaml:1: unknown field 'tie_margn' (did you mean 'tie_margin'?)"]
    out = problems({"a.yaml": GOOD.replace(b"event.amount >= 10000", b"event.device_id in lists.nope")})
    assert out == ["a.yaml:5: rule 'big': `when` does not compile: unknown list 'nope' (known lists: none defined)"]


def test_every_problem_is_reported_at_once() -> None:
    out = problems({"a.yaml": GOOD.replace(b"then: reject", b"then: nope"),
                    "b.yaml": b"rules: [{id: x, description: d, owner: o, when: 'event.memo == 1', then: review}]",
                    "c.yaml": b"rules: 3"})
    assert [o.split(":")[0] for o in out] == ["a.yaml", "c.yaml", "b.yaml"]
    assert "field isolation" in out[2]


def test_top_level_must_be_a_mapping_and_unknown_sections_are_errors() -> None:
    assert problems({"a.yaml": b"- 1\n- 2\n"}) == [
        "a.yaml:1: the file must be a mapping with `rules:`, `lists:` and/or `policy:`"]
    assert problems({"a.yaml": b"rulez: []\n"})[0] == "a.yaml:1: unknown field 'rulez' (did you mean 'rules'?)"


def test_yaml_11_booleans_stay_strings() -> None:
    rs = build_ruleset({"l.yaml": b"lists:\n  countries: {values: [NO, yes, 'on', off]}\n"})
    assert rs.lists["countries"].values == {"NO", "yes", "on", "off"}


def test_disabled_and_shadow_rules_are_kept_apart() -> None:
    rs = build_ruleset({"a.yaml": GOOD + b"""  - id: s
    description: d
    owner: o
    mode: shadow
    when: 'true'
    then: review
  - id: off
    description: d
    owner: o
    enabled: false
    when: 'true'
    then: reject
"""})
    assert [r.id for r in rs.enforce] == ["big"] and [r.id for r in rs.shadow] == ["s"]
    assert rs.disabled == ("off",)


# --- hostile files -----------------------------------------------------------------

def test_alias_bomb_is_refused_without_expanding() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "rules: [*i]\n"
    bomb = bomb.encode()
    # Refused at the first anchor, before anything is expanded: expanding would build
    # 9**9 list items and never finish (no wall-clock bound here: the machine's speed
    # must not decide a test).
    out = problems({"bomb.yaml": bomb})
    assert out == ["bomb.yaml:1: YAML anchors and aliases (&a / *a) are not allowed in rule files"]


def test_non_utf8_bytes_are_refused_with_the_line() -> None:
    out = problems({"latin1.yaml": GOOD.replace(b"description: big amounts", b"description: gro\xdfe Betr\xe4ge")})
    assert out == ["latin1.yaml:3: not valid UTF-8 (byte 0xdf at offset 39); save the file as UTF-8"]


def test_nul_bytes_huge_files_and_huge_expressions() -> None:
    assert problems({"n.yaml": GOOD + b"\x00"})[0].startswith("n.yaml:7: NUL byte")
    assert "rule files are limited to" in problems({"h.yaml": b"#" * (3 * 1024 * 1024)})[0]
    long_when = GOOD.replace(b"event.amount >= 10000", b"event.amount > 1" + b" && event.amount > 1" * 200)
    assert "the limit is 2000" in problems({"l.yaml": long_when})[0]
    deep = GOOD.replace(b"event.amount >= 10000", b"'" + b"(" * 3000 + b"true" + b")" * 3000 + b"'")
    assert "the limit is 2000" in problems({"d.yaml": deep})[0]
    nested = GOOD.replace(b"event.amount >= 10000", b"'" + b"(" * 300 + b"true" + b")" * 300 + b"'")
    assert "nests brackets more than 16 deep" in problems({"d.yaml": nested})[0]
    deep_yaml = b"rules: " + b"[" * 5000 + b"]" * 5000 + b"\n"
    assert problems({"y.yaml": deep_yaml}) == ["y.yaml:1: YAML is nested more than 32 levels deep"]


def test_python_internals_are_refused() -> None:
    for expr in (b"event.__class__.__bases__", b"''.__class__.__mro__[1].__subclasses__()",
                 b"event.attributes.__getitem__('x')", b"__builtins__.open('/etc/passwd')"):
        out = problems({"x.yaml": GOOD.replace(b"event.amount >= 10000", b"\"" + expr + b"\"")})
        assert "rule 'big': `when` does not compile: names starting with '_' are not allowed" in out[0], out


def test_vanished_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_bytes(GOOD)
    (tmp_path / "b.yaml").write_bytes(b"lists: {}\n")
    original = Path.read_bytes

    def vanish(self: Path) -> bytes:
        if self.name == "b.yaml":
            self.unlink()
            raise FileNotFoundError(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", vanish)
    with pytest.raises(RuleSetError, match="b.yaml: file disappeared while the rule set was being read"):
        read_snapshot(tmp_path)


def test_missing_directory() -> None:
    with pytest.raises(RuleSetError, match="rules directory does not exist"):
        load_ruleset("/nonexistent/rules")
