"""The infer stage in a child process: ``ProcessInference`` is called exactly like
``engine.stages.infer.Inference`` and returns the same outputs (as NumPy arrays,
``ArrayOutputs``), but the forward pass runs in a process of its own.

Why: the worker's Python stages (poll, decode, enrich, encode, detect, decide, guard,
emit) hold the GIL, so in one process the forward pass and those stages take turns on
one core even when the host has another one idle. A thread does not fix it: the forward
pass is ~200 short PyTorch ops, and between ops it must win the GIL back from the main
thread. A child process has its own interpreter: with ``infer_thread`` the
worker's infer thread sends batch N to the child and waits (without the GIL) while the
main thread prepares batch N+1 and finishes N-1. ``settings.batch.infer_process`` (on
by default) makes the worker's model a ``SplitInference``: large batches go to the
child, small ones stay here; ``python ops/bench/engine.py --modes`` measures it against
one process and against a thread (figures in docs/performance.md).

Protocol (the child is ``python -m engine.worker.infer_process``, talking over its stdin/stdout):
length-prefixed pickled frames. The parent's first frame names the model directory,
the expected schema hash and the PyTorch threads; the child loads the model with
``Inference.from_dir`` — the same loading, schema check and serving layers as in
process; a model whose card names an ONNX graph that the runtime setting serves, with
``OnnxArrayInference`` instead, never importing PyTorch (``engine.stages.infer_arrays``) —
and answers ``("ready", version, schema hash)`` or ``("error", class, message)``;
then one ``("ok", outputs)`` or ``("error", ...)`` per batch. Batches and outputs travel
as NumPy arrays (pickle protocol 5; their size: docs/performance.md, "Small figures
behind code comments"). A later frame
that names a model directory loads that model instead and is answered like the first:
how a spare (below) takes the next model.

With every batch sent to the child (``settings.batch.process_min_rows`` = 1; the
default, 64, scores small batches in the worker), the worker encodes ``ArrayBatch``es
and reads ``ArrayOutputs``: it never imports PyTorch, and a hot swap's load runs
entirely in a model process, away from the worker's GIL (``python
ops/bench/worker_memory.py``, ``python ops/bench/hotswap.py``).

Failure handling:

* the forward pass raised in the child (a bad batch): ``RuntimeError`` here, as the
  in-process stage would raise — the worker then decides the batch event by event;
* the child died (OOM killer, a crash): ``InferenceProcessLost``, a ``ConnectionError``,
  which the worker treats as transient (the batch is redone after a backoff, never
  dead-lettered); the next call starts a new child;
* the parent died (SIGKILL included): the child reads end-of-file on stdin and exits,
  so no orphan keeps a model in memory;
* the object is garbage-collected (a hot swap replaced it, or a loaded model was
  refused): the child is told to stop — unless ``spare_after_swap``, where a hot swap's
  replaced child is kept as the spare the next ``spawn_model_process`` loads into
  (``settings.batch.spare_model_process``); a spare that cannot load the next model
  answers the error and exits.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np

# ArrayOutputs: what a model process returns (defined with the NumPy infer stage; kept importable from here).
from engine.stages.infer_arrays import ArrayOutputs, OnnxArrayInference
from engine.stages.infer_arrays import as_array as _as_array

# PyTorch is imported in the child only (``_serve``): a worker that sends every batch
# here never imports it, and one that keeps small batches (``SplitInference``) spawns
# its child first, so both imports run at once (``ops/bench/restart.py`` times a start).

log = logging.getLogger("tollgate.infer_process")

_HEADER = struct.Struct("!Q")
#: How long the child may take to import PyTorch and load the model.
START_TIMEOUT_S = 120.0


class InferenceProcessLost(ConnectionError):
    """The model process died; the batch must be redone (a new process is started)."""


class SchemaMismatchRefused(RuntimeError):
    """The model process loaded a model trained on another feature schema than the
    worker's encoder produces: refused (``engine.model.card.SchemaMismatchError`` in process)."""


class ProcessInference:
    """Callable infer stage (``EncodedBatch`` or ``ArrayBatch`` -> ``ArrayOutputs``) backed by a child process."""

    def __init__(self, model_dir: str | Path, *, expected_schema_hash: str | None = None,
                 torch_threads: int = 1, load_nice: int = 0, spawned: subprocess.Popen[bytes] | None = None,
                 spare_after_swap: bool = False, **inference_kwargs: Any):
        self.model_dir = Path(model_dir)
        #: ``load_nice``: the child imports PyTorch and loads the model this much nicer (a
        #: hot swap's new model must not take CPU from the live stream), then returns to
        #: normal priority to serve — only where it may return (``_nice_while``).
        self._args = {"model_dir": str(self.model_dir), "expected_schema_hash": expected_schema_hash,
                      "torch_threads": torch_threads, "load_nice": load_nice, "inference": inference_kwargs}
        self._lock = threading.Lock()  # one batch in the pipe at a time
        self._child: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[[subprocess.Popen[bytes]], ProcessInference] | None = None
        #: When this object is dropped (a hot swap replaced it), keep its child as the spare
        #: the next ``spawn_model_process`` loads its model into: PyTorch is imported already,
        #: so a later swap starts no interpreter and imports nothing (``python
        #: ops/bench/hotswap.py --modes import-control,model-process``). ``close`` stops it.
        self.spare_after_swap = spare_after_swap
        #: ``spawned``: a child already started with these arguments (``spawn_model_process``).
        self.version = self._start(spawned)

    # -- the stage -------------------------------------------------------------------------

    def __call__(self, batch: Any) -> ArrayOutputs:
        # local: the model process runs this module too, and must not wait for the encoder's imports before PyTorch's
        from engine.stages.encode import ENCODED_FIELDS

        # An ArrayBatch's arrays go as they are; an EncodedBatch's tensors as NumPy views.
        arrays = {name: _as_array(getattr(batch, name)) for name in ENCODED_FIELDS}
        with self._lock:
            if self._child is None:
                self._start()
            child = self._child
            if child is None:  # _start sets it or raises
                raise InferenceProcessLost("model process did not start")
            try:
                _write(_stdin(child), arrays)
                reply = _read(_stdout(child))
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                code = child.poll()
                self._stop_child()
                raise InferenceProcessLost(f"model process {child.pid} lost (exit code {code}): {exc!r}") from exc
        if reply[0] == "error":
            raise RuntimeError(f"model process: {reply[1]}: {reply[2]}")
        return ArrayOutputs.from_fields(reply[1])

    def close(self) -> None:
        """Stop the child (it also stops by itself when this process exits)."""
        with self._lock:
            self._stop_child()

    # -- the child's lifecycle -------------------------------------------------------------

    def _start(self, spawned: subprocess.Popen[bytes] | None = None) -> str:
        child = spawned if spawned is not None else _spawn(self._args)
        try:
            reply = _read_with_timeout(child, START_TIMEOUT_S)
        except BaseException:
            child.kill()
            child.wait()
            raise
        if reply[0] != "ready":
            child.wait()
            raise RuntimeError(f"model process could not load {self.model_dir}: {reply[1]}: {reply[2]}")
        expected, schema_hash = self._args["expected_schema_hash"], reply[2]
        if expected is not None and schema_hash != expected:
            _stop(child)
            # The same refusal as engine.model.card.load_model_dir's, for a model only the child loaded.
            raise SchemaMismatchRefused(
                f"model {reply[1]} was trained on feature schema {schema_hash}, but the encoder "
                f"produces {expected}; retrain or use a matching encoder")
        self._child = child
        self._finalizer = weakref.finalize(self, _retire if self.spare_after_swap else _stop, child)
        log.info("model process started", extra={"pid": child.pid, "model_version": reply[1]})
        return str(reply[1])

    def _stop_child(self) -> None:
        if self._finalizer is not None and self._finalizer.detach() is not None and self._child is not None:
            _stop(self._child)  # closed or lost: never kept as a spare
        self._child, self._finalizer = None, None


class SplitInference:
    """Small batches in this process, large ones in the model process.

    A quiet stream's batch of a few events costs more in the round trip to a child
    (wake-up, pickling, the wait) than its forward pass, and there is nothing for the
    main thread to do meanwhile; a backlog's batch of 100+ events is where running the
    model beside the loop pays (``python ops/bench/engine.py``, docs/performance.md).
    Both sides load the same model directory, so they return the same outputs. The worker asks
    ``runs_remote`` to decide whether a batch is worth handing to its infer thread."""

    def __init__(self, local: Any, remote: ProcessInference, remote_min_rows: int):
        if local.version != remote.version:
            raise RuntimeError(f"model changed while loading: {local.version} here, {remote.version} in the child")
        self.local, self.remote, self.remote_min_rows = local, remote, remote_min_rows
        self.version = local.version
        self.card = local.card

    def runs_remote(self, rows: int) -> bool:
        return rows >= self.remote_min_rows

    def __call__(self, batch: Any) -> Any:
        rows = int(batch.batch_size)
        return self.remote(batch) if self.runs_remote(rows) else self.local(batch)

    def close(self) -> None:
        self.remote.close()


#: A model process started before anyone knew which model it would serve
#: (``prestart_model_process``); the next ``spawn_model_process`` takes it.
_prestarted: subprocess.Popen[bytes] | None = None
_prestarted_lock = threading.Lock()


def prestart_model_process(runtime: str = "torch") -> None:
    """Start a model process that imports PyTorch and the inference code at once (only
    onnxruntime where ``runtime`` is ``onnx``, ``engine.model.locate.serving_runtime``'s
    guess: ``engine.stages.infer_arrays``), before
    this process knows which model it will serve (that needs settings and the registry's
    serving pointer); the next ``spawn_model_process`` hands it its model. ``tollgate run``
    calls this first thing, so the child's PyTorch import (the largest part of a start)
    overlaps the worker's own imports and wiring instead of following them
    (``python ops/bench/restart.py``; figures in docs/performance-worker.md). A prestarted process that is never used exits when
    this process does (end of file on its stdin)."""
    global _prestarted
    with _prestarted_lock:
        if _prestarted is None or _prestarted.poll() is not None:
            _prestarted = _popen(preload="onnx" if runtime == "onnx" else "torch")


def _take_prestarted() -> subprocess.Popen[bytes] | None:
    global _prestarted
    with _prestarted_lock:
        child, _prestarted = _prestarted, None
    return child if child is not None and child.poll() is None else None


def discard_prestarted() -> None:
    """Stop a prestarted model process nobody took (a pipeline without a model process):
    it would otherwise hold an imported PyTorch for the life of the worker."""
    child = _take_prestarted()
    if child is not None:
        _stop(child)


def spawn_model_process(model_dir: str | Path, *, torch_threads: int = 1, load_nice: int = 0,
                        **inference_kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a model process now (or hand its model to the prestarted one) and return it,
    to be handed to ``ProcessInference`` (``spawned=``) once this process has loaded what
    it needs: the child's start (importing PyTorch, loading the model) then overlaps ours.
    ``ProcessInference`` checks the schema hash the child reports against its encoder's."""
    return _spawn({"model_dir": str(Path(model_dir)), "expected_schema_hash": None,
                   "torch_threads": torch_threads, "load_nice": load_nice, "inference": inference_kwargs},
                  _take_prestarted())


def _popen(preload: str | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "engine.worker.infer_process",
                             *([f"--preload={preload}"] if preload else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ.copy())


def _spawn(args: dict[str, Any], prestarted: subprocess.Popen[bytes] | None = None) -> subprocess.Popen[bytes]:
    # A child inherits the nice level of the *thread* that starts it, which need not be the
    # worker's own (a caller may load from a niced thread): the child serves at the
    # process's priority, whatever thread started it.
    args = {**args, "serve_nice": process_nice()}
    child = prestarted if prestarted is not None else _popen()
    try:
        _write(_stdin(child), args)
    except BaseException:
        child.kill()
        child.wait()
        raise
    return child


def _retire(child: subprocess.Popen[bytes]) -> None:
    """A replaced model's child becomes the spare (``prestart_model_process``'s slot) if
    the slot is free and the child alive; otherwise it is stopped. Runs wherever the last
    reference to a model is dropped (on the worker's loop, after a swap): it never waits."""
    global _prestarted
    kept = False
    with _prestarted_lock:
        if child.poll() is None and (_prestarted is None or _prestarted.poll() is not None):
            _prestarted, kept = child, True
    if kept:
        log.info("model process kept as the spare for the next swap", extra={"pid": child.pid})
    else:
        _stop(child)


def _stdin(child: subprocess.Popen[bytes]) -> BinaryIO:
    return cast(BinaryIO, child.stdin)  # always a pipe: the child is started with stdin=PIPE


def _stdout(child: subprocess.Popen[bytes]) -> BinaryIO:
    return cast(BinaryIO, child.stdout)  # always a pipe: the child is started with stdout=PIPE


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Close the child's stdin (it exits on end-of-file); reap it, or kill it if it
    lingers, on a thread of its own: this runs wherever the last reference to a model
    is dropped — after a hot swap, on the worker's loop — which must not wait for it."""
    try:
        _stdin(child).close()
    except OSError:
        pass
    threading.Thread(target=_reap, args=(child,), name="tollgate-model-reap", daemon=True).start()


def _reap(child: subprocess.Popen[bytes]) -> None:
    try:
        child.wait(5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
    _stdout(child).close()


# -- framing -------------------------------------------------------------------------------

def _write(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=5)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream: BinaryIO) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("model process closed its output")
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("model process closed its output mid-frame")
    return pickle.loads(data)


def _read_with_timeout(child: subprocess.Popen[bytes], timeout_s: float) -> Any:
    """The child's first reply, or an error if it has none within ``timeout_s``."""
    result: list[Any] = []
    reader = threading.Thread(target=lambda: result.append(_read(_stdout(child))), daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not result:
        raise RuntimeError(f"model process gave no answer in {timeout_s:g} s (exit code {child.poll()})")
    return result[0]


# -- the child -----------------------------------------------------------------------------

def process_nice() -> int:
    """This process's own priority: its main thread's nice level (on Linux each thread has
    one, and ``getpriority(PRIO_PROCESS, 0)`` answers for the calling thread only)."""
    return os.getpriority(os.PRIO_PROCESS, os.getpid())


def may_return_to(nice: int) -> bool:
    """Whether this process may lower its nice level back to ``nice`` (root, or
    ``RLIMIT_NICE`` allows it: an unprivileged process may go down to 20 - soft)."""
    # local: resource is POSIX-only and needed only to renice
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NICE)
    return os.geteuid() == 0 or soft == resource.RLIM_INFINITY or 20 - soft <= nice


class _nice_while:
    """Run the block ``increment`` nicer than ``serve_nice`` (the worker's priority), then
    serve at ``serve_nice`` — but only if this process may return to it; otherwise do
    nothing, since a model process stuck at low priority would slow every batch after."""

    def __init__(self, increment: int, serve_nice: int | None = None):
        self.increment = increment
        self.serve_nice = serve_nice
        self.original: int | None = None

    def __enter__(self) -> None:
        current = os.getpriority(os.PRIO_PROCESS, 0)
        serve = current if self.serve_nice is None else self.serve_nice
        if not may_return_to(serve):
            return
        self.original = serve
        if self.increment > 0 or serve != current:
            os.setpriority(os.PRIO_PROCESS, 0, min(19, serve + max(0, self.increment)))

    def __exit__(self, *exc: Any) -> None:
        if self.original is not None:
            os.setpriority(os.PRIO_PROCESS, 0, self.original)


def _serve(inp: BinaryIO, out: BinaryIO, preload: str | None = None) -> None:
    """Load the model, then answer batches until end-of-file on ``inp``. ``preload``
    (``prestart_model_process``): import what serving ``preload``'s runtime needs before
    the parent says which model to load — PyTorch and the inference code, or, for
    ``onnx``, onnxruntime only."""
    if preload == "onnx":
        # local: the point of a prestarted process is importing these before its model is known
        import onnxruntime  # noqa: F401
    elif preload is not None:
        # local: the point of a prestarted process is importing these before its model is known
        import torch  # noqa: F401

        from engine.stages.infer import Inference  # noqa: F401
    try:
        args = _read(inp)
    except EOFError:
        return  # the parent never used us (or died): nothing to serve
    inference = _load(args, out)
    if inference is None:
        return
    while True:
        try:
            frame = _read(inp)
        except EOFError:
            return  # the parent closed the pipe or died
        if "model_dir" in frame:
            # A spare (``spare_after_swap``): the next model, loaded where PyTorch already is.
            inference = _load(frame, out)
            if inference is None:
                return
            continue
        try:
            o = inference(frame if isinstance(inference, OnnxArrayInference) else _tensors(frame))
            reply: tuple[Any, ...] = ("ok", {"probs": _as_array(o.probs), "risk": _as_array(o.risk),
                                             "exit_layer": _as_array(o.exit_layer), "model_version": o.model_version,
                                             "extra": {k: _as_array(v) for k, v in o.extra.items()}})
        except Exception as exc:  # noqa: BLE001 - the parent raises it for this batch
            reply = ("error", type(exc).__name__, str(exc))
        _write(out, reply)


def _tensors(frame: dict[str, np.ndarray]) -> Any:
    """A frame's arrays as the PyTorch stage's ``ModelInputs`` (zero-copy)."""
    # local: only a model served through PyTorch reaches here; torch is imported by then (_load)
    import torch

    from engine.model.inputs import ModelInputs

    return ModelInputs(**{k: torch.from_numpy(v) for k, v in frame.items()})


def _load(args: dict[str, Any], out: BinaryIO) -> Any:
    """Load the model ``args`` names (niced as they say) and answer ready, or answer the
    error and return None (the child then exits: the parent refuses the model). A model
    whose card names an ONNX graph that the runtime serves loads without PyTorch
    (``engine.stages.infer_load``)."""
    try:
        with _nice_while(args.get("load_nice", 0), args.get("serve_nice")):
            # local: `python -m engine.worker.infer_process` runs this module first; the model (and PyTorch, if it needs it) load later, niced
            from engine.stages.infer_load import load_inference

            inference = load_inference(args["model_dir"], args["expected_schema_hash"], threads=args["torch_threads"],
                                       **args["inference"])
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which refuses the model
        _write(out, ("error", type(exc).__name__, str(exc)))
        return None
    _write(out, ("ready", inference.version, inference.card.schema_hash))
    return inference


if __name__ == "__main__":
    # Our stdout is the reply pipe: anything printed would corrupt a frame, so the
    # protocol gets the real stdout and print() goes to stderr.
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        # --preload=onnx | --preload=torch (bare --preload: torch)
        preload = next((a.partition("=")[2] or "torch" for a in sys.argv[1:] if a.startswith("--preload")), None)
        _serve(sys.stdin.buffer, protocol_out, preload=preload)
    except (BrokenPipeError, ConnectionResetError):
        # The worker died (SIGKILL, a bounded exit) while we answered: nothing to report
        # to anyone. Point the pipe at /dev/null so the exit-time flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), protocol_out.fileno())
        sys.exit(0)
