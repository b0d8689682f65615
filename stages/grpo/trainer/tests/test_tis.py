"""Token-level TIS, [B, T] importance weights and masked observation tokens."""

import math
import unittest

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)

import torch

from spade_trainer import loss as L
from spade_trainer.loss import grpo_loss


class TokenTIS(unittest.TestCase):
    def test_hand_values_and_cap(self):
        # old − rollout: 0 → 1; ln 1.5 → 1.5; ln 3 → capped at 2; −ln 2 → 0.5 (no lower clamp); a padded
        # token → 0.
        old = torch.tensor([[0.0, math.log(1.5), math.log(3.0)], [-math.log(2.0), 0.0, 0.0]], dtype=torch.float64)
        rollout = torch.zeros_like(old)
        mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
        w = L.compute_token_tis_weight(old, rollout, mask, cap=2.0)
        want = torch.tensor([[1.0, 1.5, 2.0], [0.5, 1.0, 0.0]], dtype=torch.float64)
        self.assertTrue(torch.allclose(w, want), w)
        self.assertFalse(w.requires_grad)

    def test_token_weights_match_an_independent_computation(self):
        torch.manual_seed(3)
        b, t = 3, 5
        behaviour = -torch.rand(b, t, dtype=torch.float64)
        logp = (behaviour + 0.3 * torch.randn(b, t, dtype=torch.float64)).requires_grad_(True)
        adv = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)
        mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]], dtype=torch.float64)
        weights = 0.5 + torch.rand(b, t, dtype=torch.float64)
        for agg in (L.AGG_TOKEN_MEAN, L.AGG_SEQ_MEAN_TOKEN_MEAN):
            loss, m = grpo_loss(logp, behaviour, adv, mask, is_weights=weights, agg=agg)
            per_token = torch.zeros(b, t, dtype=torch.float64)
            for i in range(b):
                for j in range(t):
                    r = math.exp(logp[i, j].item() - behaviour[i, j].item())
                    a = adv[i].item()
                    per_token[i, j] = -weights[i, j].item() * min(r * a, min(max(r, 0.8), 1.28) * a)
            if agg == L.AGG_TOKEN_MEAN:
                want = (per_token * mask).sum() / mask.sum()
            else:
                want = sum((per_token[i] * mask[i]).sum() / mask[i].sum() for i in range(b)) / b
            self.assertAlmostEqual(loss.item(), want.item(), places=10, msg=agg)
            self.assertAlmostEqual(m["is_weight_mean"], ((weights * mask).sum() / mask.sum()).item(), places=10)
        with self.assertRaises(ValueError):
            grpo_loss(logp, behaviour, adv, mask, is_weights=torch.ones(b, t + 1, dtype=torch.float64))


class EpisodeSamples(unittest.TestCase):
    def test_observation_tokens_get_exactly_zero_gradient(self):
        # One episode sample: Agent tokens (mask 1) interleaved with observation tokens (mask 0).
        logits = torch.randn(1, 7, 11, dtype=torch.float64, requires_grad=True)
        tokens = torch.randint(0, 11, (1, 7))
        logp = torch.log_softmax(logits, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        mask = torch.tensor([[1, 1, 0, 0, 0, 1, 1]], dtype=torch.float64)
        loss, _ = grpo_loss(logp, logp.detach() - 0.1, torch.tensor([1.5], dtype=torch.float64), mask)
        loss.backward()
        for position in (2, 3, 4):
            self.assertTrue(torch.equal(logits.grad[0, position], torch.zeros(11, dtype=torch.float64)), position)
        self.assertGreater(logits.grad[0, 0].abs().sum().item(), 0)

    def test_two_episode_batch_by_hand(self):
        # Episode A, 3 turns: completions of 2 tokens with 2 observation tokens between them (mask 0).
        # Episode B, 1 turn: one 2-token completion, then padding. Both Â = 1. Trained tokens' ratios:
        #   A: 1, 1.1 | 1.5, 1 | 0.7, 1 → −1, −1.1, −min(1.5, 1.28) = −1.28, −1, −min(0.7, 0.8) = −0.7, −1: Σ −6.08
        #   B: 1.2, 0.5                 → −1.2, −0.5: Σ −1.7
        # The observation tokens get ratios e^±5, which must change nothing.
        mask = torch.tensor([[1, 1, 0, 0, 1, 1, 0, 0, 1, 1], [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]], dtype=torch.float64)
        ratios = torch.tensor(
            [[1.0, 1.1, math.e**5, math.e**-5, 1.5, 1.0, math.e**5, math.e**5, 0.7, 1.0], [1.2, 0.5] + [math.e**5] * 8],
            dtype=torch.float64,
        )
        adv = torch.tensor([1.0, 1.0], dtype=torch.float64)
        torch.manual_seed(5)
        vocab = 13
        targets = torch.randint(0, vocab, (2, 10))
        want = {
            L.AGG_TOKEN_MEAN: ((-6.08 - 1.7) / 8, [1 / 8, 1 / 8]),
            L.AGG_SEQ_MEAN_TOKEN_MEAN: ((-6.08 / 6 - 1.7 / 2) / 2, [1 / (6 * 2), 1 / (2 * 2)]),
        }
        for agg, (want_loss, token_share) in want.items():
            logits = torch.randn(2, 10, vocab, dtype=torch.float64, requires_grad=True)
            logp = torch.log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            behaviour = logp.detach() - ratios.log()
            loss, m = grpo_loss(logp, behaviour, adv, mask, clip_low=0.2, clip_high=0.28, agg=agg)
            self.assertAlmostEqual(loss.item(), want_loss, places=12, msg=agg)
            self.assertEqual(m["tokens"], 8.0)
            # ∂ℓ/∂logp = −r·Â × the token's share of the aggregation where unclipped; 0 where the clip
            # engages (A's ratio 1.5) and on every observation or padding token.
            (grad_logp,) = torch.autograd.grad(loss, logp, retain_graph=True)
            want_grad = torch.zeros(2, 10, dtype=torch.float64)
            for b, positions in ((0, (0, 1, 5, 8, 9)), (1, (0, 1))):
                for t in positions:
                    want_grad[b, t] = -ratios[b, t] * token_share[b]
            self.assertTrue(torch.allclose(grad_logp, want_grad, atol=1e-12), (agg, grad_logp))
            loss.backward()
            for b in range(2):
                for t in range(10):
                    if mask[b, t] == 0:
                        self.assertTrue(torch.equal(logits.grad[b, t], torch.zeros(vocab, dtype=torch.float64)), (agg, b, t))
            self.assertGreater(logits.grad[0, 0].abs().sum().item(), 0)

    def test_long_and_short_episode_weigh_the_same_per_sequence(self):
        # A 3-turn episode (6 Agent tokens) and a 1-turn one (2 tokens), equal advantages, ratio 1: under
        # seq-mean-token-mean each contributes −Â/2 whatever its length; under token-mean by its tokens.
        behaviour = torch.zeros(2, 6, dtype=torch.float64)
        logp = behaviour.clone().requires_grad_(True)
        mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]], dtype=torch.float64)
        adv = torch.tensor([1.0, 1.0], dtype=torch.float64)
        loss, _ = grpo_loss(logp, behaviour, adv, mask, agg=L.AGG_SEQ_MEAN_TOKEN_MEAN)
        loss.backward()
        per_sequence = [logp.grad[i].sum().item() for i in range(2)]
        self.assertAlmostEqual(per_sequence[0], per_sequence[1], places=12)
        logp.grad = None
        loss, _ = grpo_loss(logp, behaviour, adv, mask, agg=L.AGG_TOKEN_MEAN)
        loss.backward()
        self.assertAlmostEqual(logp.grad[0].sum().item() / logp.grad[1].sum().item(), 3.0, places=12)


if __name__ == "__main__":
    unittest.main()
