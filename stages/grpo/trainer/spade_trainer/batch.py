"""The batch file the Go side writes: one ``grpo_batches`` partition as an ``.npz`` NumPy reads.

Format (version 2; version 1 files, without ``loss_mask`` and ``pad``, still read): a zip of ``.npy`` arrays (stored or deflated), little-endian, N samples. Ragged
columns are flat arrays plus ``<name>_offsets`` (int64 [N+1], from 0, non-decreasing, last = flat length):
sample i owns ``flat[off[i]:off[i+1]]``.

- ``format_version`` int64 [1]: 1.  ``step`` int64 [1]: the training step.
- ``sample_id_utf8`` uint8 + ``sample_id_offsets``: the UTF-8 bytes of each sample_id.
- ``role_utf8`` uint8 + ``role_offsets``: each sample's role, ``agent`` or ``designer``.
- ``batch`` int32 [N]: the global-batch number (one optimizer step per distinct value, in order).
- ``prompt_ids`` int32 + ``prompt_offsets``: prompt token ids (non-empty).
- ``response_ids`` int32 + ``response_offsets``: response token ids (non-empty).
- ``old_logprobs`` float32 + ``old_logprobs_offsets``: behaviour log-probs, one per response token (own
  offsets so that a length mismatch is caught and names its sample).
- ``advantage`` float64 [N]; ``is_weight`` float64 [N] (used when is_cap is 0); ``is_cap`` float64 [N]
  (> 0: the trainer recomputes the weight as min(is_cap, π_θ/π_behaviour)).
- ``loss_mask`` uint8 [ΣR], sliced by ``response_offsets`` (version 2): 1 on a response token that is
  trained, 0 on one that is context only (the chat template's tokens between an episode's completions,
  every token of a padding copy). Version 1: all 1.
- ``pad`` uint8 [N] (version 2): 1 for an inert copy that fills a short global batch (advantage 0, mask 0);
  it counts in the batch's sample-mean denominator and nowhere in the metrics. Version 1: all 0.

No pickled objects: ``numpy.load(path, allow_pickle=False)`` reads it. :func:`read_batch` checks every
invariant and names the sample in its error, before any model is touched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
ROLES = ("agent", "designer")


class BatchError(ValueError):
    """An invalid batch file; the message names the sample."""


@dataclass
class Sample:
    sample_id: str
    role: str
    batch: int
    prompt_ids: List[int]
    response_ids: List[int]
    old_logprobs: List[float]
    advantage: float
    is_weight: float
    is_cap: float
    #: 1 where the response token is trained, 0 where it is context only; None means all 1.
    loss_mask: Optional[List[int]] = None
    pad: bool = False

    def mask(self) -> List[int]:
        """The loss mask, one entry per response token."""
        return self.loss_mask if self.loss_mask is not None else [1] * len(self.response_ids)


@dataclass
class Batch:
    step: int
    samples: List[Sample]


def _array(arrays: Dict[str, np.ndarray], name: str, dtype: str) -> np.ndarray:
    if name not in arrays:
        raise BatchError(f"batch file: missing array {name!r}")
    arr = arrays[name]
    if arr.dtype != np.dtype(dtype) or arr.ndim != 1:
        raise BatchError(f"batch file: {name} is {arr.dtype}{list(arr.shape)}, want 1-d {dtype}")
    return arr


def _offsets(arrays: Dict[str, np.ndarray], name: str, count: int, total: int) -> np.ndarray:
    off = _array(arrays, name, "<i8")
    if len(off) != count + 1 or off[0] != 0 or off[-1] != total or np.any(np.diff(off) < 0):
        raise BatchError(f"batch file: {name} is not {count + 1} non-decreasing offsets from 0 to {total}")
    return off


def _strings(arrays: Dict[str, np.ndarray], name: str, count: int) -> List[str]:
    data = _array(arrays, name + "_utf8", "u1")
    off = _offsets(arrays, name + "_offsets", count, len(data))
    raw = data.tobytes()
    try:
        return [raw[off[i] : off[i + 1]].decode("utf-8") for i in range(count)]
    except UnicodeDecodeError as exc:
        raise BatchError(f"batch file: {name} is not UTF-8: {exc}") from exc


def read_batch(path: str, vocab_size: Optional[int] = None) -> Batch:
    """Read and validate a batch file (format above).

    Raises :class:`BatchError` for an empty batch, a non-finite advantage or weight, a prompt or response
    that is empty, old_logprobs that are not finite and ≤ 0, an unknown role, a duplicate sample id, or
    (when ``vocab_size`` is given) a token id outside [0, vocab_size): the message names the sample.
    """
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    version = _array(arrays, "format_version", "<i8")
    if len(version) != 1 or int(version[0]) not in READABLE_VERSIONS:
        raise BatchError(f"batch file: format_version {version.tolist()}, this trainer reads {READABLE_VERSIONS}")
    step = int(_array(arrays, "step", "<i8")[0])
    advantage = _array(arrays, "advantage", "<f8")
    count = len(advantage)
    if count == 0:
        raise BatchError(f"batch file: step {step}: the batch is empty (no samples to train on)")
    sample_ids = _strings(arrays, "sample_id", count)
    roles = _strings(arrays, "role", count)
    batch_no = _array(arrays, "batch", "<i4")
    is_weight = _array(arrays, "is_weight", "<f8")
    is_cap = _array(arrays, "is_cap", "<f8")
    for name, arr in (("batch", batch_no), ("is_weight", is_weight), ("is_cap", is_cap)):
        if len(arr) != count:
            raise BatchError(f"batch file: {name} has {len(arr)} entries for {count} samples")
    prompt = _array(arrays, "prompt_ids", "<i4")
    prompt_off = _offsets(arrays, "prompt_offsets", count, len(prompt))
    response = _array(arrays, "response_ids", "<i4")
    response_off = _offsets(arrays, "response_offsets", count, len(response))
    old = _array(arrays, "old_logprobs", "<f4")
    old_off = _offsets(arrays, "old_logprobs_offsets", count, len(old))
    if int(version[0]) >= 2:
        loss_mask = _array(arrays, "loss_mask", "u1")
        if len(loss_mask) != len(response):
            raise BatchError(f"batch file: loss_mask has {len(loss_mask)} entries for {len(response)} response tokens")
        if np.any(loss_mask > 1):
            raise BatchError("batch file: loss_mask holds a value other than 0 and 1")
        pad = _array(arrays, "pad", "u1")
        if len(pad) != count:
            raise BatchError(f"batch file: pad has {len(pad)} entries for {count} samples")
    else:
        loss_mask = np.ones(len(response), dtype=np.uint8)
        pad = np.zeros(count, dtype=np.uint8)

    samples: List[Sample] = []
    seen = set()
    for i in range(count):
        sid = sample_ids[i]
        where = f"sample {sid!r} (#{i}, role {roles[i]})"
        if sid in seen:
            raise BatchError(f"{where}: duplicate sample_id")
        seen.add(sid)
        if roles[i] not in ROLES:
            raise BatchError(f"{where}: unknown role, want one of {ROLES}")
        p = prompt[prompt_off[i] : prompt_off[i + 1]]
        r = response[response_off[i] : response_off[i + 1]]
        lp = old[old_off[i] : old_off[i + 1]]
        if len(p) == 0:
            raise BatchError(f"{where}: empty prompt (the first response token needs a context)")
        if len(r) == 0:
            raise BatchError(f"{where}: empty response")
        if len(lp) != len(r):
            raise BatchError(f"{where}: {len(lp)} old_logprobs for {len(r)} response tokens")
        m = loss_mask[response_off[i] : response_off[i + 1]]
        if pad[i] and (advantage[i] != 0 or m.any()):
            raise BatchError(f"{where}: a padding copy must have advantage 0 and loss_mask 0")
        if not math.isfinite(float(advantage[i])):
            raise BatchError(f"{where}: advantage is {advantage[i]}, want a finite number")
        if not math.isfinite(float(is_weight[i])) or is_weight[i] < 0:
            raise BatchError(f"{where}: is_weight is {is_weight[i]}, want finite and >= 0")
        if not math.isfinite(float(is_cap[i])) or is_cap[i] < 0:
            raise BatchError(f"{where}: is_cap is {is_cap[i]}, want finite and >= 0")
        bad = np.flatnonzero(~np.isfinite(lp) | (lp > 0))
        if len(bad):
            raise BatchError(f"{where}: old_logprobs[{bad[0]}] is {lp[bad[0]]}, want finite and <= 0")
        for name, ids in (("prompt", p), ("response", r)):
            bad = np.flatnonzero((ids < 0) | (ids >= vocab_size if vocab_size is not None else False))
            if len(bad):
                limit = f"[0, {vocab_size})" if vocab_size is not None else "non-negative"
                raise BatchError(f"{where}: {name} token {bad[0]} is id {ids[bad[0]]}, outside the vocabulary {limit}")
        samples.append(
            Sample(
                sample_id=sid,
                role=roles[i],
                batch=int(batch_no[i]),
                prompt_ids=p.tolist(),
                response_ids=r.tolist(),
                old_logprobs=lp.tolist(),
                advantage=float(advantage[i]),
                is_weight=float(is_weight[i]),
                is_cap=float(is_cap[i]),
                loss_mask=None if m.all() else m.astype(np.int64).tolist(),
                pad=bool(pad[i]),
            )
        )
    return Batch(step=step, samples=samples)


def check_vocab(batch: Batch, vocab_size: int) -> None:
    """Raise :class:`BatchError` naming the first sample with a token id outside [0, vocab_size)."""
    for i, s in enumerate(batch.samples):
        for name, ids in (("prompt", s.prompt_ids), ("response", s.response_ids)):
            if min(ids) >= 0 and max(ids) < vocab_size:
                continue
            pos = next(p for p, tok in enumerate(ids) if tok < 0 or tok >= vocab_size)
            raise BatchError(
                f"sample {s.sample_id!r} (#{i}, role {s.role}): {name} token {pos} is id {ids[pos]}, "
                f"outside the vocabulary [0, {vocab_size})"
            )


def write_batch(path: str, step: int, samples: List[Sample]) -> None:
    """Write ``samples`` in the format above (used by tests and tools; the Go side writes the same)."""

    def strings(values: List[str]) -> Tuple[np.ndarray, np.ndarray]:
        encoded = [v.encode("utf-8") for v in values]
        return np.frombuffer(b"".join(encoded), dtype=np.uint8), np.cumsum([0] + [len(e) for e in encoded]).astype("<i8")

    def ragged(values: Sequence[Sequence[float]], dtype: str) -> Tuple[np.ndarray, np.ndarray]:
        flat = np.array([x for v in values for x in v], dtype=dtype)
        return flat, np.cumsum([0] + [len(v) for v in values]).astype("<i8")

    sid, sid_off = strings([s.sample_id for s in samples])
    role, role_off = strings([s.role for s in samples])
    prompt, prompt_off = ragged([s.prompt_ids for s in samples], "<i4")
    response, response_off = ragged([s.response_ids for s in samples], "<i4")
    old, old_off = ragged([s.old_logprobs for s in samples], "<f4")
    np.savez(
        path,
        format_version=np.array([FORMAT_VERSION], dtype="<i8"),
        step=np.array([step], dtype="<i8"),
        sample_id_utf8=sid,
        sample_id_offsets=sid_off,
        role_utf8=role,
        role_offsets=role_off,
        batch=np.array([s.batch for s in samples], dtype="<i4"),
        prompt_ids=prompt,
        prompt_offsets=prompt_off,
        response_ids=response,
        response_offsets=response_off,
        old_logprobs=old,
        old_logprobs_offsets=old_off,
        advantage=np.array([s.advantage for s in samples], dtype="<f8"),
        is_weight=np.array([s.is_weight for s in samples], dtype="<f8"),
        is_cap=np.array([s.is_cap for s in samples], dtype="<f8"),
        loss_mask=np.array([x for s in samples for x in s.mask()], dtype=np.uint8),
        pad=np.array([1 if s.pad else 0 for s in samples], dtype=np.uint8),
    )
