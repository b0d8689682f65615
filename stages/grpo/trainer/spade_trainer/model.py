"""Policy models: a Hugging Face causal LM from a local path (full fine-tuning or LoRA), or a tiny decoder.

A model directory holds either a Hugging Face checkpoint (``config.json`` + weights; loaded with
``transformers``, ``local_files_only=True``: nothing is downloaded, ever) or ``spade_tiny.json``, the
config of :class:`TinyDecoder`, a small pre-norm transformer randomly initialised from ``seed`` (the
tests and the GPU check use it; it needs only PyTorch). Either way the trainer sees a model with
``get_decoder()`` (input_ids, attention_mask → hidden states) and ``get_output_embeddings()`` (the
vocabulary projection), so logits are computed only at response positions. A tiny model directory that
also holds ``model.pt`` (a state dict, the tiny checkpoint format) starts from those weights instead of
the seed's (``spade lab`` warm-starts its policy this way).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Callable, List, Optional, Sequence

import torch
from torch import nn

TINY_CONFIG_FILE = "spade_tiny.json"
#: Initial weights of a tiny model directory (optional; the same name as a tiny checkpoint's weights).
TINY_INITIAL_WEIGHTS = "model.pt"
#: The modules a LoRA adapter wraps: every attention and MLP projection of a Qwen/Llama-style decoder.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class TinyConfig:
    """Shape of a :class:`TinyDecoder`."""

    vocab_size: int = 64
    hidden_size: int = 32
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 64
    max_positions: int = 256

    def validate(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{TINY_CONFIG_FILE}: {name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_heads:
            raise ValueError(f"{TINY_CONFIG_FILE}: hidden_size {self.hidden_size} is not divisible by num_heads")


class _Block(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.hidden_size // cfg.num_heads
        self.attn_norm = nn.LayerNorm(cfg.hidden_size)
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.o_proj = nn.Linear(cfg.hidden_size, cfg.hidden_size, bias=False)
        self.mlp_norm = nn.LayerNorm(cfg.hidden_size)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        h = self.attn_norm(x)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.q_proj(h)), heads(self.k_proj(h)), heads(self.v_proj(h))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + attn_bias
        attn = torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v
        x = x + self.o_proj(attn.transpose(1, 2).reshape(batch, length, hidden))
        return x + self.down_proj(torch.nn.functional.gelu(self.up_proj(self.mlp_norm(x))))


class TinyBackbone(nn.Module):
    """Embeddings, causal blocks and the final norm: (input_ids, attention_mask) → hidden [B, L, H]."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.embed_positions = nn.Embedding(cfg.max_positions, cfg.hidden_size)
        self.layers = nn.ModuleList([_Block(cfg) for _ in range(cfg.num_layers)])
        self.norm = nn.LayerNorm(cfg.hidden_size)
        self.max_positions = cfg.max_positions

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        batch, length = input_ids.shape
        if length > self.max_positions:
            raise ValueError(f"tiny model: sequence of {length} tokens exceeds max_positions {self.max_positions}")
        positions = torch.arange(length, device=input_ids.device)
        x = self.embed_tokens(input_ids) + self.embed_positions(positions).unsqueeze(0)
        causal = torch.ones(length, length, dtype=torch.bool, device=input_ids.device).tril()
        allowed = causal.unsqueeze(0)
        if attention_mask is not None:
            allowed = allowed & attention_mask.bool().unsqueeze(1)
        # A padded query row may have no allowed key; let it attend to itself so softmax stays finite.
        allowed = allowed | torch.eye(length, dtype=torch.bool, device=input_ids.device).unsqueeze(0)
        neg = torch.finfo(x.dtype).min
        attn_bias = torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill(~allowed, neg)
        attn_bias = attn_bias.unsqueeze(1)
        for layer in self.layers:
            x = layer(x, attn_bias)
        return self.norm(x)


class TinyDecoder(nn.Module):
    """A small causal language model with the Hugging Face accessors the trainer uses."""

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        cfg.validate()
        self.config = cfg
        self.model = TinyBackbone(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)

    def get_decoder(self) -> nn.Module:
        return self.model

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(self, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        return self.lm_head(self.model(input_ids, attention_mask))


def write_tiny_config(directory: str, cfg: TinyConfig) -> str:
    """Write ``spade_tiny.json`` into ``directory`` (created) and return the directory."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, TINY_CONFIG_FILE), "w") as f:
        json.dump(asdict(cfg), f)
    return directory


def build_tiny(cfg: TinyConfig, seed: int) -> TinyDecoder:
    """A :class:`TinyDecoder` initialised from ``seed`` (the same seed gives the same weights)."""
    devices: List[int] = []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        return TinyDecoder(cfg)


def is_tiny(model_path: str) -> bool:
    return os.path.isfile(os.path.join(model_path, TINY_CONFIG_FILE))


def load_base_model(model_path: str, *, seed: int, dtype: torch.dtype) -> nn.Module:
    """The base policy (before any update): tiny from its config, else a Hugging Face causal LM.

    Raises ValueError naming the path when it holds neither, or when it is a Hugging Face checkpoint and
    ``transformers`` is not installed.
    """
    if not model_path or not os.path.isdir(model_path):
        raise ValueError(f"grpo.model_path: {model_path!r} is not a directory")
    if is_tiny(model_path):
        with open(os.path.join(model_path, TINY_CONFIG_FILE)) as f:
            cfg = TinyConfig(**json.load(f))
        model = build_tiny(cfg, seed)
        initial = os.path.join(model_path, TINY_INITIAL_WEIGHTS)
        if os.path.isfile(initial):
            model.load_state_dict(torch.load(initial, map_location="cpu"))
        return model.to(dtype)
    if not os.path.isfile(os.path.join(model_path, "config.json")):
        raise ValueError(f"grpo.model_path: {model_path} has neither config.json nor {TINY_CONFIG_FILE}")
    try:
        import transformers
    except ImportError as exc:
        raise ValueError(
            f"grpo.model_path: {model_path} is a Hugging Face model and transformers is not installed"
        ) from exc
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # transformers >= 4.56 calls the argument dtype (torch_dtype is deprecated there).
    version = tuple(int(part) for part in transformers.__version__.split(".")[:2] if part.isdigit())
    dtype_arg = {"dtype": dtype} if version >= (4, 56) else {"torch_dtype": dtype}
    model = transformers.AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True, **dtype_arg)
    model.config.use_cache = False
    return model


def prepare_for_training(model: nn.Module, gradient_checkpointing: bool) -> None:
    """Train mode with every dropout at 0 (the update must see the log-probs the sampler saw), and
    activation checkpointing on Hugging Face models when asked."""
    model.train()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    if gradient_checkpointing and hasattr(model, "gradient_checkpointing_enable"):
        try:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        except TypeError:  # transformers < 4.35
            model.gradient_checkpointing_enable()
            if hasattr(model, "enable_input_require_grads"):
                model.enable_input_require_grads()


def apply_lora(model: nn.Module, rank: int, alpha: float, targets: Sequence[str] = LORA_TARGETS) -> nn.Module:
    """Wrap ``model`` with a trainable LoRA adapter (peft) on the modules named ``targets``; the base weights
    are frozen."""
    try:
        import peft
    except ImportError as exc:
        raise ValueError("grpo.lora_rank > 0 needs peft, which is not installed") from exc
    config = peft.LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, bias="none")
    return peft.get_peft_model(model, config)


def load_lora(model: nn.Module, adapter_dir: str) -> nn.Module:
    """Wrap ``model`` with the trainable adapter saved in ``adapter_dir``."""
    import peft

    return peft.PeftModel.from_pretrained(model, adapter_dir, is_trainable=True)


def _unwrap(model: nn.Module) -> nn.Module:
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


class PolicyLogprobs(nn.Module):
    """Log-probs of chosen tokens at chosen positions: the module FSDP wraps as its root.

    ``forward(input_ids [B, L], attention_mask [B, L], rows [N], cols [N], targets [N])`` runs the decoder,
    projects only the N selected hidden states to the vocabulary and returns float32 [N] log-probs of
    ``targets`` (through ``logprob_fn``, the fused kernel by default).
    """

    def __init__(self, model: nn.Module, logprob_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.policy = model
        self.logprob_fn = logprob_fn

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        rows: torch.Tensor,
        cols: torch.Tensor,
        targets: torch.Tensor,
    ) -> torch.Tensor:
        inner = _unwrap(self.policy)
        hidden: Any = inner.get_decoder()(input_ids=input_ids, attention_mask=attention_mask)
        if not isinstance(hidden, torch.Tensor):
            hidden = hidden[0]  # a transformers ModelOutput: last_hidden_state first
        selected = hidden[rows, cols]
        logits = inner.get_output_embeddings()(selected)
        return self.logprob_fn(logits, targets)


def vocab_size(model: nn.Module) -> int:
    """Rows of the output projection: token ids must be below this."""
    return int(_unwrap(model).get_output_embeddings().weight.shape[0])
