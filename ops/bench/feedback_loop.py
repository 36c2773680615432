"""Does learning from outcomes reach the verdicts? Three fine-tune cycles on a simulated
stream, for several fine-tune objectives side by side.

    eval "$(ops/stack up)"   # or any Redis: TOLLGATE_REDIS_URL
    OMP_NUM_THREADS=1 python ops/bench/feedback_loop.py [--seed 11] [--variants seed,default]

The world: 1,200 cards over 16 days (~37,000 events), outcomes about 3 days late
(``--delay-days``), good payments confirmed at ``--confirm-rate``. A deliberately weak
first model (one epoch on days 0-5; ``--derived-inputs``: with the derived inputs trainers
turn on by default, at the same size; ``--tree-blend 0.5``: with trees blended in, as
trainers do by default) serves from day 5; cycles run at days 10, 12 and 14
through the real ``FineTuneScheduler`` (Redis lock and state, registry, fine-tune, gate
on final verdicts), over the real stores, written in event time by
``feedback.learn.rehearse``. Each variant gets its own registry, stores and Redis prefix, and
the same world.

Printed per cycle, before (serving) and after (candidate):

* **held-out**: the gate's own held-out outcomes, final verdicts — recall of bad
  outcomes, good->stopped share (review or reject), AP of the risk score;
* **future**: model + policy verdicts on *every* event of the next two days against
  ground truth (reported or not), the yardstick no outcome stream can bend.

Variants: ``seed`` is the objective the loop shipped with (``FineTuneConfig.seed_loop``),
``default`` today's ``FineTuneConfig()``; any other is ``name={json of FineTuneConfig
fields}``. Settings were chosen on ``--seed 3``; report figures from another seed.
The held-out set is the settings' default: analysts' reviews (``review_queue``), never
trained on; ``--untrusted`` opts in to the old hash share of event ids instead (nothing
is promoted on it otherwise), ``--trusted a,b`` names other sources.
``--flip SHARE`` poisons that share of untrusted labels in every cycle (the drill).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

DAY = 86_400_000


def parse_variants(text: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        name, _, body = part.partition("=")
        out[name] = json.loads(body) if body else {}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=11, help="world seed (3 is the development world)")
    ap.add_argument("--customers", type=int, default=1200)
    ap.add_argument("--terminals", type=int, default=2000)
    ap.add_argument("--days", type=int, default=16)
    ap.add_argument("--delay-days", type=float, default=3.0, help="mean delay of fraud outcomes")
    ap.add_argument("--confirm-rate", type=float, default=0.1, help="share of good payments confirmed")
    ap.add_argument("--initial-days", type=int, default=5)
    ap.add_argument("--cycles", default="10,12,14", help="event-time days of the cycles")
    ap.add_argument("--variants", default="seed;default",
                    help="';'-separated: seed, default, or name={FineTuneConfig fields as JSON}")
    ap.add_argument("--trusted", default="", help="comma-separated trusted sources (default: settings')")
    ap.add_argument("--untrusted", action="store_true", help="hash-share held-out set, opted into explicitly")
    ap.add_argument("--flip", type=float, default=0.0, help="share of untrusted labels to flip (drill)")
    ap.add_argument("--derived-inputs", action="store_true",
                    help="the first model with the derived inputs trainers turn on by default (ModelConfig.default_for)")
    ap.add_argument("--tree-blend", type=float, default=0.0,
                    help="the first model with trees blended in at this weight (TrainConfig.tree_blend; "
                         "trainers' default 0.5); 0: the network alone")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--redis-url", default=os.environ.get("TOLLGATE_REDIS_URL", "redis://127.0.0.1:6379/0"))
    args = ap.parse_args(argv)

    import redis
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    from engine.model.registry import ModelRegistry
    from engine.offline.simulate.simulator import SimConfig
    from engine.settings import PathSettings, RedisSettings, Settings
    from engine.stages.encode import FieldIsolatedEncoder
    from feedback.learn.finetune import FineTuneConfig
    from feedback.learn.rehearse import (
        LoopRehearsal,
        build_world,
        future_metrics,
        train_initial,
    )
    from feedback.learn.scheduler import FineTuneScheduler, SchedulerConfig
    from feedback.trust import flip_labels

    t0 = time.perf_counter()
    sim = SimConfig(customers=args.customers, terminals=args.terminals, days=args.days, seed=args.seed,
                    legit_confirm_rate=args.confirm_rate, outcome_delay_mean_days=args.delay_days,
                    outcome_delay_min_days=min(1.0, args.delay_days), drain_outcomes=False)
    world = build_world(sim)
    print(f"world: {len(world.events)} events, {int(world.fraud.sum())} fraud, {len(world.outcomes)} outcomes "
          f"arriving in-window ({time.perf_counter() - t0:.0f} s)", flush=True)
    encoder = FieldIsolatedEncoder()
    client = redis.Redis.from_url(args.redis_url)
    cycles = [int(d) for d in args.cycles.split(",")]
    trusted = tuple(s for s in args.trusted.split(",") if s)
    results: dict[str, list[dict]] = {}
    root = Path(tempfile.mkdtemp(prefix="feedback-loop-"))
    initial_dir = None
    for name, fields in parse_variants(args.variants).items():
        ft = FineTuneConfig.seed_loop() if name == "seed" else FineTuneConfig(**fields)
        base = root / name
        settings = Settings(
            paths=PathSettings(state_dir=base, models_dir=base / "models", reports_dir=base / "reports",
                               examples_dir=base / "examples"),
            redis=RedisSettings(url=args.redis_url, key_prefix=f"fbloop-{uuid.uuid4().hex[:8]}"),
        ).model_copy(deep=True)
        if trusted or args.untrusted:
            trust = ({"trusted_sources": (), "allow_untrusted_heldout": True} if args.untrusted
                     else {"trusted_sources": trusted})
            settings = settings.model_copy(update={"feedback": settings.feedback.model_copy(update={
                "trust": settings.feedback.trust.model_copy(update=trust)})})
        registry = ModelRegistry(settings, client)
        if initial_dir is None:
            train_initial(world, world.start_ms + args.initial_days * DAY, registry, encoder,
                          derived=args.derived_inputs, tree_blend=args.tree_blend)
            initial_dir = registry.path_of(registry.serving_version())
        else:
            registry.register(initial_dir, version="v0-initial", now_ms=world.start_ms)
            registry.promote("v0-initial", who="bench", why="same initial model", now_ms=world.start_ms)
        sched = FineTuneScheduler(settings, client, registry=registry, encoder=encoder, progress=False,
                                  config=SchedulerConfig.from_settings(settings, finetune=ft,
                                                                       gate=settings.feedback.gate))
        loop = LoopRehearsal(world, sched, serve_from_ms=world.start_ms + args.initial_days * DAY,
                             rules_version=_rules_version(settings))
        poison = flip_labels(args.flip, settings.feedback.trust.trusted_sources) if args.flip else None
        rows = []
        for day in cycles:
            now = world.start_ms + day * DAY
            loop.advance_to(now)
            serving_dir = registry.path_of(registry.serving_version())
            res = sched.run_cycle(now, poison=poison)
            cand_dir = (registry.path_of(res.candidate) if res.candidate else
                        (Path(res.report_dir) / "candidate" if res.report_dir else None))
            policy = sched._policy()
            fut_before = future_metrics(world, serving_dir, encoder, policy, now, now + 2 * DAY)
            fut_after = (future_metrics(world, cand_dir, encoder, policy, now, now + 2 * DAY)
                         if cand_dir is not None and cand_dir.is_dir() else None)
            sel = _selection(res.report_dir)
            row = {"variant": name, "day": day, "status": res.status, "reasons": res.reasons, "selection": sel,
                   "n_train": res.n_train, "n_heldout": res.n_heldout,
                   "heldout_before": res.serving_metrics, "heldout_after": res.candidate_metrics,
                   "future_before": fut_before, "future_after": fut_after}
            rows.append(row)
            _print_row(row)
        results[name] = rows
    print(f"done in {time.perf_counter() - t0:.0f} s; reports under {root}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"args": vars(args) | {"json_out": str(args.json_out)},
                                             "results": results}, indent=2, default=str))
    return 0


def _selection(report_dir: str | None) -> dict | None:
    """The fine-tune's checkpoint selection, from the cycle's gate report."""
    if not report_dir:
        return None
    path = Path(report_dir) / "gate_report.json"
    if not path.is_file():
        return None
    ft = json.loads(path.read_text()).get("fine_tune") or {}
    return {"selected_step": ft.get("selected_step"), "steps": ft.get("steps"), "judged": ft.get("selection")}


def _rules_version(settings) -> str:
    from engine.assemble import load_guard

    return str(load_guard(settings).version)


def _fmt(m: dict | None) -> str:
    if not m:
        return "-"
    return f"recall_bad {m['recall_bad']:.3f}  good->stop {1 - m['recall_good']:.4f}  AP {m['ap']:.3f}"


def _print_row(row: dict) -> None:
    print(f"[{row['variant']}] day {row['day']}: {row['status']}  (train {row['n_train']}, "
          f"held-out {row['n_heldout']})", flush=True)
    if row["heldout_before"]:
        print(f"    held-out  before: {_fmt(row['heldout_before'])}")
        print(f"    held-out  after:  {_fmt(row['heldout_after'])}")
    print(f"    future    before: {_fmt(row['future_before'])}")
    print(f"    future    after:  {_fmt(row['future_after'])}")
    if row.get("selection") and row["selection"]["judged"]:
        sel = row["selection"]
        print(f"    checkpoint: step {sel['selected_step']} of {sel['steps']}; judged (step, recall, g->stop): "
              + " ".join(f"({s},{r:.2f},{g:.3f})" for s, r, g in sel["judged"]))
    for r in row["reasons"]:
        print(f"    reason: {r}")
    sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
