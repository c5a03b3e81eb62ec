"""`conform validate` and baselines, as a framework's CI meets them.

validate runs the candidate harness in the interpreter given by --python and checks what
it wrote in one step: the numpy example passes, a planted bug fails naming the function,
bad input is exit 2 with one line that says what to fix (a --python without numpy, an
adapter whose framework that interpreter cannot import). The harness's --only and --jobs
change which cases run and how fast, never the results. A baseline turns exactly the
differences it lists into BASELINED (exit 0), reports entries that match nothing, and
never lets a MISTRUSTED, UNSUPPORTED or error-semantics case through unnamed.
"""

import json
import os
import shutil
import subprocess
import time
import signal
import sys
import tempfile
import textwrap
import unittest

import h5py
import numpy as np

from cli_support import CONFORM, GOLDENS, assert_bad_input, row  # noqa: E402

RUNFILES = os.environ.get("TEST_SRCDIR", "")
HARNESS = os.path.join(RUNFILES, "verlconf", "tools", "harness", "run_candidate.py")
REASON = "our trainer normalises by the population std on purpose"


def validate(*args, bug="", tmp=None, python=sys.executable, verlconf_prog=None, **extra_env):
    """(exit status, stdout, stderr) of `conform validate --adapter ... ARGS`."""
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug, **extra_env)
    if verlconf_prog:
        env["VERLCONF_PROG"] = verlconf_prog
    if tmp:
        env["TMPDIR"] = tmp
    cmd = [CONFORM, "validate", "--against", GOLDENS] + (["--python", python] if python else []) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    return p.returncode, p.stdout, p.stderr


def conform(*args):
    p = subprocess.run([CONFORM, *args], capture_output=True, text=True, timeout=900)
    return p.returncode, p.stdout, p.stderr


def harness(out, *args, bug=""):
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug)
    cmd = [sys.executable, HARNESS, "--adapter", "numpy_example", "--out", out, "--goldens", GOLDENS]
    cmd += ["--conform", CONFORM, *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)


def case_outcomes(doc):
    """(function, [(case, outcome, err/tol)]) of a `--format json` document."""
    return [(f["function"], [(c["case"], c["outcome"], c["err_tol"]) for c in f["cases"]]) for f in doc["functions"]]


def h5_content(path):
    """Every dataset's values and every attribute of a file, by name."""
    out = {}

    def visit(name, obj):
        out[name + "@attrs"] = {k: repr(v) for k, v in obj.attrs.items()}
        if isinstance(obj, h5py.Dataset):
            out[name] = (obj.dtype.str, obj.shape, np.asarray(obj[()]).tobytes())

    with h5py.File(path, "r") as f:
        out["/@attrs"] = {k: repr(v) for k, v in f.attrs.items()}
        f.visititems(visit)
    return out


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name, text=None):
        p = os.path.join(self.tmp, name)
        if text is not None:
            with open(p, "w") as f:
                f.write(textwrap.dedent(text))
        return p


class Validate(Base):
    def test_pristine_example_passes_and_leaves_nothing_behind(self):
        scratch = self.path("scratch")
        os.mkdir(scratch)
        code, out, err = validate("--adapter", "numpy_example", "--only", "grpo,vanilla,k3", tmp=scratch)
        self.assertEqual(code, 0, out + err)
        self.assertTrue(out.startswith("conform validate: adapter numpy_example against"), out)
        self.assertEqual(int(row(out, "grpo")[4]), 0)
        self.assertEqual(os.listdir(scratch), [], "the temporary candidate directory was left behind")

    def test_planted_bug_fails_naming_the_function(self):
        code, out, err = validate("--adapter", "numpy_example", "--only", "grpo,vanilla", bug="biased_std")
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED grpo/", out)
        self.assertIn("outputs/advantages: FAILED", out)
        self.assertGreater(int(row(out, "grpo")[4]), 0)
        self.assertEqual(int(row(out, "vanilla")[4]), 0)
        # Run as a plain binary (argv[0]), the repro line names the binary as it was invoked.
        self.assertIn("repro: " + CONFORM + " validate --adapter numpy_example", out)

    def test_out_keeps_the_candidate_and_check_agrees(self):
        cand = self.path("cand")
        code, out, err = validate("--adapter", "numpy_example", "--only", "grpo", "--out", cand, "--format", "json")
        self.assertEqual(code, 0, out + err)
        self.assertIn("candidate results are in " + cand, err)
        self.assertEqual(json.loads(out)["exit_code"], 0)
        self.assertTrue(os.path.isfile(os.path.join(cand, "advantage.h5")))
        c2, out2, err2 = conform(
            "check", "--against", GOLDENS, "--candidate", cand, "--only", "grpo", "--format", "json"
        )
        self.assertEqual(c2, 0, out2 + err2)
        self.assertEqual(json.loads(out)["totals"], json.loads(out2)["totals"])
        # The harness's rules stand: results already there are not overwritten without --force.
        code, out, err = validate("--adapter", "numpy_example", "--only", "grpo", "--out", cand)
        self.assertEqual(code, 2, out + err)
        self.assertIn("--force", err)
        code, out, err = validate("--adapter", "numpy_example", "--only", "grpo", "--out", cand, "--force")
        self.assertEqual(code, 0, out + err)

    def test_bad_input(self):
        assert_bad_input(self, validate("--only", "grpo"), "--adapter is required")
        assert_bad_input(
            self, validate("--adapter", self.path("missing_adapter.py")), "missing_adapter.py", "no such file"
        )
        assert_bad_input(self, validate("--adapter", ""), "--adapter", "empty value")
        assert_bad_input(self, validate("--adapter", "numpy_example", "--python", ""), "--python", "empty value")
        assert_bad_input(self, validate("--adapter", "numpy_example", python=self.tmp), "--python", "not an executable")
        plain = self.path("python", "#!/bin/sh\nexit 0\n")
        assert_bad_input(self, validate("--adapter", "numpy_example", python=plain), "--python", "not an executable")
        assert_bad_input(
            self, validate("--adapter", "numpy_example", python="no-such-python-here"), "not found on PATH", "--python"
        )
        assert_bad_input(self, validate("--adapter", "numpy_example", "--force"), "--force", "--out")
        assert_bad_input(self, validate("--adapter", "numpy_example", "--strict-baseline"), "--baseline")

    def test_an_interpreter_without_numpy_is_named(self):
        fake = self.path("python3", "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n")
        os.chmod(fake, 0o755)
        line = assert_bad_input(self, validate("--adapter", "numpy_example", python=fake), fake, "numpy, h5py")
        self.assertIn("pass --python", line)

    def test_an_adapter_whose_framework_is_missing_says_pass_python(self):
        adapter = self.path(
            "needs_torch_adapter.py",
            """
            import verlconf_missing_framework  # as `import torch` in an interpreter without it

            name = "needs_torch"
            FUNCTIONS = {}
            def versions():
                return {}
            """,
        )
        code, out, err = validate("--adapter", adapter)
        self.assertEqual(code, 2, out + err)
        self.assertIn("No module named 'verlconf_missing_framework'", err)
        last = err.strip().splitlines()[-1]
        self.assertTrue(last.startswith("conform: error:"), err)
        self.assertIn("pass --python", last)


class Lifetime(Base):
    """The harness runs in its own process group and ends with the run; the temporary goes
    on every exit path; a background process the adapter starts never holds the run."""

    ADAPTER = """
        import os, subprocess, sys, time
        name = "lifetime"
        def versions():
            return {}
        def k1(inputs, cfg, dtype):
            open(os.environ["MARK"], "a").write(str(os.getpid()) + "\\n")
            if os.environ.get("BACKGROUND"):
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            else:
                time.sleep(600)
            return None
        FUNCTIONS = {"k1": k1}
    """

    @staticmethod
    def read(path):
        with open(path) as f:
            return f.read()

    def alive(self, pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"

    def test_a_signal_ends_the_harness_and_removes_the_temporary(self):
        adapter = self.path("lifetime_adapter.py", self.ADAPTER)
        scratch, mark = self.path("scratch"), self.path("mark")
        os.mkdir(scratch)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with open(mark, "w"):
                pass
            env = dict(os.environ, TMPDIR=scratch, MARK=mark)
            cmd = [CONFORM, "validate", "--against", GOLDENS, "--python", sys.executable, "--adapter", adapter]
            p = subprocess.Popen(cmd + ["--only", "k1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.time() + 120
            while not self.read(mark).strip() and time.time() < deadline:
                time.sleep(0.1)
            pids = [int(x) for x in self.read(mark).split()]
            self.assertTrue(pids, "the adapter was never called")
            p.send_signal(sig)
            p.communicate(timeout=60)
            self.assertEqual(p.returncode, -sig)
            time.sleep(0.2)
            self.assertFalse(any(self.alive(pid) for pid in pids), f"the harness outlived conform ({sig})")
            self.assertEqual(os.listdir(scratch), [], f"the temporary was left behind ({sig})")

    def test_a_background_process_of_the_adapter_does_not_hold_the_run(self):
        adapter = self.path("lifetime_adapter.py", self.ADAPTER)
        mark = self.path("mark", "")
        start = time.time()
        code, out, err = validate("--adapter", adapter, "--only", "k1", MARK=mark, BACKGROUND="1")
        self.assertLess(time.time() - start, 120, "validate waited for the adapter's background process")
        self.assertEqual(code, 4, out + err)  # every case declined: nothing compared

    def test_sys_exit_and_a_hanging_call_are_adapter_errors_and_the_run_goes_on(self):
        for body, want in (
            ("sys.exit(0)", "SystemExit(0)"),
            ("time.sleep(600)", "did not return within 1 s (--call-timeout)"),
        ):
            adapter = self.path(
                "stop_adapter.py",
                f"""
                import sys, time
                import numpy as np
                name = "stop"
                def versions():
                    return {{}}
                def k1(inputs, cfg, dtype):
                    if inputs["logprob"].shape[0] == 4:
                        {body}
                    lp = inputs["logprob"]
                    return {{"outputs": {{"kl": (lp - inputs["ref_logprob"]).astype(lp.dtype)}}}}
                FUNCTIONS = {{"k1": k1}}
                """,
            )
            start = time.time()
            code, out, err = validate("--adapter", adapter, "--only", "k1", "--call-timeout", "1", "--verbose")
            self.assertLess(time.time() - start, 300, body)
            self.assertEqual(code, 1, out + err)
            self.assertIn(want, out + err)
            self.assertGreater(int(row(out, "k1")[3]), 0, out)  # the other cases were judged


class OnlyAndJobs(Base):
    def test_jobs_writes_what_a_serial_run_writes(self):
        one, three = self.path("one"), self.path("three")
        only = ["--only", "grpo,advantage/gae,vanilla,k1,k3,token-mean,masked_mean"]
        p1 = harness(one, *only, bug="biased_std")
        self.assertEqual(p1.returncode, 0, p1.stderr)
        p3 = harness(three, *only, "--jobs", "3", bug="biased_std")
        self.assertEqual(p3.returncode, 0, p3.stderr)
        self.assertEqual(sorted(os.listdir(one)), sorted(os.listdir(three)))
        self.assertEqual(
            sorted(os.listdir(one)),
            ["advantage.h5", "aggregation.h5", "kl.h5", "policy_loss.h5", "torch_functional.h5"],
        )
        for name in os.listdir(one):
            a, b = h5_content(os.path.join(one, name)), h5_content(os.path.join(three, name))
            self.assertEqual(a.keys(), b.keys(), name)
            for k in a:
                self.assertEqual(a[k], b[k], f"{name}:{k}")
        self.assertEqual(p1.stdout.replace(one, "DIR"), p3.stdout.replace(three, "DIR"))

    def test_only_runs_the_selected_cases(self):
        out = self.path("out")
        p = harness(out, "--only", "kl/k3,grpo/" + self.some_case("advantage.h5", "grpo"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["advantage.h5", "kl.h5"])
        with h5py.File(os.path.join(out, "advantage.h5"), "r") as f:
            self.assertEqual(list(f), ["grpo"])
            self.assertEqual(len(f["grpo"]), 1)
        with h5py.File(os.path.join(out, "kl.h5"), "r") as f:
            self.assertEqual(list(f), ["k3"])

    def some_case(self, family_file, function):
        with h5py.File(os.path.join(GOLDENS, family_file), "r") as f:
            return sorted(f[function])[0]

    def test_unknown_only_names_are_an_error_listing_the_known_ones(self):
        out = self.path("out")
        p = harness(out, "--only", "grpo,frobnicate")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("'frobnicate'", p.stderr)
        self.assertIn("known functions: ", p.stderr)
        self.assertIn("grpo", p.stderr.split("known functions: ")[1])
        self.assertFalse(os.path.exists(out))
        for bad in ("0", "x", "1000"):
            p = harness(out, "--jobs", bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("--jobs", p.stderr)

    def test_validate_passes_only_and_jobs_through(self):
        args = ("--adapter", "numpy_example", "--only", "grpo,vanilla,k3", "--format", "json")
        c1, o1, e1 = validate(*args, bug="biased_std")
        c2, o2, e2 = validate(*args, "--jobs", "2", bug="biased_std")
        self.assertEqual((c1, c2), (1, 1), e1 + e2)
        d1, d2 = json.loads(o1), json.loads(o2)
        self.assertEqual(d1["totals"], d2["totals"])
        self.assertEqual(case_outcomes(d1), case_outcomes(d2))
        dp_rows = {f"vanilla [dp k={k}]" for k in (2, 4, 8)}  # the only one of the three with dp_size
        self.assertEqual({f["function"] for f in d1["functions"]}, {"grpo", "vanilla", "k3"} | dp_rows)

    def test_validate_has_the_dp_invariance_rows(self):
        for bug, code in (("", 0), ("local_token_mean", 1)):
            c, o, e = validate(
                "--adapter", "numpy_example", "--only", "token-mean,token-sum", "--format", "json", bug=bug
            )
            self.assertEqual(c, code, e)
            rows = {f["function"]: f for f in json.loads(o)["functions"]}
            for k in (2, 4, 8):
                mean, total = rows[f"token-mean [dp k={k}]"], rows[f"token-sum [dp k={k}]"]
                self.assertEqual((mean["check"], mean["dp_ranks"]), ("dp-invariance", k))
                self.assertEqual(total["outcomes"]["FAILED"], 0, k)
                self.assertGreater(total["outcomes"]["PASSED"], 0, k)
                if bug:
                    self.assertGreater(mean["outcomes"]["FAILED"], 0, k)
                else:
                    self.assertEqual(mean["outcomes"]["FAILED"], 0, k)
                    self.assertGreater(mean["outcomes"]["PASSED"], 0, k)


def failed_cases(doc, function):
    return {c["case"] for f in doc["functions"] if f["function"] == function for c in f["cases"]
            if c["outcome"] == "FAILED"}  # fmt: skip


class FalsePasses(Base):
    """The two false-pass classes on the goldens, through the numpy example's faults: an
    exclusive bound fails the golden that pins inclusive comparisons, in both dtypes; a
    KL term scaled by kl_loss_coef 1e-3 fails in float32 too, where the table's atol alone
    swallowed it."""

    def test_an_exclusive_k1_bound_fails_the_exact_golden_in_both_dtypes(self):
        code, out, err = validate("--adapter", "numpy_example", "--only", "token_k1", "--format", "json")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(failed_cases(json.loads(out), "token_k1"), set())
        code, out, err = validate(
            "--adapter", "numpy_example", "--only", "token_k1", "--format", "json", bug="exclusive_k1_bounds"
        )
        self.assertEqual(code, 1, out + err)
        failed = failed_cases(json.loads(out), "token_k1")
        self.assertIn("exact_8x16_f64", failed)
        self.assertIn("exact_8x16_f32", failed)

    def test_an_unmasked_kl_mean_fails_in_float32(self):
        code, out, err = validate("--adapter", "numpy_example", "--only", "actor_kl_loss", "--format", "json")
        self.assertEqual(code, 0, out + err)
        code, out, err = validate(
            "--adapter", "numpy_example", "--only", "actor_kl_loss", "--format", "json", bug="kl_unmasked_mean"
        )
        self.assertEqual(code, 1, out + err)
        failed = failed_cases(json.loads(out), "actor_kl_loss")
        self.assertTrue({c for c in failed if c.endswith("_f32")}, failed)
        self.assertTrue({c for c in failed if c.endswith("_f64")}, failed)


class PlantedCandidate(Base):
    """One harness run of the numpy example with BUG planted, on ONLY, shared by the tests."""

    ONLY, BUG = "", ""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.cand = os.path.join(cls.dir, "cand")
        p = harness(cls.cand, "--only", cls.ONLY, bug=cls.BUG)
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, *args):
        return conform("check", "--against", GOLDENS, "--candidate", self.cand, *args)


class DpRowBaseline(PlantedCandidate):
    """A baseline entry for one dp-invariance row, or for all of them, on a candidate whose
    token-mean takes each rank's own mean."""

    ONLY, BUG = "token-mean", "local_token_mean"

    def rows(self, *args):
        code, out, err = self.check("--format", "json", *args)
        return code, {f["function"]: f["outcomes"] for f in json.loads(out)["functions"]}, err

    def test_one_row_or_every_row(self):
        code, rows, err = self.rows()
        self.assertEqual(code, 1, err)
        failing = [r for r, o in rows.items() if "[dp k=" in r and o["FAILED"]]
        self.assertEqual(len(failing), 3, rows)
        one = self.path("one.txt", f"token-mean [dp k=2] grads/loss_mat # {REASON}\n"
                                   f"token-mean [dp k=2] outputs/loss # {REASON}\n")  # fmt: skip
        code, rows, err = self.rows("--baseline", one)
        self.assertEqual(rows["token-mean [dp k=2]"]["FAILED"], 0, rows)
        self.assertGreater(rows["token-mean [dp k=2]"]["BASELINED"], 0, rows)
        self.assertGreater(rows["token-mean [dp k=4]"]["FAILED"], 0, rows)
        every = self.path("every.txt", f"token-mean [dp k=*] grads/loss_mat # {REASON}\n"
                                       f"token-mean [dp k=*] outputs/loss # {REASON}\n")  # fmt: skip
        code, rows, err = self.rows("--baseline", every)
        for k in (2, 4, 8):
            self.assertEqual(rows[f"token-mean [dp k={k}]"]["FAILED"], 0, rows)
        self.assertEqual(rows["token-mean"]["BASELINED"], 0, rows)  # the function's own cases are not covered

    def test_a_malformed_row_is_exit_2_naming_the_line(self):
        for text in ("token-mean [dp k=x] grads/loss_mat # why\n", "token-mean [dp k=2 grads/loss_mat # why\n",
                     "token-mean grads/loss_mat cause=\"\" # why\n"):  # fmt: skip
            b = self.path("bad.txt", text)
            assert_bad_input(self, self.check("--baseline", b), b + ":1")


class Baseline(PlantedCandidate):
    """On one candidate with the biased-std bug planted in GRPO."""

    ONLY, BUG = "grpo,vanilla,k3", "biased_std"

    def written(self):
        """--write-baseline's file, then the same with its placeholder reasons replaced."""
        draft = self.path("draft.txt")
        code, out, err = self.check("--write-baseline", draft)
        self.assertEqual(code, 1, out + err)
        with open(draft) as f:
            text = f.read()
        return draft, text

    def test_write_baseline_round_trip(self):
        draft, text = self.written()
        entries = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
        self.assertEqual(
            entries,
            [
                "advantage/grpo  outputs/advantages  # TODO: why this difference is accepted",
                "advantage/grpo  outputs/returns  # TODO: why this difference is accepted",
            ],
        )
        # The placeholder is refused: a baseline is reviewed before it is used.
        assert_bad_input(self, self.check("--baseline", draft), draft + ":3", "placeholder")
        reviewed = self.path("reviewed.txt", text.replace("TODO: why this difference is accepted", REASON))
        code, out, err = self.check("--baseline", reviewed)
        self.assertEqual(code, 0, out + err)
        cells = row(out, "grpo")
        self.assertEqual(int(cells[4]), 0)
        baselined = out.splitlines()[1].split().index("baselined")
        self.assertEqual(int(cells[baselined]), int(cells[2]) - int(cells[3]) - int(cells[5]))
        self.assertIn("baselined", out.splitlines()[1].split())
        self.assertRegex(out, r"\d+ failed, \d+ baselined, ")
        self.assertIn("0 stale", out)
        # Writing again from the baselined run keeps the reviewed reasons.
        again = self.path("again.txt")
        code, out, err = self.check("--baseline", reviewed, "--write-baseline", again)
        self.assertEqual(code, 0, out + err)
        with open(again) as f:
            self.assertEqual(f.read(), text.replace("TODO: why this difference is accepted", REASON))

    def test_baselined_in_json_junit_and_markdown(self):
        reviewed = self.path("b.txt", f"grpo outputs/advantages # {REASON}\ngrpo outputs/returns # {REASON}\n")
        junit, report = self.path("j.xml"), self.path("r.md")
        code, out, err = self.check("--baseline", reviewed, "--format", "json", "--junit", junit, "--report", report)
        self.assertEqual(code, 0, out + err)
        doc = json.loads(out)
        self.assertGreater(doc["totals"]["baselined"], 0)
        self.assertEqual(doc["totals"]["failed"], 0)
        grpo = next(f for f in doc["functions"] if f["function"] == "grpo")
        self.assertEqual(grpo["outcomes"]["BASELINED"], doc["totals"]["baselined"])
        case = next(c for c in grpo["cases"] if c["outcome"] == "BASELINED")
        self.assertIn(REASON, case["detail"])
        with open(junit) as f:
            self.assertIn('message="BASELINED: ', f.read())
        with open(report) as f:
            self.assertIn("%d baselined" % doc["totals"]["baselined"], f.read())

    def test_a_partial_baseline_still_fails(self):
        only_adv = self.path("b.txt", f"grpo outputs/advantages # {REASON}\n")
        code, out, err = self.check("--baseline", only_adv)
        self.assertEqual(code, 1, out + err)
        self.assertGreater(int(row(out, "grpo")[4]), 0)

    def test_case_glob_limits_an_entry(self):
        text = f"grpo outputs/advantages *_f32 # {REASON}\ngrpo outputs/returns *_f32 # {REASON}\n"
        code, out, err = self.check("--baseline", self.path("b.txt", text), "--format", "json")
        self.assertEqual(code, 1, out + err)
        grpo = next(f for f in json.loads(out)["functions"] if f["function"] == "grpo")
        for c in grpo["cases"]:
            if c["outcome"] == "BASELINED":
                self.assertTrue(c["case"].endswith("_f32"), c["case"])
            if c["outcome"] == "FAILED":
                self.assertFalse(c["case"].endswith("_f32"), c["case"])

    def test_stale_entries_are_reported_and_fail_when_strict(self):
        text = f"grpo outputs/advantages # {REASON}\ngrpo outputs/returns # {REASON}\nk3 outputs/kl # fixed since\n"
        b = self.path("b.txt", text)
        code, out, err = self.check("--baseline", b)
        self.assertEqual(code, 0, out + err)
        self.assertIn("1 stale", out)
        self.assertIn("stale: %s:3: k3 outputs/kl" % b, out)
        code, out, err = self.check("--baseline", b, "--strict-baseline")
        self.assertEqual(code, 1, out + err)
        self.assertIn("--strict-baseline: a failure", out)
        code, out, err = self.check("--baseline", b, "--strict-baseline", "--format", "json")
        self.assertEqual(code, 1, out + err)
        doc = json.loads(out)
        self.assertEqual(doc["exit_code"], 1)
        self.assertIn("stale", err)
        self.assertEqual(doc["baseline"]["file"], b)
        self.assertEqual(doc["baseline"]["entries"], 3)
        self.assertEqual(doc["baseline"]["baselined_cases"], doc["totals"]["baselined"])
        self.assertEqual(
            doc["baseline"]["stale"],
            [{"line": 3, "function": "k3", "field": "outputs/kl", "cases": "*", "reason": "fixed since"}],
        )
        # An entry for a function this run did not judge is not stale.
        code, out, err = self.check("--baseline", b, "--strict-baseline", "--only", "grpo")
        self.assertEqual(code, 0, out + err)

    def test_never_passes_mistrusted_or_unsupported(self):
        text = f"grpo outputs/advantages # {REASON}\ngrpo outputs/returns # {REASON}\n"
        text += f"advantage/gae outputs/advantages # {REASON}\nadvantage/gae outputs/returns # {REASON}\n"
        b = self.path("b.txt", text)
        code, out, err = self.check("--show-unsupported", "--format", "json")
        before = next(f for f in json.loads(out)["functions"] if f["function"] == "grpo")
        code, out, err = self.check("--baseline", b, "--show-unsupported", "--format", "json")
        self.assertEqual(code, 0, out + err)
        doc = json.loads(out)
        grpo = next(f for f in doc["functions"] if f["function"] == "grpo")
        # The entries cover every GRPO field, yet its MISTRUSTED cases stay MISTRUSTED.
        self.assertGreater(before["outcomes"]["MISTRUSTED"], 0)
        self.assertEqual(grpo["outcomes"]["MISTRUSTED"], before["outcomes"]["MISTRUSTED"])
        self.assertEqual(grpo["outcomes"]["PASSED"], before["outcomes"]["PASSED"])
        self.assertEqual(grpo["outcomes"]["BASELINED"], before["outcomes"]["FAILED"])
        gae = next(f for f in doc["functions"] if f["function"] == "gae")
        self.assertEqual(gae["outcomes"]["UNSUPPORTED"], gae["cases_total"])
        self.assertEqual(gae["outcomes"]["BASELINED"], 0)
        code, out, err = self.check("--baseline", b, "--require-all")
        self.assertEqual(code, 1, out + err)
        self.assertIn("UNSUPPORTED", err)

    def test_error_semantics_only_by_name(self):
        d = self.path("raising")
        os.mkdir(d)
        self.path(
            "raising/raising_framework.py",
            """
            def grpo(inputs, cfg, dtype):
                raise ValueError("this framework refuses every GRPO call")
            """,
        )
        adapter = self.path(
            "raising/raising_adapter.py",
            """
            import raising_framework

            name = "raising"
            FUNCTIONS = {"grpo": raising_framework.grpo}
            def versions():
                return {}
            """,
        )
        cand = self.path("raised")
        p = subprocess.run(
            [
                sys.executable,
                HARNESS,
                "--adapter",
                adapter,
                "--out",
                cand,
                "--goldens",
                GOLDENS,
                "--conform",
                CONFORM,
                "--only",
                "grpo",
            ],
            capture_output=True,
            text=True,
        )
        self.assertEqual(p.returncode, 0, p.stderr)
        fields = self.path("fields.txt", f"grpo outputs/advantages # {REASON}\ngrpo outputs/returns # {REASON}\n")
        args = ["check", "--against", GOLDENS, "--candidate", cand, "--only", "grpo"]
        code, out, err = conform(*args, "--baseline", fields)
        self.assertEqual(code, 1, out + err)
        # Nothing is baselined: the table has no baselined column at all.
        self.assertNotIn("baselined", out.splitlines()[1].split())
        self.assertGreater(int(row(out, "grpo")[4]), 0)
        named = self.path("error.txt", "grpo error # we raise on purpose where verl computes\n")
        code, out, err = conform(*args, "--baseline", named, "--format", "json")
        grpo = json.loads(out)["functions"][0]
        self.assertGreater(grpo["outcomes"]["BASELINED"], 0, out)
        self.assertEqual(grpo["outcomes"]["FAILED"], 0, out)

    def test_malformed_baseline_is_exit_2_naming_file_and_line(self):
        for text, needle in [
            ("grpo outputs/advantages\n", "no reason"),
            ("grpo outputs/advantages #   \n", "empty reason"),
            ("# fine\n\ngrpo outputs/advantages # ok\nfrobnicate outputs/x # r\n", "'frobnicate'"),
            ("# fine\n\n\ngrpo advantages # r\n", "'advantages'"),
            ("grpo # r\n", "FUNCTION [ROW] FIELD [CASE-GLOB]"),
            ("grpo outputs/a b c # r\n", "FUNCTION [ROW] FIELD [CASE-GLOB]"),
            ("grpo outputs/advantages # TODO: why this difference is accepted\n", "placeholder"),
        ]:
            with self.subTest(text=text):
                b = self.path("bad.txt", text)
                line = len(text.rstrip("\n").split("\n"))
                assert_bad_input(self, self.check("--baseline", b), "%s:%d: " % (b, line), needle)
        assert_bad_input(self, self.check("--baseline", self.path("absent.txt")), "absent.txt", "no such file")
        # Said as what it is, not "no such file".
        fifo = self.path("fifo.txt")
        os.mkfifo(fifo)
        assert_bad_input(self, self.check("--baseline", fifo), "fifo.txt", "a FIFO (named pipe)")
        assert_bad_input(self, self.check("--baseline", self.tmp), "a directory")
        # A field the function does not have would only ever be "stale".
        b = self.path("bad.txt", "grpo outputs/advantage # r\n")
        assert_bad_input(self, self.check("--baseline", b), b + ":1: ", "'outputs/advantage' is no field of grpo")
        # Text that would reach a terminal, JSON or JUnit raw: exit 2 naming the line, shown escaped.
        for raw, needle in (
            (b"grpo outputs/advantages # red \x1b[31m\n", "control characters in"),
            (b"grpo outputs/advantages # caf\xe9\n", "bytes that are not UTF-8"),
            (b"# ok\n\xef\xbb\xbfgrpo outputs/advantages # r\n", "byte-order mark"),
        ):
            with open(b, "wb") as f:
                f.write(raw)
            line = assert_bad_input(self, self.check("--baseline", b), b + ":", needle)
            self.assertNotIn("\x1b", line)
            line.encode("utf-8")
        # A byte-order mark that opens the file is an editor's, and is read past.
        with open(b, "wb") as f:
            f.write(("\ufeffgrpo outputs/advantages # " + REASON + "\n").encode())
        code, out, err = self.check("--baseline", b)
        self.assertIn(code, (0, 1), out + err)
        # validate reads it before the harness computes anything.
        b = self.path("bad.txt", "grpo outputs/advantages\n")
        line = assert_bad_input(self, validate("--adapter", "numpy_example", "--baseline", b), b + ":1: ", "no reason")
        self.assertTrue(line.startswith("conform: error:"), line)

    def test_write_baseline_never_over_the_baseline_it_reads(self):
        text = f"grpo outputs/advantages # {REASON}\n"
        b = self.path("b.txt", text)
        assert_bad_input(self, self.check("--baseline", b, "--write-baseline", b), "--write-baseline", "input")
        with open(b) as f:
            self.assertEqual(f.read(), text)


class DefaultPython(Base):
    """VERLCONF_PYTHON, which the wheel's entry point sets to the interpreter it is installed
    in, is the default --python; --python still wins, and a bad one names the variable."""

    def test_the_variable_is_the_default(self):
        code, out, err = validate(
            "--adapter",
            "numpy_example",
            "--only",
            "grpo/g4_binary_8x8_f64",
            bug="biased_std",
            python=None,
            VERLCONF_PYTHON=sys.executable,
            PATH="/nonexistent",
        )
        self.assertEqual(code, 1, out + err)
        self.assertIn("  repro: " + CONFORM + " validate --adapter numpy_example --against ", out)
        self.assertNotIn("--python", out)

    def test_a_bad_default_names_the_variable(self):
        missing = self.path("no-python")
        assert_bad_input(
            self,
            validate("--adapter", "numpy_example", python=None, VERLCONF_PYTHON=missing),
            "VERLCONF_PYTHON (the default --python) " + missing,
            "not an executable",
        )
        code, out, err = validate("--adapter", "numpy_example", "--only", "k1", VERLCONF_PYTHON=missing)
        self.assertEqual(code, 0, out + err)


class ReproCommand(Base):
    """Repro lines name the command the way the user ran it: `bazel run //tools:conform --`
    under bazel run, the wheel's `verlconf` (its entry point sets VERLCONF_PROG), else the
    binary's path as invoked."""

    def repros(self, *args, **env):
        run_env = {k: v for k, v in os.environ.items() if k not in ("BUILD_WORKSPACE_DIRECTORY", "VERLCONF_PROG")}
        run_env.update(env)
        cmd = [CONFORM, *args, "--against", GOLDENS, "--only", "kl/k1", "--format", "json"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return {c["repro"] for f in json.loads(p.stdout)["functions"] for c in f["cases"]}

    def test_each_way_of_running(self):
        expect = " check --against " + GOLDENS + " --only k1/"
        for env, prog in [
            ({}, CONFORM),
            ({"BUILD_WORKSPACE_DIRECTORY": self.tmp}, "bazel run //tools:conform --"),
            ({"VERLCONF_PROG": "verlconf"}, "verlconf"),
            ({"VERLCONF_PROG": "verlconf", "BUILD_WORKSPACE_DIRECTORY": self.tmp}, "verlconf"),
        ]:
            with self.subTest(env=env):
                repros = self.repros("check", **env)
                self.assertGreater(len(repros), 1)
                for r in repros:
                    self.assertTrue(r.startswith(prog + expect), r)

    def test_validate_through_the_wheel_entry_point(self):
        code, out, err = validate(
            "--adapter", "numpy_example", "--only", "grpo/g4_binary_8x8_f64", bug="biased_std", verlconf_prog="verlconf"
        )
        self.assertEqual(code, 1, out + err)
        self.assertIn("  repro: verlconf validate --adapter numpy_example --python " + sys.executable, out)


if __name__ == "__main__":
    unittest.main()
