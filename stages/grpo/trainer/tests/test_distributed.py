"""Two ranks (CPU, gloo) make the same update as one process: same weights, same metrics.

On GPUs the same code path wraps the policy in FSDP instead of DDP; the sharding of micro-batches over
ranks, the dummy micro-batches that keep ranks in step, the loss scaling and the metric reductions are
shared, and those are what this test checks. The ranks are started the way torchrun starts them (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) but without torchrun itself: Debian's torch 1.13
torchrun fails on Python 3.11 before starting any worker (its Std enum lookup returns None).
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import helpers as H

import torch

from spade_trainer import batch as B
from spade_trainer import checkpoints as C


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TwoRanksMatchOneProcess(unittest.TestCase):
    def test_two_ranks_equal_one(self):
        with tempfile.TemporaryDirectory() as root:
            model_dir = H.tiny_model_dir(root)
            agents = H.make_samples(model_dir, 5, advantage=1.0, batch_of=lambda i: i % 2, seed=3, prefix="a")
            designers = H.make_samples(model_dir, 3, advantage=-1.0, role="designer", is_cap=2.0, seed=4, prefix="d")
            designers[1].old_logprobs = [lp - 1.0 for lp in designers[1].old_logprobs]
            samples = agents + designers
            for s in samples[::2]:
                s.advantage = -s.advantage
            batch_path = os.path.join(root, "batch.npz")
            B.write_batch(batch_path, 1, samples)

            results = {}
            for name, world in (("one", 1), ("two", 2)):
                ckpt = os.path.join(root, "ckpt-" + name)
                cfg_path = os.path.join(root, f"cfg-{name}.json")
                with open(cfg_path, "w") as f:
                    json.dump(H.config(model_dir, ckpt, micro_batch_tokens=20, kl_beta=0.05), f)
                metrics = os.path.join(root, f"metrics-{name}.jsonl")
                env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(C.__file__)), OMP_NUM_THREADS="1")
                if world > 1:
                    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(world))
                argv = [sys.executable, "-m", "spade_trainer.train", "--batch", batch_path, "--config", cfg_path, "--metrics", metrics]
                procs = [
                    subprocess.Popen(argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                    for r in range(world)
                ]
                for r, proc in enumerate(procs):
                    out, _ = proc.communicate(timeout=240)
                    self.assertEqual(proc.returncode, 0, f"{name} rank {r}:\n{out.decode()[-3000:]}")
                with open(metrics) as f:
                    rows = [json.loads(line) for line in f]
                latest = C.read_latest(ckpt)
                weights = torch.load(os.path.join(ckpt, latest["version"], C.TINY_WEIGHTS))
                results[name] = (rows, weights)

            (rows1, w1), (rows2, w2) = results["one"], results["two"]
            self.assertEqual(sorted(w1), sorted(w2))
            initial = H.load_version(model_dir).state_dict()
            for key in w1:
                moved = (w1[key] - initial[key]).abs().max().item()
                self.assertTrue(torch.allclose(w1[key], w2[key], atol=1e-6, rtol=1e-5), f"{key} (moved {moved})")
            self.assertEqual([r["role"] for r in rows1], [r["role"] for r in rows2])
            for r1, r2 in zip(rows1, rows2):
                for key in ("loss", "kl", "clip_frac", "ratio_mean", "ratio_max", "is_weight_mean", "grad_norm", "tokens", "samples"):
                    self.assertAlmostEqual(r1[key], r2[key], places=5, msg=f"{r1['role']} {key}")


if __name__ == "__main__":
    unittest.main()
