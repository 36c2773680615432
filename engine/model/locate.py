"""Which model directory a process serves: an explicit directory or version, else the
registry's serving version, else the newest directory under ``settings.paths.models_dir``.

Apart from ``engine.assemble`` (which builds the pipeline around it) so that ``tollgate
run`` can look before it imports the engine: whether the model to serve is an exported
ONNX graph decides what its prestarted model process imports (``serving_runtime``;
``engine.worker.infer_process.prestart_model_process``). Nothing here imports PyTorch.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.model.card import CARD_FILE, ModelLoadError, read_card, serves_onnx_graph
from engine.settings import Settings

log = logging.getLogger("tollgate.locate")


class ModelNotFound(FileNotFoundError):
    """No model to load; the message says how to get one."""


def find_model_dir(settings: Settings, model: str | Path | None = None) -> Path:
    """Resolve ``model`` (a directory, a version name, or None) to a model directory."""
    models_dir = Path(settings.paths.models_dir)
    if model is not None:
        path = Path(model)
        if (path / CARD_FILE).is_file():
            return path
        if (models_dir / str(model) / CARD_FILE).is_file():
            return models_dir / str(model)
        raise ModelNotFound(f"{model}: not a model directory (no {CARD_FILE}) nor a version under {models_dir}")
    serving = serving_version(settings)
    if serving is not None and (models_dir / serving / CARD_FILE).is_file():
        return models_dir / serving
    candidates = sorted((p.parent for p in models_dir.glob(f"*/{CARD_FILE}")), key=lambda p: p.stat().st_mtime)
    if not candidates:
        raise ModelNotFound(f"no model in {models_dir}: train one with `tollgate train` "
                            "(or run `tollgate quickstart`, which trains a small one)")
    return candidates[-1]


def serving_version(settings: Settings) -> str | None:
    """The registry's serving pointer, or None when Redis is unreachable or unset."""
    # local: redis and the registry, only when no model is named
    from engine.model.registry import serving_key
    from engine.wire.redisconn import connect, reply_text

    try:
        client = connect(settings.redis.url, settings.redis.socket_timeout_s)
        raw = client.get(serving_key(settings.redis.key_prefix))
        client.close()
    except Exception as exc:  # noqa: BLE001 - no registry reachable: fall back to the newest directory
        log.debug("registry not reachable: %s", exc)
        return None
    return None if raw is None else reply_text(raw)


def serving_runtime(settings: Settings, model: str | Path | None = None) -> str:
    """What serving the model ``find_model_dir`` finds needs: ``onnx`` where the runtime
    setting serves its card's ONNX graph (``engine.model.card.serves_onnx_graph``), else
    ``torch``. A guess for a prestart, never an error: no model, or an unreadable card, is ``torch``."""
    try:
        card = read_card(find_model_dir(settings, model))
    except (OSError, ValueError, ModelNotFound, ModelLoadError):
        return "torch"
    return "onnx" if serves_onnx_graph(card, settings.model.runtime) else "torch"
