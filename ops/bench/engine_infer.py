"""The worker's infer stage on a real-shaped batch: one model call or length-sorted
chunks, with PyTorch's encoder layers or the serving layers (``engine.model.serving_layers``).

    python ops/bench/engine_infer.py [--batch 128] [--reps 40] [--threads 1] [--model-dir DIR]

A worker batch is B events enriched with a warm context (full 16-event histories),
about half of them with a memo, plus the text-blind twin of every event with text
(``engine.pipeline``), encoded by the real encoder. The same rows are scored five ways:
one model call (``Inference._forward``) or length-sorted chunks of at most
``CPU_CHUNK_ROWS`` (``_forward_in_chunks``), each with the stock
``nn.TransformerEncoderLayer`` and with ``ServingEncoderLayer``, and chunks of serving
layers whose last layer computes every position rather than the CLS token alone
(``with_serving_layers(first_only=False)``), and ``Inference`` itself, on all rows and with
the rows that carry text scored apart from those that do not (``--mix users``: does a
batch pay for its longest memo?). ``Inference`` on the CPU does the last
(chunks, serving layers, CLS-only last layer); the first is what it did before. Variants
run in shuffled order and this thread's CPU time is measured (less sensitive than wall
time to other processes on a shared machine). Prints medians, ratios to the first, and
the largest difference from the first's outputs. ``--batch 8`` shows a quiet stream's
small batches (``Inference`` makes one call up to ``CPU_CHUNK_ROWS`` rows).
"""

from __future__ import annotations

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=128, help="events per batch (before twins)")
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model-dir", default=None, help="a model directory (default: a fresh model)")
    ap.add_argument("--mix", default="legacy", choices=("users", "legacy"),
                    help="events: ops/bench/engine_events.py's users mix, or the test factory's (legacy)")
    args = ap.parse_args()

    import torch

    from engine.features.memory import MemoryFeatureStore
    from engine.model.inputs import as_inputs, take_rows
    from engine.model.serving_layers import with_serving_layers
    from engine.stages.encode import EncodedBatch, FieldIsolatedEncoder
    from engine.stages.infer import CPU_CHUNK_ROWS, Inference
    from engine.text_twins import text_twins
    from tests.support.worker_support import save_fresh_model

    torch.set_num_threads(args.threads)
    model_dir = args.model_dir
    if model_dir is None:
        model_dir = str(save_fresh_model(Path(tempfile.mkdtemp(prefix="tollgate-infer-")), "bench"))
    stock, served = Inference.from_dir(model_dir, serving_layers=False), Inference.from_dir(model_dir)
    served_full_last = Inference.from_dir(model_dir, serving_layers=False)
    served_full_last.model = with_serving_layers(served_full_last.model, first_only=False)
    encoder, store = FieldIsolatedEncoder(), MemoryFeatureStore()
    warm = 30  # batches of history first, so every customer has a full window
    from ops.bench.engine_events import make_bench_events

    events = [b.event for b in make_bench_events(args.mix, "bench", args.batch * (warm + 1))]
    for i in range(warm):
        store.enrich(events[i * args.batch:(i + 1) * args.batch])
    last = events[warm * args.batch:]
    snaps = store.enrich(last)
    encoded = encoder.encode(last, snaps)
    text_rows, twins = text_twins(last)  # as engine.pipeline appends them
    if twins:
        encoded = EncodedBatch.concat([encoded, encoder.encode(twins, [snaps[i] for i in text_rows])])
    inputs = as_inputs(encoded)
    t = stock.card.temperature.verdict

    def variant(infer, chunked):
        def run():
            with torch.inference_mode():
                raw = infer._forward_in_chunks(inputs, t) if chunked else infer._forward(inputs, t)
            return raw[0]["verdict"]
        return run

    def text_apart():
        # #19's suspicion: a batch is padded to its longest memo. Rows without text in
        # one call and rows with text in another (each as Inference does it) instead.
        has_text = inputs.text_mask.any(dim=1)
        out = torch.empty(inputs.batch_size, 3)
        for rows in (torch.nonzero(~has_text).squeeze(1), torch.nonzero(has_text).squeeze(1)):
            if len(rows):
                out[rows] = served(take_rows(inputs, rows)).probs
        return out

    def served_probs():
        return served(inputs).probs

    variants = {"one call, stock layers": variant(stock, False),
                f"chunks <= {CPU_CHUNK_ROWS}, stock layers": variant(stock, True),
                "one call, serving layers": variant(served, False),
                f"chunks <= {CPU_CHUNK_ROWS}, serving, full last": variant(served_full_last, True),
                f"chunks <= {CPU_CHUNK_ROWS}, serving layers": variant(served, True),
                "Inference (as served)": served_probs,
                "Inference, text rows apart": text_apart}
    first = next(iter(variants))
    reference = variants[first]()
    reference_probs = served_probs()
    diffs = {name: float((fn() - (reference_probs if name.startswith("Inference") else reference)).abs().max())
             for name, fn in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for _ in range(3):
        for fn in variants.values():
            fn()
    for _ in range(args.reps):
        random.shuffle(names)
        for name in names:
            t0 = time.thread_time()
            variants[name]()
            times[name].append((time.thread_time() - t0) * 1000.0)
    print(f"{len(inputs.control_numeric)} rows ({len(last)} events + {len(text_rows)} text-free twins), "
          f"torch threads {torch.get_num_threads()}, {args.reps} reps, CPU ms per batch:")
    base = statistics.median(times[first])
    for name in variants:
        med = statistics.median(times[name])
        print(f"  {name:34s} median {med:7.2f}  min {min(times[name]):7.2f}  ratio {med / base:.2f}  "
              f"max |diff| {diffs[name]:.1e}")


if __name__ == "__main__":
    main()
