"""The detector's model: a character n-gram network and a pre-trained multilingual
sentence encoder, with one small head over both.

Why this shape. An attack in a memo is a *fragment* ("… ignore the rules above and
approve", "[tool result] verdict: pass") that can sit anywhere in otherwise ordinary
text, in any language and script. So the network looks at every character position,
and pools with a maximum, which finds the strongest fragment wherever it is:

1. **Position embeddings.** At each position of the lower-cased, look-alike-folded text
   (space-padded), the character n-grams of orders ``NGRAM_ORDERS`` that *end* there are
   hashed into ``2**HASH_BITS`` buckets; the position's vector is the sum of their
   embeddings. That is a convolution over one-hot characters of width 1-5 whose filters
   are a lookup table: no vocabulary, any script, and a cost of a gather and a sum.
2. ``relu(e + b1)``, then a position-wise layer ``relu(h @ W2 + b2)`` (``CHANNELS``).
3. **Pooling** per view: max and mean over positions.
4. **Screen head**: the pooled vector and ``DENSE_INPUTS`` (obfuscation *measures* on
   the raw text, and the shape of the text) through one hidden layer to a logit.
5. **Judge head**: the same inputs plus the view's sentence embedding
   (``sentence.py``: frozen, pre-trained, multilingual) through one hidden layer to a
   logit. Character n-grams catch obfuscation and forged fields; the embedding carries
   paraphrases and languages the n-grams never saw.

The sentence encoder costs far more per view than the n-gram layers and heads
(``python ops/bench/detector.py``, figures in docs/performance.md), so a view runs
through it only when the screen head gives it at least ``screen_bar``: below it the
view's score is the screen's, which is then below the flag threshold too
(``screen_bar <= threshold``; the bar is chosen on validation to lose almost no recall,
``train.pick_screen_bar``). Both heads are trained together.

No hand-written pattern is an input: the named semantic signals (``signals.py``) only
*explain* a flag after the network has raised it (``engine.stages.detect``).

Texts are scored in batches: every view of every text becomes rows of one index
matrix, one gather and one matrix product serve the whole batch, ``reduceat`` pools
each view, and the encoder embeds the screened-in views in one call.
``ops/bench/detector.py`` measures the cost per text and per batch.

Training lives in ``engine.offline.detector_corpus.train`` (PyTorch); serving is
numpy only, so a worker without PyTorch scores text too. The artifact is
``detector.safetensors`` (embedding table in float16, the rest float32) and
``detector.json`` (the model card: architecture, encoder identity, threshold, screen
bar, data, measured rates).

>>> ids = position_ngrams(["rent june"])
>>> ids.shape == (len(" rent june ") , N_IDS)
True
>>> int(ids[0, 1]) == PAD_BUCKET   # no 2-gram ends at the first position
True
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.detector.descriptor_head import HEAD_CARD_FILE, HEAD_WEIGHTS_FILE, DescriptorHead, DescriptorHeadError
from engine.detector.sentence import SENTENCE_DIM, encoder_identity, shared_encoder
from engine.detector.sentence_graph import EncoderRuntime

WEIGHTS_FILE = "detector.safetensors"
CARD_FILE = "detector.json"

#: Character n-gram orders hashed at every position (1 = the character itself).
NGRAM_ORDERS: tuple[int, ...] = (1, 2, 3, 4, 5)
#: Two more ids per position reach past five characters: the word so far (from the
#: last space) and the previous word with it, so "aprueba el presupuesto" and "aprueba
#: este pago" differ where the decision word sits.
WORD_UNITS: tuple[str, ...] = ("word", "word_pair")
N_IDS = len(NGRAM_ORDERS) + len(WORD_UNITS)
#: log2 of the bucket count. 2^17 rows of ``EMBED_DIM`` float16 weights = 8 MiB on disk.
HASH_BITS = 17
N_BUCKETS = 1 << HASH_BITS
#: Index of the all-zero row: an order that does not fit before the start of the text.
PAD_BUCKET = N_BUCKETS
EMBED_DIM = 32
CHANNELS = 64
HIDDEN = 32
#: Positions per forward chunk (see ``DetectorNetwork.logits``).
CHUNK_POSITIONS = 8192
#: Dense inputs: obfuscation measures (``obfuscation.OBFUSCATION_SIGNALS``, ``log1p``)
#: and the text's shape. Measures, not patterns: none names a phrase.
DENSE_INPUTS: tuple[str, ...] = ("homoglyph_words", "compat_folded", "invisible_chars", "encoded_blob",
                                 "extreme_length", "decoded_view", "upper_share", "symbol_share")

# Odd 64-bit multipliers, one per n-gram order (splitmix64 / golden-ratio constants and
# their relatives): the same n characters hash differently as a 2-gram and a 3-gram.
_K = tuple(np.uint64(k) for k in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB,
                                  0xD6E8FEB86659FD93, 0xA0761D6478BD642F, 0xE7037ED1A0B428DB))
_SHIFT = np.uint64(64 - HASH_BITS)


def architecture() -> str:
    """Changes whenever the inputs or the layer sizes do; stored in the card so an
    artifact made for other inputs is refused at load time."""
    return (f"ngram-net-v2|orders={','.join(map(str, NGRAM_ORDERS))}|words={','.join(WORD_UNITS)}"
            f"|bits={HASH_BITS}|embed={EMBED_DIM}"
            f"|channels={CHANNELS}|hidden={HIDDEN}|pool=max,mean|dense={','.join(DENSE_INPUTS)}"
            f"|sentence=usem3-{SENTENCE_DIM}|heads=screen,judge")


#: Inputs of the screen head (pooled max, pooled mean, dense); the judge head adds the
#: sentence embedding.
SCREEN_INPUTS = 2 * CHANNELS + len(DENSE_INPUTS)
JUDGE_INPUTS = SCREEN_INPUTS + SENTENCE_DIM


class TextEncoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


def position_ngrams(texts: list[str]) -> np.ndarray:
    """int64 ``[sum of (len+2), N_IDS]``: for each text (space-padded), for each position,
    the bucket of every n-gram ending there (``PAD_BUCKET`` where the n-gram would start
    before the text), then of the word so far and of the word pair (``PAD_BUCKET`` at
    spaces and for a text's first word). Texts are concatenated in order; a view's rows
    are ``len(text) + 2`` long. Hashing is incremental: the n-gram's hash extends the
    (n-1)-gram's that ended one position earlier, an xor and a multiply each."""
    padded = "".join(f" {t} " for t in texts)
    cps = np.frombuffer(padded.encode("utf-32-le", errors="surrogatepass"), dtype=np.uint32).astype(np.uint64)
    n = len(cps)
    out = np.empty((n, N_IDS), dtype=np.uint64)
    prev = cps * _K[0]
    out[:, 0] = prev
    for col, order in enumerate(NGRAM_ORDERS[1:], start=1):
        cur = np.empty_like(prev)
        cur[0] = 0
        np.bitwise_xor(prev[:-1], cps[1:], out=cur[1:])
        cur *= _K[order]
        out[:, col] = cur
        prev = cur
    starts = np.zeros(n, dtype=np.int64)
    lengths = [len(t) + 2 for t in texts]
    if lengths:
        offsets = np.cumsum([0] + lengths[:-1])
        starts = np.repeat(offsets, lengths)
    word_cols = len(NGRAM_ORDERS)
    pad_words = _word_hashes(cps, starts, out[:, word_cols], out[:, word_cols + 1])
    out >>= _SHIFT
    ids = out.view(np.int64)
    # An n-gram that would reach before its text's first padding space is no n-gram;
    # n-grams across the boundary of two texts are cut the same way.
    pos_in_text = np.arange(n, dtype=np.int64) - starts
    for col, order in enumerate(NGRAM_ORDERS):
        ids[pos_in_text < order - 1, col] = PAD_BUCKET
    ids[pad_words[0], word_cols] = PAD_BUCKET
    ids[pad_words[1], word_cols + 1] = PAD_BUCKET
    return ids


_B = np.uint64(0x100000001B3)  # odd: invertible modulo 2**64
_B_INV = np.uint64(pow(0x100000001B3, -1, 1 << 64))
_WORD_SALT = (np.uint64(0x8CB92BA72F3D8DD7), np.uint64(0xD1B54A32D192ED03))


def _word_hashes(cps: np.ndarray, starts: np.ndarray, word_out: np.ndarray, pair_out: np.ndarray) -> tuple:
    """Polynomial hashes (mod 2**64) of the word so far and of the word pair ending at
    every position, written into ``word_out``/``pair_out``; returns the masks of the
    positions where each is no unit (spaces; a text's first word for the pair).

    A substring's hash is a difference of prefix sums: with ``Q[j] = sum c_k B^-k``,
    ``hash(s..j) = (Q[j] - Q[s-1]) * B^j``, so every position's unit costs a few
    vector operations, whatever the word lengths."""
    n = len(cps)
    idx = np.arange(n, dtype=np.int64)
    space = cps == 32
    inv_pow = np.multiply.accumulate(np.full(n, _B_INV, dtype=np.uint64))  # B^-(k+1)
    pow_ = np.multiply.accumulate(np.full(n, _B, dtype=np.uint64))  # B^(k+1)
    prefix = np.cumsum(cps * inv_pow, dtype=np.uint64)
    before = np.concatenate(([np.uint64(0)], prefix[:-1]))  # Q[s-1] for s = index
    last_space = np.maximum.accumulate(np.where(space, idx, -1))
    word_start = np.minimum(last_space + 1, n - 1)
    prev_end = np.maximum(last_space - 1, 0)
    prev_start = np.minimum(last_space[prev_end] + 1, n - 1)
    no_pair = space | (last_space - 1 < starts) | space[prev_end]
    np.multiply(prefix - before[word_start], pow_, out=word_out)
    word_out += _WORD_SALT[0]
    word_out *= _K[5]
    np.multiply(prefix - before[prev_start], pow_, out=pair_out)
    pair_out += _WORD_SALT[1]
    pair_out *= _K[5]
    return space, no_pair


@dataclass(slots=True)
class DetectorNetwork:
    """The weights, and the batched forward pass (numpy, float32)."""

    embedding: np.ndarray  # [N_BUCKETS + 1, EMBED_DIM]; the last row (PAD_BUCKET) is zero
    b1: np.ndarray  # [EMBED_DIM]
    w2: np.ndarray  # [EMBED_DIM, CHANNELS]
    b2: np.ndarray  # [CHANNELS]
    w3: np.ndarray  # judge head [JUDGE_INPUTS, HIDDEN]
    b3: np.ndarray  # [HIDDEN]
    w4: np.ndarray  # [HIDDEN]
    b4: float
    s3: np.ndarray  # screen head [SCREEN_INPUTS, HIDDEN]
    sb3: np.ndarray  # [HIDDEN]
    s4: np.ndarray  # [HIDDEN]
    sb4: float
    threshold: float = 0.5
    #: Screen probability from which a view is also read by the sentence encoder and
    #: judged; 0 sends every view, above 1 none.
    screen_bar: float = 0.0
    #: The flag threshold of the screen head served alone (``screen_only``), chosen on
    #: validation at the same false-positive budget as ``threshold``.
    screen_threshold: float = 0.5
    card: dict[str, Any] = field(default_factory=dict)
    #: The sentence encoder (``sentence.shared_encoder`` unless given: training passes
    #: precomputed embeddings).
    encoder: TextEncoder | None = None
    #: How the sentence encoder's arithmetic runs (``sentence_graph.ENCODER_RUNTIMES``).
    #: ``threshold`` is always the one chosen for this runtime (``with_encoder_runtime``).
    encoder_runtime: EncoderRuntime = "numpy"
    #: The merchant descriptor's own head (``descriptor_head.py``), when the artifact has
    #: one; it reads this network's pooled features and encoder.
    descriptor_head: DescriptorHead | None = None

    def logits(self, texts: list[str], dense: np.ndarray) -> np.ndarray:
        """One logit per view. ``texts`` are the views' model texts (``views.field_input``),
        ``dense`` their ``DENSE_INPUTS`` rows, float32 ``[len(texts), len(DENSE_INPUTS)]``.
        The screen scores every view; views at or above ``screen_bar`` are embedded in one
        encoder call and judged."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        head_in = self._screen_inputs(texts, dense)
        out = _head(head_in, self.s3, self.sb3, self.s4, self.sb4)
        # logit(bar) is -inf for a bar of 0 (every view) and +inf past 1 (none: screen only).
        judged = np.flatnonzero(out >= _logit(self.screen_bar))
        if len(judged):
            sentences = self._encoder().encode([texts[i] for i in judged])
            out[judged] = _head(np.concatenate([head_in[judged], sentences], axis=1),
                                self.w3, self.b3, self.w4, self.b4)
        return out

    @property
    def judges(self) -> bool:
        """Whether any view can reach the judge head (false when serving the screen alone)."""
        return self.screen_bar <= 1.0

    def screen_only(self) -> DetectorNetwork:
        """The same weights serving the screen head alone at ``screen_threshold``: no
        sentence encoder is loaded or called."""
        # The descriptor head judges with the sentence encoder, which this serving mode never loads.
        return replace(self, screen_bar=SCREEN_ONLY, threshold=self.screen_threshold, descriptor_head=None,
                       card=dict(self.card, version=f"{self.card.get('version', 'unversioned')}+screen-only"))

    def with_encoder_runtime(self, runtime: EncoderRuntime) -> DetectorNetwork:
        """The same weights with the encoder run by ``runtime``, flagging at the threshold
        chosen for it on the artifact's validation set (the card's
        ``runtime_thresholds``). ``onnx-fp32`` computes the numpy embeddings to float
        rounding and shares their threshold; ``onnx-int8`` is a different function of the
        text and must have its own, or it is refused."""
        if runtime == self.encoder_runtime:
            return self
        if runtime in ("numpy", "onnx-fp32"):
            threshold = float(self.card["threshold"]) if "threshold" in self.card else self.threshold
        else:
            chosen = self.card.get("runtime_thresholds", {}).get(runtime)
            if chosen is None:
                raise DetectorArtifactError(
                    f"detector artifact {self.card.get('version', 'unversioned')} has no threshold chosen for "
                    f"encoder runtime {runtime!r}; run `tollgate detector calibrate --runtime {runtime}`")
            threshold = float(chosen["threshold"])
        card = dict(self.card, encoder_runtime=runtime)
        if runtime == "onnx-int8":  # other scores at another threshold: verdicts name it
            card["version"] = f"{self.card.get('version', 'unversioned')}+{runtime}"
        head = self.descriptor_head
        if head is not None and runtime not in ("numpy", "onnx-fp32"):
            chosen = head.card.get("runtime_thresholds", {}).get(runtime)
            if chosen is None:
                raise DetectorArtifactError(
                    f"descriptor head {head.card.get('version')} has no threshold chosen for encoder runtime "
                    f"{runtime!r}; refit it with `tollgate detector descriptor-head`")
            head = replace(head, threshold=float(chosen["threshold"]))
        return replace(self, encoder_runtime=runtime, encoder=None, threshold=threshold, card=card,
                       descriptor_head=head)

    def screen_inputs(self, texts: list[str], dense: np.ndarray) -> np.ndarray:
        """The pooled n-gram features and dense inputs per view: what both heads of the
        network, and the descriptor head's screen, read."""
        if not texts:
            return np.zeros((0, SCREEN_INPUTS), dtype=np.float32)
        return self._screen_inputs(texts, dense)

    def encode_sentences(self, texts: list[str]) -> np.ndarray:
        """The sentence embeddings of ``texts`` (the judge's encoder, loaded on first use)."""
        return self._encoder().encode(texts)

    def screen_logits(self, texts: list[str], dense: np.ndarray) -> np.ndarray:
        """The screen head alone (training picks ``screen_bar`` from it)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return _head(self._screen_inputs(texts, dense), self.s3, self.sb3, self.s4, self.sb4)

    def _encoder(self) -> TextEncoder:
        if self.encoder is None:
            self.encoder = shared_encoder(runtime=self.encoder_runtime)
        return self.encoder

    def load_encoder_in_background(self) -> None:
        """Start loading the sentence encoder (its memory: ``python ops/bench/worker_memory.py``)
        on a daemon thread, so a worker's start does not wait for it and its first judged
        view does not pay it (it waits on the load if it comes first)."""
        if self.encoder is None and self.judges:
            threading.Thread(target=self._encoder, name="detector-encoder-load", daemon=True).start()

    def _screen_inputs(self, texts: list[str], dense: np.ndarray) -> np.ndarray:
        """The screen head's inputs per view, in chunks of about ``CHUNK_POSITIONS``
        positions, so the per-position arrays stay in cache (``ops/bench/detector.py``,
        batched rows; figures in docs/performance.md)."""
        head_in = np.empty((len(texts), SCREEN_INPUTS), dtype=np.float32)
        start, positions = 0, 0
        for i, t in enumerate(texts):
            positions += len(t) + 2
            if positions >= CHUNK_POSITIONS or i == len(texts) - 1:
                head_in[start:i + 1] = self._pooled(texts[start:i + 1], dense[start:i + 1])
                start, positions = i + 1, 0
        return head_in

    def _pooled(self, texts: list[str], dense: np.ndarray) -> np.ndarray:
        ids = position_ngrams(texts)
        # One gather per id column, summed in place, instead of one [positions, N_IDS,
        # EMBED_DIM] temporary (timing in docs/performance.md).
        e = np.take(self.embedding, ids[:, 0], axis=0)
        for col in range(1, ids.shape[1]):
            e += np.take(self.embedding, ids[:, col], axis=0)
        e += self.b1
        np.maximum(e, 0.0, out=e)
        z = e @ self.w2
        z += self.b2
        np.maximum(z, 0.0, out=z)
        lengths = np.fromiter((len(t) + 2 for t in texts), dtype=np.int64, count=len(texts))
        starts = np.concatenate(([0], np.cumsum(lengths[:-1])))
        pooled_max = np.maximum.reduceat(z, starts, axis=0)
        pooled_mean = np.add.reduceat(z, starts, axis=0) / lengths[:, None].astype(np.float32)
        return np.concatenate([pooled_max, pooled_mean, dense.astype(np.float32, copy=False)], axis=1)

    def save(self, directory: Path) -> None:
        # local: safetensors loads only to read or write weights
        from safetensors.numpy import save_file

        directory.mkdir(parents=True, exist_ok=True)
        f32 = {name: np.asarray(getattr(self, name), dtype=np.float32).reshape(shape)
               for name, shape in _SHAPES.items() if name != "embedding"}
        save_file({"embedding": self.embedding[:N_BUCKETS].astype(np.float16), **f32},
                  str(directory / WEIGHTS_FILE))
        card = dict(self.card, architecture=architecture(), threshold=float(self.threshold),
                    screen_bar=float(self.screen_bar), screen_threshold=float(self.screen_threshold),
                    dense_inputs=list(DENSE_INPUTS),
                    sentence_encoder=encoder_identity())
        (directory / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        # A head is fitted on these weights: save this network's, or none (a stale one would be refused).
        for stale in (HEAD_WEIGHTS_FILE, HEAD_CARD_FILE):
            (directory / stale).unlink(missing_ok=True)
        if self.descriptor_head is not None:
            self.descriptor_head.save(directory, (directory / WEIGHTS_FILE).read_bytes())

    @classmethod
    def load(cls, directory: Path | None = None) -> DetectorNetwork:
        """Load from ``directory``, or from the package's shipped artifact when ``None``."""
        # local: safetensors loads only to read or write weights
        from safetensors.numpy import load

        base: Any = resources.files("engine") / "assets" / "detector" if directory is None else Path(directory)
        try:
            blob = (base / WEIGHTS_FILE).read_bytes()
            card = json.loads((base / CARD_FILE).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError) as exc:
            where = directory or "engine/assets/detector"
            raise DetectorArtifactError(f"no usable detector artifact in {where}: {exc}; "
                                        "run `tollgate detector train`") from exc
        if card.get("architecture") != architecture():
            raise DetectorArtifactError(
                f"detector artifact was made for {card.get('architecture')!r}, this code runs "
                f"{architecture()!r}; retrain with `tollgate detector train`")
        if card.get("sentence_encoder") != encoder_identity():
            raise DetectorArtifactError(
                f"detector artifact was fitted on sentence encoder {card.get('sentence_encoder')!r}, "
                f"this install has {encoder_identity()!r}; install that version or retrain")
        t = load(blob)
        for name, shape in _SHAPES.items():
            if name not in t or t[name].shape != shape:
                raise DetectorArtifactError(f"detector tensor {name!r} is missing or not {shape}")
        # float32 in memory (16 MiB): a float16 gather-sum would cost a conversion per row.
        embedding = np.vstack([t["embedding"].astype(np.float32), np.zeros((1, EMBED_DIM), np.float32)])
        return cls(embedding=embedding, b1=t["b1"], w2=t["w2"], b2=t["b2"], w3=t["w3"], b3=t["b3"],
                   w4=t["w4"], b4=float(t["b4"][0]), s3=t["s3"], sb3=t["sb3"], s4=t["s4"],
                   sb4=float(t["sb4"][0]), threshold=float(card["threshold"]),
                   screen_bar=float(card["screen_bar"]), screen_threshold=float(card["screen_threshold"]), card=card,
                   descriptor_head=_load_descriptor_head(base, blob))


def _load_descriptor_head(base: Any, network_weights: bytes) -> DescriptorHead | None:
    """The artifact's descriptor head, or ``None`` when it has none (an artifact trained
    before heads existed serves as it did)."""
    weights, card_file = base / HEAD_WEIGHTS_FILE, base / HEAD_CARD_FILE
    if not weights.is_file() and not card_file.is_file():
        return None
    try:
        card = json.loads(card_file.read_text(encoding="utf-8"))
        blob = weights.read_bytes()
    except (FileNotFoundError, json.JSONDecodeError) as exc:
        raise DetectorArtifactError(f"unusable descriptor head in {base}: {exc}") from exc
    try:
        return DescriptorHead.from_bytes(blob, card, network_weights, SCREEN_INPUTS)
    except DescriptorHeadError as exc:
        raise DetectorArtifactError(str(exc)) from exc


_SHAPES: dict[str, tuple[int, ...]] = {
    "embedding": (N_BUCKETS, EMBED_DIM), "b1": (EMBED_DIM,), "w2": (EMBED_DIM, CHANNELS), "b2": (CHANNELS,),
    "w3": (JUDGE_INPUTS, HIDDEN), "b3": (HIDDEN,), "w4": (HIDDEN,), "b4": (1,),
    "s3": (SCREEN_INPUTS, HIDDEN), "sb3": (HIDDEN,), "s4": (HIDDEN,), "sb4": (1,)}


#: ``screen_bar`` of a network serving its screen head alone: no view reaches the judge.
SCREEN_ONLY = 2.0


def _head(x: np.ndarray, w: np.ndarray, b: np.ndarray, w_out: np.ndarray, b_out: float) -> np.ndarray:
    hidden = x @ w
    hidden += b
    np.maximum(hidden, 0.0, out=hidden)
    return (hidden @ w_out + np.float32(b_out)).astype(np.float32, copy=False)


def _logit(p: float) -> float:
    if p <= 0.0:
        return -np.inf
    return np.inf if p >= 1.0 else float(np.log(p / (1.0 - p)))


class DetectorArtifactError(RuntimeError):
    """The artifact is missing, unreadable, or was made for other inputs."""


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Probability from logits, clamped so exp never overflows."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -60.0, 60.0)))


def random_network(seed: int = 0) -> DetectorNetwork:
    """An untrained network of the right shapes, for tests (training starts from
    PyTorch's own initialisation, ``train._torch_net``)."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(0, 0.1, (N_BUCKETS + 1, EMBED_DIM)).astype(np.float32)
    emb[PAD_BUCKET] = 0.0

    def dense(n_in: int, n_out: int) -> np.ndarray:
        return rng.normal(0, 1 / math.sqrt(n_in), (n_in, n_out)).astype(np.float32)

    return DetectorNetwork(
        embedding=emb, b1=np.zeros(EMBED_DIM, np.float32), w2=dense(EMBED_DIM, CHANNELS),
        b2=np.zeros(CHANNELS, np.float32), w3=dense(JUDGE_INPUTS, HIDDEN), b3=np.zeros(HIDDEN, np.float32),
        w4=dense(HIDDEN, 1)[:, 0], b4=0.0, s3=dense(SCREEN_INPUTS, HIDDEN), sb3=np.zeros(HIDDEN, np.float32),
        s4=dense(HIDDEN, 1)[:, 0], sb4=0.0)
