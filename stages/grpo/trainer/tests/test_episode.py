"""Episode samples (masked template tokens), the mixed global batch (inert pads, one optimizer step) and
full-weight publishing to every replica (SGLang and vLLM stand-ins), on the tiny model with full fine-tuning."""

import copy
import json
import os
import random
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, HTTPServer

import helpers as H
import torch

from spade_trainer import batch as B
from spade_trainer import checkpoints as C
from spade_trainer import distributed as D
from spade_trainer import publish as P
from spade_trainer import train as T


def episode_samples(model_dir, count, advantage, seed, prefix, turns=3):
    """Episode samples: a prompt, then ``turns`` completions (mask 1) with template tokens between (mask 0)."""
    rng = random.Random(seed)
    samples = []
    for i in range(count):
        prompt = [rng.randrange(H.TINY.vocab_size) for _ in range(4)]
        response, mask = [], []
        for turn in range(turns):
            if turn:
                gap = [rng.randrange(H.TINY.vocab_size) for _ in range(3)]
                response += gap
                mask += [0] * len(gap)
            completion = [rng.randrange(H.TINY.vocab_size) for _ in range(4)]
            response += completion
            mask += [1] * len(completion)
        samples.append(B.Sample(f"{prefix}{i}", "agent", 0, prompt, response, [0.0] * len(response), advantage, 1.0, 0.0, loss_mask=mask))
    model = H.load_version(model_dir)
    for s, lp in zip(samples, H.logprobs(model, samples)):
        s.old_logprobs = [x if m else 0.0 for x, m in zip(lp, s.mask())]
    return samples


def trained_logprob(model, samples):
    """Mean log-prob of the trained (mask 1) tokens of the samples."""
    total, n = 0.0, 0
    for s, lp in zip(samples, H.logprobs(model, samples)):
        for x, m in zip(lp, s.mask()):
            if m:
                total, n = total + x, n + 1
    return total / n


def pad_copy(real, index):
    return B.Sample(f"pad{index}/{real.sample_id}", real.role, real.batch, real.prompt_ids[:1], real.response_ids[:1],
                    real.old_logprobs[:1], 0.0, 1.0, real.is_cap, loss_mask=[0], pad=True)


def capture_steps(cfg, samples):
    """Run one update; returns (the gradients at each optimizer step, the per-role stats)."""
    policy, _ = T.build_policy(cfg, D.Dist(), lambda _: None)
    steps = []
    original = policy.optimizer.step

    def step(*args, **kwargs):
        steps.append([p.grad.detach().clone() for p in policy.params])
        return original(*args, **kwargs)

    policy.optimizer.step = step
    stats = T.run_update(cfg, samples, policy, D.Dist())
    return steps, stats


class EpisodeBatchFile(unittest.TestCase):
    def test_loss_mask_and_pad_round_trip(self):
        with tempfile.TemporaryDirectory() as root:
            model = H.tiny_model_dir(root)
            samples = episode_samples(model, 2, 1.0, 1, "e")
            samples.append(pad_copy(samples[0], 0))
            path = os.path.join(root, "b.npz")
            B.write_batch(path, 1, samples)
            back = B.read_batch(path).samples
            self.assertEqual(back[0].mask(), samples[0].mask())
            self.assertEqual(back[2].mask(), [0])
            self.assertTrue(back[2].pad)
            self.assertFalse(back[0].pad)

    def test_a_pad_with_an_advantage_is_rejected(self):
        with tempfile.TemporaryDirectory() as root:
            model = H.tiny_model_dir(root)
            bad = pad_copy(episode_samples(model, 1, 1.0, 1, "e")[0], 0)
            bad.advantage = 0.5
            path = os.path.join(root, "b.npz")
            B.write_batch(path, 1, [bad])
            with self.assertRaisesRegex(B.BatchError, "padding copy"):
                B.read_batch(path)


class EpisodeTraining(unittest.TestCase):
    def test_full_fine_tuning_on_episodes_moves_the_loss_the_right_way(self):
        with tempfile.TemporaryDirectory() as root:
            model_dir = H.tiny_model_dir(root)
            good = episode_samples(model_dir, 3, 1.0, 1, "good")
            bad = episode_samples(model_dir, 3, -1.0, 2, "bad")
            before = H.load_version(model_dir)
            good_before, bad_before = trained_logprob(before, good), trained_logprob(before, bad)
            ckpt = os.path.join(root, "ckpt")
            cfg = H.config(model_dir, ckpt, agg="seq-mean-token-mean", tis="token", sample_mean_denominator=8, lora_rank=0,
                           micro_batch_tokens=64)
            code, rows, error = H.run_main(root, good + bad, cfg)
            self.assertEqual(code, 0, error)
            after = H.load_version(model_dir, ckpt)
            self.assertGreater(trained_logprob(after, good), good_before)
            self.assertLess(trained_logprob(after, bad), bad_before)
            # Metrics count trained tokens only: 3 completions of 4 tokens per sample.
            self.assertEqual(rows[0]["tokens"], 6 * 12)
            self.assertEqual(rows[0]["samples"], 6)


    def test_masked_tokens_do_not_train(self):
        """Rewriting the behaviour log-probs of masked tokens changes nothing: they are context only."""
        with tempfile.TemporaryDirectory() as root:
            model_dir = H.tiny_model_dir(root)
            samples = episode_samples(model_dir, 2, 1.0, 3, "e")
            altered = copy.deepcopy(samples)
            for s in altered:
                s.old_logprobs = [x if m else -9.0 for x, m in zip(s.old_logprobs, s.mask())]
            weights = []
            for name, batch in (("a", samples), ("b", altered)):
                ckpt = os.path.join(root, "ckpt-" + name)
                code, _, error = H.run_main(root, batch, H.config(model_dir, ckpt, agg="seq-mean-token-mean", tis="off"))
                self.assertEqual(code, 0, error)
                weights.append(H.load_version(model_dir, ckpt).state_dict())
            for key in weights[0]:
                self.assertTrue(torch.equal(weights[0][key], weights[1][key]), key)

    def test_pads_contribute_no_gradient_and_one_step_is_taken(self):
        """A short batch padded to the global batch has the gradient of the real samples alone under the same
        denominator (the pads add nothing), in one optimizer step; the pads are not counted as samples."""
        with tempfile.TemporaryDirectory() as root:
            model_dir = H.tiny_model_dir(root)
            real = episode_samples(model_dir, 3, 1.0, 4, "e") + episode_samples(model_dir, 2, -0.5, 5, "f")
            padded = real + [pad_copy(real[i % len(real)], i) for i in range(3)]
            results = []
            for name, batch in (("real", real), ("padded", padded)):
                cfg = T.TrainConfig.from_dict(H.config(model_dir, os.path.join(root, name), agg="seq-mean-token-mean", tis="token",
                                                       sample_mean_denominator=8, micro_batch_tokens=48))
                torch.manual_seed(0)
                grads = capture_steps(cfg, batch)
                results.append(grads)
            self.assertEqual(len(results[0][0]), 1, "one optimizer step")
            self.assertEqual(len(results[1][0]), 1, "one optimizer step")
            for a, b in zip(results[0][0][0], results[1][0][0]):
                self.assertTrue(torch.allclose(a, b, rtol=1e-5, atol=1e-9))
            self.assertEqual(results[1][1]["agent"].samples, 5, "pads are not counted as samples")

class Replica(HTTPServer):
    """A generation server stand-in: SGLang's /update_weights_from_disk, vLLM's dev-mode /collective_rpc and
    /reset_prefix_cache. ``fail`` answers the load with a failure."""

    def __init__(self, fail=False):
        self.requests = []
        self.fail = fail
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                server.requests.append((self.path, body))
                if server.fail and self.path == "/update_weights_from_disk":
                    answer = (200, {"success": False, "message": "Failed to load: shape mismatch"})
                elif server.fail and self.path == "/collective_rpc":
                    answer = (500, {"error": "reload failed"})
                elif self.path == "/update_weights_from_disk":
                    answer = (200, {"success": True, "message": "Succeeded to update model weights."})
                else:
                    answer = (200, {})
                self.send_response(answer[0])
                self.end_headers()
                self.wfile.write(json.dumps(answer[1]).encode())

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self):
        self.shutdown()
        self.server_close()


class FullWeightPublishing(unittest.TestCase):
    def replicas(self, *fail):
        servers = [Replica(fail=f) for f in fail]
        for s in servers:
            self.addCleanup(s.stop)
        return servers

    def train(self, root, mode, servers):
        model_dir = H.tiny_model_dir(root)
        samples = episode_samples(model_dir, 2, 1.0, 7, "e")
        ckpt = os.path.join(root, "ckpt")
        cfg = H.config(model_dir, ckpt, lora_rank=0, publish={"mode": mode, "name_prefix": "run", "urls": [s.url + "/v1" for s in servers]})
        code, _, error = H.run_main(root, samples, cfg)
        return code, error, os.path.join(ckpt, "run-step000001"), ckpt

    def test_sglang_every_replica_loads_the_checkpoint(self):
        servers = self.replicas(False, False)
        with tempfile.TemporaryDirectory() as root:
            code, error, version_dir, ckpt = self.train(root, P.MODE_SGLANG, servers)
            self.assertEqual(code, 0, error)
            for s in servers:
                self.assertEqual(s.requests, [("/update_weights_from_disk", {"model_path": os.path.abspath(version_dir)})])
            self.assertEqual(C.read_latest(ckpt)["version"], "run-step000001")

    def test_sglang_a_failing_replica_stops_the_step_with_its_url(self):
        servers = self.replicas(False, True)
        with tempfile.TemporaryDirectory() as root:
            code, error, _, ckpt = self.train(root, P.MODE_SGLANG, servers)
            self.assertEqual(code, 1)
            self.assertIn(servers[1].url, error)
            self.assertIn("shape mismatch", error)
            self.assertIsNone(C.read_latest(ckpt), "a version not every replica loaded is not latest")

    def test_vllm_reload_points_every_replica_at_the_checkpoint(self):
        servers = self.replicas(False)
        with tempfile.TemporaryDirectory() as root:
            code, error, version_dir, _ = self.train(root, P.MODE_VLLM_RELOAD, servers)
            self.assertEqual(code, 0, error)
            paths = [p for p, _ in servers[0].requests]
            self.assertEqual(paths, ["/collective_rpc", "/collective_rpc", "/reset_prefix_cache"])
            self.assertEqual(servers[0].requests[0][1]["args"][0]["model_config"]["model"], os.path.abspath(version_dir))
            self.assertEqual(servers[0].requests[1][1]["method"], "reload_weights")

    def test_vllm_reload_failure_names_the_replica_and_the_fallback(self):
        servers = self.replicas(True)
        with tempfile.TemporaryDirectory() as root:
            code, error, _, _ = self.train(root, P.MODE_VLLM_RELOAD, servers)
            self.assertEqual(code, 1)
            self.assertIn(servers[0].url, error)
            self.assertIn("grpo.publish = command", error)

    def test_full_weight_modes_need_full_fine_tuning_and_urls(self):
        with self.assertRaisesRegex(ValueError, "lora_rank = 0"):
            T.TrainConfig.from_dict(H.trainer_config(lora_rank=8, publish={"mode": "sglang", "urls": ["http://x"]}))
        with self.assertRaisesRegex(ValueError, "publish_urls"):
            T.TrainConfig.from_dict(H.trainer_config(publish={"mode": "vllm_reload", "urls": []}))


if __name__ == "__main__":
    unittest.main()
