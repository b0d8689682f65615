"""The trainer end to end on a tiny decoder on CPU: direction of the update, metrics, errors, resumption."""

import contextlib
import io
import math
import os
import sys
import tempfile
import unittest
from unittest import mock

import helpers as H

from spade_trainer import batch as B
from spade_trainer import checkpoints as C
from spade_trainer import microbatch as MB


def quiet():
    return contextlib.redirect_stderr(io.StringIO())


class TrainerCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.model_dir = H.tiny_model_dir(self.root)
        self.ckpt = os.path.join(self.root, "ckpt")

    def tearDown(self):
        self.tmp.cleanup()


class Direction(TrainerCase):
    def check(self, advantage: float) -> float:
        samples = H.make_samples(self.model_dir, 6, advantage=advantage)
        before = sum(map(sum, H.logprobs(H.load_version(self.model_dir), samples)))
        with quiet():
            code, rows, error = H.run_main(self.root, samples, H.config(self.model_dir, self.ckpt))
        self.assertEqual(code, 0, error)
        after = sum(map(sum, H.logprobs(H.load_version(self.model_dir, self.ckpt), samples)))
        self.assertEqual(len(rows), 1)
        return after - before

    def test_positive_advantage_raises_logprobs(self):
        self.assertGreater(self.check(+1.0), 0.0)

    def test_negative_advantage_lowers_logprobs(self):
        self.assertLess(self.check(-1.0), 0.0)


class Metrics(TrainerCase):
    def test_rows_per_role_and_version(self):
        agent = H.make_samples(self.model_dir, 5, advantage=1.0, batch_of=lambda i: i % 2, seed=1, prefix="a")
        designer = H.make_samples(self.model_dir, 3, advantage=-0.5, role="designer", is_cap=2.0, seed=2, prefix="d")
        # A stale designer sample: its behaviour policy gave its tokens 3 nats less than the current one.
        # Sequence TIS corrects it alone, by its capped per-sample weight.
        designer[0].old_logprobs = [lp - 3.0 for lp in designer[0].old_logprobs]
        cfg = H.config(self.model_dir, self.ckpt, step=4, kl_beta=0.01, tis="sequence")
        with quiet():
            code, rows, error = H.run_main(self.root, agent + designer, cfg)
        self.assertEqual(code, 0, error)
        by_role = {r["role"]: r for r in rows}
        self.assertEqual(sorted(by_role), ["agent", "designer"])
        for role, group in (("agent", agent), ("designer", designer)):
            r = by_role[role]
            self.assertEqual(r["tokens"], sum(len(s.response_ids) for s in group))
            self.assertEqual(r["samples"], len(group))
            self.assertEqual(r["weights_version"], "t-step000004")
            self.assertEqual(r["lr"], 1e-3)
            self.assertGreater(r["grad_norm"], 0.0)
            self.assertGreaterEqual(r["seconds"], 0.0)
            self.assertAlmostEqual(r["clip_frac"], r["clip_frac_low"] + r["clip_frac_high"])
            for key in ("loss", "kl", "ratio_mean", "ratio_max", "is_weight_mean"):
                self.assertTrue(math.isfinite(r[key]), key)
        # Agent samples are on-policy in global batch 0: ratio 1. Batch 1 comes after one step.
        self.assertGreaterEqual(by_role["agent"]["ratio_max"], 1.0)
        # Designer: one of three samples capped at 2, the others on-policy (weight 1) → mean (2+1+1)/3.
        self.assertAlmostEqual(by_role["designer"]["is_weight_mean"], 4.0 / 3.0, places=4)
        # The KL to the reference is 0 before the first step and > 0 after it (global batch 1).
        self.assertGreater(by_role["agent"]["kl"], 0.0)
        latest = C.read_latest(self.ckpt)
        self.assertEqual(latest, {"version": "t-step000004", "step": 4})
        self.assertTrue(os.path.exists(os.path.join(self.ckpt, "t-step000004", C.TRAINER_DIR, "optimizer.pt")))

    @unittest.skipUnless(sys.platform.startswith("linux"), "ru_maxrss is KiB on Linux")
    def test_throughput_and_peak_memory(self):
        import resource

        agent = H.make_samples(self.model_dir, 5, advantage=1.0, batch_of=lambda i: i % 2, seed=1, prefix="a")
        designer = H.make_samples(self.model_dir, 3, advantage=-0.5, role="designer", is_cap=2.0, seed=2, prefix="d")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        with quiet():
            code, rows, error = H.run_main(self.root, agent + designer, H.config(self.model_dir, self.ckpt, tis="token"))
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.assertEqual(code, 0, error)
        self.assertEqual(len(rows), 2)
        keys = ("update_seconds", "tokens_per_second", "peak_memory_bytes")
        # Whole-update figures: the same on every role's row.
        self.assertEqual([rows[0][k] for k in keys], [rows[1][k] for k in keys])
        r = rows[0]
        trained = sum(row["tokens"] for row in rows)
        self.assertEqual(trained, sum(len(s.response_ids) for s in agent + designer))
        # The update contains every role's forward/backward and optimizer time, and the proximal pass.
        self.assertGreater(r["update_seconds"], 0.0)
        self.assertGreaterEqual(r["update_seconds"], sum(row["seconds"] for row in rows))
        self.assertAlmostEqual(r["tokens_per_second"], trained / r["update_seconds"], places=6)
        # This process ran the update (main is called in-process): its peak RSS lies between the two readings.
        self.assertIsInstance(r["peak_memory_bytes"], int)
        self.assertGreaterEqual(r["peak_memory_bytes"], before)
        self.assertLessEqual(r["peak_memory_bytes"], after)

    def test_rerun_of_same_step_does_not_train_twice(self):
        samples = H.make_samples(self.model_dir, 4)
        cfg = H.config(self.model_dir, self.ckpt, step=2)
        with quiet():
            code, first, error = H.run_main(self.root, samples, cfg, step=2)
        self.assertEqual(code, 0, error)
        weights = os.path.join(self.ckpt, "t-step000002", C.TINY_WEIGHTS)
        stamp = os.stat(weights).st_mtime_ns
        with quiet():
            code, second, error = H.run_main(self.root, samples, cfg, step=2)
        self.assertEqual(code, 0, error)
        self.assertEqual(first, second)
        self.assertEqual(os.stat(weights).st_mtime_ns, stamp)
        with quiet():
            code, _, error = H.run_main(self.root, samples, H.config(self.model_dir, self.ckpt, step=1), step=1)
        self.assertEqual(code, 1)
        self.assertIn("already holds step 2", error)

    def test_next_step_resumes_weights_and_optimizer(self):
        samples = H.make_samples(self.model_dir, 4)
        with quiet():
            self.assertEqual(H.run_main(self.root, samples, H.config(self.model_dir, self.ckpt, step=1), step=1)[0], 0)
        after_one = H.logprobs(H.load_version(self.model_dir, self.ckpt), samples)
        # Sequence TIS leaves Agent samples' ratios to their behaviour log-probs (token TIS would take
        # them to the policy at the start of step 2).
        with quiet(), mock.patch.object(C, "KEEP_VERSIONS", 1):
            code, rows, error = H.run_main(self.root, samples, H.config(self.model_dir, self.ckpt, step=2, tis="sequence"), step=2)
        self.assertEqual(code, 0, error)
        self.assertEqual(rows[0]["weights_version"], "t-step000002")
        self.assertNotEqual(H.logprobs(H.load_version(self.model_dir, self.ckpt), samples), after_one)
        # Samples were generated before step 1: at step 2 their ratios moved away from 1.
        self.assertGreater(rows[0]["ratio_max"], 1.0)
        self.assertEqual(sorted(d for d in os.listdir(self.ckpt) if d.startswith("t-")), ["t-step000002"])

    def test_publish_command_gets_the_version(self):
        out = os.path.join(self.root, "published.txt")
        template = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write(' '.join(sys.argv[2:]))\" {out} {{version}} {{weights_dir}}"
        cfg = H.config(self.model_dir, self.ckpt, step=3, publish={"mode": "command", "command": template, "name_prefix": "run"})
        with quiet():
            code, rows, error = H.run_main(self.root, H.make_samples(self.model_dir, 2), cfg, step=3)
        self.assertEqual(code, 0, error)
        with open(out) as f:
            version, weights_dir = f.read().split(" ")
        self.assertEqual(version, "run-step000003")
        self.assertTrue(os.path.exists(os.path.join(weights_dir, C.TINY_WEIGHTS)))

    def test_failed_publish_is_an_error_and_not_latest(self):
        template = f"{sys.executable} -c \"import sys; print('server said no'); sys.exit(3)\""
        cfg = H.config(self.model_dir, self.ckpt, publish={"mode": "command", "command": template, "name_prefix": "t"})
        with quiet():
            code, rows, error = H.run_main(self.root, H.make_samples(self.model_dir, 2), cfg)
        self.assertEqual(code, 1)
        self.assertIn("exited 3", error)
        self.assertIn("server said no", error)
        self.assertIsNone(C.read_latest(self.ckpt))


class BadInput(TrainerCase):
    """Each bad batch is an error that names the sample, and no step is taken (no version written)."""

    def expect_error(self, samples, *needles):
        with quiet():
            code, rows, error = H.run_main(self.root, samples, H.config(self.model_dir, self.ckpt))
        self.assertEqual(code, 1)
        self.assertEqual(rows, [])
        for needle in needles:
            self.assertIn(needle, error)
        self.assertFalse(os.path.exists(self.ckpt) and os.listdir(self.ckpt), "a version was written")

    def test_empty_batch(self):
        self.expect_error([], "empty")

    def test_nan_advantage(self):
        samples = H.make_samples(self.model_dir, 3)
        samples[1].advantage = float("nan")
        self.expect_error(samples, "'s1'", "advantage is nan")

    def test_mismatched_lengths(self):
        samples = H.make_samples(self.model_dir, 3)
        samples[2].old_logprobs = samples[2].old_logprobs[:-1]
        n = len(samples[2].response_ids)
        self.expect_error(samples, "'s2'", f"{n - 1} old_logprobs for {n} response tokens")

    def test_token_beyond_vocabulary(self):
        samples = H.make_samples(self.model_dir, 3)
        samples[0].response_ids[1] = H.TINY.vocab_size + 5
        self.expect_error(samples, "'s0'", f"id {H.TINY.vocab_size + 5}", f"[0, {H.TINY.vocab_size})")

    def test_positive_old_logprob(self):
        samples = H.make_samples(self.model_dir, 2)
        samples[1].old_logprobs[0] = 0.5
        self.expect_error(samples, "'s1'", "old_logprobs[0]")

    def test_non_finite_loss(self):
        samples = H.make_samples(self.model_dir, 3)
        samples[1].advantage = 1e300  # finite in the file, inf in float32
        self.expect_error(samples, "loss is not finite", "s1", "no step taken")

    def test_unknown_config_key(self):
        with quiet():
            code, _, error = H.run_main(self.root, H.make_samples(self.model_dir, 1), dict(H.config(self.model_dir, self.ckpt), lrr=1))
        self.assertEqual(code, 1)
        self.assertIn('unknown key "lrr"', error)


class Packing(unittest.TestCase):
    def test_pack_respects_budget(self):
        samples = [B.Sample(str(i), "agent", 0, [1] * p, [2] * r, [0.0] * r, 1.0, 1.0, 0.0) for i, (p, r) in enumerate([(2, 3), (4, 4), (1, 1), (30, 30), (2, 2)])]
        groups = MB.pack(range(5), samples, 16)
        self.assertEqual(groups, [[0, 1], [2], [3], [4]])  # lengths 5, 8, 2, 60, 4
        for g in groups:
            longest = max(len(samples[i].prompt_ids) + len(samples[i].response_ids) for i in g)
            self.assertTrue(len(g) == 1 or len(g) * longest <= 16, g)
        self.assertEqual(sorted(i for g in groups for i in g), list(range(5)))

    def test_collate_positions(self):
        s = B.Sample("x", "agent", 0, [5, 6, 7], [8, 9], [-1.0, -2.0], 1.0, 1.0, 0.0)
        mb = MB.collate([0], [s], __import__("torch").device("cpu"))
        self.assertEqual(mb.input_ids.tolist(), [[5, 6, 7, 8, 9]])
        self.assertEqual(mb.cols.tolist(), [2, 3])  # hidden state at 7 predicts 8, at 8 predicts 9
        self.assertEqual(mb.targets.tolist(), [8, 9])


if __name__ == "__main__":
    unittest.main()


class TokenTISUpdate(TrainerCase):
    def test_token_tis_weights_every_sample_by_the_engine_mismatch(self):
        # The rollout log-probs say the server gave every token 0.5 nats less than the trainer does, so
        # each token's weight is min(2, e^0.5) ≈ 1.65 for every role; with a positive advantage the update
        # still raises the log-probs.
        agent = H.make_samples(self.model_dir, 4, advantage=1.0, seed=5, prefix="a")
        designer = H.make_samples(self.model_dir, 2, advantage=1.0, role="designer", is_cap=2.0, seed=6, prefix="d")
        samples = agent + designer
        for s in samples:
            s.old_logprobs = [lp - 0.5 for lp in s.old_logprobs]
        before = sum(map(sum, H.logprobs(H.load_version(self.model_dir), samples)))
        cfg = H.config(self.model_dir, self.ckpt, tis="token", tis_cap=2.0, adam_beta2=0.98, weight_decay=0.1)
        with quiet():
            code, rows, error = H.run_main(self.root, samples, cfg)
        self.assertEqual(code, 0, error)
        for row in rows:
            self.assertAlmostEqual(row["is_weight_mean"], math.exp(0.5), places=3, msg=row["role"])
        after = sum(map(sum, H.logprobs(H.load_version(self.model_dir, self.ckpt), samples)))
        self.assertGreater(after, before)
        # With the cap below the mismatch every weight is the cap.
        shutil_dir = os.path.join(self.root, "ckpt2")
        with quiet():
            code, rows, error = H.run_main(self.root, samples, H.config(self.model_dir, shutil_dir, tis="token", tis_cap=1.2))
        self.assertEqual(code, 0, error)
        for row in rows:
            self.assertAlmostEqual(row["is_weight_mean"], 1.2, places=6, msg=row["role"])
