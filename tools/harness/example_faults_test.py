"""The planted faults of the numpy example (tools/adapters/numpy_example_impl.py, BUGS).

Each fault's description names the minimal case a shrinker should reach; here that case
is written out by hand, and the faulty function must differ from the pristine one on it,
in the field the description names. Every fault in the table has its case (a fault added
without one fails), the pristine module is the one VERLCONF_EXAMPLE_BUG unset or empty
gives, and an unknown name stops the import naming the known ones. numpy only: whether
conform's judge, too, fails these cases is for the tests that run it.
"""

import importlib.util
import math
import os
import sys
import unittest
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
IMPL = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "adapters", "numpy_example_impl.py")
VAR = "VERLCONF_EXAMPLE_BUG"


def load(bug):
    """numpy_example_impl imported afresh with VERLCONF_EXAMPLE_BUG=bug (None: unset)."""
    saved = os.environ.get(VAR)
    if bug is None:
        os.environ.pop(VAR, None)
    else:
        os.environ[VAR] = bug
    try:
        spec = importlib.util.spec_from_file_location(f"numpy_example_impl_{bug or 'pristine'}", IMPL)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        if saved is None:
            os.environ.pop(VAR, None)
        else:
            os.environ[VAR] = saved


def a(rows):
    return np.array(rows, dtype=np.float64)


GRPO_CFG = {"epsilon": 1e-6, "norm_adv_by_std_in_grpo": 1}  # verl's defaults
VANILLA_CFG = {
    "clip_ratio": 0.2,
    "clip_ratio_low": None,
    "clip_ratio_high": None,
    "clip_ratio_c": 3.0,
    "loss_agg_mode": "token-mean",
    "dp_size": 1,
    "batch_num_tokens": None,
    "global_batch_size": None,
    "loss_scale_factor": None,
}
AGG_CFG = {"dp_size": 1, "batch_num_tokens": None, "global_batch_size": None, "loss_scale_factor": None}


def vanilla_case(old, lp, adv, mask):
    return {"old_log_prob": a(old), "log_prob": a(lp), "advantages": a(adv), "response_mask": a(mask)}


# fault -> [(function, inputs, cfg, the fields that must differ)]: the minimal cases the
# descriptions in BUGS name, one per field where they differ.
MINIMAL = {
    "biased_std": [
        (
            "grpo",
            {"token_level_rewards": a([[0], [1]]), "response_mask": a([[1], [1]]), "index": np.array([0, 0])},
            GRPO_CFG,
            ["outputs/advantages", "outputs/returns"],
        )
    ],
    "singleton_std": [
        (
            "grpo",
            {"token_level_rewards": a([[0]]), "response_mask": a([[1]]), "index": np.array([0])},
            GRPO_CFG,
            ["outputs/advantages", "outputs/returns"],
        ),
        (
            "grpo",
            {"token_level_rewards": a([[-1]]), "response_mask": a([[1]]), "index": np.array([0])},
            dict(GRPO_CFG, norm_adv_by_std_in_grpo=0),
            ["outputs/advantages", "outputs/returns"],
        ),
    ],
    "dual_clip_positive": [
        ("vanilla", vanilla_case([[0]], [[0]], [[1]], [[1]]), VANILLA_CFG, ["outputs/pg_loss", "grads/log_prob"])
    ],
    "clipfrac_ties": [
        ("vanilla", vanilla_case([[0]], [[0]], [[0]], [[1]]), VANILLA_CFG, ["metrics/actor/pg_clipfrac"])
    ],
    "agg_counts_padding": [
        ("token-mean", {"loss_mat": a([[0, 0]]), "loss_mask": a([[1, 0]])}, AGG_CFG, ["grads/loss_mat"]),
        ("token-mean", {"loss_mat": a([[-1, 0]]), "loss_mask": a([[1, 0]])}, AGG_CFG, ["outputs/loss"]),
        (
            "vanilla",
            vanilla_case([[0, 0]], [[0, 0]], [[-1, 0]], [[1, 0]]),
            VANILLA_CFG,
            ["outputs/pg_loss", "grads/log_prob"],
        ),
    ],
    "k3_no_clamp": [
        ("k3", {"logprob": a([[0]]), "ref_logprob": a([[3]])}, {}, ["outputs/kl", "grads/logprob", "vjps/kl/logprob"])
    ],
    "grad_through_clamp": [("vanilla", vanilla_case([[0]], [[-21]], [[1]], [[1]]), VANILLA_CFG, ["grads/log_prob"])],
    "local_token_mean": [
        (
            "token-mean",
            {"loss_mat": a([[0]]), "loss_mask": a([[1]])},
            dict(AGG_CFG, batch_num_tokens=2),
            ["grads/loss_mat"],
        ),
        (
            "token-mean",
            {"loss_mat": a([[-1]]), "loss_mask": a([[1]])},
            dict(AGG_CFG, batch_num_tokens=2),
            ["outputs/loss"],
        ),
    ],
    "exclusive_k1_bounds": [
        (
            "token_k1",
            {"log_ratio": a([[0]]), "response_mask": a([[1]])},
            {"rollout_rs_threshold": "1.0_2.0"},
            ["outputs/modified_response_mask"],
        ),
        (
            "token_k1",
            {"log_ratio": a([[-math.log(2.0)]]), "response_mask": a([[1]])},
            {"rollout_rs_threshold": "0.5_2.0"},
            ["outputs/modified_response_mask"],
        ),
    ],  # fmt: skip
    "kl_unmasked_mean": [
        (
            "actor_kl_loss",
            {"log_prob": a([[0, 0]]), "ref_log_prob": a([[0, 1]]), "response_mask": a([[1, 0]])},
            dict(AGG_CFG, kl_loss_type="low_var_kl", kl_loss_coef=0.001, loss_agg_mode="token-mean"),
            ["outputs/kl_term", "grads/log_prob"],
        )
    ],
    "gae_resets_at_observation": [
        (
            "gae",
            {"token_level_rewards": a([[0, 0, 0]]), "values": a([[0, 1, 0]]), "response_mask": a([[0, 1, 1]])},
            {"gamma": 1.0, "lam": 1.0},
            ["outputs/advantages", "outputs/returns"],
        )
    ],
}

# Where a simpler value no longer shows the fault: the minimal case is minimal.
NOT_SIMPLER = {
    "k3_no_clamp": ("k3", {"logprob": a([[0]]), "ref_logprob": a([[2]])}, {}),
    "agg_counts_padding": ("token-mean", {"loss_mat": a([[0]]), "loss_mask": a([[1]])}, AGG_CFG),
    "dual_clip_positive": ("vanilla", vanilla_case([[0]], [[0]], [[0]], [[1]]), VANILLA_CFG),
    # A log-ratio strictly inside the band: both comparisons agree.
    "exclusive_k1_bounds": (
        "token_k1",
        {"log_ratio": a([[0.25]]), "response_mask": a([[1]])},
        {"rollout_rs_threshold": "0.5_2.0"},
    ),
    # Nothing under the padding: the unmasked mean over the valid token alone is the same.
    "kl_unmasked_mean": (
        "actor_kl_loss",
        {"log_prob": a([[0]]), "ref_log_prob": a([[1]]), "response_mask": a([[1]])},
        dict(AGG_CFG, kl_loss_type="low_var_kl", kl_loss_coef=0.001, loss_agg_mode="token-mean"),
    ),
    # The trainer's count equal to the rank's own: a local mean is then the global one.
    "local_token_mean": (
        "token-mean",
        {"loss_mat": a([[0]]), "loss_mask": a([[1]])},
        dict(AGG_CFG, batch_num_tokens=1),
    ),
}


def call(mod, function, inputs, cfg):
    inputs = {k: v.copy() for k, v in inputs.items()}
    if function == "token-mean":
        return mod.aggregation("token-mean")(inputs, dict(cfg), "float64")
    if function == "k3":
        return mod.k3(inputs, dict(cfg), "float64", projections={"kl": np.ones_like(inputs["logprob"])})
    return getattr(mod, function)(inputs, dict(cfg), "float64")


def field(result, name):
    """'outputs/kl', 'metrics/actor/pg_clipfrac', 'vjps/kl/logprob' of a result dict."""
    group, _, key = name.partition("/")
    return np.asarray(result[group][key], dtype=np.float64)


def same(x, y):
    return x.shape == y.shape and np.array_equal(x, y, equal_nan=True)


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pristine = load(None)

    def test_every_fault_has_its_minimal_case(self):
        self.assertEqual(sorted(MINIMAL), sorted(self.pristine.BUGS))
        self.assertGreaterEqual(len(self.pristine.BUGS), 7)
        for name, text in self.pristine.BUGS.items():
            self.assertIn("minimal: ", text, name)
            self.assertNotIn("\n", text, name)

    def test_the_faulty_function_differs_on_its_minimal_case(self):
        for bug, cases in MINIMAL.items():
            faulty = load(bug)
            self.assertEqual(faulty.BUG, bug)
            for function, inputs, cfg, differ in cases:
                # singleton_std's NaN comes with numpy's warnings: expected here.
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    good = call(self.pristine, function, inputs, cfg)
                    bad = call(faulty, function, inputs, cfg)
                for name in differ:
                    with self.subTest(bug=bug, function=function, field=name):
                        self.assertFalse(
                            same(field(good, name), field(bad, name)), (field(good, name), field(bad, name))
                        )
                        self.assertTrue(
                            np.all(np.isfinite(field(good, name))), "a pristine result that means something"
                        )

    def test_one_step_simpler_shows_nothing(self):
        for bug, (function, inputs, cfg) in NOT_SIMPLER.items():
            faulty = load(bug)
            good, bad = call(self.pristine, function, inputs, cfg), call(faulty, function, inputs, cfg)
            for group in ("outputs", "grads", "metrics"):
                for k in good.get(group, {}):
                    with self.subTest(bug=bug, field=f"{group}/{k}"):
                        self.assertTrue(same(field(good, f"{group}/{k}"), field(bad, f"{group}/{k}")))

    def test_unset_and_empty_are_pristine(self):
        self.assertEqual(self.pristine.BUG, "")
        self.assertEqual(load("").BUG, "")

    def test_an_unknown_fault_is_an_error_naming_the_known_ones(self):
        with self.assertRaises(ValueError) as cm:
            load("biased-std")
        msg = str(cm.exception)
        self.assertIn("'biased-std'", msg)
        for name in self.pristine.BUGS:
            self.assertIn(name, msg)


if __name__ == "__main__":
    sys.exit(unittest.main())
