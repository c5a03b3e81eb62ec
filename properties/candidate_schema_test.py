"""Candidates are held to the fixture schema as strictly as goldens, and judged on what
they computed: each class of docs/bad-input.md's candidate rows, with files edited
here, asserting the exit code and the one line (or the table and outcome) conform
gives."""

import os
import shutil
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import GOLDENS, assert_bad_input, row, run  # noqa: E402


def cases_of(path, function, want_error=False):
    with h5py.File(path, "r") as f:
        return [c for c in sorted(f[function]) if ("expect_error" in f[function][c].attrs) == want_error]


class CandidateSchema(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cand(self, family="kl", name=None):
        dst = os.path.join(self.tmp, name or family + ".h5")
        shutil.copyfile(os.path.join(GOLDENS, family + ".h5"), dst)
        os.chmod(dst, 0o644)
        return dst

    def check(self, cand, *extra):
        return run("check", "--against", GOLDENS, "--candidate", cand, *extra)

    def assertBadInput(self, result, *needles):
        return assert_bad_input(self, result, *needles)

    def edit_case(self, path, function, edit, want_error=False, index=0):
        case = cases_of(path, function, want_error)[index]
        with h5py.File(path, "r+") as f:
            edit(f[function][case])
        return case

    # --- the root ----------------------------------------------------------------
    def test_family_that_disagrees_with_the_file_name(self):
        d = os.path.join(self.tmp, "set")
        os.mkdir(d)
        path = os.path.join(d, "kl.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), path)
        os.chmod(path, 0o644)
        with h5py.File(path, "r+") as f:
            f.attrs["family"] = "policy_loss"
        self.assertBadInput(self.check(d), path, "'policy_loss'", "kl.h5")
        # A single file under another name: its family must be one of the goldens'.
        other = self.cand("kl", "mine.h5")
        with h5py.File(other, "r+") as f:
            f.attrs["family"] = "kl_estimators"
        self.assertBadInput(self.check(other), other, "'kl_estimators'", "not a family")

    def test_verl_version_other_than_the_goldens(self):
        path = self.cand("kl")
        with h5py.File(path, "r+") as f:
            f.attrs["verl_version"] = "0.8.0"
        self.assertBadInput(self.check(path), path, "'0.8.0'", "'0.9.1'")
        with h5py.File(path, "r+") as f:
            del f.attrs["verl_version"]
        self.assertBadInput(self.check(path), path, "verl_version", "0.9.1")

    def test_empty_candidate_says_it_has_no_cases(self):
        path = os.path.join(self.tmp, "kl.h5")
        with h5py.File(GOLDENS + "/kl.h5", "r") as g, h5py.File(path, "w") as f:
            for k, v in g.attrs.items():
                f.attrs[k] = v
        line = self.assertBadInput(self.check(path), path, "no cases", "no function groups")
        self.assertNotIn("--only", line)

    # --- datasets the function does not have ---------------------------------------
    def test_non_float_output_or_gradient(self):
        path = self.cand("kl")

        def to_int(g, name):
            data = g[name][()]
            del g[name]
            g[name] = data.astype(np.int64)

        case = self.edit_case(path, "k3", lambda g: to_int(g, "outputs/kl"))
        self.assertBadInput(self.check(path, "--only", "k3"), "k3/" + case, "outputs/kl", "dtype int64")
        path = self.cand("kl")
        case = self.edit_case(path, "k1", lambda g: to_int(g, "grads/logprob"))
        self.assertBadInput(self.check(path, "--only", "k1"), "k1/" + case, "grads/logprob", "dtype int64")

    def test_non_float_metric(self):
        path = self.cand("policy_loss")

        def edit(g):
            del g["metrics/actor/ppo_kl"]
            g["metrics/actor/ppo_kl"] = np.int64(0)

        case = self.edit_case(path, "vanilla", edit)
        self.assertBadInput(
            self.check(path, "--only", "vanilla"), "vanilla/" + case, "metrics/actor/ppo_kl", "dtype int64"
        )

    def test_unknown_output_gradient_metric(self):
        for function, field, kind in (
            ("k3", "outputs/kl_value", "not an output of 'k3'"),
            ("k3", "grads/ref_logprob", "not a gradient of 'k3'"),
            ("vanilla", "metrics/actor/pg_clipfrc", "not a metric of 'vanilla'"),
        ):
            path = self.cand("kl" if function == "k3" else "policy_loss")
            case = self.edit_case(path, function, lambda g: g.create_dataset(field, data=np.float64(0.5)))
            self.assertBadInput(self.check(path, "--only", function), function + "/" + case, field, kind)

    def test_unknown_input(self):
        path = self.cand("kl")

        def edit(g):
            g["inputs/extra"] = g["inputs/logprob"][()]

        case = self.edit_case(path, "k2", edit)
        self.assertBadInput(self.check(path, "--only", "k2"), "k2/" + case, "inputs/extra", "not an input of 'k2'")

    def test_nested_group_inside_outputs(self):
        path = self.cand("kl")

        def edit(g):
            data = g["outputs/kl"][()]
            del g["outputs/kl"]
            g["outputs/sub/kl"] = data

        case = self.edit_case(path, "k3", edit)
        self.assertBadInput(self.check(path, "--only", "k3"), "k3/" + case, "outputs/sub/kl", "nested group")

    def test_result_and_error_together(self):
        path = self.cand("kl")
        case = self.edit_case(path, "k1", lambda g: g.attrs.__setitem__("expect_error", "ValueError: x"))
        self.assertBadInput(self.check(path, "--only", "k1"), "k1/" + case, "expect_error")

    # --- what the candidate computed, and what it did not ----------------------------
    def test_other_float_dtype_is_the_candidates_result_and_fails(self):
        for suffix, stored, message in (
            ("_f64", np.float32, "candidate returned float32 for a float64 case"),
            ("_f32", np.float64, "candidate returned float64 for a float32 case"),
        ):
            path = self.cand("kl")
            case = next(c for c in cases_of(path, "k3") if c.endswith(suffix))
            with h5py.File(path, "r+") as f:
                g = f["k3"][case]
                data = g["outputs/kl"][()]
                del g["outputs/kl"]
                g["outputs/kl"] = data.astype(stored)
            code, out, err = self.check(path, "--only", "k3/" + case)
            self.assertEqual(code, 1, out + err)
            self.assertIn("FAILED k3/" + case, out)
            self.assertIn("outputs/kl: FAILED (" + message, out)

    def test_function_missing_from_the_candidate_is_unsupported(self):
        path = self.cand("kl")
        with h5py.File(path, "r+") as f:
            del f["k3"]
        n = len(cases_of(os.path.join(GOLDENS, "kl.h5"), "k3")) + len(
            cases_of(os.path.join(GOLDENS, "kl.h5"), "k3", True)
        )
        # One line names it (the table's rows are what the candidate provides) ...
        code, out, err = self.check(path)
        self.assertEqual(code, 0, out + err)
        self.assertFalse([ln for ln in out.splitlines() if ln.split()[:1] == ["k3"]], out)
        self.assertRegex(out, r"(?m)^1 function\(s\) not provided \(%d case\(s\) UNSUPPORTED; .*\): k3$" % n)
        # ... and --show-unsupported gives it its row and, with --verbose, its cases.
        code, out, err = self.check(path, "--verbose", "--show-unsupported")
        self.assertEqual(code, 0, out + err)
        cells = row(out, "k3")
        self.assertEqual((int(cells[2]), int(cells[3]), int(cells[6])), (n, 0, n))
        self.assertIn("the candidate set has no cases of 'k3'", out)
        code, out, err = self.check(path, "--require-all")
        self.assertEqual(code, 1, out + err)
        self.assertRegex(err, r"--require-all: %d case\(s\) and \d+ field\(s\) not provided" % n)

    def test_declined_case_is_unsupported_with_its_reason(self):
        path = self.cand("kl")

        def decline(g):
            for sub in ("outputs", "grads"):
                del g[sub]
            g.attrs["declined"] = "our kernel has no float64 path"

        case = self.edit_case(path, "k2", decline)
        code, out, err = self.check(path, "--only", "k2/" + case, "--verbose")
        self.assertEqual(code, 4, out + err)  # the one case selected was not compared
        self.assertIn("UNSUPPORTED k2/%s" % case, out)
        self.assertIn("declined by the candidate: our kernel has no float64 path", out)
        self.assertIn("1 cases: 0 passed, 0 failed, 0 mistrusted, 1 unsupported", out)
        # Declined while carrying a result: contradictory, so bad input.
        path = self.cand("kl")
        case = self.edit_case(path, "k2", lambda g: g.attrs.__setitem__("declined", "no"))
        self.assertBadInput(self.check(path, "--only", "k2"), "k2/" + case, "'declined'")

    def test_a_golden_declined_at_capture(self):
        # A drift capture whose verl lacks the function declines its cases: UNSUPPORTED
        # with the capture's reason, never passed; declined beside a result is bad input.
        d = os.path.join(self.tmp, "goldens")
        shutil.copytree(GOLDENS, d)
        path = os.path.join(d, "kl.h5")
        os.chmod(path, 0o644)
        case = self.edit_case(path, "k2", lambda g: g.attrs.__setitem__("declined", "x"))
        self.assertBadInput(
            run("check", "--against", d, "--candidate", self.cand("kl"), "--only", "k2"),
            "k2/" + case,
            "'declined'",
            "golden",
        )

        def decline(g):
            for sub in ("outputs", "grads", "projections", "vjps"):
                if sub in g:
                    del g[sub]
            g.attrs["declined"] = "this verl lacks k2"

        shutil.rmtree(d)
        shutil.copytree(GOLDENS, d)
        os.chmod(path, 0o644)
        case = self.edit_case(path, "k2", decline)
        code, out, err = run("check", "--against", d, "--only", "k2/" + case, "--verbose")
        self.assertEqual(code, 4, out + err)  # the one case selected was not compared
        self.assertIn("UNSUPPORTED k2/" + case, out)
        self.assertIn("declined at capture: this verl lacks k2", out)
        self.assertIn("1 cases: 0 passed, 0 failed, 0 mistrusted, 1 unsupported", out)

    def test_partial_case_is_judged_on_the_fields_present(self):
        path = self.cand("policy_loss")
        # A case whose clip fraction is not all zero, so the fields present prove something.
        case = self.edit_case(path, "vanilla", lambda g: g["metrics/actor"].__delitem__("ppo_kl"), index=3)
        code, out, err = self.check(
            path, "--only", "vanilla/" + case, "--verbose", "--report", os.path.join(self.tmp, "r.md")
        )
        self.assertEqual(code, 0, out + err)
        cells = row(out, "vanilla")
        self.assertEqual(int(cells[9]), 1, out)  # partial
        self.assertEqual(int(cells[10]), 1, out)  # fields not provided
        self.assertIn("partial: judged on", out)
        self.assertIn("not provided: metrics/actor/ppo_kl", out)
        # A copied golden holds no sharded calls: its dp-invariance rows are not provided
        # (three, each without the loss and the gradient).
        self.assertRegex(out, r"4 cases: 1 passed, .* 3 unsupported, .*; 1 partial, 7 field\(s\) not provided")
        self.assertIn("not provided (3 case(s) UNSUPPORTED; --show-unsupported lists them): vanilla [dp k=2]", out)
        with open(os.path.join(self.tmp, "r.md")) as f:
            report = f.read()
        self.assertRegex(report, r"\| `vanilla` \| policy_loss \| `metrics/actor/ppo_kl` \| 0 \| 0 \| 1 \| 0 \|")
        self.assertRegex(report, r"\| `vanilla` \| policy_loss \| `outputs/pg_loss` \| 1 \| 0 \| 0 \| 0 \|")
        code, out, err = self.check(path, "--only", "vanilla/" + case, "--require-all")
        self.assertEqual(code, 1, out + err)
        self.assertIn("--require-all: 3 case(s) and 7 field(s) not provided", err)  # the dp rows too

    def test_partial_case_with_a_wrong_field_fails(self):
        path = self.cand("policy_loss")

        def edit(g):
            del g["metrics/actor/ppo_kl"]
            g["outputs/pg_loss"][()] = g["outputs/pg_loss"][()] + 1.0

        case = self.edit_case(path, "vanilla", edit, index=3)
        code, out, err = self.check(path, "--only", "vanilla/" + case)
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED vanilla/" + case, out)
        self.assertRegex(out, r"FAILED vanilla/\S+ \[\w+\]: .*partial")


if __name__ == "__main__":
    unittest.main()
