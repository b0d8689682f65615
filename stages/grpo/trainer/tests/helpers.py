"""Shared fixtures: a tiny randomly initialised decoder and batches sampled from it (nothing downloaded)."""

import json
import os
import random
from typing import List, Optional

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)

import torch

from spade_trainer import batch as B
from spade_trainer import checkpoints as C
from spade_trainer import microbatch as MB
from spade_trainer import model as M
from spade_trainer import train as T
from spade_trainer.logprobs import logprobs_reference

TINY = M.TinyConfig(vocab_size=48, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_positions=64)
SEED = 7


def tiny_model_dir(root: str) -> str:
    return M.write_tiny_config(os.path.join(root, "model"), TINY)


def load_version(model_dir: str, checkpoint_dir: Optional[str] = None) -> torch.nn.Module:
    """The tiny policy at the latest version in checkpoint_dir (or the initial one)."""
    model = M.load_base_model(model_dir, seed=SEED, dtype=torch.float32)
    latest = C.read_latest(checkpoint_dir) if checkpoint_dir else None
    if latest:
        state = torch.load(os.path.join(checkpoint_dir, latest["version"], C.TINY_WEIGHTS), map_location="cpu")
        model.load_state_dict(state)
    return model.eval()


def logprobs(model: torch.nn.Module, samples: List[B.Sample]) -> List[List[float]]:
    """Per-token log-probs of each sample's response under ``model`` (reference implementation)."""
    module = M.PolicyLogprobs(model, logprobs_reference)
    mb = MB.collate(list(range(len(samples))), samples, torch.device("cpu"))
    with torch.no_grad():
        lp = MB.response_logprobs(module, mb, lambda: torch.no_grad())
    return [lp[b, : len(s.response_ids)].tolist() for b, s in enumerate(samples)]


def make_samples(
    model_dir: str,
    count: int,
    advantage: float = 1.0,
    role: str = "agent",
    is_cap: float = 0.0,
    batch_of=lambda i: 0,
    seed: int = 0,
    prefix: str = "s",
) -> List[B.Sample]:
    """Samples whose behaviour log-probs are the initial policy's (on-policy)."""
    rng = random.Random(seed)
    samples = []
    for i in range(count):
        prompt = [rng.randrange(TINY.vocab_size) for _ in range(rng.randint(2, 6))]
        response = [rng.randrange(TINY.vocab_size) for _ in range(rng.randint(3, 8))]
        samples.append(B.Sample(f"{prefix}{i}", role, batch_of(i), prompt, response, [0.0] * len(response), advantage, 1.0, is_cap))
    model = load_version(model_dir)
    for s, lp in zip(samples, logprobs(model, samples)):
        s.old_logprobs = lp
    return samples


#: The placeholder generation server of :func:`trainer_config` (the preset takes it from $OPENAI_BASE_URL).
PRESET_SERVER = "http://127.0.0.1:30000/v1"


def trainer_config(**overrides) -> dict:
    """A complete trainer config: every key, with the values the Go side writes for the
    qwen3-30b-a3b-games preset with llm.agent.base_url = PRESET_SERVER, run "spade", grpo.model_path
    /models/qwen3-30b-a3b and grpo.checkpoint_dir /checkpoints/spade (TestTrainerConfigOfThePreset in
    stages/grpo holds the two equal). ``overrides`` replace top-level keys; a ``publish`` override is a
    dict merged into ``publish``."""
    cfg = {
        "step": 1,
        "seed": 0,
        "model_path": "/models/qwen3-30b-a3b",
        "checkpoint_dir": "/checkpoints/spade",
        "lora_rank": 0,
        "lora_alpha": 64.0,
        "lr": 1e-6,
        "weight_decay": 0.1,
        "adam_beta1": 0.9,
        "adam_beta2": 0.98,
        "max_grad_norm": 1.0,
        "tis": "token",
        "tis_cap": 2.0,
        "sample_mean_denominator": 192,
        "clip_low": 0.2,
        "clip_high": 0.28,
        "kl_beta": 0.0,
        "agg": "seq-mean-token-mean",
        "micro_batch_tokens": 16384,
        "gradient_checkpointing": True,
        "trainer_mode": "resident",
        "save_every": 16,
        "param_dtype": "bfloat16",
        "cpu_offload": "optimizer",
        "publish": {"mode": "sglang", "base_url": PRESET_SERVER, "command": "", "name_prefix": "spade", "urls": [PRESET_SERVER]},
    }
    publish = overrides.pop("publish", {})
    cfg.update(overrides)
    cfg["publish"] = {**cfg["publish"], **publish}
    return cfg


def config(model_dir: str, checkpoint_dir: str, step: int = 1, **overrides) -> dict:
    """:func:`trainer_config` for the tiny model: a large lr and small micro-batches so a few samples move
    the weights in several passes, the samples present as the denominator (no global batch to pad to), and
    nothing published (prefix ``t``), a process per step with float32 weights; then ``overrides`` as in :func:`trainer_config`."""
    tiny = {
        "step": step,
        "seed": SEED,
        "model_path": model_dir,
        "checkpoint_dir": checkpoint_dir,
        "lr": 1e-3,
        "micro_batch_tokens": 40,
        "sample_mean_denominator": 0,
        "trainer_mode": "per_step",
        "param_dtype": "float32",
        "cpu_offload": "none",
        "publish": {"mode": "none", "base_url": "", "urls": [], "name_prefix": "t"},
    }
    publish = {**tiny.pop("publish"), **overrides.pop("publish", {})}
    return trainer_config(**{**tiny, **overrides, "publish": publish})


def run_main(root: str, samples: List[B.Sample], cfg: dict, step: Optional[int] = None):
    """Write the batch and config, run the entry point; returns (exit code, metric rows, error text)."""
    step = cfg["step"] if step is None else step
    batch_path = os.path.join(root, f"batch-{step}.npz")
    cfg_path = os.path.join(root, f"cfg-{step}.json")
    metrics_path = os.path.join(root, f"metrics-{step}.jsonl")
    error_path = os.path.join(root, f"error-{step}.txt")
    for p in (metrics_path, error_path):
        if os.path.exists(p):
            os.remove(p)
    B.write_batch(batch_path, step, samples)
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    code = T.main(["--batch", batch_path, "--config", cfg_path, "--metrics", metrics_path, "--error-file", error_path])
    rows = []
    if os.path.exists(metrics_path):
        with open(metrics_path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    error = ""
    if os.path.exists(error_path):
        with open(error_path) as f:
            error = f.read()
    return code, rows, error
