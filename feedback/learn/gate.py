"""The promotion gate: a candidate is promoted only if every bar holds.

Two checks, both against the serving model, both in event time:

1. **Held-out outcomes** (recent labelled decisions the fine-tune did not see):
   per-class recall (bad outcomes stopped — review or reject; good outcomes passed),
   minority-class F1 (the bad class, "stopped" as positive), ECE of the risk score and
   average precision of the risk score. None may be worse than serving by more than
   its configured margin.
2. **Replay of the last 24 h of decisions** through old and new: the 3×3
   label-migration matrix (rows: serving's verdict, columns: candidate's) and the share
   of verdicts that change. Each off-diagonal cell and the total share must stay within
   bounds — a candidate that is better on paper but would flip a tenth of today's
   traffic is a production incident, not an improvement.
   Two matrices are reported: **model + policy** (each model and the policy on the
   decisions' recorded inputs) and, given ``FinalPair`` verdicts from
   ``feedback.learn.final_verdicts``, the **final verdict** (detector, policy and hard rules,
   each decision with its own rule set) — what downstream consumers act on. The
   recall, F1 and migration bars apply to the final one when it is given and
   ``judge`` is ``"final"`` (the default); ``judge="model"`` judges the model's own.
   Rule changes have their own replay: ``tollgate rules backtest``.

The decision and every figure go to ``gate_report.json``, with PNGs of the migration
matrix and the reliability diagrams beside it.

>>> import numpy as np
>>> migration_matrix(np.array([0, 0, 2, 1]), np.array([0, 2, 2, 1])).tolist()
[[1, 0, 1], [0, 1, 0], [0, 0, 1]]
>>> round(expected_calibration_error(np.array([.1, .9]), np.array([0, 1])), 3)
0.1
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score

from engine.records import DECISIONS
from engine.settings import GateSettings

PASS, REVIEW, REJECT = 0, 1, 2
LABELS = tuple(d.value for d in DECISIONS)


#: The gate's margins and bounds are settings (``TOLLGATE_FEEDBACK__GATE__*``, defaults
#: and meaning in ``engine.settings.GateSettings``), so ops tune them without a release.
GateConfig = GateSettings


@dataclass(slots=True, frozen=True)
class Scores:
    """One model's calibrated output on a set of rows."""

    probs: np.ndarray  # [N, 3] in DECISIONS order
    risk: np.ndarray  # [N] P(bad outcome)
    verdicts: np.ndarray  # [N] int index into DECISIONS (after policy)


@dataclass(slots=True, frozen=True)
class FinalPair:
    """Final verdicts (after detector and hard rules) of serving and candidate, on the
    held-out rows and on the replay rows, in the same row order as their ``Scores``."""

    serving_held: np.ndarray
    candidate_held: np.ndarray
    serving_replay: np.ndarray
    candidate_replay: np.ndarray
    missing_rules: int = 0  # rows judged by the current rules (their version unknown)


@dataclass(slots=True, frozen=True)
class Check:
    name: str
    serving: float | None
    candidate: float
    limit: float
    passed: bool
    detail: str = ""


@dataclass(slots=True)
class GateResult:
    passed: bool
    checks: list[Check]
    serving_metrics: dict[str, float]
    candidate_metrics: dict[str, float]
    migration: list[list[int]]
    changed_share: float
    reasons: list[str]
    n_heldout: int
    n_replay: int
    meta: dict[str, Any] = field(default_factory=dict)
    judged: str = "model"  # which verdicts the bars judged: "final" or "model"
    migration_model: list[list[int]] = field(default_factory=list)
    migration_final: list[list[int]] | None = None
    final_serving_metrics: dict[str, float] | None = None
    final_candidate_metrics: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["migration_labels"] = list(LABELS)
        return d


def heldout_metrics(scores: Scores, is_bad: np.ndarray, bins: int = 10) -> dict[str, float]:
    """Recall per outcome class, bad-class F1, ECE and AP of the risk score."""
    bad = np.asarray(is_bad).astype(bool)
    stopped = scores.verdicts != PASS
    tp = float(np.sum(stopped & bad))
    fp = float(np.sum(stopped & ~bad))
    fn = float(np.sum(~stopped & bad))
    recall_bad = tp / max(1.0, tp + fn)
    precision_bad = tp / max(1.0, tp + fp)
    f1 = 0.0 if tp == 0 else 2 * precision_bad * recall_bad / (precision_bad + recall_bad)
    good = ~bad
    recall_good = float(np.sum((scores.verdicts == PASS) & good)) / max(1, int(good.sum()))
    ap = float(average_precision_score(bad, scores.risk)) if bad.any() and good.any() else float("nan")
    return {
        "recall_bad": recall_bad,
        "recall_good": recall_good,
        "f1_bad": f1,
        "ece": expected_calibration_error(scores.risk, bad, bins),
        "ap": ap,
        "review_rate": float(np.mean(scores.verdicts == REVIEW)) if len(bad) else 0.0,
        "reject_rate": float(np.mean(scores.verdicts == REJECT)) if len(bad) else 0.0,
    }


def expected_calibration_error(prob: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Equal-width-bin ECE of a binary probability (weighted |accuracy − confidence|)."""
    prob, y = np.asarray(prob, float), np.asarray(y, float)
    if len(prob) == 0:
        return 0.0
    idx = np.minimum((prob * bins).astype(int), bins - 1)
    ece = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            ece += m.mean() * abs(y[m].mean() - prob[m].mean())
    return float(ece)


def migration_matrix(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """3×3 counts: row = serving's verdict, column = candidate's."""
    m = np.zeros((3, 3), dtype=int)
    np.add.at(m, (np.asarray(old, int), np.asarray(new, int)), 1)
    return m


def _with_verdicts(scores: Scores, verdicts: np.ndarray) -> Scores:
    return Scores(scores.probs, scores.risk, np.asarray(verdicts, dtype=int))


def evaluate(serving_held: Scores, candidate_held: Scores, is_bad: np.ndarray,
             serving_replay: Scores, candidate_replay: Scores, config: GateConfig | None = None,
             final: FinalPair | None = None) -> GateResult:
    """Run both checks; ``passed`` only if every check passed. With ``final``, the
    verdict bars judge final verdicts unless ``config.judge`` is ``"model"``. ``config``:
    the default bars if None."""
    cfg = config if config is not None else GateConfig()
    model_matrix = migration_matrix(serving_replay.verdicts, candidate_replay.verdicts)
    final_metrics: tuple[dict[str, float], dict[str, float]] | None = None
    final_matrix = None
    if final is not None:
        final_metrics = (heldout_metrics(_with_verdicts(serving_held, final.serving_held), is_bad, cfg.ece_bins),
                         heldout_metrics(_with_verdicts(candidate_held, final.candidate_held), is_bad, cfg.ece_bins))
        final_matrix = migration_matrix(final.serving_replay, final.candidate_replay)
    judged = "final" if final is not None and cfg.judge == "final" else "model"
    if judged == "final":
        assert final is not None
        serving_held, candidate_held = (_with_verdicts(serving_held, final.serving_held),
                                        _with_verdicts(candidate_held, final.candidate_held))
        serving_replay, candidate_replay = (_with_verdicts(serving_replay, final.serving_replay),
                                            _with_verdicts(candidate_replay, final.candidate_replay))
    s = heldout_metrics(serving_held, is_bad, cfg.ece_bins)
    c = heldout_metrics(candidate_held, is_bad, cfg.ece_bins)
    checks: list[Check] = []
    n_bad = int(np.sum(is_bad))
    checks.append(Check("heldout_size", None, float(len(is_bad)), cfg.min_heldout,
                        len(is_bad) >= cfg.min_heldout and n_bad >= cfg.min_heldout_bad,
                        f"{len(is_bad)} held-out outcomes, {n_bad} bad (need {cfg.min_heldout}/{cfg.min_heldout_bad})"))
    for name, drop in (("recall_bad", cfg.max_recall_drop), ("recall_good", cfg.max_recall_drop),
                       ("f1_bad", cfg.max_f1_drop), ("ap", cfg.max_ap_drop)):
        ok = np.isfinite(c[name]) and (not np.isfinite(s[name]) or c[name] >= s[name] - drop)
        checks.append(Check(name, s[name], c[name], s[name] - drop, bool(ok), f"may drop at most {drop}"))
    checks.append(Check("ece", s["ece"], c["ece"], s["ece"] + cfg.max_ece_increase,
                        c["ece"] <= s["ece"] + cfg.max_ece_increase, f"may rise at most {cfg.max_ece_increase}"))

    matrix = migration_matrix(serving_replay.verdicts, candidate_replay.verdicts)
    n_replay = int(matrix.sum())
    changed = float(n_replay - np.trace(matrix)) / max(1, n_replay)
    checks.append(Check("replay_size", None, float(n_replay), cfg.min_replay, n_replay >= cfg.min_replay,
                        f"{n_replay} decisions in the replay window"))
    checks.append(Check("changed_share", None, changed, cfg.max_changed_share, changed <= cfg.max_changed_share,
                        "share of replayed verdicts that change"))
    for i, a in enumerate(LABELS):
        for j, b in enumerate(LABELS):
            if i == j:
                continue
            key = f"{a}->{b}"
            limit = float(cfg.cell_overrides.get(key, cfg.max_cell_share))
            share = float(matrix[i, j]) / max(1, n_replay)
            checks.append(Check(f"migration {key}", None, share, limit, share <= limit, f"{matrix[i, j]} verdicts"))
    reasons = [f"{ch.name}: candidate {ch.candidate:.4f} vs limit {ch.limit:.4f} ({ch.detail})"
               for ch in checks if not ch.passed]
    meta: dict[str, Any] = {"gate_settings": cfg.model_dump()}
    if final is not None:
        meta["final_missing_rules"] = final.missing_rules
    return GateResult(not reasons, checks, s, c, matrix.tolist(), changed, reasons, len(is_bad), n_replay,
                      meta=meta, judged=judged, migration_model=model_matrix.tolist(),
                      migration_final=None if final_matrix is None else final_matrix.tolist(),
                      final_serving_metrics=None if final_metrics is None else final_metrics[0],
                      final_candidate_metrics=None if final_metrics is None else final_metrics[1])


def write_report(result: GateResult, out_dir: str | Path, *, serving_held: Scores | None = None,
                 candidate_held: Scores | None = None, is_bad: np.ndarray | None = None,
                 extra: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """``gate_report.json`` + ``migration_matrix.png`` (+ ``reliability.png`` given scores)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "gate_report.json", "migration": out / "migration_matrix.png"}
    _plot_migration(np.array(result.migration), paths["migration"], f"24 h replay: {result.judged} verdicts")
    if result.migration_final is not None:
        other = "model" if result.judged == "final" else "final"
        paths[f"migration_{other}"] = out / f"migration_matrix_{other}.png"
        _plot_migration(np.array(result.migration_model if other == "model" else result.migration_final),
                        paths[f"migration_{other}"], f"24 h replay: {other} verdicts")
    if serving_held is not None and candidate_held is not None and is_bad is not None:
        paths["reliability"] = out / "reliability.png"
        _plot_reliability({"serving": serving_held.risk, "candidate": candidate_held.risk},
                          np.asarray(is_bad), paths["reliability"])
    body = result.to_dict()
    body.update(extra or {})
    body["figures"] = {k: v.name for k, v in paths.items() if k != "json"}
    paths["json"].write_text(json.dumps(body, indent=2, default=_json_default))
    return paths


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def _plot_migration(matrix: np.ndarray, path: Path, title: str = "24 h replay: label migration") -> None:
    # local: matplotlib loads only when a picture is drawn
    import matplotlib

    matplotlib.use("Agg")
    # local: matplotlib loads only when a picture is drawn
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 3.6), dpi=110)
    share = matrix / max(1, matrix.sum())
    ax.imshow(share, cmap="Blues", vmin=0, vmax=max(1e-9, share.max()))
    for i in range(3):
        for j in range(3):
            ax.text(j, i, f"{matrix[i, j]}\n{share[i, j]:.1%}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(3), LABELS)
    ax.set_yticks(range(3), LABELS)
    ax.set_xlabel("candidate verdict")
    ax.set_ylabel("serving verdict")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plot_reliability(risks: Mapping[str, np.ndarray], y: np.ndarray, path: Path, bins: int = 10) -> None:
    # local: matplotlib loads only when a picture is drawn
    import matplotlib

    matplotlib.use("Agg")
    # local: matplotlib loads only when a picture is drawn
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 4.0), dpi=110)
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=1)
    for name, p in risks.items():
        idx = np.minimum((np.asarray(p) * bins).astype(int), bins - 1)
        xs, ys = [], []
        for b in range(bins):
            m = idx == b
            if m.any():
                xs.append(float(np.mean(p[m])))
                ys.append(float(np.mean(y[m])))
        ece = expected_calibration_error(p, y, bins)
        ax.plot(xs, ys, marker="o", label=f"{name} (ECE {ece:.3f})")
    ax.set_xlabel("predicted risk (P bad outcome)")
    ax.set_ylabel("observed bad rate")
    ax.set_title("Reliability, held-out outcomes")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
