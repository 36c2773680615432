"""Model directories: ``model.safetensors`` + ``model_card.json``, and nothing else.

A model version is a directory ``<models_dir>/<version>/``. Weights are safetensors
only: loading never unpickles anything, so a model file cannot run code. The JSON card
says what the weights are (architecture config, label maps, temperatures, feature-schema
hash, data window, metrics). A model trained on a different feature schema would read
its inputs wrongly without any error, so ``load_model_dir`` refuses it by hash.

>>> import tempfile
>>> from engine.model.config import InputSpec, ModelConfig
>>> spec = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=2,
...     history_numeric=1, history_categorical=1, text_len=3, text_vocab=20, schema_hash="s1")
>>> model, card = fresh_model(spec, version="v0")
>>> d = tempfile.mkdtemp()
>>> _ = save_model_dir(model, card, d)
>>> load_model_dir(d, expected_schema_hash="s1").card.version
'v0'
>>> load_model_dir(d, expected_schema_hash="other")
Traceback (most recent call last):
...
engine.model.card.SchemaMismatchError: model v0 was trained on feature schema s1, but the encoder produces other; retrain or use a matching encoder
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.model.config import InputSpec, ModelConfig
from engine.records import DECISIONS

if TYPE_CHECKING:
    from engine.model.decision import DecisionModel

# PyTorch is imported inside the functions that build or read weights: reading a card
# (``read_card``) must not import it, so that a worker serving an exported ONNX graph
# never does (``engine.stages.infer_arrays``; tests/integration/test_worker_start_imports.py).

WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "model_card.json"
CARD_FORMAT = 1


class SchemaMismatchError(RuntimeError):
    """The model's feature-schema hash differs from the encoder's: refused."""


class ModelLoadError(RuntimeError):
    """A model directory is missing a file, or its weights do not fit its card."""


class Temperatures(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: float = Field(default=1.0, gt=0)
    risk: float = Field(default=1.0, gt=0)


class ServingExport(BaseModel):
    """An exported graph in the model directory (``tollgate model export``,
    ``engine.model.export``): served instead of the PyTorch module when the runtime
    setting is ``auto`` or names this format."""

    model_config = ConfigDict(extra="forbid")
    format: Literal["onnx", "torchscript"]
    dtype: Literal["fp32", "fp16", "int8"]
    file: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")  # a file in the directory, never a path out of it
    #: The agreement bar the export had to meet, and what it measured (verdict probs,
    #: risk, share of rows whose early-exit layer differs), against PyTorch fp32.
    tolerance: float
    max_abs_diff: dict[str, float] = Field(default_factory=dict)


class ModelCard(BaseModel):
    """Everything needed to trust, rebuild and compare a model, as JSON."""

    model_config = ConfigDict(extra="forbid")

    format: int = CARD_FORMAT
    version: str
    created_at_ms: int = Field(default_factory=lambda: int(time.time() * 1000))
    #: Event-time window of the labelled training data, epoch ms [start, end).
    data_window: tuple[int, int] | None = None
    schema_hash: str
    label_maps: dict[str, list[str]] = Field(
        default_factory=lambda: {"verdict": [d.value for d in DECISIONS], "risk": ["bad_outcome"]})
    temperature: Temperatures = Field(default_factory=Temperatures)
    #: Rows whose calibrated verdict confidence at an exit layer reaches this stop there.
    early_exit_threshold: float | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    training: dict[str, Any] = Field(default_factory=dict)
    parent_version: str | None = None
    architecture: ModelConfig
    #: An exported graph next to the weights, if any (written by ``engine.model.export``
    #: only; ``save_model_dir`` drops it, so retrained weights never point at a stale graph).
    serving: ServingExport | None = None


@dataclass(slots=True)
class LoadedModel:
    """A model ready for inference: eval mode, with its card."""

    model: DecisionModel
    card: ModelCard
    path: Path | None = None

    @property
    def version(self) -> str:
        return self.card.version


def fresh_model(spec: InputSpec, version: str = "untrained", seed: int = 0,
                **config: Any) -> tuple[DecisionModel, ModelCard]:
    """An untrained model and its card, for tests and warm-up before any training ran,
    built as a trainer would build it (``ModelConfig.default_for``)."""
    import torch  # local: see the module's imports

    from engine.model.decision import DecisionModel  # local: PyTorch

    torch.manual_seed(seed)
    cfg = ModelConfig.default_for(spec, **config)
    model = DecisionModel(cfg).eval()
    card = ModelCard(version=version, schema_hash=spec.schema_hash, architecture=cfg,
                     label_maps=_label_maps(cfg), training={"untrained": True})
    return model, card


def _label_maps(cfg: ModelConfig) -> dict[str, list[str]]:
    maps = {"verdict": [d.value for d in DECISIONS], "risk": ["bad_outcome"]}
    maps.update({h.name: list(h.labels) for h in cfg.extra_heads})
    return maps


def save_model_dir(model: DecisionModel, card: ModelCard, path: str | Path) -> Path:
    """Write weights (safetensors) and card (JSON) into ``path``; returns the directory.

    Written to temporary names first and renamed, so a reader never sees half a model.
    """
    from safetensors.torch import save_file  # local: PyTorch (see the module's imports)

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    card = card.model_copy(update={"architecture": model.config, "label_maps": _label_maps(model.config),
                                   "serving": None})
    # clone(): tied/shared storage would make safetensors refuse to save
    tensors = {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}
    save_file(tensors, str(out / (WEIGHTS_FILE + ".tmp")), metadata={"version": card.version,
                                                                    "schema_hash": card.schema_hash})
    (out / (WEIGHTS_FILE + ".tmp")).replace(out / WEIGHTS_FILE)
    return write_card(card, out)


def write_card(card: ModelCard, path: str | Path) -> Path:
    """Write (or replace) a directory's card, atomically."""
    out = Path(path)
    (out / (CARD_FILE + ".tmp")).write_text(card.model_dump_json(indent=2))
    (out / (CARD_FILE + ".tmp")).replace(out / CARD_FILE)
    return out


def serves_onnx_graph(card: ModelCard, runtime: str) -> bool:
    """Whether the runtime setting serves this card's model through its ONNX graph
    (``auto`` serves the graph the card names): then without PyTorch
    (``engine.stages.infer_arrays``); ``Inference.from_dir`` chooses alike."""
    return runtime in ("auto", "onnx") and card.serving is not None and card.serving.format == "onnx"


def read_card(path: str | Path) -> ModelCard:
    card_path = Path(path) / CARD_FILE
    if not card_path.is_file():
        raise ModelLoadError(f"{card_path} not found: a model directory needs {CARD_FILE} and {WEIGHTS_FILE}")
    data = json.loads(card_path.read_text())
    arch = data.get("architecture")
    if isinstance(arch, dict) and "numeric_bins" not in arch:
        # Cards written before piecewise-linear numeric encoding: those models embed the
        # raw value (numeric_bins=0), whatever today's default is.
        arch["numeric_bins"] = 0
    return ModelCard.model_validate(data)


def check_schema(card: ModelCard, expected_schema_hash: str | None) -> ModelCard:
    """``card``, unless it was trained on another feature schema than ``expected_schema_hash``
    (None: any): a model would read its inputs wrongly without any error, so it is refused."""
    if expected_schema_hash is not None and card.schema_hash != expected_schema_hash:
        raise SchemaMismatchError(
            f"model {card.version} was trained on feature schema {card.schema_hash}, but the encoder "
            f"produces {expected_schema_hash}; retrain or use a matching encoder")
    return card


def load_model_dir(path: str | Path, expected_schema_hash: str | None = None,
                   map_location: str = "cpu") -> LoadedModel:
    """Load a model directory; refuse it if its schema hash differs from ``expected_schema_hash``."""
    root = Path(path)
    card = check_schema(read_card(root), expected_schema_hash)
    weights = root / WEIGHTS_FILE
    if not weights.is_file():
        raise ModelLoadError(f"{weights} not found (only safetensors weights are accepted, never pickle)")
    from safetensors.torch import load_file  # local: PyTorch (see the module's imports)

    from engine.model.decision import DecisionModel  # local: PyTorch

    model = DecisionModel(card.architecture)
    state = load_file(str(weights), device=map_location)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ModelLoadError(f"{weights} does not match its card: missing {sorted(missing)[:5]}, "
                             f"unexpected {sorted(unexpected)[:5]}")
    return LoadedModel(model.to(map_location).eval(), card, root)
