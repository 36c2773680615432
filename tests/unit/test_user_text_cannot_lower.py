"""User text can never lower a verdict or a risk score (issue 22), through the Python
API, the batch CLI and the HTTP service; the stream is ``tests/integration/test_user_text_stream.py``.

Simulated events x many user texts (``user_text_cases.USER_TEXTS``: benign, persuasive,
empty, whitespace, emoji, other scripts, injections, very long), each as memo (with
and without the event's descriptor) and as descriptor. For each event and text the
verdict must be at least as severe, and the risk score at least as high, as for the
same event with any subset of that text (none at all included), on the same context.

Real stages throughout: the memory feature store, the encoder, a seeded model whose
verdicts vary with the input (``make_model_dir``: pass, review and reject all occur),
the injection detector and the rules in ``rules/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.records import Verdict
from tests.integration.test_serve import make_model_dir
from tests.support.user_text_cases import lowered_count, variant_events, variants, violations

REPO = Path(__file__).resolve().parents[2]
N_EVENTS = 40


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from engine.offline.simulate.frames import events_from_frame
    from engine.offline.simulate.simulator import SimConfig, Simulator
    from engine.settings import PathSettings, Settings

    root = tmp_path_factory.mktemp("usertext")
    model_dir = make_model_dir(root / "models", "t-usertext")
    day = next(iter(Simulator(SimConfig(customers=60, terminals=120, days=1, seed=22)).days()))
    events = events_from_frame(day.events)[:N_EVENTS]
    settings = Settings(paths=PathSettings(models_dir=root / "models", rules_dir=REPO / "rules"))
    plan = variants()
    return settings, model_dir, events, plan, variant_events(events, plan), root


def _check(verdicts: list[list[Verdict]], events, plan) -> None:
    bad = violations(events, plan, verdicts)
    assert not bad, f"{len(bad)} violations, e.g. " + "; ".join(bad[:5])
    # Not vacuous: the model's scores do depend on the text, and without the twins some
    # texts would have lowered a verdict or a risk score.
    assert lowered_count(verdicts) > 0
    assert len({v.verdict for vs in verdicts for v in vs}) >= 2


def test_python_api(setup):
    from engine.interfaces.api import load_model

    settings, model_dir, events, plan, batches, _ = setup
    model = load_model(model_dir, rules=REPO / "rules", settings=settings)
    verdicts = [list(model.decide(batch, batch_size=64)) for batch in batches]
    _check(verdicts, events, plan)


def test_http(setup):
    from fastapi.testclient import TestClient

    from engine.assemble import build_pipeline
    from engine.interfaces.http import create_app

    settings, model_dir, events, plan, batches, _ = setup
    app = create_app(build_pipeline(settings, model=model_dir, rules=REPO / "rules"), settings, warmup=False)
    verdicts = []
    with TestClient(app) as client:
        for batch in batches:
            r = client.post("/v1/decide", json=[e.to_dict() for e in batch])
            assert r.status_code == 200, r.text[:500]
            verdicts.append([Verdict.from_dict(v) for v in r.json()])
    _check(verdicts, events, plan)


def test_batch_cli(setup, monkeypatch):
    """``tollgate score`` through the CLI's own parser, in this process (unit tests start none)."""
    from typer.testing import CliRunner

    from engine.interfaces import cli
    from engine.offline.simulate.frames import frame_from_events

    settings, model_dir, events, plan, batches, root = setup
    src, out = root / "variants.parquet", root / "verdicts.jsonl"
    frame_from_events([e for batch in batches for e in batch]).to_parquet(src)
    for name in [k for k in os.environ if k.startswith("TOLLGATE_")]:  # the shell's stack, not this test's
        monkeypatch.delenv(name)
    cli._register_all()
    result = CliRunner().invoke(cli.app, ["score", str(src), "-o", str(out), "--model", str(model_dir),
                                          "--rules", str(REPO / "rules"), "--quiet", "--batch-size", "64"])
    assert result.exit_code == 0, f"{result.output[-3000:]}\n{result.exception!r}"
    flat = [Verdict.from_dict(json.loads(line)) for line in out.read_text().splitlines()]
    assert len(flat) == len(plan) * len(events)
    verdicts = [flat[k * len(events):(k + 1) * len(events)] for k in range(len(plan))]
    _check(verdicts, events, plan)
