"""GPU paths of the decision model: CUDA inference speed, and the pretrained backbone
loaded in 8 and 4 bits through bitsandbytes (with a QLoRA step). Needs a CUDA machine;
never part of CI (CI machines have no GPU).

    python ops/bench/gpu.py [--quick]

Prints one report:

1. The default decision model through ``engine.stages.infer.Inference`` on the CPU (2 threads,
   as the CPU benchmark) and on CUDA: batch-1 p50/p99 and events/s at larger batches,
   and the largest difference between CPU and CUDA probabilities (same weights).
2. The ``backbone="hf"`` path (``engine.model.hf``) with a SmolLM2-135M-shaped Llama
   (30 layers, 576 wide; random weights written with ``save_pretrained`` to a local
   directory, then loaded through the real ``load_pretrained``, offline) in bf16, 8-bit
   and 4-bit: load time, GPU memory, batch-1 and batch-256 latency, and how far the
   quantised verdict probabilities move from bf16 on the same inputs.
3. QLoRA: the 4-bit backbone with LoRA adapters (``hf_lora_rank``), a few optimiser
   steps on a fixed batch: the loss must fall and only adapter and head weights change.
4. The A/B the design rests on, on the GPU: one forward pass plus a head against
   generating a 14-token JSON verdict with ``generate`` (KV cache), same backbone.

Weights are random: speed and memory do not depend on them, and the machine this runs
on reaches no model hub (the real SmolLM2 GGUF is the CPU benchmark's, ops/bench/model.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import torch
from _common import percentile as pct  # noqa: E402
from _common import timed_ms

from engine.model import InputSpec, fresh_model, random_inputs  # noqa: E402
from engine.stages.infer import Inference  # noqa: E402

JSON_TOKENS = 14  # {"verdict":"review","risk":0.42} in JSON-piece tokens (as ops/bench/model.py)

# SmolLM2-135M's published architecture (config.json of HuggingFaceTB/SmolLM2-135M).
SMOLLM2_135M = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, vocab_size=49152, max_position_embeddings=8192,
                    rms_norm_eps=1e-5, rope_theta=100000.0, tie_word_embeddings=True)


def default_spec() -> InputSpec:
    from engine.stages.encode import FeatureSchema

    return InputSpec.from_schema(FeatureSchema.default())


def bench_default_model(quick: bool) -> None:
    spec = default_spec()
    model, card = fresh_model(spec, version="bench")
    cpu = Inference(model, card)
    torch.set_num_threads(2)
    model_cuda, card_cuda = fresh_model(spec, version="bench")  # same seed, same weights
    gpu = Inference(model_cuda, card_cuda, device="cuda")
    rep = 100 if quick else 400
    print(f"\n== 1. default decision model ({model.config.n_layers} layers, {model.config.d_model} wide): "
          f"CPU (2 threads) vs CUDA, through engine.stages.infer.Inference")
    for fill, label in ((0.0, "no memo"), (1.0, "full memo")):
        one = random_inputs(spec, 1, seed=1, text_fill=fill)
        c = timed_ms(lambda one=one: cpu(one), rep)
        g = timed_ms(lambda one=one: gpu(one), rep, sync=torch.cuda.synchronize)
        print(f"batch 1 {label:9s}  CPU p50 {pct(c, 50):6.2f} p99 {pct(c, 99):6.2f} ms   "
              f"CUDA p50 {pct(g, 50):6.2f} p99 {pct(g, 99):6.2f} ms")
    print(f"{'batch':>6s} {'CPU ev/s':>10s} {'CUDA ev/s':>11s} {'CUDA/CPU':>9s}   (half with memo)")
    for bs in (32, 128, 1024, 8192):
        batch = random_inputs(spec, bs, seed=2, text_fill=0.5)
        n = max(10, rep // 10)
        c_ms = statistics.median(timed_ms(lambda batch=batch: cpu(batch), n if bs <= 1024 else 3, warmup=2))
        g_ms = statistics.median(timed_ms(lambda batch=batch: gpu(batch), n, warmup=3, sync=torch.cuda.synchronize))
        print(f"{bs:6d} {bs / c_ms * 1000:10.0f} {bs / g_ms * 1000:11.0f} {c_ms / g_ms:8.1f}x")
    batch = random_inputs(spec, 512, seed=4, text_fill=0.5)
    diff = (cpu(batch).probs - gpu(batch).probs).abs().max().item()
    print(f"max |p_cpu - p_cuda| over 512 events x 3 verdicts: {diff:.2e}")


def write_smollm2_shaped(folder: Path) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    lm = LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M)).to(torch.bfloat16)
    lm.save_pretrained(folder)  # safetensors + config.json, as a downloaded checkpoint is


def bench_hf_backbone(folder: Path, quick: bool) -> None:
    import bitsandbytes

    spec = default_spec()
    print(f"\n== 2. pretrained backbone (SmolLM2-135M-shaped Llama, random weights) through "
          f"engine.model.hf, bitsandbytes {bitsandbytes.__version__}")
    print(f"{'load':>6s} {'load s':>7s} {'GPU MiB':>8s} {'b1 p50':>7s} {'b1 p99':>7s} {'b256 ms':>8s} "
          f"{'ev/s b256':>10s} {'max|dp| vs bf16':>16s}")
    one = random_inputs(spec, 1, seed=1, text_fill=0.5)
    big = random_inputs(spec, 256, seed=2, text_fill=0.5)
    reference = None
    rep = 50 if quick else 200
    for bits in (None, 8, 4):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        model, card = fresh_model(spec, version=f"hf-{bits or 'bf16'}", backbone="hf", hf_path=str(folder),
                                  pooling="last", hf_bits=bits)
        if bits is None:
            model.backbone.hf.to(torch.bfloat16)
        infer = Inference(model, card, device="cuda")
        load_s = time.perf_counter() - t0
        mib = (torch.cuda.memory_allocated() - before) / 2**20
        b1 = timed_ms(lambda infer=infer: infer(one), rep, sync=torch.cuda.synchronize)
        b256 = statistics.median(timed_ms(lambda infer=infer: infer(big), max(10, rep // 5),
                                          sync=torch.cuda.synchronize))
        probs = infer(big).probs
        if reference is None:
            reference, drift = probs, 0.0
        else:
            drift = (probs - reference).abs().max().item()
        name = "bf16" if bits is None else f"{bits}-bit"
        print(f"{name:>6s} {load_s:7.1f} {mib:8.0f} {pct(b1, 50):7.2f} {pct(b1, 99):7.2f} {b256:8.2f} "
              f"{256 / b256 * 1000:10.0f} {drift:16.3f}")
        del infer, model
    print("(heads are untrained, so max|dp| measures how far quantisation moves the pooled state)")


def bench_qlora(folder: Path, quick: bool) -> None:
    spec = default_spec()
    model, _card = fresh_model(spec, version="qlora", backbone="hf", hf_path=str(folder), pooling="last",
                               hf_bits=4, hf_lora_rank=8)
    model = model.to("cuda").train()
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    frozen_quantised = [n for n, p in model.named_parameters() if not p.requires_grad]
    before = {n: p.detach().clone() for n, p in trainable.items()}
    from engine.model.inputs import inputs_to

    batch = inputs_to(random_inputs(spec, 64, seed=5, text_fill=0.5), "cuda")
    labels = torch.randint(0, 3, (64,), generator=torch.Generator().manual_seed(5)).to("cuda")
    opt = torch.optim.AdamW(trainable.values(), lr=2e-3)
    losses = []
    t0 = time.perf_counter()
    steps = 10 if quick else 30
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(batch)["verdict"].float(), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    torch.cuda.synchronize()
    changed = sum(1 for n, p in trainable.items() if not torch.equal(p.detach(), before[n]))
    lora = sum(p.numel() for n, p in trainable.items() if "lora_" in n)
    print(f"\n== 3. QLoRA (4-bit backbone, LoRA r=8): {steps} steps on one 64-event batch in "
          f"{time.perf_counter() - t0:.1f} s; loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    print(f"trainable tensors {len(trainable)} ({lora:,} LoRA weights), changed {changed}; "
          f"frozen tensors {len(frozen_quantised)}")
    if not losses[-1] < losses[0]:
        print("FAILED: the QLoRA loss did not fall")


def bench_generate_vs_heads(folder: Path, quick: bool) -> None:
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype=torch.bfloat16).to("cuda").eval()
    head = torch.nn.Linear(lm.config.hidden_size, 3).to("cuda", torch.bfloat16)
    prompt = torch.randint(0, lm.config.vocab_size, (1, 48), generator=torch.Generator().manual_seed(0)).to("cuda")

    def heads_once() -> None:
        with torch.inference_mode():
            head(lm.model(input_ids=prompt).last_hidden_state[:, -1])

    def generate() -> None:
        with torch.inference_mode():
            lm.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=JSON_TOKENS,
                        min_new_tokens=JSON_TOKENS, do_sample=False, pad_token_id=0)

    rep = 20 if quick else 50
    h = statistics.median(timed_ms(heads_once, rep, sync=torch.cuda.synchronize))
    g = statistics.median(timed_ms(generate, max(5, rep // 4), warmup=2, sync=torch.cuda.synchronize))
    print(f"\n== 4. A/B on CUDA, SmolLM2-135M-shaped, bf16, 48-token prompt, batch 1: forward + head "
          f"{h:.2f} ms   generate {JSON_TOKENS} tokens {g:.2f} ms   ratio {g / h:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("ops/bench/gpu.py needs CUDA; on the CPU use ops/bench/model.py")
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    bench_default_model(args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "smollm2-135m-shaped"
        write_smollm2_shaped(folder)
        for section in (bench_hf_backbone, bench_qlora, bench_generate_vs_heads):
            try:
                section(folder, args.quick)
            except Exception as exc:  # one broken path must not hide the others' figures
                print(f"\n== {section.__name__} FAILED: {type(exc).__name__}: {exc}")
                import traceback

                traceback.print_exc()


if __name__ == "__main__":
    main()
