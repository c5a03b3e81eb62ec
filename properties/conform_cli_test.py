"""The conform CLI as a user meets it: exit codes and one-line messages.

What a user relies on: a planted error in a copy of a golden file makes
`conform check --candidate` exit 1 naming function, case, output, worst error and
index; a truncated file, a missing dataset and a wrong shape each exit 2 with one
clear line; `list --json` reports verl 0.9.1 from the files' provenance.
"""
import json
import os
import shutil
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import GOLDENS, assert_bad_input, run  # noqa: E402



class ConformCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def copy(self, name):
        dst = os.path.join(self.tmp, name)
        shutil.copyfile(os.path.join(GOLDENS, name), dst)
        os.chmod(dst, 0o644)
        return dst

    def test_default_run_checks_bundled_goldens_and_passes(self):
        code, out, err = run("--against", GOLDENS)
        self.assertEqual(code, 0, out + err)
        self.assertIn("grpo_vectorized", out)
        self.assertIn(" 0 failed", out)

    def test_list_json_reports_provenance(self):
        code, out, err = run("list", "--json", "--against", GOLDENS)
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["verl_version"], "0.9.1")
        names = {f["name"]: f for f in doc["functions"]}
        for n in ("grpo", "vanilla", "token-mean", "k3+", "masked_whiten"):
            self.assertTrue(names[n]["oracle"], n)
            self.assertGreaterEqual(names[n]["golden_cases"]["float64"], 3, n)
            self.assertGreaterEqual(names[n]["golden_cases"]["float32"], 3, n)
        self.assertNotIn("grpo", doc["verl_names_without_oracle"])
        # Every estimator of verl's ADV_ESTIMATOR_REGISTRY (as the goldens recorded it)
        # has an oracle entry and at least 3 float64 and 3 float32 golden cases.
        with h5py.File(os.path.join(GOLDENS, "advantage.h5"), "r") as f:
            estimators = [x for x in f["_verl_registry"].attrs["adv_estimators"].split("\n") if x]
        # ... and they are the registry's estimators: the advantage entries that verl's
        # compute_advantage dispatches to (verl_dispatch_kwargs in `conform spec --json`).
        code, out, err = run("spec", "--json")
        self.assertEqual(code, 0, err)
        dispatched = [f["name"] for f in json.loads(out)["functions"]
                      if f["family"] == "advantage" and "verl_dispatch_kwargs" in f]
        self.assertTrue(dispatched)
        self.assertEqual(sorted(estimators), sorted(dispatched))
        advantage = {f["name"]: f for f in doc["functions"] if f["family"] == "advantage"}
        self.assertEqual(doc["verl_names_without_oracle_by_list"]["adv_estimators"], [])
        for n in estimators:
            self.assertTrue(advantage[n]["oracle"], n)
            self.assertGreaterEqual(advantage[n]["golden_cases"]["float64"], 3, n)
            self.assertGreaterEqual(advantage[n]["golden_cases"]["float32"], 3, n)

    def test_spec_json_lists_every_function_once(self):
        code, out, _ = run("spec", "--json")
        self.assertEqual(code, 0)
        keys = [(f["family"], f["name"]) for f in json.loads(out)["functions"]]
        self.assertEqual(len(keys), len(set(keys)))  # the registry key is (family, name)
        names = [n for _, n in keys]
        self.assertIn("vanilla", names)

    def test_planted_error_in_candidate_is_reported(self):
        path = self.copy("advantage.h5")
        with h5py.File(path, "r+") as f:
            case = next(c for c in sorted(f["grpo"].keys()) if np.any(f["grpo"][c]["outputs"]["advantages"][()] != 0))
            ds = f["grpo"][case]["outputs"]["advantages"]
            data = ds[()]
            i, j = np.argwhere(data != 0)[0]
            data[i, j] = data[i, j] * 1.5 + 0.25
            ds[...] = data
        code, out, err = run("check", "--against", GOLDENS, "--candidate", path)
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED grpo/" + case, out)
        self.assertIn("outputs/advantages", out)
        self.assertIn("worst abs error", out)
        self.assertIn("at index (%d, %d)" % (i, j), out)
        self.assertIn("repro: ", out)

    def test_unmodified_candidate_passes(self):
        path = self.copy("kl.h5")
        code, out, err = run("check", "--against", GOLDENS, "--candidate", path)
        self.assertEqual(code, 0, out + err)

    def assertBadInput(self, args, *needles):
        return assert_bad_input(self, run(*args), *needles)

    def test_truncated_file_is_bad_input(self):
        path = self.copy("kl.h5")
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(size // 2)
        self.assertBadInput(["check", "--against", GOLDENS, "--candidate", path], path)

    def test_missing_dataset_is_bad_input(self):
        path = self.copy("policy_loss.h5")
        with h5py.File(path, "r+") as f:
            case = sorted(k for k in f["vanilla"].keys() if "expect_error" not in f["vanilla"][k].attrs)[0]
            del f["vanilla"][case]["inputs"]["advantages"]
        self.assertBadInput(["check", "--against", GOLDENS, "--candidate", path], "vanilla/" + case, "advantages")

    def test_wrong_shape_is_bad_input(self):
        path = self.copy("aggregation.h5")
        with h5py.File(path, "r+") as f:
            case = sorted(f["token-sum"].keys())[0]
            g = f["token-sum"][case]["inputs"]
            mask = g["loss_mask"][()]
            del g["loss_mask"]
            g["loss_mask"] = mask[:, :-1] if mask.shape[1] > 1 else np.zeros((mask.shape[0], 2), mask.dtype)
        self.assertBadInput(["check", "--against", GOLDENS, "--candidate", path], "token-sum/" + case, "loss_mask")

    def test_usage_errors(self):
        self.assertBadInput(["frobnicate"], "unknown command")
        self.assertBadInput(["check", "--impl", "tpu", "--against", GOLDENS], "--impl")
        self.assertBadInput(["check", "--against", os.path.join(self.tmp, "nowhere")], "nowhere")

    def test_drift_of_a_set_against_itself_is_empty(self):
        code, out, err = run("drift", GOLDENS, GOLDENS)
        self.assertEqual(code, 0, out + err)
        self.assertIn("no drift beyond tolerance", out)

    def test_junit_written(self):
        junit = os.path.join(self.tmp, "out.xml")
        code, out, err = run("check", "--against", GOLDENS, "--only", "k3", "--junit", junit)
        self.assertEqual(code, 0, out + err)
        with open(junit) as f:
            self.assertIn("<testsuite name=\"conform.oracle.k3\"", f.read())


class Options(unittest.TestCase):
    """Every option means what it says: an empty or repeated value, a value given to a
    flag and a name --only cannot resolve are usage errors (exit 2, one line), never a
    run that checks something else."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    assertBadInput = ConformCli.assertBadInput

    def test_empty_values_are_usage_errors(self):
        for option in ("--candidate", "--junit", "--report", "--against", "--only", "--impl"):
            self.assertBadInput(["check", option, ""], "option " + option + ": an empty value")
            self.assertBadInput(["check", option + "="], "option " + option + ": an empty value")
        self.assertBadInput(["drift", "--report", "", GOLDENS, GOLDENS], "option --report: an empty value")
        self.assertBadInput(["drift", "", GOLDENS], "an empty argument")
        self.assertBadInput(["check", "--only", "k3,,k1"], "--only", "an empty name")
        self.assertBadInput(["check", "--only", "k3/"], "--only", "'k3/'")

    def test_an_option_is_given_once_and_a_flag_takes_no_value(self):
        self.assertBadInput(["check", "--against", GOLDENS, "--against", GOLDENS], "--against given twice")
        self.assertBadInput(["check", "--verbose", "--verbose"], "--verbose given twice")
        self.assertBadInput(["check", "--verbose=no"], "--verbose takes no value")
        self.assertBadInput(["check", "--candidate", "--junit", "x.xml"], "--candidate needs a value",
                            "--junit")
        self.assertBadInput(["check", "--impl", "cuda", "--candidate", os.path.join(GOLDENS, "kl.h5")],
                            "--impl and --candidate")

    def test_every_only_name_must_resolve(self):
        for args, needle in ((["check", "--only", "k3,no_such_function"], "'no_such_function'"),
                             (["check", "--only", "k3", "--only", "k3/no_such_case"], "'k3/no_such_case'"),
                             (["check", "--only", "policy_loss/k3"], "'policy_loss/k3'"),
                             (["check", "--only", "a/b/c/d"], "'a/b/c/d'"),
                             (["drift", GOLDENS, GOLDENS, "--only", "k3,nope"], "'nope'")):
            self.assertBadInput(args + ["--against", GOLDENS] if args[0] == "check" else args, needle)
        # The qualified forms select exactly one family's function.
        code, out, err = run("check", "--against", GOLDENS, "--only", "advantage/gpg")
        self.assertEqual(code, 0, out + err)
        families = {l.split()[1] for l in out.splitlines() if l.split()[:1] == ["gpg"]}
        self.assertEqual(families, {"advantage"})
        with h5py.File(os.path.join(GOLDENS, "kl.h5"), "r") as f:
            case = sorted(f["k3"])[0]
        code, out, err = run("check", "--against", GOLDENS, "--only", "kl/k3/" + case)
        self.assertEqual(code, 0, out + err)
        self.assertIn("1 cases:", out)


class Drift(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.old = os.path.join(self.tmp, "old")
        self.new = os.path.join(self.tmp, "new")
        for d in (self.old, self.new):
            os.mkdir(d)
            for n in ("kl.h5", "policy_loss.h5"):
                shutil.copyfile(os.path.join(GOLDENS, n), os.path.join(d, n))
                os.chmod(os.path.join(d, n), 0o644)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    assertBadInput = ConformCli.assertBadInput

    def test_a_field_on_one_side_only_is_drift(self):
        with h5py.File(os.path.join(self.new, "kl.h5"), "r+") as f:
            case = sorted(c for c in f["k3"] if "expect_error" not in f["k3"][c].attrs)[0]
            del f["k3"][case]["outputs"]
        with h5py.File(os.path.join(self.old, "policy_loss.h5"), "r+") as f:
            vcase = sorted(c for c in f["vanilla"] if "expect_error" not in f["vanilla"][c].attrs)[0]
            del f["vanilla"][vcase]["metrics/actor/ppo_kl"]
        code, out, err = run("drift", self.old, self.new)
        self.assertEqual(code, 1, out + err)
        self.assertIn("k3/%s: outputs/kl (only in the old set)" % case, out)
        self.assertIn("vanilla/%s: metrics/actor/ppo_kl (only in the new set)" % vcase, out)
        cells = next(l.split() for l in out.splitlines() if l.split()[:2] == ["k3", "outputs/kl"])
        compared, same, miss = int(cells[2]), int(cells[3]), int(cells[6])
        self.assertEqual(miss, 1)
        self.assertEqual(same, compared)  # the missing case is not among the "same"
        self.assertIn("drift found beyond tolerance", out)

    def test_drift_validates_before_it_compares(self):
        # A malformed case shared by both sets, of a function whose comparison runs the
        # oracle (clip fractions need its threshold-boundary mask).
        for d in (self.old, self.new):
            with h5py.File(os.path.join(d, "policy_loss.h5"), "r+") as f:
                case = sorted(c for c in f["vanilla"] if "expect_error" not in f["vanilla"][c].attrs)[0]
                g = f["vanilla"][case]["inputs"]
                data = g["response_mask"][()]
                del g["response_mask"]
                g["response_mask"] = data[:, :-1]
        self.assertBadInput(["drift", self.old, self.new], "vanilla/" + case, "inputs/response_mask", "T is")


if __name__ == "__main__":
    unittest.main()
