"""The judge's verdicts as a user meets them through `conform check`, on candidates built
from the bundled goldens: no false failure (fractions moved by an ulp, a copy of the
goldens), no false pass (the golden set itself as the candidate, a differently defined
fraction, a run that compared nothing), and every bundled golden set checkable as a
whole directory, the differences between verl releases reported as FAILED cases.
"""

import json
import os
import re
import shutil
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import GOLDENS, assert_bad_input, run  # noqa: E402

SETS = os.path.dirname(GOLDENS)


def cases(f):
    """(function, case name, case group) of every case in an open family file."""
    for fn in f:
        if fn.startswith("_") or not isinstance(f[fn], h5py.Group):
            continue
        for cn in f[fn]:
            yield fn, cn, f[fn][cn]


def failed_functions(out):
    return {line.split()[1].split("/")[0] for line in out.splitlines() if line.startswith("FAILED ")}


class JudgeCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def goldens_copy(self, name="cand"):
        d = os.path.join(self.tmp, name)
        shutil.copytree(GOLDENS, d)
        for p in os.listdir(d):
            os.chmod(os.path.join(d, p), 0o644)
        return d

    # -- a golden set is not a candidate ---------------------------------------------

    def test_the_golden_set_itself_is_a_usage_error(self):
        link = os.path.join(self.tmp, "link")
        os.symlink(GOLDENS, link)
        for args in (
            ["--candidate", GOLDENS],
            ["--candidate", os.path.join(GOLDENS, "kl.h5")],
            ["--candidate", link],
            ["--candidate", os.path.join(link, "..", os.path.basename(GOLDENS))],
        ):
            assert_bad_input(self, run(*args), "--candidate", "the golden set", "itself")
        # The same files as --against, whichever set that is.
        copy = self.goldens_copy("other")
        assert_bad_input(self, run("--against", copy, "--candidate", copy), "is the golden set", copy)
        assert_bad_input(
            self, run("--against", copy, "--candidate", os.path.join(copy, "advantage.h5")), "a file of the golden set"
        )

    def test_a_copy_of_the_goldens_is_judged_and_said_to_be_bit_for_bit(self):
        code, out, err = run("--candidate", self.goldens_copy(), "--jobs", "2")
        self.assertEqual(code, 0, out + err)
        first = out.splitlines()[1]
        self.assertRegex(first, r"every compared field of the \d+ compared case\(s\) is the reference's bit for bit")
        self.assertIn(" 0 failed", out)

    def test_a_candidate_that_differs_anywhere_is_not_said_to_be_bit_for_bit(self):
        d = self.goldens_copy()
        with h5py.File(os.path.join(d, "kl.h5"), "r+") as f:
            for fn, cn, g in cases(f):
                if "outputs" in g and "kl" in g["outputs"]:
                    x = g["outputs/kl"][...]
                    g["outputs/kl"][...] = np.nextafter(x, np.inf)
                    break
        code, out, err = run("--candidate", d, "--only", fn)
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("bit for bit", out)

    # -- fractions: the count exactly, the division to a floating tolerance ---------

    def test_every_metric_moved_by_an_ulp_passes(self):
        d = self.goldens_copy()
        moved = 0
        for name in os.listdir(d):
            with h5py.File(os.path.join(d, name), "r+") as f:
                for fn, cn, g in cases(f):
                    if "metrics" not in g:
                        continue

                    def bump(_, ds):
                        nonlocal moved
                        if isinstance(ds, h5py.Dataset):
                            v = ds[()]
                            if np.all(np.isfinite(v)):
                                ds[()] = np.nextafter(v, v.dtype.type(2.0))
                                moved += 1

                    g["metrics"].visititems(bump)
        self.assertGreater(moved, 1000)
        code, out, err = run("--candidate", d, "--jobs", "2")
        self.assertEqual(code, 0, out + err)
        self.assertRegex(out, r" 0 failed")
        self.assertNotIn("bit for bit", out)

    def test_a_value_clip_fraction_over_every_token_fails(self):
        d = self.goldens_copy()
        changed = []
        with h5py.File(os.path.join(d, "policy_loss.h5"), "r+") as f:
            for cn, g in f["compute_value_loss"].items():
                if "metrics" not in g or "vf_clipfrac" not in g["metrics"]:
                    continue
                v, V, R = (g["inputs/" + n][...].astype(np.float64) for n in ("vpreds", "values", "returns"))
                c = float(g.attrs["cfg.cliprange_value"])
                vc = np.maximum(np.minimum(v, V + c), V - c)
                unmasked = float(np.mean((vc - R) ** 2 > (v - R) ** 2))
                ds = g["metrics/vf_clipfrac"]
                if unmasked != float(ds[()]):
                    ds[()] = np.asarray(unmasked, dtype=ds.dtype)
                    changed.append(cn)
        self.assertGreaterEqual(len(changed), 4)
        code, out, err = run("--candidate", os.path.join(d, "policy_loss.h5"), "--only", "compute_value_loss")
        self.assertEqual(code, 1, out + err)
        # Each changed case fails on the fraction, in its own block (failures are listed
        # material first, so blocks are not in file order); where the unmasked count is
        # another count, the note names it.
        for cn in changed:
            block = re.search(r"FAILED compute_value_loss/%s .*\n((?:  .*\n)*)" % re.escape(cn), out)
            self.assertIsNotNone(block, cn + "\n" + out)
            self.assertIn("metrics/vf_clipfrac: FAILED (a fraction moved by", block.group(1))
        self.assertGreaterEqual(out.count("the count it implies differs"), 4, out)

    # -- a run that compared nothing is not green -------------------------------------

    def test_every_case_skipped_exits_4_and_require_all_fails_on_skipped(self):
        only = ["--impl", "cuda-host", "--only", "grpo/g4_binary_8x8_f64"]
        code, out, err = run(*only)
        self.assertEqual(code, 4, out + err)
        self.assertIn("nothing compared: no case PASSED or FAILED", err)
        code, out, err = run(*only, "--require-all")
        self.assertEqual(code, 1, out + err)
        self.assertIn("1 case(s) SKIPPED", err)
        # Without a GPU, the device implementation skips every case: never exit 0.
        code, out, err = run("--impl", "cuda", "--only", "grpo")
        if "CUDA: " in out:
            self.assertEqual(code, 4, out + err)
            self.assertEqual(run("--impl", "cuda", "--only", "grpo", "--require-all")[0], 1)

    def test_a_candidate_that_declines_everything_exits_4(self):
        path = os.path.join(self.tmp, "kl.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), path)
        os.chmod(path, 0o644)
        with h5py.File(path, "r+") as f:
            for fn, cn, g in cases(f):
                for k in ("outputs", "grads", "metrics", "vjps", "projections"):
                    if k in g:
                        del g[k]
                if "expect_error" in g.attrs:
                    del g.attrs["expect_error"]
                g.attrs["declined"] = "not implemented here"
        code, out, err = run("--candidate", path)
        self.assertEqual(code, 4, out + err)
        self.assertIn("nothing compared", err)

    # -- every bundled golden set, as a whole directory --------------------------------

    def test_the_oracle_against_verl_0_8_0_lists_the_releases_differences(self):
        old = os.path.join(SETS, "verl-0.8.0")
        code, out, err = run("--against", old, "--jobs", "2")
        self.assertEqual(code, 1, out + err)
        self.assertEqual(err.strip(), "")
        failed = failed_functions(out)
        # The functions whose results or error behaviour changed between 0.8.0 and 0.9.1
        # (docs/drift-verl-0.8.0-to-0.9.1.md): reinforce_plus_plus, token-sum and every
        # loss case using it, gspo, the sequence IS fractions, dro, the k1 threshold check,
        # the multi-trajectory wrapper, the value loss's global counts.
        for fn in (
            "reinforce_plus_plus",
            "token-sum",
            "gspo",
            "compute_is_metrics",
            "dro",
            "compute_rollout_rejection_mask",
            "compute_advantage_for_multi_trajectories",
            "compute_value_loss",
        ):
            self.assertIn(fn, failed)
        for fn in ("grpo", "gae", "low_var_kl", "token-mean", "clip_cov", "kl_cov"):
            self.assertNotIn(fn, failed)
        self.assertRegex(
            out,
            r"FAILED compute_rollout_rejection_mask/err_lower_above_upper_4x8_f32 .*"
            r"raised 'ValueError.*but verl returned a result; the goldens are verl 0\.8\.0's",
        )
        # The drift report names the same functions.
        code, drift, _ = run("drift", old, GOLDENS, "--format", "json")
        self.assertEqual(code, 1)
        doc = json.loads(drift)
        drifted = {c["function"] for c in doc["changes"]} | {e.split("/")[0] for e in doc["error_behaviour_changed"]}
        self.assertEqual(failed, drifted)

    def test_a_candidate_against_every_bundled_set(self):
        for s in sorted(os.listdir(SETS)):
            if not s.startswith("verl-") or not os.path.isdir(os.path.join(SETS, s)):
                continue
            d = os.path.join(self.tmp, s)
            shutil.copytree(os.path.join(SETS, s), d)
            code, out, err = run("--against", os.path.join(SETS, s), "--candidate", d, "--jobs", "2")
            self.assertEqual(code, 0, s + "\n" + out + err)
            self.assertIn("bit for bit", out)


if __name__ == "__main__":
    unittest.main()
