"""``tollgate rules check|test|backtest``: the ops team's tools for ``rules/``.

Exit codes are for CI: 0 all good, 1 the rule set (or a case) is wrong, 2 bad usage.
"""

from __future__ import annotations

from pathlib import Path

import typer


def _load(directory: Path, redis: bool):
    from engine.rules.lists import RedisClients
    from engine.rules.loader import RuleSetError, load_ruleset

    try:
        return load_ruleset(directory, redis_clients=RedisClients() if redis else None)
    except RuleSetError as exc:
        typer.echo(f"error: {directory}: {exc}", err=True)
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    rules = typer.Typer(help="Check, test and backtest the YAML hard rules (rules/).", no_args_is_help=True)

    @rules.command("check")
    def check(directory: Path = typer.Argument(..., help="The rules directory, e.g. rules/"),
              redis: bool = typer.Option(False, help="Also read Redis-backed lists now (needs Redis).")) -> None:
        """Validate every file: YAML, fields, CEL conditions, lists, duplicate ids."""
        import logging

        logging.getLogger("tollgate.rules").setLevel(logging.ERROR)
        ruleset = _load(directory, redis)
        typer.echo(f"ok: {directory} is valid, version {ruleset.version}")
        typer.echo(f"  {len(ruleset.enforce)} enforced, {len(ruleset.shadow)} shadow, "
                   f"{len(ruleset.disabled)} disabled rule(s) in {len(ruleset.files)} file(s)")
        for name, lst in sorted(ruleset.lists.items()):
            state = f"redis key {lst.key}" + (" (not read)" if lst.stale else "") if lst.source == "redis" else "yaml"
            typer.echo(f"  list {name}: {len(lst.values)} value(s), {state}")
        if ruleset.policy:
            typer.echo("  policy: " + ", ".join(f"{k}={v}" for k, v in ruleset.policy.items()))

    @rules.command("test")
    def test(directory: Path = typer.Argument(..., help="The rules directory; cases are read from DIR/tests/"),
             verbose: bool = typer.Option(False, "-v", "--verbose", help="List passing cases too.")) -> None:
        """Run the YAML test cases in DIR/tests/ against the rules in DIR."""
        import logging

        from engine.offline.rules_tools.cases import run_cases, summarize
        from engine.rules.loader import RuleSetError

        logging.getLogger("tollgate.rules").setLevel(logging.ERROR)
        ruleset = _load(directory, redis=False)
        try:
            results = run_cases(ruleset, directory)
        except RuleSetError as exc:
            typer.echo(f"error: {directory}/tests: {exc}", err=True)
            raise typer.Exit(1) from None
        for result in results:
            if not result.passed:
                typer.echo(f"FAIL {result.where}: {result.name}")
                for failure in result.failures:
                    typer.echo(f"     {failure}")
            elif verbose:
                typer.echo(f"ok   {result.where}: {result.name}")
        s = summarize(results)
        if s["total"] == 0:
            typer.echo(f"error: no test cases in {directory}/tests/", err=True)
            raise typer.Exit(1)
        typer.echo(f"{s['passed']} passed, {s['failed']} failed ({ruleset.version})")
        if s["failed"]:
            raise typer.Exit(1)

    @rules.command("backtest")
    def backtest(directory: Path = typer.Argument(..., help="The current rules directory"),
                 data: Path = typer.Option(..., "--data", help="Events (.parquet/.jsonl from `tollgate simulate`)"),
                 proposed: Path | None = typer.Option(None, "--proposed", help="A proposed rules directory "
                                                      "(default: the current set against itself)"),
                 model: Path | None = typer.Option(None, "--model", help="Score events with this model directory"),
                 limit: int | None = typer.Option(None, help="Only the first N events (in time order)"),
                 json_out: Path | None = typer.Option(None, "--json", help="Also write the report as JSON")) -> None:
        """Replay history through the current and proposed rules: hits, migration, fraud caught."""
        import json
        import logging

        from engine.offline.rules_tools.backtest import format_report, run_backtest

        logging.getLogger("tollgate.rules").setLevel(logging.ERROR)
        if not data.exists():
            typer.echo(f"error: {data} does not exist", err=True)
            raise typer.Exit(2)
        current = _load(directory, redis=False)
        other = _load(proposed, redis=False) if proposed is not None else current
        try:
            report = run_backtest(data, current, other, model_dir=model, limit=limit)
        except (ValueError, KeyError) as exc:
            typer.echo(f"error: {data}: {exc}", err=True)
            raise typer.Exit(1) from None
        except Exception as exc:  # noqa: BLE001 - model/detector loading: say what failed, no traceback
            if model is None:
                raise
            typer.echo(f"error: could not score with --model {model}: {type(exc).__name__}: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(format_report(report))
        if json_out is not None:
            sides = (*report.baselines, report.current, report.proposed)
            json_out.write_text(json.dumps({
                "events": report.events, "bad": report.bad, "model_source": report.model_source,
                "proposal_source": report.proposal_source, "policy_applied": report.policy_applied,
                "policy": {"current": report.current_policy, "proposed": report.proposed_policy},
                "current_version": report.current_version, "proposed_version": report.proposed_version,
                "hits": {"current": dict(report.current.hits), "proposed": dict(report.proposed.hits)},
                "migration": {f"{a}->{b}": n for (a, b), n in report.migration.items()},
                "verdicts": {s.name: dict(s.verdicts) for s in sides},
                "fraud_caught": {s.name: s.bad_not_passed for s in sides},
                "good_hurt": {s.name: s.good_not_passed for s in sides},
            }, indent=2))

    app.add_typer(rules, name="rules")
