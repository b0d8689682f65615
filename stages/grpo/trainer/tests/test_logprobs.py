"""The fused log-softmax + gather against the plain PyTorch reference."""

import unittest

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)

import torch

from spade_trainer import logprobs as LP


def rel_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """‖got − want‖ / ‖want‖ (computed in float64)."""
    got, want = got.double(), want.double()
    return float((got - want).norm() / want.norm())


class ChunkedMatchesReference(unittest.TestCase):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(1234)

    def logits(self, rows: int, vocab: int, scale: float = 3.0, dtype=torch.float32) -> torch.Tensor:
        return (torch.randn(rows, vocab, generator=self.gen) * scale).to(dtype)

    def targets(self, rows: int, vocab: int) -> torch.Tensor:
        return torch.randint(0, vocab, (rows,), generator=self.gen)

    def test_forward_float32(self):
        for rows, vocab, chunk in ((64, 1000, 128), (33, 4097, 1024), (8, 50, 8192), (16, 151936 // 8, 4096)):
            logits, targets = self.logits(rows, vocab), self.targets(rows, vocab)
            want = LP.logprobs_reference(logits, targets)
            got = LP.logprobs_chunked(logits, targets, chunk=chunk)
            self.assertEqual(got.dtype, torch.float32)
            self.assertLess(rel_error(got, want), 1e-6, (rows, vocab, chunk))

    def test_backward_float32(self):
        logits, targets = self.logits(40, 3000), self.targets(40, 3000)
        upstream = torch.randn(40, generator=self.gen)
        a = logits.clone().requires_grad_(True)
        (LP.logprobs_reference(a, targets) * upstream).sum().backward()
        b = logits.clone().requires_grad_(True)
        (LP.logprobs_chunked(b, targets, chunk=512) * upstream).sum().backward()
        self.assertLess(rel_error(b.grad, a.grad), 1e-6)

    def test_gradcheck_float64(self):
        logits = torch.randn(5, 37, dtype=torch.float64, generator=self.gen).requires_grad_(True)
        targets = self.targets(5, 37)
        self.assertTrue(torch.autograd.gradcheck(lambda x: LP.logprobs_chunked(x, targets, chunk=8), (logits,)))

    def test_large_logits_are_stable(self):
        logits = self.logits(16, 2000, scale=1.0) + 5000.0
        logits[:, 7] = 9000.0
        targets = torch.full((16,), 7)
        got = LP.logprobs_chunked(logits, targets, chunk=300)
        self.assertTrue(bool(torch.isfinite(got).all()))
        self.assertLess(rel_error(got - 1, LP.logprobs_reference(logits, targets) - 1), 1e-6)

    def test_bfloat16_input(self):
        logits, targets = self.logits(32, 5000, dtype=torch.bfloat16), self.targets(32, 5000)
        want = LP.logprobs_reference(logits, targets)  # same bf16 values, upcast
        got = LP.logprobs_chunked(logits, targets, chunk=1000)
        self.assertLess(rel_error(got, want), 1e-6)
        x = logits.clone().requires_grad_(True)
        LP.logprobs_chunked(x, targets, chunk=1000).sum().backward()
        self.assertEqual(x.grad.dtype, torch.bfloat16)

    def test_fused_is_chunked_on_cpu(self):
        logits, targets = self.logits(12, 9000), self.targets(12, 9000)
        self.assertLess(rel_error(LP.logprobs_fused(logits, targets), LP.logprobs_reference(logits, targets)), 1e-6)

    def test_bad_shapes(self):
        with self.assertRaisesRegex(ValueError, "logits"):
            LP.logprobs_chunked(torch.zeros(3, 4), torch.zeros(2, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
