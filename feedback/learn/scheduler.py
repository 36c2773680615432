"""The four-hourly cycle: fine-tune a candidate from the serving model, gate it, and
promote it only if every bar holds.

One cycle, at (event-time or wall-clock) ``now``:

1. take a Redis lock so two schedulers never fine-tune at once;
2. read the labelled examples that arrived since the last promoted cycle (at most
   ``max_train_window``), minus the held-out events (the trusted sources' outcomes,
   ``feedback.trust``; without trusted sources, a fixed hash share of event ids, and
   then nothing is promoted unless settings opt in) — never trained on, in any cycle;
   if their bad rate, or one source's, moved beyond the label-shift bound against the
   recent past (the ``shift_past_days`` before the window), stop here ("halted", with why);
3. fine-tune a candidate from the serving model (``feedback.learn.finetune``), each row
   weighted by the per-customer and per-source influence caps;
4. score serving and candidate on the held-out outcomes of the last
   ``heldout_window`` and on a replay of the last 24 h of decisions;
5. run the gate on final verdicts (``feedback.learn.final_verdicts``), write the report (JSON + PNGs) under ``reports_dir/cycle-<stamp>/``;
6. promote through the registry (pointer + pub/sub + audit) if it passed; otherwise
   keep the candidate's weights in the report directory for the post-mortem.

``now`` is a parameter, so tests and backtests drive the cycle with an accelerated
event-time clock; ``run_forever`` uses the wall clock. Both go through ``tick``, which
runs a cycle only when ``interval_ms`` has passed since the last one. The gate's bars
come from settings (``TOLLGATE_FEEDBACK__GATE__*``, ``engine.settings.GateSettings``).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.model import load_model_dir, save_model_dir
from engine.model.inputs import take_rows
from engine.model.registry import ModelRegistry
from engine.settings import Settings
from engine.stages.decide import Policy
from engine.stages.detect import InjectionDetector
from engine.stages.encode import FieldIsolatedEncoder
from feedback.learn import gate as gate_mod
from feedback.learn.dataset import EncodedRows, encode_rows, held_out, score
from feedback.learn.final_verdicts import FinalReplay
from feedback.learn.finetune import FineTuneConfig, fine_tune, match_risk_level
from feedback.store import DecisionStore, LabelStore, complete_from_decisions
from feedback.trust import influence_weights, label_shift, recent_past, split_trusted

log = logging.getLogger(__name__)
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


@dataclass(slots=True, frozen=True)
class SchedulerConfig:
    interval_ms: int = 4 * HOUR_MS
    heldout_share: float = 0.2
    heldout_window_ms: int = 7 * DAY_MS
    replay_window_ms: int = DAY_MS
    max_train_window_ms: int = 7 * DAY_MS
    min_train_examples: int = 50
    min_train_bad: int = 5
    #: Most recent decisions the checkpoint selection judges the stop share on.
    select_stream_rows: int = 4000
    finetune: FineTuneConfig = field(default_factory=FineTuneConfig)
    gate: gate_mod.GateConfig = field(default_factory=gate_mod.GateConfig)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> SchedulerConfig:
        values: dict[str, Any] = {"interval_ms": int(settings.feedback.fine_tune_interval_hours * HOUR_MS),
                                  "gate": settings.feedback.gate}
        values.update(overrides)
        return cls(**values)


@dataclass(slots=True)
class CycleResult:
    status: str  # "promoted" | "refused" | "skipped" | "halted" (label shift) | "would-promote" (dry run)
    now_ms: int
    serving: str | None
    candidate: str | None = None
    reasons: list[str] = field(default_factory=list)
    report_dir: str | None = None
    n_train: int = 0
    n_heldout: int = 0
    n_replay: int = 0
    serving_metrics: dict[str, float] = field(default_factory=dict)
    candidate_metrics: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FineTuneScheduler:
    def __init__(self, settings: Settings, redis: Any, *, config: SchedulerConfig | None = None,
                 registry: ModelRegistry | None = None, encoder: Any | None = None,
                 labels: LabelStore | None = None, decisions: DecisionStore | None = None,
                 progress: bool = True):
        self.settings = settings
        self.redis = redis
        self.config = config or SchedulerConfig.from_settings(settings)
        self.registry = registry or ModelRegistry(settings, redis)
        self._encoder = encoder
        examples = settings.paths.examples_dir
        self.labels = labels or LabelStore(examples / "labels")
        self.decisions = decisions or DecisionStore(examples / "decisions")
        self.state_key = f"{settings.redis.key_prefix}:fb:finetune:state"
        self.lock_key = f"{settings.redis.key_prefix}:fb:finetune:lock"
        self.progress = progress

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            self._encoder = FieldIsolatedEncoder()
        return self._encoder

    # ---- timing -----------------------------------------------------------------------

    def state(self) -> dict[str, int]:
        raw = self.redis.hgetall(self.state_key) or {}
        return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items()}

    def due(self, now_ms: int) -> bool:
        last = self.state().get("last_run_ms")
        return last is None or now_ms - last >= self.config.interval_ms

    def tick(self, now_ms: int) -> CycleResult | None:
        """One beat of the timer: run a cycle if one is due at ``now_ms``, else None.

        ``run_forever`` calls this every ``poll_s`` with the wall clock; an
        accelerated event-time run calls it with its own clock."""
        if not self.due(now_ms):
            return None
        result = self.run_cycle(now_ms)
        log.info("fine-tune cycle: %s %s", result.status, "; ".join(result.reasons))
        return result

    def run_forever(self, clock: Callable[[], int] = lambda: int(time.time() * 1000),
                    poll_s: float = 30.0, stop: Callable[[], bool] = lambda: False,
                    retry_after_s: float = 900.0, sleep: Callable[[float], None] = time.sleep) -> None:
        """Tick until ``stop()``. A cycle that raises (Redis away, a model that does not
        load, a full disk) is logged and retried after ``retry_after_s``, not every poll:
        the scheduler outlives a bad cycle, and the serving model is untouched by one
        (promotion is the cycle's last step)."""
        while not stop():
            try:
                self.tick(clock())
            except Exception:  # noqa: BLE001 — the loop must survive any one cycle
                log.exception("fine-tune cycle failed; retrying in %.0f s", retry_after_s)
                sleep(retry_after_s)
                continue
            sleep(poll_s)

    # ---- one cycle --------------------------------------------------------------------

    def run_cycle(self, now_ms: int | None = None, *, who: str = "feedback-scheduler",
                  train_since_ms: int | None = None,
                  corrupt: Callable[[torch.Tensor], torch.Tensor] | None = None,
                  poison: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
                  dry_run: bool = False) -> CycleResult:
        """Fine-tune, gate and maybe promote.

        ``train_since_ms`` overrides the start of the training window (default: the last
        promoted cycle, at most ``max_train_window_ms`` back), e.g. to retrain on a week
        after an incident. ``corrupt`` (tests only) mangles the training labels after
        every check, to prove the gate stops a bad candidate; ``poison`` mangles the
        stored labels as a poisoned ``tx.outcomes`` would (``feedback.trust.flip_labels``,
        the drill), before the label-shift alarm. ``dry_run`` never promotes."""
        now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        if not self.redis.set(self.lock_key, str(now_ms), nx=True, px=6 * HOUR_MS):
            return CycleResult("skipped", now_ms, self.registry.serving_version(),
                               reasons=["another fine-tune holds the lock"])
        try:
            result = self._cycle(now_ms, who, corrupt, train_since_ms, poison, dry_run)
            if not dry_run:
                self.redis.hset(self.state_key, mapping={"last_run_ms": now_ms})
            return result
        finally:
            self.redis.delete(self.lock_key)

    def _read_labels(self, since_ms: int, until_ms: int, poison: Callable | None = None) -> pd.DataFrame:
        """Labels that arrived in ``[since_ms, until_ms)``, each with its decision: one
        written without it (the verdict or the snapshot had left Redis) is joined to the
        decision store here; one the store does not hold either is left out, counted."""
        rows, unmatched = complete_from_decisions(self.labels.read(since_ms=since_ms, until_ms=until_ms),
                                                  self.decisions)
        if unmatched:
            log.warning("%d labels in [%d, %d) have no decision in the decision store; left out",
                        unmatched, since_ms, until_ms)
        return poison(rows) if poison is not None and len(rows) else rows

    def _heldout_mask(self, rows: pd.DataFrame) -> np.ndarray:
        """Trusted sources' rows when configured (``feedback.trust``), else a hash share."""
        trusted = self.settings.feedback.trust.trusted_sources
        if not len(rows):
            return np.zeros(0, dtype=bool)
        if trusted:
            return split_trusted(rows, trusted)[1]
        return held_out(list(rows["event_id"]), self.config.heldout_share)

    def _untrusted_refusal(self) -> str | None:
        """Why nothing may be promoted: no trusted source, and no explicit opt-in to the
        hash share. A bar, however strict, measured on outcomes the poisoner writes is
        the poisoner's bar: a 30 % flip lands in the yardstick too (docs/feedback.md)."""
        trust = self.settings.feedback.trust
        if trust.trusted_sources or trust.allow_untrusted_heldout:
            return None
        return ("held-out set untrusted: no trusted source configured "
                "(TOLLGATE_FEEDBACK__TRUST__TRUSTED_SOURCES; or opt in with ALLOW_UNTRUSTED_HELDOUT)")

    def _cycle(self, now_ms: int, who: str, corrupt: Callable | None, train_since_ms: int | None,
               poison: Callable | None = None, dry_run: bool = False) -> CycleResult:
        cfg = self.config
        trust = self.settings.feedback.trust
        serving = self.registry.serving_version()
        if serving is None:
            return CycleResult("skipped", now_ms, None, reasons=["no serving model to fine-tune from"])
        loaded = load_model_dir(self.registry.path_of(serving))
        trained_until = self.state().get("trained_until_ms", 0)
        since = max(trained_until, now_ms - cfg.max_train_window_ms) if train_since_ms is None else train_since_ms

        new = self._read_labels(since, now_ms, poison)
        new = new[~self._heldout_mask(new)] if len(new) else new
        past = recent_past(self._read_labels, since, trust)
        past = past[~self._heldout_mask(past)] if len(past) else past
        alarms = label_shift(new, past, trust)
        if alarms:
            log.warning("fine-tune halted: %s", "; ".join(map(str, alarms)))
            return CycleResult("halted", now_ms, serving, n_train=len(new),
                               reasons=[f"{a}: the cycle does not train on it" for a in alarms])
        train = encode_rows(new, self.encoder)
        n_bad = int(train.rows["is_bad"].sum()) if len(train.rows) else 0
        result = CycleResult("skipped", now_ms, serving, n_train=len(train.rows))
        if len(train.rows) < cfg.min_train_examples or n_bad < cfg.min_train_bad:
            result.reasons.append(f"{len(train.rows)} new trainable examples ({n_bad} bad); need "
                                  f"{cfg.min_train_examples} ({cfg.min_train_bad} bad)")
            return result

        recent = self._read_labels(now_ms - cfg.heldout_window_ms, now_ms, poison)
        recent = recent[self._heldout_mask(recent)] if len(recent) else recent
        held = encode_rows(recent, self.encoder)
        replay = encode_rows(self.decisions.read(since_ms=now_ms - cfg.replay_window_ms, until_ms=now_ms),
                             self.encoder)
        policy = self._policy()
        card = loaded.card
        fit, select = self._selection(train, card, policy, now_ms)
        influence = torch.tensor(influence_weights(fit.rows, trust), dtype=torch.float32)

        is_bad = torch.tensor(fit.rows["is_bad"].to_numpy(), dtype=torch.float32)
        if corrupt is not None:
            is_bad = corrupt(is_bad)
        stream = self._stream_sample(now_ms) if cfg.finetune.match_risk_level else None
        stream_risk = None if stream is None else float(np.mean(score(loaded.model, card, stream).risk))
        offset = 0.0 if stream_risk is None else _log_odds_gap(float((influence * is_bad).sum() / influence.sum()),
                                                              stream_risk)
        candidate, ft_report = fine_tune(loaded.model, fit.batch, is_bad, cfg.finetune,
                                         progress=self.progress, example_weights=influence, select=select,
                                         risk_offset=offset)
        risk_shift = (None if stream_risk is None else
                      match_risk_level(candidate, stream, stream_risk, card.temperature.risk))

        y_held = held.rows["is_bad"].to_numpy(dtype=int) if len(held.rows) else np.zeros(0, dtype=int)
        s_held, c_held = (score(m, card, held.batch, policy) for m in (loaded.model, candidate))
        s_rep, c_rep = (score(m, card, replay.batch, policy) for m in (loaded.model, candidate))
        final = self._final_pair(held.rows, replay.rows, s_held, c_held, s_rep, c_rep)
        verdict = gate_mod.evaluate(s_held, c_held, y_held, s_rep, c_rep, cfg.gate, final=final)

        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))
        report_dir = Path(self.settings.paths.reports_dir) / f"cycle-{stamp}"
        extra = {"now_ms": now_ms, "serving": serving, "fine_tune": ft_report.to_dict(),
                 "train_window_ms": [since, now_ms], "risk_level_shift": risk_shift, "risk_offset": offset,
                 "heldout": {"trusted": bool(trust.trusted_sources), "sources": list(trust.trusted_sources),
                             "by_source": recent["outcome_source"].value_counts().to_dict() if len(recent) else {}},
                 "influence": {"min_weight": float(influence.min()), "total": float(influence.sum()),
                               "rows": int(len(influence))},
                 "dry_run": dry_run, "dropped_rows": {
                     "train": train.dropped, "heldout": held.dropped, "replay": replay.dropped}}
        gate_mod.write_report(verdict, report_dir, serving_held=s_held, candidate_held=c_held,
                              is_bad=y_held, extra=extra)
        _plot_losses(ft_report.losses, report_dir / "fine_tune_loss.png")
        refusals = [r for r in (self._untrusted_refusal(), _nothing_learned(ft_report)) if r]
        passed = verdict.passed and not refusals
        result = replace(result, report_dir=str(report_dir), n_heldout=verdict.n_heldout,
                         n_replay=verdict.n_replay, serving_metrics=verdict.serving_metrics,
                         candidate_metrics=verdict.candidate_metrics, reasons=list(verdict.reasons) + refusals)
        times = train.rows["event_time_ms"]
        new_card = card.model_copy(update={
            "version": f"{serving}-ft", "parent_version": serving, "created_at_ms": now_ms,
            "data_window": (int(times.min()), int(times.max()) + 1),
            "metrics": {"gate": verdict.candidate_metrics, "gate_serving": verdict.serving_metrics},
            "training": {"kind": "outcome_preference_finetune", "examples": ft_report.examples,
                         "bad_examples": ft_report.bad_examples, "steps": ft_report.steps,
                         "config": ft_report.config, "report_dir": str(report_dir)},
        })
        if not passed or dry_run:
            save_model_dir(candidate, new_card, report_dir / "candidate")
            result.status = "refused" if not passed else "would-promote"
            (report_dir / "cycle.json").write_text(json.dumps(result.to_dict(), indent=2, default=str))
            return result
        version = self.registry.register(candidate, new_card, now_ms=now_ms)
        ap_s, ap_c = verdict.serving_metrics["ap"], verdict.candidate_metrics["ap"]
        self.registry.promote(version, who=who, now_ms=now_ms, why=(
            f"gate passed ({report_dir.name}): AP {ap_s:.4f}->{ap_c:.4f}, "
            f"{verdict.changed_share:.1%} of 24 h verdicts change"))
        self.redis.hset(self.state_key, mapping={"trained_until_ms": now_ms})
        result.status, result.candidate = "promoted", version
        (report_dir / "cycle.json").write_text(json.dumps(result.to_dict(), indent=2, default=str))
        return result


    def _selection(self, train: Any, card: Any, policy: Any, now_ms: int) -> tuple[Any, Callable | None]:
        """What picks the fine-tune's checkpoint (``FineTuneConfig.select_share``): a slice
        of the cycle's training outcomes (by a hash of event ids), not fitted, for recall
        of bad; and the stream's own decisions of the day *before* the gate's replay
        window, for the stop share (~99 % of a stream is good customers, and thousands of
        decisions resolve a 1 % rise that a few dozen confirmed goods cannot). Never the
        gate's held-out outcomes nor its replay. Too few bad in the slice: no selection."""
        share = self.config.finetune.select_share
        rows = train.rows
        if share <= 0 or not len(rows):
            return train, None
        mask = held_out([f"select:{e}" for e in rows["event_id"]], share)
        y = rows["is_bad"].to_numpy(dtype=int)
        if int(y[mask].sum()) < 5 or (~mask).sum() < self.config.min_train_examples:
            return train, None
        stream_batch = self._stream_sample(now_ms)
        if stream_batch is None:
            return train, None
        keep = torch.from_numpy(np.flatnonzero(~mask))
        fit = EncodedRows(rows[~mask].reset_index(drop=True), take_rows(train.batch, keep), train.dropped)
        bad_batch = take_rows(train.batch, torch.from_numpy(np.flatnonzero(mask & (y == 1))))

        def select(model: Any) -> tuple[float, float]:
            recall = float(np.mean(score(model, card, bad_batch, policy).verdicts != 0))
            return recall, float(np.mean(score(model, card, stream_batch, policy).verdicts != 0))

        return fit, select

    def _stream_sample(self, now_ms: int) -> Any | None:
        """The stream's own decisions of the day before the gate's replay window (not the
        replay itself), encoded: what selection and the risk level are judged on."""
        window = self.config.replay_window_ms
        stream = self.decisions.read(since_ms=now_ms - 2 * window, until_ms=now_ms - window)
        if len(stream) < 200:
            return None
        return encode_rows(stream.tail(self.config.select_stream_rows), self.encoder).batch

    def _final_pair(self, held_rows: Any, replay_rows: Any, s_held: Any, c_held: Any, s_rep: Any,
                    c_rep: Any) -> gate_mod.FinalPair:
        """Final verdicts (detector → policy → hard rules, each decision with its rule
        set) of both models on the held-out and replay rows."""
        replay = self._final_replay()
        held_in, rep_in = replay.prepare(held_rows), replay.prepare(replay_rows)
        parts = [replay.verdicts(held_in, s_held), replay.verdicts(held_in, c_held),
                 replay.verdicts(rep_in, s_rep), replay.verdicts(rep_in, c_rep)]
        return gate_mod.FinalPair(*(p.verdicts for p in parts),
                                  missing_rules=parts[0].missing_rules + parts[2].missing_rules)

    def _final_replay(self) -> FinalReplay:
        base = Policy.from_settings(self.settings.policy)
        try:
            # local: engine.assemble (model, rules, detector) loads only when a cycle judges final verdicts
            from engine.assemble import load_guard

            guard = load_guard(self.settings)
        except Exception as exc:  # noqa: BLE001 - no rules directory: detector and policy only
            log.warning("final-verdict replay without hard rules: %s", exc)
            guard = None
        # The stream's detector mode, so the gate replays the verdicts the stream would give.
        return FinalReplay(base, {}, guard,
                           InjectionDetector.default(sentence_encoder=self.settings.detector.sentence_encoder,
                                                     encoder_runtime=self.settings.detector.encoder_runtime))

    def _policy(self) -> Any:
        """The engine's policy: settings, overridden by the rule set's ``policy.yaml`` —
        the gate must judge verdicts as the stream would produce them."""
        base = Policy.from_settings(self.settings.policy)
        try:
            # local: engine.assemble (model, rules, detector) loads only when a cycle judges final verdicts
            from engine.assemble import load_guard

            return base.with_overrides(dict(getattr(load_guard(self.settings), "policy", None) or {}))
        except Exception as exc:  # noqa: BLE001 - no rules directory: settings alone
            log.warning("gate uses the settings' policy only: %s", exc)
            return base


def _log_odds_gap(p_labels: float, p_stream: float) -> float:
    """logit(p_labels) - logit(p_stream), clipped away from 0 and 1."""
    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))

    return logit(p_labels) - logit(p_stream)


def _nothing_learned(report: Any) -> str | None:
    """A candidate whose checkpoint selection kept step 0 is the serving model (its risk
    level re-matched): promoting it would record a cycle that learned nothing. Poisoned
    labels end here too: flipped outcomes in the selection slice leave no step that
    stops more of them (``ops/bench/feedback_loop.py --flip 0.3``)."""
    if report.selected_step != 0:
        return None
    return ("the fine-tune kept no step: none stopped more bad outcomes of its selection slice "
            "without raising the stream's stop share beyond the allowance")


def _plot_losses(losses: list[float], path: Path) -> None:
    # local: matplotlib loads only when a picture is drawn
    import matplotlib

    matplotlib.use("Agg")
    # local: matplotlib loads only when a picture is drawn
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.0), dpi=110)
    ax.plot(losses)
    ax.set_xlabel("step")
    ax.set_ylabel("preference + risk loss")
    ax.set_title("fine-tune")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
