"""The decision model: field-token backbone -> pooling -> decision heads, calibrated.

Public entry points (the worker, registry and API load models only through these):

* ``fresh_model(spec)`` -> ``(DecisionModel, ModelCard)``: untrained, for tests and warm-up;
* ``save_model_dir(model, card, path)`` / ``load_model_dir(path, expected_schema_hash)``
  -> ``LoadedModel``: safetensors + JSON card, schema-hash checked;
* ``InputSpec.from_schema(FeatureSchema)``: the tensor sizes the model is built for.

Inference itself lives in ``engine.stages.infer``; training in ``engine.offline.train.fit``.

The names below are resolved on first use (PEP 562), not imported with the package: a
worker that serves an exported ONNX graph reads cards (``engine.model.card``) and the
registry without ever importing PyTorch (``engine.stages.infer_arrays``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("LoadedModel", "ModelCard", "ModelLoadError", "SchemaMismatchError", "ServingExport",
                     "Temperatures", "fresh_model", "load_model_dir", "read_card", "save_model_dir"),
                    "engine.model.card"),
    **dict.fromkeys(("HeadSpec", "InputSpec", "ModelConfig"), "engine.model.config"),
    "DecisionModel": "engine.model.decision",
    **dict.fromkeys(("ModelInputs", "as_inputs", "concat_inputs", "random_inputs", "take_rows"),
                    "engine.model.inputs"),
    **dict.fromkeys(("is_quantized", "quantize_int8"), "engine.model.quantize"),
}

__all__ = [
    "DecisionModel", "HeadSpec", "InputSpec", "LoadedModel", "ModelCard", "ModelConfig",
    "ModelInputs", "ModelLoadError", "SchemaMismatchError", "ServingExport", "Temperatures", "as_inputs",
    "concat_inputs", "fresh_model", "is_quantized", "load_model_dir", "quantize_int8",
    "random_inputs", "read_card", "save_model_dir", "take_rows",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


if TYPE_CHECKING:  # what the lazy names are, for mypy and editors
    from engine.model.card import (
        LoadedModel,
        ModelCard,
        ModelLoadError,
        SchemaMismatchError,
        ServingExport,
        Temperatures,
        fresh_model,
        load_model_dir,
        read_card,
        save_model_dir,
    )
    from engine.model.config import HeadSpec, InputSpec, ModelConfig
    from engine.model.decision import DecisionModel
    from engine.model.inputs import ModelInputs, as_inputs, concat_inputs, random_inputs, take_rows
    from engine.model.quantize import is_quantized, quantize_int8
