"""The tiny model directory's optional initial weights (model.pt beside spade_tiny.json)."""

import os
import tempfile
import unittest

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)
import torch

from spade_trainer import model as M


class TinyInitialWeightsTest(unittest.TestCase):
    def test_model_pt_replaces_the_seeds_weights(self) -> None:
        cfg = M.TinyConfig(vocab_size=16, hidden_size=8, num_layers=1, num_heads=2, intermediate_size=8, max_positions=8)
        with tempfile.TemporaryDirectory() as d:
            M.write_tiny_config(d, cfg)
            from_seed = M.load_base_model(d, seed=1, dtype=torch.float32)
            self.assertTrue(torch.equal(from_seed.lm_head.weight, M.build_tiny(cfg, 1).lm_head.weight))
            other = M.build_tiny(cfg, 2)
            torch.save(other.state_dict(), os.path.join(d, M.TINY_INITIAL_WEIGHTS))
            loaded = M.load_base_model(d, seed=1, dtype=torch.float32)
            for name, tensor in other.state_dict().items():
                self.assertTrue(torch.equal(loaded.state_dict()[name], tensor), name)
            self.assertFalse(torch.equal(loaded.lm_head.weight, from_seed.lm_head.weight))


if __name__ == "__main__":
    unittest.main()
