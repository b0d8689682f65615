"""Processes of one update: the rank and world of this process, FSDP wrapping, and the collectives.

Without torchrun (``WORLD_SIZE`` unset or 1) every function here is the identity on one process. Under
``python -m torch.distributed.run --nproc_per_node N`` the ranks join one process group (NCCL on CUDA, gloo
on CPU); on CUDA the policy is sharded with FSDP, on CPU (the tests) it is replicated with DDP.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, TypeVar

import torch
from torch import nn

T = TypeVar("T")


@dataclass
class Dist:
    """Where this process sits: rank and world size (1 without torchrun) and its device."""

    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        """Whether this is rank 0, the one that writes shared files and publishes."""
        return self.rank == 0

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` summed over every rank (on the CPU)."""
        if self.world > 1:
            import torch.distributed as dist

            values = values.to(self.device)
            dist.all_reduce(values, op=dist.ReduceOp.SUM)
        return values.cpu()

    def max(self, values: torch.Tensor) -> torch.Tensor:
        """The element-wise maximum of ``values`` over every rank (on the CPU)."""
        if self.world > 1:
            import torch.distributed as dist

            values = values.to(self.device)
            dist.all_reduce(values, op=dist.ReduceOp.MAX)
        return values.cpu()

    def barrier(self) -> None:
        """Wait until every rank is here."""
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()


def init_dist() -> Dist:
    """Join the process group when started by torchrun (WORLD_SIZE > 1); pick the device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        local = int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
            dist.init_process_group("nccl")
        else:
            device = torch.device("cpu")
            dist.init_process_group("gloo")
        return Dist(rank=rank, world=world, device=device)
    return Dist(device=torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))


def rank_share(groups: List[T], dist: Dist) -> List[Tuple[T, bool]]:
    """This rank's share of ``groups`` (every ``world``-th one), each with whether it is real.

    Every rank gets the same count, because FSDP runs collectives in each forward: a rank with fewer is
    padded with a repeat of the first group marked False (its loss is to be scaled by 0).
    """
    mine = [(g, True) for g in groups[dist.rank :: dist.world]]
    per_rank = -(-len(groups) // dist.world)
    while len(mine) < per_rank:
        mine.append((groups[0], False))
    return mine


def gather_dict(part: Dict[Any, Any], dist: Dist) -> Dict[Any, Any]:
    """The union of every rank's ``part`` (picklable values), on every rank."""
    if dist.world == 1:
        return part
    import torch.distributed as tdist

    parts: List[Any] = [None] * dist.world
    tdist.all_gather_object(parts, part)
    merged: Dict[Any, Any] = {}
    for p in parts:
        merged.update(p)
    return merged


def broadcast_object(value: Any, dist: Dist) -> Any:
    """Rank 0's ``value`` (picklable) on every rank."""
    if dist.world == 1:
        return value
    import torch.distributed as tdist

    box = [value]
    tdist.broadcast_object_list(box, src=0)
    return box[0]


def wrap_fsdp(
    module: nn.Module, ref_module: Optional[nn.Module], lora: bool, dist: Dist, offload_params: bool = False
) -> Tuple[nn.Module, Optional[nn.Module]]:
    """FSDP with bf16 compute over the parameters in their own dtype (float32, or bfloat16 under
    ``grpo.param_dtype``), one shard unit per ≥ 10M parameters; ``offload_params`` keeps the shards in
    host memory between uses (FSDP's CPUOffload; ``grpo.cpu_offload`` optimizer_params)."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    kwargs: Dict[str, Any] = {
        "auto_wrap_policy": functools.partial(size_based_auto_wrap_policy, min_num_params=10_000_000),
        "device_id": dist.device if dist.device.type == "cuda" else None,
    }
    if dist.device.type == "cuda":
        kwargs["mixed_precision"] = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16)
    if offload_params:
        from torch.distributed.fsdp import CPUOffload

        kwargs["cpu_offload"] = CPUOffload(offload_params=True)
    if lora:
        # Frozen base and trainable adapter in one flat parameter need use_orig_params (PyTorch >= 2.0).
        if "use_orig_params" not in FSDP.__init__.__code__.co_varnames:
            raise ValueError("grpo.trainer_gpus > 1 with LoRA needs PyTorch >= 2.0 (FSDP use_orig_params)")
        kwargs["use_orig_params"] = True
    wrapped = FSDP(module, **kwargs)
    ref_wrapped = FSDP(ref_module, **kwargs) if ref_module is not None else None
    return wrapped, ref_wrapped


def is_fsdp(module: nn.Module) -> bool:
    """Whether ``module`` is FSDP-wrapped (checked by name: FSDP is imported only under torchrun)."""
    return type(module).__name__ == "FullyShardedDataParallel"


def full_state_dict(module: nn.Module, dist: Dist, prefix: str = "policy.") -> Optional[Dict[str, torch.Tensor]]:
    """The full state of ``module`` on rank 0 (None on the other ranks), keys without the DDP/FSDP wrapper
    and without ``prefix``. Under FSDP every rank must call it (the shards are gathered to rank 0's CPU)."""
    if isinstance(module, nn.parallel.DistributedDataParallel):
        if not dist.main:
            return None
        state = module.module.state_dict()
    elif is_fsdp(module):
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.state_dict_type(module, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
            state = module.state_dict()
        if not dist.main:
            return None
    else:
        state = module.state_dict()
    return {k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in state.items()}
