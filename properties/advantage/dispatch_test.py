"""The argument-injection rules of verl's compute_advantage dispatcher.

The capture runs verl 0.9.1's own ray_trainer.compute_advantage on a batch holding every
optional key it looks for and records, per estimator of ADV_ESTIMATOR_REGISTRY, the
keyword arguments it hands over (/_verl_dispatch in advantage.h5). Each registry spec
states the same list (`verl_dispatch_kwargs` in `conform spec --json`); this test holds
the two together, so a verl upgrade that changes what an estimator receives shows up
here, and pins the surprises of 0.9.1 (docs/verl-quirks.md).
"""

import json
import os
import subprocess
import sys
import unittest

import h5py

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "tools/conform"
RUNFILES = os.environ.get("TEST_SRCDIR", os.getcwd())
GOLDENS = os.path.join(RUNFILES, "verlconf", "fixtures", "verl-0.9.1")
if not os.path.isdir(GOLDENS):
    GOLDENS = os.path.join(os.getcwd(), "fixtures", "verl-0.9.1")


def recorded():
    with h5py.File(os.path.join(GOLDENS, "advantage.h5"), "r") as f:
        names = [x for x in f["_verl_registry"].attrs["adv_estimators"].split("\n") if x]
        d = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["_verl_dispatch"].attrs.items()}
    return names, d


def specs():
    out = subprocess.run([CONFORM, "spec", "--json"], capture_output=True, text=True, timeout=600, check=True).stdout
    return {f["name"]: f for f in json.loads(out)["functions"] if f["family"] == "advantage"}


class Dispatch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.names, cls.record = recorded()
        cls.specs = specs()

    def test_every_estimator_was_recorded(self):
        for n in self.names:
            self.assertIn(n, self.record, n)
            self.assertIn(n + ".accepts", self.record, n)

    def test_spec_lists_what_verl_passes(self):
        for n in self.names:
            want = sorted(x for x in self.record[n].split("\n") if x)
            self.assertEqual(sorted(self.specs[n].get("verl_dispatch_kwargs", [])), want, n)

    def test_every_tensor_input_of_the_spec_is_handed_over_by_name(self):
        # GDPO's components arrive inside non_tensor_batch / config, not by name.
        for n in self.names:
            passed = set(self.record[n].split("\n"))
            for i in self.specs[n]["inputs"]:
                if i["role"] in ("components", "component_weights"):
                    self.assertIn("non_tensor_batch", passed, n)
                    continue
                self.assertIn(i["name"], passed, f"{n}: input {i['name']}")

    def test_grpo_vectorized_rejects_reward_baselines(self):
        # It is the one registry estimator without **kwargs: with reward_baselines in the
        # batch (which the dispatcher forwards to every registry estimator), verl's own
        # call raises TypeError.
        self.assertTrue(
            self.record["grpo_vectorized.accepts"].startswith("TypeError"), self.record["grpo_vectorized.accepts"]
        )
        self.assertIn("reward_baselines", self.record["grpo_vectorized.accepts"])
        for n in self.names:
            if n != "grpo_vectorized":
                self.assertEqual(self.record[n + ".accepts"], "yes", n)

    def test_norm_adv_by_std_reaches_only_grpo_by_argument(self):
        # grpo_passk reads it from config; grpo_vectorized and gdpo never see it.
        for n in self.names:
            has = "norm_adv_by_std_in_grpo" in self.record[n].split("\n")
            self.assertEqual(has, n == "grpo", n)
        for n in self.names:
            self.assertNotIn("epsilon", self.record[n].split("\n"), n)

    def test_bare_batch(self):
        # Without uid, values or sum_pi_squared the dispatcher itself fails for gae / grpo
        # (KeyError) and the OTB keys (AssertionError); the others are called without an
        # index, which their signatures then reject.
        self.assertEqual(self.record["gae.bare"], "raises KeyError")
        self.assertEqual(self.record["grpo.bare"], "raises KeyError")
        for n in ("optimal_token_baseline", "tir_optimal_token_baseline"):
            self.assertEqual(self.record[n + ".bare"], "raises AssertionError", n)
        self.assertTrue(self.record["rloo.bare.accepts"].startswith("TypeError"))
        self.assertEqual(self.record["reinforce_plus_plus.bare.accepts"], "yes")


if __name__ == "__main__":
    unittest.main()
