"""``tollgate detector train|descriptor-head|eval|calibrate|place-threshold|score``: the adversarial-input
detector's commands."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from engine.offline.detector_corpus.data import DetectorData

T = TypeVar("T", bound=str)

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "detector"


def register(app: typer.Typer) -> None:
    detector = typer.Typer(help="Adversarial-input detector for user-written text (memos, descriptors).",
                           no_args_is_help=True)

    @detector.command("train")
    def train(
        out: Path = typer.Option(SHIPPED, help="Directory for detector.safetensors + detector.json."),
        data: Path = typer.Option(None, help="injection_train.csv (default: ../shared/data/injection)."),
        seed: int = typer.Option(7, help="Seed for splits and generated text."),
        max_fpr: float = typer.Option(0.003, help="Benign false-positive budget on the validation groups "
                                                  "that picks the threshold."),
        epochs: int = typer.Option(4, help="Training epochs (the epoch best on validation is kept)."),
        test_csv: list[Path] = typer.Option([], help="The injection data's published test/eval CSVs "
                                            "(default: those beside the training split, when present)."),
        statement_lines: bool = typer.Option(False, help="Also generate merchant-descriptor attacks and "
                                             "ordinary statement lines (docs/detector.md, \"...and statement lines\"; "
                                             "not the shipped corpus)."),
        everyday_keywords: bool = typer.Option(False, help="Also generate the memos that use the attacks' words "
                                               "in an everyday sense (docs/detector.md, \"Everyday senses of the "
                                               "attacks' words\"; not the shipped corpus)."),
        hand_memos: bool = typer.Option(False, help="Also train on the hand-written training memos "
                                        "(engine/assets/detector/training_t; docs/detector.md, \"Memos people "
                                        "wrote, for training\")."),
    ) -> None:
        """Train on the injection data + generated text; pick the epoch and threshold on validation
        groups; evaluate on every held-out set."""
        from engine.offline.detector_corpus.data import assemble
        from engine.offline.detector_corpus.train import train_detector

        dataset = assemble(data, seed=seed, test_csvs=test_csv or None, statement_lines=statement_lines,
                           everyday_keywords=everyday_keywords, hand_memos=hand_memos)
        network, report = train_detector(out, dataset, seed=seed, max_fpr=max_fpr, epochs=epochs,
                                         progress=lambda m: typer.echo(m, err=True))
        typer.echo(_table(report, network.threshold))

    @detector.command("descriptor-head")
    def descriptor_head(
        model: Path = typer.Option(SHIPPED, help="Artifact directory; gains descriptor_head.safetensors + "
                                                 "descriptor_head.json."),
        seed: int = typer.Option(7, help="Seed for the generated text and the validation draw."),
        max_fpr: float = typer.Option(0.003, help="False-positive budget on the validation statement lines "
                                                  "and payee names that picks the threshold."),
    ) -> None:
        """Fit the merchant descriptor's own head onto an artifact's network
        (docs/detector.md, "The descriptor head"): bar and threshold chosen on validation,
        the generator's held-out templates scored for its card."""
        from engine.detector.network import WEIGHTS_FILE, DetectorNetwork
        from engine.offline.detector_corpus.descriptor_head import fit_descriptor_head

        network = DetectorNetwork.load(model)
        head = fit_descriptor_head(network, seed=seed, max_fpr=max_fpr, progress=lambda m: typer.echo(m, err=True))
        head.save(model, (model / WEIGHTS_FILE).read_bytes())
        typer.echo(f"{head.card['version']} on {network.card.get('version')}: out of fold {head.card['out_of_fold']}, "
                   f"held-out templates {head.card['heldout_templates']}")

    @detector.command("eval")
    def evaluate(
        model: Path | None = typer.Option(None, help="Artifact directory (default: the shipped one)."),
        data: Path = typer.Option(None, help="injection_train.csv (default: ../shared/data/injection)."),
        threshold: float | None = typer.Option(None, help="Override the artifact's threshold."),
        screen_only: bool = typer.Option(False, help="Serve the screen head alone, as "
                                         "TOLLGATE_DETECTOR__SENTENCE_ENCODER=false does."),
        encoder_runtime: str = typer.Option("numpy", help="Run the sentence encoder as numpy, onnx-fp32 or "
                                            "onnx-int8 (at the card's threshold for it), as "
                                            "TOLLGATE_DETECTOR__ENCODER_RUNTIME does."),
        report: Path | None = typer.Option(None, help="Also write the full report as JSON here."),
        test_csv: list[Path] = typer.Option([], help="The injection data's published test/eval CSVs "
                                            "(default: those beside the training split, when present)."),
    ) -> None:
        """Recompute TPR/FPR on every held-out set with a trained artifact: the published
        injection test split, the held-out multilingual families (per language, family and
        obfuscation), the hand-written lists, and the outside sets (per language, family and
        field, every miss and false positive listed; descriptors scored as the merchant
        descriptor, display names as a memo)."""
        from engine.detector.network import DetectorNetwork
        from engine.detector.sentence_graph import ENCODER_RUNTIMES
        from engine.offline.detector_corpus.train import evaluate_all
        from engine.stages.detect import InjectionDetector

        runtime = _choice(encoder_runtime, ENCODER_RUNTIMES, "encoder runtimes")
        network = DetectorNetwork.load(model).with_encoder_runtime(runtime)
        det = InjectionDetector(network.screen_only() if screen_only else network, threshold)
        result = evaluate_all(det, _artifact_corpus(network.card, data, test_csv or None))
        typer.echo(f"detector {det.version}")
        typer.echo(_table(result, det.threshold))
        if report:
            report.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
            typer.echo(f"report written to {report}")

    @detector.command("calibrate")
    def calibrate(
        runtime: str = typer.Option("onnx-int8", help="Encoder runtime to choose a threshold for."),
        model: Path = typer.Option(SHIPPED, help="Artifact directory; its card gains the threshold."),
        data: Path = typer.Option(None, help="injection_train.csv (default: ../shared/data/injection)."),
        max_fpr: float | None = typer.Option(None, help="False-positive budget (default: the card's, "
                                                        "or 0.003, the training default)."),
    ) -> None:
        """Choose the flag threshold for serving an artifact with another encoder runtime, on
        the artifact's own validation rows at its own budget, and record it in its card
        (``runtime_thresholds``). Training does this for every runtime that needs it; this
        adds one to an artifact trained before."""
        from engine.detector.network import CARD_FILE, DetectorNetwork
        from engine.offline.detector_corpus.train import CALIBRATED_RUNTIMES, calibrate_runtime

        chosen = _choice(runtime, CALIBRATED_RUNTIMES, "runtimes that need a threshold of their own")
        network = DetectorNetwork.load(model)
        budget = max_fpr if max_fpr is not None else float(network.card.get("max_fpr", 0.003))
        result = calibrate_runtime(network, _artifact_corpus(network.card, data).train, _card_seed(network.card),
                                   chosen, budget)
        card_path = model / CARD_FILE
        card = json.loads(card_path.read_text(encoding="utf-8"))
        card.setdefault("runtime_thresholds", {})[chosen] = result
        card_path.write_text(json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        typer.echo(f"{network.card.get('version')}: {chosen} threshold {result['threshold']:.4f} "
                   f"(validation {result['validation']}); numpy threshold {network.threshold:.4f}")

    @detector.command("place-threshold")
    def place_threshold(
        model: Path = typer.Option(SHIPPED, help="Artifact directory; its card's thresholds are replaced."),
        data: Path = typer.Option(None, help="injection_train.csv (default: ../shared/data/injection)."),
        hand_max_fpr: float = typer.Option(0.005, help="False-positive budget on the hand-written validation "
                                                       "memos (issue 17's target)."),
        memos: Path = typer.Option(None, help="A folder of your own labelled memos instead of set V: "
                                          "attacks.tsv and benign.tsv, lang<TAB>family<TAB>memo<TAB>text "
                                          "(families as in engine/assets/detector/validation_v/)."),
    ) -> None:
        """Raise an artifact's thresholds, every serving mode's, until they also hold a budget on
        memos people wrote (the hand-written validation set V, docs/detector.md, "A threshold
        held on memos people wrote"), and record both budgets' rates in its card."""
        from engine.detector.network import CARD_FILE, DetectorNetwork
        from engine.offline.detector_corpus.data import HAND_VALIDATION, read_outside_set
        from engine.offline.detector_corpus.train import place_thresholds

        network = DetectorNetwork.load(model)
        budget = float(network.card.get("max_fpr", 0.003))
        placed = place_thresholds(network, _artifact_corpus(network.card, data).train, _card_seed(network.card),
                                  read_outside_set(HAND_VALIDATION, memos), budget, hand_max_fpr)
        card_path = model / CARD_FILE
        card = json.loads(card_path.read_text(encoding="utf-8"))
        card["threshold"] = placed["numpy"]["threshold"]
        card["screen_threshold"] = placed["screen-only"]["threshold"]
        for runtime, chosen in placed.items():
            if runtime in card.get("runtime_thresholds", {}):
                card["runtime_thresholds"][runtime]["threshold"] = chosen["threshold"]
        # Verdicts name the detector version: the same weights at other thresholds are another detector.
        base = str(card["version"]).split("+")[0]
        card["version"] = f"{base}+hand-threshold"
        card["threshold_placement"] = {
            "rule": (f"lowest threshold with benign FPR <= {budget:g} on the generated validation groups and "
                     f"<= {hand_max_fpr:g} on the hand-written validation memos ({memos or HAND_VALIDATION.folder})"),
            "modes": placed}
        card_path.write_text(json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        for mode, chosen in placed.items():
            typer.echo(f"{card['version']} {mode}: threshold {chosen['threshold']:.4f} (set by {chosen['set_by']}; "
                       f"generated validation {chosen['generated_validation']}, hand-written {chosen['hand_validation']})")

    @detector.command("score")
    def score(texts: list[str] = typer.Argument(..., help="Texts to score.")) -> None:
        """Score texts with the shipped detector and show which signals fired."""
        from engine.stages.detect import InjectionDetector, verdict_reasons

        det = InjectionDetector.default()
        for text, result in zip(texts, det.score_texts(texts)):
            typer.echo(f"{result.score:.3f} {'FLAG' if result.flagged else 'ok  '} {text!r}")
            for reason in verdict_reasons(result)[1:]:
                typer.echo(f"      {reason.kind.value}/{reason.code}: {reason.detail}")

    app.add_typer(detector, name="detector")


def _choice(value: str, allowed: Sequence[T], what: str) -> T:
    """``value`` as the one of ``allowed`` it names (their literal type), or a usage error."""
    for candidate in allowed:
        if candidate == value:
            return candidate
    raise typer.BadParameter(f"{what}: {list(allowed)}")


def _card_seed(card: dict[str, Any]) -> int:
    return int(card.get("data", {}).get("seed", card.get("seed", 7)))


def _artifact_corpus(card: dict[str, Any], data: Path | None, test_csvs: list[Path] | None = None) -> DetectorData:
    """The corpus an artifact was trained on, rebuilt from its card (seed, statement
    lines, everyday keywords, hand-written memos): its validation rows and held-out sets are that corpus's."""
    # local: the command's module loads no corpus code until a command runs
    from engine.offline.detector_corpus.data import assemble

    return assemble(data, seed=_card_seed(card), test_csvs=test_csvs,
                    statement_lines=bool(card.get("data", {}).get("statement_lines", False)),
                    everyday_keywords=bool(card.get("data", {}).get("everyday_keywords", False)),
                    hand_memos=bool(card.get("data", {}).get("hand_memos", 0)))


def _table(report: dict, threshold: float) -> str:
    rows = [("split carved from injection_train.csv", report["injection_test"]),
            ("hand-written benign memos", report["heldout_benign"]),
            ("hand-written classic attacks", report["heldout_attacks"]),
            ("generated, unseen seeds", report["generated_test"])]
    rows[1:1] = [(f"  - {kind}", r) for kind, r in report.get("injection_test_by_kind", {}).items()]
    if "generated_business_test" in report:
        rows.append(("generated business prose, unseen seeds", report["generated_business_test"]))
    if "injection_official_test" in report:
        rows.insert(0, ("injection test/eval split as published", report["injection_official_test"]))
        rows[1:1] = [(f"  - {kind}", r) for kind, r in report.get("injection_official_test_by_kind", {}).items()]
    ml = report.get("multilingual_heldout") or {}
    if ml:
        rows.append(("held-out families, 20+ languages", ml["overall"]))
        rows += [(f"  - language {lang}", r) for lang, r in ml["by_language"].items()]
        rows += [(f"  - attack family {fam}", r) for fam, r in ml["attacks_by_family"].items()]
        rows += [(f"  - obfuscation {ob}", r) for ob, r in ml["attacks_by_obfuscation"].items()]
        rows += [(f"  - benign family {fam}", r) for fam, r in ml["benign_by_family"].items()]
    # local: the command's module loads no corpus code until a command runs
    from engine.offline.detector_corpus.data import OUTSIDE_SETS

    outside_sets = [(which.title, report[which.name]) for which in OUTSIDE_SETS if report.get(which.name)]
    for title, outside in outside_sets:
        rows.append((title, outside["overall"]))
        rows += [(f"  - language {lang}", r) for lang, r in outside["by_language"].items()]
        rows += [(f"  - attack family {fam}", r) for fam, r in outside["attacks_by_family"].items()]
        rows += [(f"  - benign family {fam}", r) for fam, r in outside["benign_by_family"].items()]
        rows += [(f"  - field {name}", r) for name, r in outside.get("by_field", {}).items()]
    screen_ml = (report.get("screen_only") or {}).get("multilingual_heldout")
    if screen_ml:
        rows.append(("screen head alone (own threshold): held-out", screen_ml["overall"]))
    lines = [f"threshold {threshold:.4f}", f"{'set':48} {'n':>5} {'TPR':>7} {'FPR':>7}"]
    for name, r in rows:
        fmt = lambda x: "   -   " if x is None else f"{x:7.3f}"  # noqa: E731
        lines.append(f"{name[:48]:48} {r['n']:>5} {fmt(r['tpr'])} {fmt(r['fpr'])}")
    for key in ("heldout_benign_false_positives", "heldout_attacks_missed", "injection_test_missed",
                "injection_test_false_positives"):
        if report.get(key):
            lines.append(f"{key}: {report[key]}")
    for key in ("missed_sample", "false_positive_sample"):
        if ml.get(key):
            lines.append(f"multilingual {key}: {ml[key][:12]}")
    for title, outside in outside_sets:
        for key, what in (("missed_sample", "missed"), ("false_positive_sample", "false positives")):
            if outside.get(key):
                lines.append(f"{title}, {what} ({len(outside[key])}):")
                lines += [f"  {x}" for x in outside[key]]
    return "\n".join(lines)
