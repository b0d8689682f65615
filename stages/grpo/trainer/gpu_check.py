"""The trainer's GPU check: one prepared script, figures printed.

    cd stages/grpo/trainer && PYTHONUNBUFFERED=1 python3 gpu_check.py [--quick] [--only qwen3-8b] [--json OUT.json]

1. The log-softmax + gather implementations (PyTorch reference, chunked PyTorch, Triton) on a
   151,936-token vocabulary × 8,192 tokens, in float32 and bfloat16: relative error of the forward
   log-probs and of the logits' gradient against the reference (computed in float32 from the same
   inputs), peak extra memory over the logits themselves, and time of forward + backward.
2. One full trainer run (``spade_trainer.train.train``: batch file → AdamW steps → saved version) on a
   randomly initialised model of a few hundred million parameters: a Hugging Face Qwen2-style model
   saved to a temporary directory when transformers is installed (full fine-tuning, then LoRA with the
   KL reference when peft is installed too), else the tiny decoder scaled up. Nothing is downloaded.
   The settings are the qwen3-30b-a3b-games preset's (``trainer_config`` of tests/helpers.py: token TIS,
   seq-mean-token-mean), over the samples present.
3. One full fine-tuning update on **episode samples** (``grpo.sample_unit = episode``) of 8k, 16k and 32k
   tokens: a prompt, then Agent completions (trained) alternating with observation tokens (loss mask 0),
   in one global batch (``sample_mean_denominator`` = its size, as ``grpo.mix_roles`` runs it), with
   token-level TIS. Prints peak memory, time, and the distribution of the token TIS weights
   min(cap, π_old/π_rollout) over the trained tokens. There is no inference engine here, so the
   "rollout" log-probs are the same model's float32 forward, and the weights measure the trainer's
   bfloat16 autocast against float32 only (an engine adds its own kernels' differences).

4. ``--only qwen3-8b`` (or with the rest): one update of a randomly initialised **Qwen3-8B-shaped** model
   at the qwen3-8b-games preset's batch shape (one global batch of 192 turn samples: prompts of the
   paper's 512 + 128·k tokens, k = 0..23, and 64-token completions) with the settings that fit beside
   released servers: bfloat16 weights, the float32 master and Adam moments in host memory
   (``grpo.cpu_offload`` optimizer), activation checkpointing, the KL reference, micro-batches of 16,384
   tokens. The model is built on the GPU from a ``transformers.Qwen3Config`` (nothing downloaded); without
   transformers, from the tiny decoder at the same width, depth and vocabulary (said in the output).
   Prints the peak memory, trained tokens/s and the estimate of docs/gpu.md (``spade doctor --preset
   qwen3-8b-games --gpus 1``) beside it. About 4 minutes on one H200; it needs ~110 GB of host memory.

Needs CUDA; Triton where installed (the kernel rows are skipped, and say so, without it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))

import torch  # noqa: E402

from spade_trainer import batch as batchfile  # noqa: E402
from spade_trainer import logprobs as LP  # noqa: E402
from spade_trainer import model as models  # noqa: E402
from spade_trainer import microbatch  # noqa: E402
from spade_trainer import train as trainer  # noqa: E402

import helpers  # noqa: E402  (the tests' complete trainer config: the qwen3-30b-a3b-games preset's values)

VOCAB = 151_936
TOKENS = 8_192


def rel_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got − want‖ / ‖want‖ in float64."""
    got, want = got.double(), want.double()
    return float((got - want).norm() / want.norm())


def measure(fn: Callable[[], Any], repeats: int) -> Dict[str, float]:
    """Peak extra memory (GiB) of one call and its mean time (ms) over ``repeats`` after a warm-up."""
    fn()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return {"peak_extra_gib": peak, "ms": start.elapsed_time(stop) / repeats}


def kernel_check(tokens: int, vocab: int, repeats: int) -> List[Dict[str, Any]]:
    impls: Dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
        "reference": LP.logprobs_reference,
        "chunked": LP.logprobs_chunked,
    }
    if LP.triton_available():
        from spade_trainer.triton_logprobs import logprobs_triton

        impls["triton"] = logprobs_triton
    else:
        print("triton: not available (no triton module or no CUDA): kernel rows skipped")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(tokens, vocab, device="cuda", generator=gen) * 4.0).to(dtype)
        targets = torch.randint(0, vocab, (tokens,), device="cuda", generator=gen)
        upstream = torch.randn(tokens, device="cuda", generator=gen)
        # The reference in float32 from the same (possibly bf16-rounded) logits.
        ref_in = logits.detach().float().clone().requires_grad_(True)  # a leaf of its own, in float32 too
        ref_out = LP.logprobs_reference(ref_in, targets)
        (ref_out * upstream).sum().backward()
        ref_out, ref_grad = ref_out.detach(), ref_in.grad
        del ref_in
        for name, fn in impls.items():
            x = logits.detach().clone().requires_grad_(True)
            out = fn(x, targets)
            (out * upstream).sum().backward()
            row = {
                "impl": name,
                "dtype": str(dtype).replace("torch.", ""),
                "fwd_rel_err": rel_error(out, ref_out),
                "bwd_rel_err": rel_error(x.grad.float(), ref_grad),
            }
            del x, out

            def step(fn=fn) -> None:
                y = logits.detach().requires_grad_(True)
                (fn(y, targets) * upstream).sum().backward()

            row.update(measure(step, repeats))
            rows.append(row)
            print(
                f"logprobs {row['impl']:9s} {row['dtype']:8s} fwd rel err {row['fwd_rel_err']:.2e}  "
                f"bwd rel err {row['bwd_rel_err']:.2e}  peak extra {row['peak_extra_gib']:.2f} GiB  "
                f"fwd+bwd {row['ms']:.2f} ms",
                flush=True,
            )
        del logits, ref_grad
        torch.cuda.empty_cache()
    return rows


def build_model_dir(root: str, quick: bool, max_positions: int = 4096, name: str = "model") -> Dict[str, Any]:
    """A random model of a few hundred million parameters saved under root/model; returns its description."""
    path = os.path.join(root, name)
    try:
        import transformers
    except ImportError:
        transformers = None
    if transformers is not None:
        config = transformers.Qwen2Config(
            vocab_size=VOCAB,
            hidden_size=1024,
            intermediate_size=2816,
            num_hidden_layers=2 if quick else 8,
            num_attention_heads=16,
            num_key_value_heads=8,
            max_position_embeddings=max_positions,
            tie_word_embeddings=False,
        )
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config)
        model.save_pretrained(path)
        params = sum(p.numel() for p in model.parameters())
        del model
        return {"path": path, "kind": f"transformers Qwen2 (transformers {transformers.__version__})", "params": params}
    cfg = models.TinyConfig(
        vocab_size=VOCAB, hidden_size=1024, num_layers=2 if quick else 8, num_heads=16, intermediate_size=4096,
        max_positions=max_positions
    )
    models.write_tiny_config(path, cfg)
    params = sum(p.numel() for p in models.build_tiny(cfg, 0).parameters())
    return {"path": path, "kind": "spade tiny decoder (transformers not installed)", "params": params}


def synthetic_batch(path: str, samples: int, prompt: int, response: int, global_batches: int) -> int:
    gen = torch.Generator().manual_seed(1)
    rows = []
    for i in range(samples):
        p = torch.randint(0, VOCAB, (prompt,), generator=gen).tolist()
        r = torch.randint(0, VOCAB, (response,), generator=gen).tolist()
        old = (-(torch.rand(response, generator=gen) * 4 + 8)).tolist()  # near log(1/151936) ≈ −11.9
        role = "designer" if i % 8 == 0 else "agent"
        rows.append(
            batchfile.Sample(f"s{i}", role, i % global_batches, p, r, old, float(torch.randn(1, generator=gen)), 1.0, 2.0 if role == "designer" else 0.0)
        )
    batchfile.write_batch(path, 1, rows)
    return samples * response


def update_check(root: str, model: Dict[str, Any], lora: bool, quick: bool) -> Dict[str, Any]:
    name = "lora" if lora else "full"
    batch_path = os.path.join(root, f"batch-{name}.npz")
    tokens = synthetic_batch(batch_path, 16 if quick else 64, 256, 512, 2)
    cfg = trainer.TrainConfig.from_dict(
        helpers.trainer_config(
            model_path=model["path"],
            checkpoint_dir=os.path.join(root, f"ckpt-{name}"),
            lora_rank=32 if lora else 0,
            kl_beta=0.005 if lora else 0.0,
            sample_mean_denominator=0,
            publish={"mode": "none", "name_prefix": "gpucheck", "urls": []},
        )
    )
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    rows = trainer.train(cfg, batch_path, os.path.join(root, f"metrics-{name}.jsonl"))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    result = {
        "mode": name,
        "model": model["kind"],
        "params": model["params"],
        "response_tokens": tokens,
        "seconds_total": seconds,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
        "rows": rows,
    }
    print(
        f"update {name}: {model['kind']}, {model['params'] / 1e6:.0f}M params, {tokens} response tokens, "
        f"{seconds:.1f} s wall (load + 2 optimizer steps + save), peak {result['peak_gib']:.1f} GiB",
        flush=True,
    )
    for r in rows:
        print(
            f"  {r['role']:8s} loss {r['loss']:+.4f} kl {r['kl']:.2e} clip {r['clip_frac']:.3f} "
            f"ratio mean {r['ratio_mean']:.3f} max {r['ratio_max']:.3f} is_w {r['is_weight_mean']:.3f} "
            f"grad norm {r['grad_norm']:.3f} tokens {r['tokens']} {r['seconds']:.2f} s",
            flush=True,
        )
    return result


EPISODE_LENGTHS = (8_192, 16_384, 32_768)


def episode_samples(lengths: List[int], per_length: int, completion: int = 384, observation: int = 256) -> List[batchfile.Sample]:
    """Episode samples of the given total lengths: a 1,024-token prompt, then completions (mask 1) and
    observations (mask 0) alternating; advantages ±1. Log-probs are filled in by :func:`rollout_logprobs`."""
    gen = torch.Generator().manual_seed(2)
    samples = []
    for length in lengths:
        for k in range(per_length):
            prompt = torch.randint(0, VOCAB, (1024,), generator=gen).tolist()
            response: List[int] = []
            mask: List[int] = []
            turn = 0
            while len(prompt) + len(response) < length:
                size = min(observation if turn % 2 else completion, length - len(prompt) - len(response))
                response += torch.randint(0, VOCAB, (size,), generator=gen).tolist()
                mask += [0 if turn % 2 else 1] * size
                turn += 1
            samples.append(
                batchfile.Sample(f"ep{length}-{k}", "agent", 0, prompt, response, [0.0] * len(response), 1.0 if k % 2 == 0 else -1.0, 1.0,
                                 0.0, loss_mask=mask)
            )
    return samples


def rollout_logprobs(model_path: str, samples: List[batchfile.Sample]) -> None:
    """Stand-in rollout log-probs: the same initial weights in float32, no autocast (0 on masked tokens)."""
    model = models.load_base_model(model_path, seed=0, dtype=torch.float32).cuda().eval()
    module = models.PolicyLogprobs(model, LP.logprobs_fused)
    with torch.no_grad():
        for i, s in enumerate(samples):
            mb = microbatch.collate([i], samples, torch.device("cuda"))
            lp = microbatch.response_logprobs(module, mb, lambda: torch.autocast("cuda", enabled=False))[0].tolist()
            s.old_logprobs = [min(x, 0.0) if m else 0.0 for x, m in zip(lp, s.mask())]
    del model, module
    torch.cuda.empty_cache()


def episode_check(root: str, quick: bool) -> Dict[str, Any]:
    """One full fine-tuning update on episode samples of 8k-32k tokens with token TIS; figures printed."""
    from spade_trainer import loss as losses

    lengths = [2_048, 4_096] if quick else list(EPISODE_LENGTHS)
    model = build_model_dir(root, quick, max_positions=max(lengths) + 1024, name="model-episodes")
    samples = episode_samples(lengths, per_length=2)
    rollout_logprobs(model["path"], samples)
    batch_path = os.path.join(root, "batch-episodes.npz")
    batchfile.write_batch(batch_path, 1, samples)
    weights: List[torch.Tensor] = []
    original = losses.compute_token_tis_weight

    def recording(old_logp, rollout_logp, mask, cap):
        w = original(old_logp, rollout_logp, mask, cap)
        weights.append(w[mask > 0].detach().float().cpu())
        return w

    losses.compute_token_tis_weight = recording
    cfg = trainer.TrainConfig.from_dict(
        helpers.trainer_config(
            model_path=model["path"],
            checkpoint_dir=os.path.join(root, "ckpt-episodes"),
            sample_mean_denominator=len(samples),
            micro_batch_tokens=max(lengths),
            publish={"mode": "none", "name_prefix": "gpucheck", "urls": []},
        )
    )
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    try:
        rows = trainer.train(cfg, batch_path, os.path.join(root, "metrics-episodes.jsonl"))
    finally:
        losses.compute_token_tis_weight = original
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    w = torch.cat(weights) if weights else torch.zeros(0)
    quantiles = {}
    if len(w):
        qs = torch.tensor([0.0, 0.01, 0.5, 0.99, 1.0])
        quantiles = dict(zip(["min", "p01", "p50", "p99", "max"], torch.quantile(w[:1_000_000], qs).tolist()))
    result = {
        "mode": "full, episode samples",
        "model": model["kind"],
        "params": model["params"],
        "lengths": lengths,
        "samples": len(samples),
        "trained_tokens": sum(sum(s.mask()) for s in samples),
        "seconds_total": seconds,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
        "tis_weights": {"count": int(len(w)), "mean": float(w.mean()) if len(w) else 0.0,
                        "at_cap": float((w >= 2.0).float().mean()) if len(w) else 0.0, **quantiles},
        "rows": rows,
    }
    print(
        f"update episodes: {model['kind']}, {model['params'] / 1e6:.0f}M params, {len(samples)} episodes of {lengths} tokens, "
        f"{result['trained_tokens']} trained tokens, {seconds:.1f} s wall (load + proximal pass + 1 optimizer step + save), "
        f"peak {result['peak_gib']:.1f} GiB",
        flush=True,
    )
    print(f"  token TIS weights: {result['tis_weights']}", flush=True)
    return result


#: Qwen3-8B's config.json: the shape the colocated check trains.
QWEN3_8B = dict(
    vocab_size=151_936, hidden_size=4096, intermediate_size=12_288, num_hidden_layers=36, num_attention_heads=32,
    num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
)


def estimate_trainer_bytes(shape: Dict[str, Any], tokens: int, reference: bool) -> Dict[str, int]:
    """docs/gpu.md's trainer estimate on one GPU with bfloat16 weights, the optimizer in host memory and
    activation checkpointing (stages/grpo/memory.go, EstimateTrainerMemory): weights 2P, gradients 2P,
    reference 2P, activations L·T·H·2 + T·(10·H + 3·I)·2, logits T·V·2; host 12P."""
    h, i, v, layers = shape["hidden_size"], shape["intermediate_size"], shape["vocab_size"], shape["num_hidden_layers"]
    q, kv = shape["num_attention_heads"] * shape["head_dim"], shape["num_key_value_heads"] * shape["head_dim"]
    layer = h * q + 2 * h * kv + q * h + 3 * h * i
    params = layers * layer + v * h * (1 if shape["tie_word_embeddings"] else 2)
    parts = {
        "weights": 2 * params,
        "gradients": 2 * params,
        "reference": 2 * params if reference else 0,
        "activations": layers * tokens * h * 2 + tokens * (10 * h + 3 * i) * 2,
        "logits": tokens * v * 2,
    }
    parts["device"] = sum(parts.values())
    parts["host"] = 12 * params
    parts["params"] = params
    return parts


def _on(device: torch.device) -> Any:
    """A context that creates tensors on ``device`` (PyTorch >= 2.0), else nothing: they are moved after."""
    return device if hasattr(device, "__enter__") else contextlib.nullcontext()


def build_qwen3_8b(shape: Dict[str, Any], device: torch.device) -> Dict[str, Any]:
    """A randomly initialised model of ``shape`` (a Qwen3 config's sizes) in bfloat16 on ``device``."""
    torch.manual_seed(0)
    try:
        import transformers
    except ImportError:
        transformers = None
    if transformers is not None and hasattr(transformers, "Qwen3Config"):
        config = transformers.Qwen3Config(**shape, max_position_embeddings=8192, use_cache=False)
        with _on(device):
            model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16).to(device)
        kind = f"transformers Qwen3 (transformers {transformers.__version__})"
    else:
        # The tiny decoder's MLP has two matrices: width 3·I/2 holds the parameters of Qwen3's three of I;
        # its attention has as many key/value heads as query heads (no grouping), so it is somewhat larger.
        cfg = models.TinyConfig(
            vocab_size=shape["vocab_size"], hidden_size=shape["hidden_size"], num_layers=shape["num_hidden_layers"],
            num_heads=shape["num_attention_heads"], intermediate_size=3 * shape["intermediate_size"] // 2, max_positions=8192,
        )
        with _on(device):
            model = models.build_tiny(cfg, 0).to(device, torch.bfloat16)
        why = "transformers is not installed" if transformers is None else "this transformers has no Qwen3Config"
        kind = f"spade tiny decoder at Qwen3-8B's width, depth and vocabulary ({why}; not the real architecture)"
    return {"model": model, "kind": kind, "shape": shape, "params": sum(p.numel() for p in model.parameters())}


def qwen3_8b_samples(count: int = 192, completion: int = 64, vocab: int = QWEN3_8B["vocab_size"]) -> List[batchfile.Sample]:
    """The 8B preset's step shape: ``count`` turn samples in one global batch, turn k's prompt 512 + 128·k
    tokens (k cycling over 0..23), a ``completion``-token response; rollout log-probs near uniform."""
    gen = torch.Generator().manual_seed(2)
    samples = []
    for n in range(count):
        prompt = torch.randint(0, vocab, (512 + 128 * (n % 24),), generator=gen).tolist()
        response = torch.randint(0, vocab, (completion,), generator=gen).tolist()
        old = (-(torch.rand(completion, generator=gen) * 2 + 11)).tolist()
        advantage = 1.0 if n % 2 == 0 else -1.0
        samples.append(batchfile.Sample(f"t{n}", "agent", 0, prompt, response, old, advantage, 1.0, 0.0))
    return samples


def qwen3_8b_check(quick: bool, device: torch.device = torch.device("cuda"), shape: Dict[str, Any] = QWEN3_8B, count: int = 192) -> Dict[str, Any]:
    """One update of a Qwen3-8B-shaped model with the colocated settings; peak memory and tokens/s beside
    the estimate. ``quick`` keeps 2 layers and 48 samples; ``device``, ``shape`` and ``count`` let the CPU
    test run the same code on a small shape."""
    import copy

    from spade_trainer.distributed import Dist
    from spade_trainer.optim import MasterAdamW

    cuda = device.type == "cuda"
    if quick:
        shape, count = dict(shape, num_hidden_layers=2), min(count, 48)
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    built = build_qwen3_8b(shape, device)
    model = built["model"]
    models.prepare_for_training(model, gradient_checkpointing=True)
    reference = copy.deepcopy(model).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    build_seconds = time.perf_counter() - started
    cfg = trainer.TrainConfig.from_dict(
        helpers.trainer_config(
            model_path="/nonexistent/qwen3-8b", kl_beta=0.005, sample_mean_denominator=192, param_dtype="bfloat16",
            cpu_offload="optimizer", publish={"mode": "none", "name_prefix": "gpucheck", "urls": []},
        )
    )
    dist = Dist(device=device)
    module = models.PolicyLogprobs(model, LP.logprobs_fused)
    ref_module = models.PolicyLogprobs(reference, LP.logprobs_fused)
    autocast = lambda: torch.autocast(device_type=device.type, dtype=torch.bfloat16)  # noqa: E731
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = MasterAdamW(params, torch.device("cpu"), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2))

    def ref_logprobs(mb: microbatch.MicroBatch) -> torch.Tensor:
        with torch.no_grad():
            return microbatch.response_logprobs(ref_module, mb, autocast)

    policy = trainer.Policy(module, params, optimizer, ref_logprobs, autocast, lambda limit: torch.nn.utils.clip_grad_norm_(params, limit))
    samples = qwen3_8b_samples(count, vocab=shape["vocab_size"])
    if cuda:
        torch.cuda.synchronize()
    update_started = time.perf_counter()
    stats = trainer.run_update(cfg, samples, policy, dist)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - update_started
    trained = sum(s.tokens for s in stats.values())
    total = sum(len(s.prompt_ids) + len(s.response_ids) for s in samples)
    estimate = estimate_trainer_bytes(built["shape"], cfg.micro_batch_tokens, reference=True)
    peak = torch.cuda.max_memory_allocated() if cuda else trainer.peak_memory_bytes(device)
    result = {
        "check": "qwen3-8b colocated update",
        "model": built["kind"],
        "params": built["params"],
        "samples": len(samples),
        "tokens": total,
        "trained_tokens": trained,
        "build_seconds": build_seconds,
        "update_seconds": seconds,
        "tokens_per_second": total / seconds,
        "peak_gib": peak / 2**30,
        "reserved_gib": (torch.cuda.max_memory_reserved() if cuda else peak) / 2**30,
        "estimate_gib": {k: v / 2**30 for k, v in estimate.items() if k != "params"},
        "rows": {role: s.row(role, cfg.lr, "gpucheck") for role, s in stats.items()},
    }
    print(
        f"qwen3-8b colocated: {built['kind']}, {built['params'] / 1e9:.2f}B params, {len(samples)} samples, {total} tokens "
        f"({trained} trained); update {seconds:.1f} s ({total / seconds:,.0f} tokens/s, proximal pass + forward/backward "
        f"+ CPU AdamW), built in {build_seconds:.1f} s",
        flush=True,
    )
    print(
        f"  peak GPU memory {result['peak_gib']:.1f} GiB allocated ({result['reserved_gib']:.1f} reserved); estimate "
        f"{result['estimate_gib']['device']:.1f} GiB (weights {result['estimate_gib']['weights']:.1f}, gradients "
        f"{result['estimate_gib']['gradients']:.1f}, reference {result['estimate_gib']['reference']:.1f}, activations "
        f"{result['estimate_gib']['activations']:.1f}, logits {result['estimate_gib']['logits']:.1f}); host state "
        f"{result['estimate_gib']['host']:.1f} GiB",
        flush=True,
    )
    del policy, optimizer, module, ref_module, model, reference
    if cuda:
        torch.cuda.empty_cache()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes, for a smoke run")
    parser.add_argument("--json", default="", help="also write the figures here")
    parser.add_argument("--only", choices=("qwen3-8b",), default="", help="run only this section (qwen3-8b: the colocated 8B update)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_check: CUDA is not available", file=sys.stderr)
        return 1
    if args.only == "qwen3-8b":
        figures_8b = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "qwen3_8b": qwen3_8b_check(args.quick)}
        if args.json:
            with open(args.json, "w") as f:
                json.dump(figures_8b, f, indent=1)
        return 0
    import importlib.util

    triton_version = "absent"
    if importlib.util.find_spec("triton") is not None:
        import triton

        triton_version = triton.__version__
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, triton {triton_version}", flush=True)
    figures: Dict[str, Any] = {"torch": torch.__version__, "device": torch.cuda.get_device_name(), "triton": triton_version}
    tokens = 2048 if args.quick else TOKENS
    figures["logprobs"] = kernel_check(tokens, VOCAB, repeats=3 if args.quick else 10)
    failures = [r for r in figures["logprobs"] if r["dtype"] == "float32" and r["impl"] != "reference" and r["fwd_rel_err"] > 1e-6]
    with tempfile.TemporaryDirectory() as root:
        model = build_model_dir(root, args.quick)
        figures["updates"] = [update_check(root, model, lora=False, quick=args.quick)]
        # LoRA needs peft and a Hugging Face model (peft's target modules are q_proj, ... by name).
        if importlib.util.find_spec("peft") is not None and not models.is_tiny(model["path"]):
            figures["updates"].append(update_check(root, model, lora=True, quick=args.quick))
        else:
            print("update lora: skipped (needs transformers and peft)")
        figures["updates"].append(episode_check(root, args.quick))
    figures["qwen3_8b"] = qwen3_8b_check(args.quick)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    if failures:
        print(f"gpu_check: float32 forward relative error above 1e-6: {failures}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
