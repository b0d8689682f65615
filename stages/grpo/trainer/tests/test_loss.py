"""The GRPO formulas against hand computations."""

import math
import unittest

import trainer_path  # noqa: F401  (puts spade_trainer on sys.path)

import torch

from spade_trainer import loss as L
from spade_trainer.loss import grpo_loss


def two_samples():
    """Sample 0 (Â = +1): ratios 1, 1.5, 0.5. Sample 1 (Â = −2): ratios 0.7, 1.1 and one padding token."""
    behaviour = torch.tensor([[-1.0, -2.0, -0.5], [-1.5, -0.3, 0.0]], dtype=torch.float64)
    ratios = torch.tensor([[1.0, 1.5, 0.5], [0.7, 1.1, 1.0]], dtype=torch.float64)
    logp = (behaviour + ratios.log()).requires_grad_(True)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=torch.float64)
    adv = torch.tensor([1.0, -2.0], dtype=torch.float64)
    return logp, behaviour, adv, mask


class HandComputedLoss(unittest.TestCase):
    # Per token: sample 0: −min(1,1)=−1, −min(1.5,1.28)=−1.28, −min(0.5,0.8)=−0.5;
    #            sample 1: −min(−1.4,−1.6)=1.6, −min(−2.2,−2.2)=2.2.
    TOKENS = [[-1.0, -1.28, -0.5], [1.6, 2.2]]

    def test_token_mean(self):
        logp, behaviour, adv, mask = two_samples()
        loss, m = grpo_loss(logp, behaviour, adv, mask)
        self.assertAlmostEqual(loss.item(), (-1 - 1.28 - 0.5 + 1.6 + 2.2) / 5, places=12)
        self.assertAlmostEqual(m["loss"], 0.204, places=12)
        self.assertAlmostEqual(m["clip_frac_high"], 1 / 5, places=12)
        self.assertAlmostEqual(m["clip_frac_low"], 1 / 5, places=12)
        self.assertAlmostEqual(m["clip_frac"], 2 / 5, places=12)
        self.assertAlmostEqual(m["ratio_mean"], (1 + 1.5 + 0.5 + 0.7 + 1.1) / 5, places=12)
        self.assertAlmostEqual(m["ratio_max"], 1.5, places=12)
        self.assertEqual(m["tokens"], 5.0)
        self.assertEqual(m["kl"], 0.0)
        self.assertEqual(m["is_weight_mean"], 1.0)

    def test_gradient(self):
        # d/dlogp of −r·Â/5 is −r·Â/5 where unclipped; 0 where the clip engages; 0 on padding.
        logp, behaviour, adv, mask = two_samples()
        loss, _ = grpo_loss(logp, behaviour, adv, mask)
        loss.backward()
        want = torch.tensor([[-1.0 / 5, 0.0, -0.5 / 5], [0.0, 2.2 / 5, 0.0]], dtype=torch.float64)
        self.assertTrue(torch.allclose(logp.grad, want, atol=1e-12), logp.grad)

    def test_seq_mean_token_mean(self):
        logp, behaviour, adv, mask = two_samples()
        loss, _ = grpo_loss(logp, behaviour, adv, mask, agg="seq-mean-token-mean")
        self.assertAlmostEqual(loss.item(), ((-1 - 1.28 - 0.5) / 3 + (1.6 + 2.2) / 2) / 2, places=12)

    def test_is_weights_multiply_each_sample(self):
        logp, behaviour, adv, mask = two_samples()
        w = torch.tensor([2.0, 0.5], dtype=torch.float64)
        loss, m = grpo_loss(logp, behaviour, adv, mask, is_weights=w)
        self.assertAlmostEqual(loss.item(), (2 * (-2.78) + 0.5 * 3.8) / 5, places=12)
        self.assertAlmostEqual(m["is_weight_mean"], 1.25, places=12)

    def test_kl_term(self):
        logp, behaviour, adv, mask = two_samples()
        ref = logp.detach().clone()
        ref[0, 0] += math.log(2.0)  # d = log 2 on one token: k3 = 2 − log 2 − 1
        loss, m = grpo_loss(logp, behaviour, adv, mask, ref_logp=ref, kl_beta=0.1)
        k3 = 2 - math.log(2) - 1
        self.assertAlmostEqual(m["kl"], k3 / 5, places=12)
        self.assertAlmostEqual(loss.item(), 0.204 + 0.1 * k3 / 5, places=12)

    def test_kl_needs_reference(self):
        logp, behaviour, adv, mask = two_samples()
        with self.assertRaisesRegex(ValueError, "ref_logp"):
            grpo_loss(logp, behaviour, adv, mask, kl_beta=0.1)


class Clipping(unittest.TestCase):
    def test_clip_engages_exactly_outside_band_for_the_sign(self):
        ratios = torch.tensor([0.5, 0.79, 0.8, 0.81, 1.0, 1.27, 1.28, 1.29, 2.0], dtype=torch.float64)
        for sign in (1.0, -1.0):
            logp = ratios.log().unsqueeze(0).repeat(1, 1).requires_grad_(True)
            behaviour = torch.zeros_like(logp)
            mask = torch.ones_like(logp)
            adv = torch.tensor([sign], dtype=torch.float64)
            loss, m = grpo_loss(logp, behaviour, adv, mask)
            loss.backward()
            zero_grad = (logp.grad[0] == 0).tolist()
            if sign > 0:
                want = [r > 1.28 + 1e-12 for r in ratios.tolist()]
                self.assertAlmostEqual(m["clip_frac_high"], sum(want) / len(want))
                self.assertEqual(m["clip_frac_low"], 0.0)
            else:
                want = [r < 0.8 - 1e-12 for r in ratios.tolist()]
                self.assertAlmostEqual(m["clip_frac_low"], sum(want) / len(want))
                self.assertEqual(m["clip_frac_high"], 0.0)
            self.assertEqual(zero_grad, want, f"advantage sign {sign}")

    def test_zero_advantage_has_no_gradient(self):
        logp = torch.tensor([[-0.1, -3.0]], requires_grad=True)
        loss, m = grpo_loss(logp, torch.tensor([[-2.0, -0.1]]), torch.zeros(1), torch.ones(1, 2))
        loss.backward()
        self.assertEqual(loss.item(), 0.0)
        self.assertTrue(torch.equal(logp.grad, torch.zeros(1, 2)))
        self.assertEqual(m["clip_frac"], 0.0)


class KL(unittest.TestCase):
    def test_zero_when_policy_equals_reference(self):
        logp = torch.randn(3, 7, dtype=torch.float64) - 2
        self.assertTrue(torch.equal(L.compute_k3_kl(logp, logp.clone()), torch.zeros(3, 7, dtype=torch.float64)))

    def test_positive_otherwise(self):
        logp = torch.randn(3, 7, dtype=torch.float64)
        kl = L.compute_k3_kl(logp, logp + torch.randn(3, 7, dtype=torch.float64))
        self.assertTrue(bool((kl >= 0).all()))
        self.assertGreater(kl.sum().item(), 0)


class TruncatedIS(unittest.TestCase):
    def test_capped_at_tis_cap(self):
        behaviour = torch.full((3, 4), -2.0)
        logp = torch.stack([behaviour[0] + 5.0, behaviour[1] + math.log(1.5), behaviour[2] - 1.0])
        w = L.compute_truncated_is_weight(logp, behaviour, torch.ones(3, 4), 2.0)
        self.assertAlmostEqual(w[0].item(), 2.0, places=6)
        self.assertAlmostEqual(w[1].item(), 1.5, places=6)
        self.assertAlmostEqual(w[2].item(), math.exp(-1.0), places=6)

    def test_per_sample_caps_and_masking(self):
        behaviour = torch.zeros(2, 3)
        logp = torch.tensor([[1.0, 1.0, 50.0], [0.1, 0.1, 0.1]])
        mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
        w = L.compute_truncated_is_weight(logp, behaviour, mask, torch.tensor([5.0, 1.0]))
        self.assertAlmostEqual(w[0].item(), math.e, places=5)  # the masked 50 is ignored
        self.assertAlmostEqual(w[1].item(), 1.0, places=6)  # capped at its own cap

    def test_detached(self):
        logp = torch.zeros(1, 2, requires_grad=True)
        w = L.compute_truncated_is_weight(logp, torch.zeros(1, 2), torch.ones(1, 2), 2.0)
        self.assertFalse(w.requires_grad)


class Validation(unittest.TestCase):
    def test_shape_mismatch_names_the_argument(self):
        with self.assertRaisesRegex(ValueError, "behaviour_logp"):
            grpo_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3))
        with self.assertRaisesRegex(ValueError, "advantages"):
            grpo_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3), torch.ones(2, 3))

    def test_unknown_aggregation(self):
        with self.assertRaisesRegex(ValueError, "grpo.agg"):
            grpo_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1), torch.ones(1, 1), agg="sum")

    def test_empty_mask_gives_zero(self):
        logp = torch.zeros(2, 3, requires_grad=True)
        loss, m = grpo_loss(logp, torch.zeros(2, 3), torch.ones(2), torch.zeros(2, 3))
        loss.backward()
        self.assertEqual(loss.item(), 0.0)
        self.assertEqual(m["tokens"], 0.0)


class Accumulation(unittest.TestCase):
    def test_micro_batches_sum_to_the_global_loss(self):
        torch.manual_seed(0)
        logp = (torch.randn(6, 5) - 1).requires_grad_(True)
        behaviour = logp.detach() + 0.3 * torch.randn(6, 5)
        adv = torch.randn(6)
        mask = (torch.rand(6, 5) > 0.3).float()
        mask[:, 0] = 1.0
        for agg in L.AGGREGATIONS:
            full, _ = grpo_loss(logp, behaviour, adv, mask, agg=agg)
            units = L.aggregation_units(agg, mask)
            parts = 0.0
            for rows in (slice(0, 2), slice(2, 6)):
                part, _ = grpo_loss(logp[rows], behaviour[rows], adv[rows], mask[rows], agg=agg)
                parts = parts + part * L.aggregation_units(agg, mask[rows]) / units
            self.assertAlmostEqual(full.item(), float(parts), places=5, msg=agg)


if __name__ == "__main__":
    unittest.main()
