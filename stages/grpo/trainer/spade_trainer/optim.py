"""AdamW over a float32 master copy of the parameters, kept on the device or in host memory.

``grpo.param_dtype = bfloat16`` holds the trained parameters (and so their gradients) in bfloat16, where an
lr of 1e-6 would vanish in rounding; :class:`MasterAdamW` keeps float32 master weights beside Adam's two
moments, steps those, and copies the result back into the parameters. With ``grpo.cpu_offload`` optimizer
the master weights and the moments live in host memory (ZeRO-Offload's split): the device holds only the
parameters and gradients, 4 bytes per parameter in bfloat16 instead of 16 with float32 Adam on the device.
"""

from __future__ import annotations

from typing import Any, Dict, List

import torch
from torch import nn


#: Parameter elements stepped together by :meth:`MasterAdamW.step` (256M: 1 GiB of float32 gradients).
STEP_CHUNK_ELEMENTS = 1 << 28


class MasterAdamW:
    """The optimizer interface the update uses (``zero_grad``, ``step``, ``param_groups``, ``state_dict``,
    ``load_state_dict``) over float32 master copies of ``params`` on ``master_device``.

    ``step`` copies each gradient to its master (as float32), steps AdamW there, then writes the master
    back into the parameter in the parameter's dtype. ``state_dict`` holds AdamW's state and the master
    weights, so a full checkpoint restores the float32 values exactly.
    """

    def __init__(self, params: List[nn.Parameter], master_device: torch.device, **adamw: Any) -> None:
        self.params = params
        self.master = [p.detach().to(master_device, torch.float32, copy=True) for p in params]
        self.inner = torch.optim.AdamW(self.master, **adamw)

    @property
    def param_groups(self) -> List[Dict[str, Any]]:
        """AdamW's parameter groups (lr, weight decay, betas)."""
        return self.inner.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop the parameters' and the masters' gradients."""
        for p in self.params:
            p.grad = None
        self.inner.zero_grad(set_to_none=True)

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW step on the masters from the parameters' gradients, then the masters copied back.

        The parameters are stepped in chunks of about :data:`STEP_CHUNK_ELEMENTS` elements, so only one
        chunk's float32 gradients exist beside the masters at a time (AdamW passes over a master without a
        gradient, and its update of each tensor depends on that tensor alone, so the result is the same)."""
        order = [i for i, p in enumerate(self.params) if p.grad is not None]
        start = 0
        while start < len(order):
            chunk, elements = [], 0
            while start < len(order) and (not chunk or elements < STEP_CHUNK_ELEMENTS):
                chunk.append(order[start])
                elements += self.params[order[start]].numel()
                start += 1
            for i in chunk:
                self.master[i].grad = self.params[i].grad.detach().to(self.master[i].device, torch.float32)
            self.inner.step()
            for i in chunk:
                self.params[i].copy_(self.master[i].to(self.params[i].device, self.params[i].dtype))
                self.master[i].grad = None

    def state_dict(self) -> Dict[str, Any]:
        """AdamW's state and the master weights (on the CPU)."""
        return {"adamw": self.inner.state_dict(), "master": [m.detach().cpu() for m in self.master]}

    @torch.no_grad()
    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved, and the parameters from the masters."""
        if "master" not in state:
            raise ValueError("the saved optimizer state has no float32 master weights (it was saved with grpo.param_dtype float32)")
        for m, saved in zip(self.master, state["master"]):
            m.copy_(saved.to(m.device))
        self.inner.load_state_dict(state["adamw"])
        for p, m in zip(self.params, self.master):
            p.copy_(m.to(p.device, p.dtype))
