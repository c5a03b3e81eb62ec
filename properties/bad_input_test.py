"""The bad-input matrix (docs/bad-input.md): for each class of malformed input, a file
or argument that triggers it and the outcome conform must give. Bad input is exit 2
with one line on stderr naming the file, the case and the field; never a crash (exit
3 or a signal), never a silent pass (exit 0)."""

import os
import shutil
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import GOLDENS, assert_bad_input, run  # noqa: E402


def first_case(f, function, want_error=False):
    return next(c for c in sorted(f[function]) if ("expect_error" in f[function][c].attrs) == want_error)


class BadInputMatrix(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.dir = os.path.join(self.tmp, "goldens")
        shutil.copytree(GOLDENS, self.dir)
        for n in os.listdir(self.dir):
            os.chmod(os.path.join(self.dir, n), 0o644)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def corrupt(self, family, function, edit, want_error=False):
        """Applies edit(case_group) to the first case of `function`; returns (path, case)."""
        path = os.path.join(self.dir, family + ".h5")
        with h5py.File(path, "r+") as f:
            case = first_case(f, function, want_error)
            edit(f[function][case])
        return path, case

    def assertBadInput(self, args, *needles):
        return assert_bad_input(self, run(*args), *needles)

    def check_dir(self, *needles):
        return self.assertBadInput(["check", "--against", self.dir], *needles)

    # --- the file itself ---------------------------------------------------------
    def test_truncated_hdf5(self):
        path = os.path.join(self.dir, "kl.h5")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 3)
        self.check_dir(path)

    def test_not_hdf5(self):
        path = os.path.join(self.dir, "kl.h5")
        with open(path, "w") as f:
            f.write("not an hdf5 file\n")
        self.check_dir(path, "not an HDF5 file")

    def test_schema_from_the_future(self):
        path = os.path.join(self.dir, "kl.h5")
        with h5py.File(path, "r+") as f:
            f.attrs["schema_version"] = np.int64(99)
        self.check_dir(path, "schema_version")

    # --- structure ----------------------------------------------------------------
    def test_missing_group(self):
        path, case = self.corrupt("aggregation", "token-mean", lambda g: g.__delitem__("inputs"))
        self.check_dir(path, "token-mean/" + case, "inputs/")

    def test_missing_dataset(self):
        path, case = self.corrupt("policy_loss", "vanilla", lambda g: g["inputs"].__delitem__("advantages"))
        self.check_dir(path, "vanilla/" + case, "inputs/advantages", "missing")

    def test_missing_attribute(self):
        path, case = self.corrupt("kl", "k3", lambda g: g.attrs.__delitem__("dtype"))
        self.check_dir(path, "k3/" + case, "'dtype'")

    def replace(self, g, name, value):
        del g["inputs"][name]
        g["inputs"][name] = value

    def test_wrong_rank(self):
        path, case = self.corrupt("kl", "k1", lambda g: self.replace(g, "logprob", g["inputs/logprob"][()][0]))
        self.check_dir(path, "k1/" + case, "inputs/logprob", "rank")

    def test_wrong_shape(self):
        path, case = self.corrupt("kl", "k1", lambda g: self.replace(g, "logprob", g["inputs/logprob"][()][:, :-1]))
        self.check_dir(path, "k1/" + case, "inputs/", "T is")

    def test_integer_where_float(self):
        path, case = self.corrupt(
            "kl", "k2", lambda g: self.replace(g, "logprob", g["inputs/logprob"][()].astype(np.int64))
        )
        self.check_dir(path, "k2/" + case, "inputs/logprob", "dtype int64")

    def test_float16(self):
        path, case = self.corrupt(
            "kl", "k2", lambda g: self.replace(g, "logprob", g["inputs/logprob"][()].astype(np.float16))
        )
        self.check_dir(path, "k2/" + case, "inputs/logprob", "16 bits")

    def test_string_where_float(self):
        path, case = self.corrupt("kl", "k2", lambda g: self.replace(g, "logprob", np.array([b"x", b"y"])))
        self.check_dir(path, "k2/" + case, "inputs/logprob", "unsupported dtype")

    # --- values ---------------------------------------------------------------------
    def poke(self, g, name, value, index=(0, 0)):
        # Identical inputs are hard-linked across cases (fixtures/README.md): write a
        # new dataset instead of editing the shared one in place.
        data = g["inputs"][name][()]
        data[index] = value
        self.replace(g, name, data)

    def test_nan_in_inputs(self):
        path, case = self.corrupt("kl", "k3", lambda g: self.poke(g, "logprob", np.nan))
        self.check_dir(path, "k3/" + case, "inputs/logprob", "non-finite")

    def test_inf_in_inputs(self):
        path, case = self.corrupt("policy_loss", "vanilla", lambda g: self.poke(g, "advantages", np.inf))
        self.check_dir(path, "vanilla/" + case, "inputs/advantages", "non-finite")

    def test_mask_outside_0_1(self):
        path, case = self.corrupt("aggregation", "token-sum", lambda g: self.poke(g, "loss_mask", 0.5))
        self.check_dir(path, "token-sum/" + case, "inputs/loss_mask", "not 0 or 1")

    def test_uid_code_out_of_range(self):
        path, case = self.corrupt("advantage", "grpo", lambda g: self.poke(g, "index", -3, index=0))
        self.check_dir(path, "grpo/" + case, "inputs/index", "negative group code")

    def test_empty_batch(self):
        def edit(g):
            for name in list(g["inputs"]):
                self.replace(g, name, g["inputs"][name][()][:0])

        path, case = self.corrupt("kl", "abs", edit)
        self.check_dir(path, "abs/" + case, "empty batch")

    def test_zero_length_responses(self):
        def edit(g):
            for name in list(g["inputs"]):
                self.replace(g, name, g["inputs"][name][()][:, :0])

        path, case = self.corrupt("kl", "abs", edit)
        self.check_dir(path, "abs/" + case, "zero-length")

    # --- names and config -------------------------------------------------------
    def test_unknown_config_key(self):
        path, case = self.corrupt("aggregation", "token-mean", lambda g: g.attrs.__setitem__("cfg.frobnicate", 1))
        self.check_dir(path, "token-mean/" + case, "cfg.frobnicate")

    def test_config_of_the_wrong_type(self):
        path, case = self.corrupt("aggregation", "token-mean", lambda g: g.attrs.__setitem__("cfg.dp_size", "two"))
        self.check_dir(path, "token-mean/" + case, "cfg.dp_size")

    def test_unknown_function_in_candidate(self):
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), cand)
        with h5py.File(cand, "r+") as f:
            f.move("k3", "k9")
        self.assertBadInput(["check", "--against", GOLDENS, "--candidate", cand], cand, "k9/")

    def test_unknown_agg_mode(self):
        path, case = self.corrupt(
            "policy_loss", "vanilla", lambda g: g.attrs.__setitem__("cfg.loss_agg_mode", "token-avg")
        )
        self.check_dir(path, "vanilla/" + case, "cfg.loss_agg_mode", "'token-avg' is not one of verl's names")

    def test_unknown_kl_name_in_config(self):
        path, case = self.corrupt(
            "reward_kl", "apply_kl_penalty", lambda g: g.attrs.__setitem__("cfg.kl_penalty", "k4")
        )
        self.check_dir(path, "apply_kl_penalty/" + case, "cfg.kl_penalty", "'k4'")

    # A threshold or option verl refuses, on a case that claims verl returned a result:
    # the file cannot have come from verl (cases expecting verl's ValueError are fine).
    def test_malformed_rs_threshold(self):
        path, case = self.corrupt(
            "rollout_correction", "token_k1", lambda g: g.attrs.__setitem__("cfg.rollout_rs_threshold", "2_1")
        )
        self.check_dir(path, "token_k1/" + case, "cfg.rollout_rs_threshold", "2_1")

    def test_lower_upper_on_a_k3_option(self):
        path, case = self.corrupt(
            "rollout_correction", "seq_mean_k3", lambda g: g.attrs.__setitem__("cfg.rollout_rs_threshold", "0.5_2.0")
        )
        self.check_dir(path, "seq_mean_k3/" + case, "cfg.rollout_rs_threshold")

    def test_malformed_is_threshold(self):
        path, case = self.corrupt(
            "rollout_correction",
            "compute_rollout_correction_weights",
            lambda g: g.attrs.__setitem__("cfg.rollout_is_threshold", "abc"),
        )
        self.check_dir(path, "compute_rollout_correction_weights/" + case, "cfg.rollout_is_threshold", "abc")

    def test_unknown_rs_option(self):
        path, case = self.corrupt(
            "rollout_correction",
            "compute_rollout_rejection_mask",
            lambda g: g.attrs.__setitem__("cfg.rollout_rs", "token_k1,token_k4"),
        )
        self.check_dir(path, "compute_rollout_rejection_mask/" + case, "cfg.rollout_rs", "token_k4")

    def test_unknown_is_level(self):
        path, case = self.corrupt(
            "rollout_correction",
            "compute_rollout_correction_weights",
            lambda g: g.attrs.__setitem__("cfg.rollout_is", "tok"),
        )
        self.check_dir(
            path, "compute_rollout_correction_weights/" + case, "cfg.rollout_is", "'tok' is not one of verl's names"
        )

    def test_expected_threshold_error_is_not_bad_input(self):
        code, out, err = run(
            "check", "--against", GOLDENS, "--only", "compute_rollout_rejection_mask/err_lower_above_upper_4x8_f64"
        )
        self.assertEqual(code, 0, out + err)
        self.assertIn("1 passed", out)

    def test_candidate_with_other_config(self):
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(os.path.join(GOLDENS, "aggregation.h5"), cand)
        with h5py.File(cand, "r+") as f:
            case = first_case(f, "seq-mean-token-mean")
            f["seq-mean-token-mean"][case].attrs["cfg.dp_size"] = np.int64(7)
        self.assertBadInput(["check", "--against", GOLDENS, "--candidate", cand], "seq-mean-token-mean/" + case, "cfg")

    def test_candidate_with_other_inputs(self):
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), cand)
        with h5py.File(cand, "r+") as f:
            case = first_case(f, "k2")
            g = f["k2"][case]["inputs"]
            data = g["logprob"][()]
            data[0, 0] += 0.5
            del g["logprob"]
            g["logprob"] = data
        self.assertBadInput(
            ["check", "--against", GOLDENS, "--candidate", cand],
            "k2/" + case,
            "inputs/logprob",
            "differs from the golden input",
        )

    def test_candidate_raising_where_verl_returns_is_a_failure(self):
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), cand)
        with h5py.File(cand, "r+") as f:
            case = first_case(f, "k1")
            for sub in ("outputs", "grads"):
                del f["k1"][case][sub]
            f["k1"][case].attrs["expect_error"] = "ValueError: candidate gave up"
        code, out, err = run("check", "--against", GOLDENS, "--candidate", cand, "--only", "k1/" + case)
        self.assertEqual(code, 1, out + err)
        self.assertIn("but verl returned a result", out)

    def test_candidate_missing_outputs_is_unsupported_not_a_crash(self):
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), cand)
        with h5py.File(cand, "r+") as f:
            case = first_case(f, "k1")
            for sub in ("outputs", "grads"):
                del f["k1"][case][sub]
        code, out, err = run("check", "--against", GOLDENS, "--candidate", cand, "--only", "k1/" + case)
        # Not a crash and not bad input; and, as nothing else was selected, not green either.
        self.assertEqual(code, 4, out + err)
        self.assertIn("nothing compared", err)
        self.assertIn("UNSUPPORTED", out.upper() if "unsup" in out else out)
        self.assertRegex(out, r"1 cases: 0 passed, 0 failed, 0 mistrusted, 1 unsupported")

    # --- arguments ------------------------------------------------------------------
    def test_unknown_command_and_options(self):
        self.assertBadInput(["frobnicate"], "unknown command")
        self.assertBadInput(["check", "--bogus"], "--bogus")
        self.assertBadInput(["check", "--impl", "tpu"], "--impl")
        self.assertBadInput(["check", "--only", "no_such_function"], "no_such_function")
        self.assertBadInput(["drift", GOLDENS], "drift")

    def test_unwritable_report_path(self):
        bad = os.path.join(self.tmp, "no", "such", "dir", "out.xml")
        self.assertBadInput(["check", "--against", GOLDENS, "--only", "k1", "--junit", bad], bad)
        self.assertFalse(os.path.exists(os.path.dirname(bad)))


if __name__ == "__main__":
    unittest.main()
