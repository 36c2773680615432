"""Which infer stage serves a model directory: the one choice of runtime that the worker,
its model process and every entry point share (``engine.assemble.load_model_components``,
``engine.worker.infer_process``).

A card that names an ONNX graph the runtime setting serves (``auto`` or ``onnx``) is served
on NumPy arrays without PyTorch (``engine.stages.infer_arrays``); anything else, or an
option only the PyTorch module honours (``int8``, a device), by ``engine.stages.infer``,
imported only then.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.model.card import read_card, serves_onnx_graph
from engine.settings import get_settings
from engine.stages.infer_arrays import OnnxArrayInference

#: What ``OnnxArrayInference`` takes besides the graph; any other option asks for PyTorch.
ARRAY_OPTIONS = frozenset({"early_exit_threshold"})


def load_inference(model_dir: str | Path, expected_schema_hash: str | None = None, *, threads: int = 0,
                   **options: Any) -> Any:
    """The infer stage for ``model_dir``, refused like ``load_model_dir`` on another feature
    schema. ``threads``: intra-op threads for the forward pass (0: the runtime's default);
    through PyTorch they are PyTorch's threads for this process."""
    card = read_card(model_dir)
    if serves_onnx_graph(card, get_settings().model.runtime) and set(options) <= ARRAY_OPTIONS:
        return OnnxArrayInference.from_dir(model_dir, expected_schema_hash, card=card, threads=threads, **options)
    # local: PyTorch, only for a model it serves (tests/integration/test_worker_start_imports.py)
    import torch

    from engine.stages.infer import Inference

    if threads:
        torch.set_num_threads(threads)
    return Inference.from_dir(model_dir, expected_schema_hash, **options)
