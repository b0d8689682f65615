"""The GPU check's Qwen3-8B section, run on the CPU at a small shape: the same code path the device runs."""

import os
import sys
import unittest

import trainer_path  # noqa: F401

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu_check  # noqa: E402

SMALL = dict(gpu_check.QWEN3_8B, vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=16)


class Qwen3CheckTest(unittest.TestCase):
    def test_the_estimate_counts_qwen3_8b(self):
        # 36 layers of 192,937,984 parameters and untied embeddings: 8.19B; on the GPU 2P + 2P + 2P.
        est = gpu_check.estimate_trainer_bytes(gpu_check.QWEN3_8B, 16384, reference=True)
        self.assertEqual(est["params"], 36 * 192_937_984 + 2 * 151_936 * 4096)
        self.assertEqual(est["weights"] + est["gradients"] + est["reference"], 6 * est["params"])
        self.assertEqual(est["host"], 12 * est["params"])
        self.assertEqual(est["logits"], 16384 * 151_936 * 2)

    def test_one_update_at_a_small_shape_on_the_cpu(self):
        result = gpu_check.qwen3_8b_check(False, device=torch.device("cpu"), shape=SMALL, count=2)
        self.assertEqual(result["samples"], 2)
        self.assertEqual(result["trained_tokens"], 2 * 64)
        self.assertGreater(result["tokens_per_second"], 0)
        row = result["rows"]["agent"]
        self.assertGreater(row["grad_norm"], 0)
        self.assertGreater(row["kl"], -1e-9)


if __name__ == "__main__":
    unittest.main()
