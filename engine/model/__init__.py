"""The decision model: field-token backbone -> pooling -> decision heads, calibrated.

Public entry points (the worker, registry and API load models only through these):

* ``fresh_model(spec)`` -> ``(DecisionModel, ModelCard)``: untrained, for tests and warm-up;
* ``save_model_dir(model, card, path)`` / ``load_model_dir(path, expected_schema_hash)``
  -> ``LoadedModel``: safetensors + JSON card, schema-hash checked;
* ``InputSpec.from_schema(FeatureSchema)``: the tensor sizes the model is built for.

Inference itself lives in ``engine.stages.infer``; training in ``engine.offline.train.fit``.
"""

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

__all__ = [
    "DecisionModel", "HeadSpec", "InputSpec", "LoadedModel", "ModelCard", "ModelConfig",
    "ModelInputs", "ModelLoadError", "SchemaMismatchError", "ServingExport", "Temperatures", "as_inputs",
    "concat_inputs", "fresh_model", "is_quantized", "load_model_dir", "quantize_int8",
    "random_inputs", "read_card", "save_model_dir", "take_rows",
]
