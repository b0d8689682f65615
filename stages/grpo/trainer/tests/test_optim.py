"""MasterAdamW: AdamW over float32 masters, stepped in chunks, restored exactly from its state."""

import os
import tempfile
import unittest

import trainer_path  # noqa: F401

import torch

from spade_trainer import checkpoints as C
from spade_trainer import optim


def _params(dtype: torch.dtype):
    torch.manual_seed(3)
    return [torch.nn.Parameter(torch.randn(n, dtype=torch.float32).to(dtype)) for n in (5, 17, 3, 40)]


def _grads(params, step: int):
    gen = torch.Generator().manual_seed(100 + step)
    for p in params:
        p.grad = torch.randn(p.shape, generator=gen).to(p.dtype)


class MasterAdamWTest(unittest.TestCase):
    def setUp(self):
        self.saved = optim.STEP_CHUNK_ELEMENTS
        optim.STEP_CHUNK_ELEMENTS = 20  # several chunks over the 65 elements

    def tearDown(self):
        optim.STEP_CHUNK_ELEMENTS = self.saved

    def test_float32_steps_equal_adamw(self):
        plain, master = _params(torch.float32), _params(torch.float32)
        kw = dict(lr=1e-2, weight_decay=0.1, betas=(0.9, 0.98))
        reference = torch.optim.AdamW(plain, **kw)
        wrapped = optim.MasterAdamW(master, torch.device("cpu"), **kw)
        for step in range(3):
            _grads(plain, step)
            _grads(master, step)
            reference.step()
            wrapped.step()
            wrapped.zero_grad()
        for a, b in zip(plain, master):
            self.assertTrue(torch.equal(a, b), "chunked master steps differ from AdamW's")

    def test_bfloat16_parameters_follow_the_float32_master(self):
        params = _params(torch.bfloat16)
        wrapped = optim.MasterAdamW(params, torch.device("cpu"), lr=1e-6, weight_decay=0.0, betas=(0.9, 0.98))
        before = [m.clone() for m in wrapped.master]
        _grads(params, 0)
        wrapped.step()
        # lr 1e-6 moves the float32 masters although it is below bfloat16's resolution of the weights.
        self.assertTrue(any(not torch.equal(a, b) for a, b in zip(before, wrapped.master)))
        for p, m in zip(params, wrapped.master):
            self.assertEqual(p.dtype, torch.bfloat16)
            self.assertTrue(torch.equal(p, m.to(torch.bfloat16)))

    def test_state_dict_restores_masters_and_moments(self):
        params = _params(torch.bfloat16)
        wrapped = optim.MasterAdamW(params, torch.device("cpu"), lr=1e-3)
        _grads(params, 0)
        wrapped.step()
        state = wrapped.state_dict()
        fresh_params = _params(torch.bfloat16)
        fresh = optim.MasterAdamW(fresh_params, torch.device("cpu"), lr=1e-3)
        fresh.load_state_dict(state)
        for step in (1, 2):
            for ps, opt in ((params, wrapped), (fresh_params, fresh)):
                _grads(ps, step)
                opt.step()
        for a, b in zip(wrapped.master, fresh.master):
            self.assertTrue(torch.equal(a, b))
        with self.assertRaises(ValueError):
            fresh.load_state_dict(torch.optim.AdamW(_params(torch.float32)).state_dict())


class FullCheckpointFilesTest(unittest.TestCase):
    def test_prune_keeps_the_full_checkpoint(self):
        with tempfile.TemporaryDirectory() as root:
            for step in range(6):
                os.makedirs(os.path.join(root, f"r-step{step:06d}"))
            C.write_full(root, "r-step000001", 1)
            C.prune_versions(root, "r", 3, "r-step000005")
            self.assertEqual(sorted(os.listdir(root)), ["full.json", "r-step000001", "r-step000003", "r-step000004", "r-step000005"])
            self.assertEqual(C.read_full(root), {"version": "r-step000001", "step": 1})

    def test_read_full_falls_back_to_a_latest_version_with_optimizer_state(self):
        with tempfile.TemporaryDirectory() as root:
            self.assertIsNone(C.read_full(root))
            os.makedirs(os.path.join(root, "r-step000002", C.TRAINER_DIR))
            C.write_latest(root, "r-step000002", 2)
            self.assertIsNone(C.read_full(root), "a weights-only version is not a full checkpoint")
            open(os.path.join(root, "r-step000002", C.TRAINER_DIR, "optimizer.pt"), "w").close()
            self.assertEqual(C.read_full(root), {"version": "r-step000002", "step": 2})


if __name__ == "__main__":
    unittest.main()
