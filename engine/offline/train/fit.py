"""Training: encoded, labelled events -> a calibrated ``DecisionModel`` + a report directory.

One forward pass feeds every head, so one loss sums them:

1. **verdict**: focal loss against cost-derived targets (``engine.model.losses``), classes
   re-weighted by inverse square-root frequency, plus a KL regulariser that keeps the
   batch's mean verdict distribution near the targets' (no collapse onto ``pass``);
   rule-engine verdicts, when given as soft labels (``soft_verdict``, built by
   ``engine.offline.train.data``), are a second focal target: the only one for a cold start
   with no outcomes yet, where they also pick the epoch and fit the verdict temperature;
2. **risk**: binary cross-entropy on the bad-outcome label, only where the outcome is
   known (NaN = unknown: masked, never presumed good). With ``negative_keep`` < 1 each
   epoch re-samples the good events, and the loss adds log(1/keep) to the logit (logit
   adjustment), so the head still learns the natural-prior probability and needs only
   a temperature to be calibrated;
3. **extra heads** and **early-exit heads**: their own losses, weighted.

Training is deterministic for a seed (seeded init, seeded shuffling, deterministic
kernels, fixed thread count). The last ``val_fraction`` of the window, by event time,
is held out: it picks the best epoch (or, with ``average_last``, only scores the mean of
the last epochs' weights) and fits the temperatures.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F
from tqdm.auto import tqdm

from engine.model.card import ModelCard, Temperatures
from engine.model.config import ModelConfig
from engine.model.decision import DecisionModel
from engine.model.inputs import concat_inputs
from engine.model.losses import class_weights, collapse_penalty, focal_loss, pairwise_rank_loss, verdict_targets
from engine.model.moe import moe_layers
from engine.offline.train.evaluate import calibrate, val_scores, write_report
from engine.offline.train.sets import LabelledSet, TrainConfig, rule_rows
from engine.offline.train.teacher import out_of_fold_logits
from engine.offline.train.trees import fit_trees
from engine.stages.encode import TEXT_FIELDS


@dataclass(slots=True)
class TrainResult:
    model: DecisionModel
    card: ModelCard
    history: list[dict[str, float]]
    val_metrics: dict[str, Any]


def _seed_everything(seed: int, threads: int) -> torch.Generator:
    # cuBLAS is deterministic only with a fixed workspace; read when CUDA first starts
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return torch.Generator().manual_seed(seed)


@dataclass(slots=True)
class TargetStats:
    """Class weights and priors of the two verdict targets, from the training part alone."""

    alpha: Tensor  # outcome-derived (cost) targets
    prior: Tensor
    rule_alpha: Tensor  # rule verdicts (soft labels)
    rule_prior: Tensor

    def to(self, device: torch.device) -> TargetStats:
        return TargetStats(self.alpha.to(device), self.prior.to(device), self.rule_alpha.to(device),
                           self.rule_prior.to(device))


def _losses(model: DecisionModel, out: dict[str, Tensor], batch: LabelledSet, cfg: TrainConfig,
            mix: float, stats: TargetStats) -> tuple[Tensor, dict[str, float]]:
    known = ~torch.isnan(batch.is_bad)
    ruled = rule_rows(batch)
    logit_shift = -math.log(cfg.negative_keep)
    y = torch.nan_to_num(batch.is_bad, nan=0.0)
    taught = (~torch.isnan(batch.teacher_logit) if batch.teacher_logit is not None and cfg.distill_weight > 0
              else None)
    parts: dict[str, Tensor] = {}

    def heads_loss(prefix: str) -> Tensor:
        v_logits, r_logits = out[f"{prefix}verdict"], out[f"{prefix}risk"]
        loss = v_logits.new_zeros(())
        if known.any():
            risk_p = torch.sigmoid(r_logits.detach())
            target = verdict_targets(y, risk_p, batch.amount, cfg.costs, mix)
            loss = loss + cfg.risk_weight * F.binary_cross_entropy_with_logits(r_logits[known] + logit_shift,
                                                                               y[known])
            if cfg.rank_weight > 0:
                loss = loss + cfg.rank_weight * pairwise_rank_loss(r_logits[known], y[known])
            loss = loss + cfg.verdict_weight * focal_loss(v_logits[known], target[known], cfg.focal_gamma,
                                                          stats.alpha)
            loss = loss + cfg.collapse_weight * collapse_penalty(v_logits[known], stats.prior)
        if taught is not None and taught.any():
            # the teacher's log-odds are at the natural prior, like r_logits: both shifted
            # to the re-sampled batch's prior, as the label loss above does
            teacher = torch.sigmoid(batch.teacher_logit[taught] + logit_shift)  # type: ignore[index]
            loss = loss + cfg.distill_weight * F.binary_cross_entropy_with_logits(
                r_logits[taught] + logit_shift, teacher)
        if ruled is not None and ruled.any():
            soft, v_ruled = batch.soft_verdict[ruled], v_logits[ruled]  # type: ignore[index]
            loss = loss + cfg.soft_label_weight * focal_loss(v_ruled, soft.argmax(-1), cfg.focal_gamma,
                                                             stats.rule_alpha, soft=soft)
            loss = loss + cfg.collapse_weight * collapse_penalty(v_ruled, stats.rule_prior)
        return loss

    total = heads_loss("")
    parts["main"] = total.detach()
    for layer in model.config.early_exit_layers:
        exit_loss = heads_loss(f"exit{layer}.")
        parts[f"exit{layer}"] = exit_loss.detach()
        total = total + cfg.exit_weight * exit_loss
    for spec in model.config.extra_heads:
        if spec.name not in batch.extra_targets:
            continue
        target, logits = batch.extra_targets[spec.name], out[spec.name]
        if spec.kind == "single_label":
            extra = F.cross_entropy(logits, target.long())
        elif spec.kind == "multi_label":
            extra = F.binary_cross_entropy_with_logits(logits, target.float())
        else:
            extra = F.mse_loss(logits, target.float().view_as(logits))
        parts[spec.name] = extra.detach()
        total = total + spec.loss_weight * extra
    return total, {k: float(v) for k, v in parts.items()}


def _log_expert_load(record: dict[str, float], loads: list[Tensor], aux_weight: float,
                     cfg: TrainConfig) -> float:
    """Add each layer's per-expert token share this epoch and their variance to
    ``record``; return the load-balance weight for the next epoch (doubled, at most 1.0,
    when the variance crossed ``cfg.moe_load_variance_limit``)."""
    variances = []
    for i, load in enumerate(loads):
        share = load / load.sum().clamp_min(1e-12)
        variances.append(float(share.var(unbiased=False)))
        for e, value in enumerate(share.tolist()):
            record[f"moe_load_l{i + 1}_e{e}"] = value
    record["moe_load_variance"] = sum(variances) / len(variances)
    record["moe_aux_weight"] = aux_weight
    if record["moe_load_variance"] > cfg.moe_load_variance_limit:
        return min(1.0, aux_weight * 2)
    return aux_weight


def _weights_and_prior(counts: Tensor) -> tuple[Tensor, Tensor]:
    # Review targets only appear once the model's belief enters; give review a floor so
    # its weight and prior are defined from the start (no targets at all: uniform).
    if float(counts.sum()) <= 0:
        counts = torch.ones(3)
    counts = counts.clone()
    counts[1] = max(float(counts[1]), float(counts.sum()) * 0.01)
    return class_weights(counts), counts / counts.sum()


def _target_stats(data: LabelledSet, cfg: TrainConfig) -> TargetStats:
    """Verdict-target class weights and priors: outcome targets from labels alone
    (belief = label), rule targets from the soft labels' mass."""
    known = ~torch.isnan(data.is_bad)
    targets = verdict_targets(data.is_bad[known], data.is_bad[known], data.amount[known], cfg.costs, 0.0)
    alpha, prior = _weights_and_prior(torch.bincount(targets, minlength=3).float())
    ruled = rule_rows(data)
    rule_mass = (data.soft_verdict[ruled].sum(0) if ruled is not None  # type: ignore[index]
                 else torch.zeros(3))
    rule_alpha, rule_prior = _weights_and_prior(rule_mass.float())
    return TargetStats(alpha, prior, rule_alpha, rule_prior)


def _window(*parts: LabelledSet | None) -> tuple[int, int] | None:
    """Event-time window [first, last + 1) covered by the given sets (ms)."""
    times = [p.event_time_ms for p in parts if p is not None and len(p)]
    if not times:
        return None
    t = torch.cat(times)
    return int(t.min()), int(t.max()) + 1


#: Held-out metrics an epoch can be picked by, and the sign that makes higher better.
_SELECTION_SIGNS = {"average_precision": 1.0, "auc_roc": 1.0, "risk_nll": -1.0}


def _selection_score(record: dict[str, float], by: str = "average_precision") -> float | None:
    """Held-out score that picks the best epoch: ``by`` (``TrainConfig.select_epoch_by``;
    outcome AP by default), else -risk NLL (no bad event held out), else -NLL of the
    rules' verdicts (a cold start without outcomes: smoother than agreement, which a
    handful of held-out rejects makes jumpy)."""
    for key, sign in ((f"val_{by}", _SELECTION_SIGNS[by]), ("val_risk_nll", -1.0), ("val_rule_nll", -1.0)):
        value = record.get(key)
        if value is not None and not math.isnan(value):
            return sign * value
    return None


def _accumulate(mean: dict[str, Tensor] | None, state: dict[str, Tensor], n_before: int) -> dict[str, Tensor]:
    """Running mean of ``n_before`` earlier weight snapshots and ``state``. Integer and
    boolean buffers (fitted bin edges, counters) are the same in every epoch: kept as is."""
    if mean is None:
        return {k: v.detach().clone() for k, v in state.items()}
    for k, v in state.items():
        if v.is_floating_point():
            mean[k].mul_(n_before / (n_before + 1)).add_(v.detach(), alpha=1 / (n_before + 1))
    return mean


_ENCODER_TEXT_FIELDS = tuple(n for _, n in TEXT_FIELDS)


def drop_text_fields(batch: LabelledSet, cfg: TrainConfig, gen: torch.Generator) -> LabelledSet:
    """``batch`` with each row's user-text fields blanked independently with probability
    ``cfg.text_dropout``: exactly the tensors the encoder gives an event without that
    field (fixed positions, id 0, mask False). The model then sees every subset of an
    event's text with the same labels, so the presence of text says nothing by itself.

    >>> from engine.model.inputs import ModelInputs
    >>> z = torch.zeros(4, 1)
    >>> inputs = ModelInputs(z, z.long(), z[:, :, None], z[:, :, None].long(), z.bool(),
    ...                      torch.ones(4, 5, dtype=torch.long), torch.ones(4, 5, dtype=torch.bool))
    >>> data = LabelledSet(inputs, torch.zeros(4), torch.zeros(4), torch.zeros(4, dtype=torch.long))
    >>> cfg = TrainConfig(text_dropout=1.0, text_field_lengths=(3, 2))
    >>> drop_text_fields(data, cfg, torch.Generator().manual_seed(0)).inputs.text_mask.any().item()
    False
    """
    ids, mask = batch.inputs.text_ids, batch.inputs.text_mask
    if not ids.shape[1]:
        return batch
    lengths = cfg.text_field_lengths
    if lengths is None:
        lengths = _ENCODER_TEXT_FIELDS if sum(_ENCODER_TEXT_FIELDS) == ids.shape[1] else (ids.shape[1],)
    if sum(lengths) != ids.shape[1]:
        raise ValueError(f"text_field_lengths {lengths} do not cover the {ids.shape[1]} text positions of the inputs")
    ids, mask = ids.clone(), mask.clone()
    start = 0
    for length in lengths:
        drop = torch.rand(ids.shape[0], generator=gen) < cfg.text_dropout
        ids[drop, start:start + length] = 0
        mask[drop, start:start + length] = False
        start += length
    inputs = replace(batch.inputs, text_ids=ids, text_mask=mask)
    return replace(batch, inputs=inputs)


def train_model(data: LabelledSet, model_config: ModelConfig, cfg: TrainConfig = TrainConfig(),
                version: str = "trained", report_dir: str | Path | None = None,
                validation: LabelledSet | None = None) -> TrainResult:
    """Train, pick the best epoch on held-out events, fit temperatures, write the report."""
    gen = _seed_everything(cfg.seed, cfg.threads)
    if validation is None and cfg.val_fraction > 0:
        data, validation = data.split_by_time(cfg.val_fraction)
    if cfg.distill_weight > 0:  # from the training part only: the held-out tail picks the epoch
        data = replace(data, teacher_logit=out_of_fold_logits(
            data.inputs, data.is_bad, cfg.distill_folds, cfg.seed))
    model = DecisionModel(model_config)
    # PLE bin edges (target-aware: they read the labels) from the training part only,
    # never from the held-out tail that picks the epoch. Rule verdicts stay out of them:
    # on a simulated cold start, bins cut at the rules' thresholds learned the rules
    # worse (agreement 0.84-0.86) than plain quantile bins (0.91).
    model.fit_input_statistics(data.inputs, data.is_bad)
    device = torch.device(cfg.device)
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    negatives = (data.is_bad == 0)
    n_epoch = len(data) - int(negatives.sum()) + int(round(float(negatives.sum()) * cfg.negative_keep))
    steps_per_epoch = max(1, math.ceil(n_epoch / cfg.batch_size))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=cfg.epochs * steps_per_epoch,
                                                pct_start=0.1)
    stats = _target_stats(data, cfg).to(device)
    routed = moe_layers(model)
    aux_weight = cfg.moe_aux_weight
    history: list[dict[str, float]] = []
    best: tuple[float, dict[str, Tensor]] | None = None
    averaged: dict[str, Tensor] | None = None
    first_averaged = cfg.epochs - min(cfg.average_last, cfg.epochs)
    bar = tqdm(total=cfg.epochs * steps_per_epoch, desc=f"train {version}", disable=not cfg.progress,
               unit="batch", mininterval=2.0)
    for epoch in range(cfg.epochs):
        model.train()
        keep = ~negatives | (torch.rand(len(data), generator=gen) < cfg.negative_keep)
        order = keep.nonzero().squeeze(1)[torch.randperm(int(keep.sum()), generator=gen)]
        running = 0.0
        loads = [torch.zeros_like(layer.expert_load, device=device) for layer in routed]
        for step in range(steps_per_epoch):
            idx = order[step * cfg.batch_size:(step + 1) * cfg.batch_size]
            if idx.numel() == 0:
                break
            batch = data.rows(idx)
            if cfg.text_dropout > 0:
                batch = drop_text_fields(batch, cfg, gen)
            batch = batch.to(device)  # no copies on the CPU
            mix = cfg.belief_mix * min(1.0, (epoch * steps_per_epoch + step) / steps_per_epoch)
            loss, _ = _losses(model, model(batch.inputs), batch, cfg, mix, stats)
            if routed:
                loss = loss + aux_weight * sum(layer.pop_aux_loss() for layer in routed)
                for load, layer in zip(loads, routed):
                    load += layer.expert_load
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            running += float(loss.detach())
            bar.update(1)
        record = {"epoch": epoch + 1, "train_loss": running / steps_per_epoch}
        if cfg.average_last and epoch >= first_averaged:
            averaged = _accumulate(averaged, model.state_dict(), epoch - first_averaged)
        if routed:
            aux_weight = _log_expert_load(record, loads, aux_weight, cfg)
        if validation is not None and len(validation):
            record.update(val_scores(model, validation))
            score = _selection_score(record, cfg.select_epoch_by)
            if score is not None and (best is None or score > best[0]):
                best = (score, {k: v.detach().clone() for k, v in model.state_dict().items()})
        history.append(record)
        bar.set_postfix({k: round(v, 4) for k, v in record.items() if k != "epoch"})
    bar.close()
    if averaged is not None:
        model.load_state_dict(averaged)
    elif best is not None:
        model.load_state_dict(best[1])
    model.to("cpu")  # calibrated, saved and served on the CPU, wherever it was trained
    model.eval()
    has_val = validation is not None and len(validation) > 0
    temps, val_metrics = calibrate(model, validation, cfg) if has_val else (Temperatures(), {})
    if cfg.tree_blend > 0:
        # The network's own temperatures go into the blend (engine.model.trees); then the
        # blended model is calibrated as any model is.
        trees = fit_trees(model, data.inputs, data.is_bad, cfg.tree_blend, cfg.seed, cfg.threads,
                          t_risk=temps.risk, t_verdict=temps.verdict)
        if trees is not None:
            model = model.with_trees(trees)
            temps, val_metrics = calibrate(model, validation, cfg) if has_val else (Temperatures(), {})
            if cfg.tree_refit and has_val:
                # Calibrated on rows the trees never saw; served refitted on those rows too. The
                # card's held-out metrics stay those of the calibration's blend, and the refit
                # keeps its verdict offset: the level the temperatures were fitted at.
                assert validation is not None
                refit = fit_trees(model, concat_inputs([data.inputs, validation.inputs]),
                                  torch.cat([data.is_bad, validation.is_bad]), cfg.tree_blend, cfg.seed,
                                  cfg.threads, t_risk=trees.t_risk.item(), t_verdict=trees.t_verdict.item(),
                                  offset=trees.verdict_offset.item())
                if refit is not None:
                    model = model.with_trees(refit)
            model_config = model.config
    ruled = rule_rows(data)
    card = ModelCard(version=version, schema_hash=model_config.inputs.schema_hash, architecture=model_config,
                     temperature=temps, data_window=_window(data, validation), metrics=val_metrics,
                     early_exit_threshold=cfg.early_exit_threshold if model_config.early_exit_layers else None,
                     training={**cfg.model_dump(mode="json"), "n_train": len(data),
                               "n_val": 0 if validation is None else len(validation),
                               # data_window is both parts; these say which part did what
                               "fit_window": _window(data), "heldout_window": _window(validation),
                               "n_train_outcomes": int((~torch.isnan(data.is_bad)).sum()),
                               "n_train_rule_verdicts": 0 if ruled is None else int(ruled.sum()),
                               "history": history})
    if report_dir is not None and has_val:
        write_report(model, card, validation, report_dir, cfg)  # type: ignore[arg-type]
    return TrainResult(model, card, history, val_metrics)
