"""Hard business rules in YAML: format, safe CEL conditions, lists, loading, hot reload.

The modules, in the order data flows through them:

* ``spec``      — pydantic models of the rule file format (extra fields are errors)
* ``yamlsafe``  — reading untrusted YAML: UTF-8, no aliases, line numbers
* ``expr``/``ops`` — CEL conditions: parsed by cel-python, checked, compiled to closures
* ``typecheck`` — load-time refusal of comparisons between known, different types
* ``lists``     — named lists from YAML or Redis sets
* ``loader``    — a directory → an immutable ``RuleSet`` (all or nothing, exact errors)
* ``ruleset``   — evaluation and arbitration
* ``watch``     — hot reload (``RuleWatcher``)
* ``cases``     — ``tollgate rules test``; ``backtest``/``replay`` — ``tollgate rules backtest``

The stage the pipeline calls is ``engine.stages.guard.Guard``.
"""

from engine.rules.loader import RuleProblem, RuleSetError, build_ruleset, load_ruleset, read_snapshot
from engine.rules.ruleset import CompiledRule, RuleSet, arbitrate

__all__ = [
    "CompiledRule", "RuleProblem", "RuleSet", "RuleSetError", "arbitrate", "build_ruleset",
    "load_ruleset", "read_snapshot",
]
