"""The trainer config: every key required, none unknown, each typed and range-checked, errors naming the key."""

import copy
import unittest

import helpers as H

from spade_trainer import config as TC


def flat_keys(raw: dict) -> list:
    return sorted([k for k in raw if k != "publish"] + ["publish." + k for k in raw["publish"]])


def without(raw: dict, key: str) -> dict:
    out = copy.deepcopy(raw)
    if key.startswith("publish."):
        del out["publish"][key[len("publish.") :]]
    else:
        del out[key]
    return out


class TrainerConfig(unittest.TestCase):
    def error(self, raw) -> str:
        with self.assertRaises(ValueError) as caught:
            TC.TrainConfig.from_dict(raw)
        message = str(caught.exception)
        self.assertNotIn("\n", message, "one line")
        return message

    def test_the_helper_is_complete_and_valid(self):
        self.assertEqual(flat_keys(H.trainer_config()), TC.keys())
        cfg = TC.TrainConfig.from_dict(H.trainer_config())
        self.assertEqual((cfg.lora_alpha, cfg.weight_decay, cfg.adam_beta2, cfg.tis), (64.0, 0.1, 0.98, "token"))
        self.assertEqual(cfg.publish.urls, [H.PRESET_SERVER])

    def test_every_missing_key_is_an_error_naming_it(self):
        for key in TC.keys():
            with self.subTest(key=key):
                message = self.error(without(H.trainer_config(), key))
                self.assertIn(f'trainer config: missing key "{key}"', message)
        self.assertIn('missing key "lora_alpha" (from grpo.lora_alpha)', self.error(without(H.trainer_config(), "lora_alpha")))

    def test_unknown_keys_are_errors_naming_them(self):
        self.assertIn('unknown key "lrr"', self.error(H.trainer_config(lrr=1e-6)))
        # Settings the run config does not have are constants of the trainer, not keys.
        for key in ("keep_versions", "lora_targets"):
            self.assertIn(f'unknown key "{key}"', self.error(H.trainer_config(**{key: 3})))
        self.assertIn('unknown key "publish.timeout_s"', self.error(H.trainer_config(publish={"timeout_s": 120.0})))

    def test_badly_typed_values_are_errors_naming_the_key(self):
        for key, value, want in (
            ("lora_rank", "8", "an integer"),
            ("lora_rank", 8.0, "an integer"),
            ("lr", True, "a number"),
            ("gradient_checkpointing", 1, "a boolean"),
            ("tis", None, "a string"),
        ):
            with self.subTest(key=key, value=value):
                self.assertIn(f'key "{key}": want {want}', self.error(H.trainer_config(**{key: value})))
        self.assertIn('key "publish.urls": want a list of strings', self.error(H.trainer_config(publish={"urls": "http://x"})))
        self.assertIn('key "publish" is not a JSON object', self.error({**H.trainer_config(), "publish": None}))

    def test_integers_are_numbers(self):
        cfg = TC.TrainConfig.from_dict(H.trainer_config(lora_alpha=64, lr=1))
        self.assertIsInstance(cfg.lora_alpha, float)
        self.assertIsInstance(cfg.lr, float)

    def test_values_out_of_range_are_errors_naming_the_key(self):
        for bad, key in (
            ({"tis": "tokens"}, "grpo.tis"),
            ({"tis_cap": 0}, "grpo.tis_cap"),
            ({"adam_beta2": 1.0}, "grpo.adam_beta1/adam_beta2"),
            ({"sample_mean_denominator": -1}, "grpo.global_batch"),
            ({"agg": "mean"}, "grpo.agg"),
            ({"lr": 0}, "grpo.lr"),
            ({"max_grad_norm": -1}, "grpo.max_grad_norm"),
            ({"micro_batch_tokens": 0}, "grpo.micro_batch_tokens"),
            ({"checkpoint_dir": ""}, "grpo.checkpoint_dir"),
            ({"publish": {"mode": "push"}}, "grpo.publish"),
        ):
            with self.subTest(bad=bad):
                self.assertIn(key, self.error(H.trainer_config(**bad)))


if __name__ == "__main__":
    unittest.main()
