"""The candidate harness as a newcomer meets it.

The numpy example passes what it implements, everything else is UNSUPPORTED (never
passed), and a planted bug is named with function, case, output, worst error and a repro
line. Then small adapters written by the tests hold the adapter contract
(docs/adapter-contract.md): declining, NotImplementedError raised by the adapter itself,
exceptions from the candidate's own framework against the adapter's, misspelled fields,
non-float and float32 results, partial results, ambiguous keys, projections. Outcomes are
asserted on the written file, and on conform's verdict where conform judges them today.
Then where the harness may write (never into the current directory on an empty --out,
never over the goldens or another input, never over earlier results without --force,
through temporaries that a failure removes), and the provenance it records of its own
run. No torch: Debian's python3 with numpy and h5py.
"""

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

import h5py
import numpy as np

CONFORM = os.path.abspath(sys.argv.pop(1))
HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "run_candidate.py")
FIXTURES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures")
GOLDENS = os.path.join(FIXTURES, "verl-0.9.1")

from verlconf import adapter_call, registry_spec  # noqa: E402


def harness(out, bug=""):
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug)
    subprocess.run(
        [
            sys.executable,
            HARNESS,
            "--adapter",
            "numpy_example",
            "--out",
            out,
            "--goldens",
            GOLDENS,
            "--conform",
            CONFORM,
        ],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )


def check(candidate, *options):
    p = subprocess.run(
        [CONFORM, "check", "--against", GOLDENS, "--candidate", candidate, *options], capture_output=True, text=True
    )
    return p.returncode, p.stdout + p.stderr


def row(out, function):
    for line in out.splitlines():
        if line.split()[:1] == [function]:
            return line.split()
    raise AssertionError(f"no row for {function}")


def dp_row(out, function, k):
    """The dp-invariance row of function over k ranks, as row() gives a function's."""
    label = f"{function} [dp k={k}]"
    for line in out.splitlines():
        if line.startswith(label + " "):
            return [label] + line[len(label) :].split()
    raise AssertionError(f"no row for {label}")


DP_FUNCTIONS = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


class Harness(unittest.TestCase):
    def test_example_passes_what_it_implements(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as out:
            harness(out)
            code, text = check(out)
            self.assertEqual(code, 0, text)
            # k1/k3 include the stop-gradient VJPs (vjps/kl/logprob) the harness asks for.
            for fn in ("grpo", "vanilla", "token-mean", "seq-mean-token-sum-norm", "k1", "k3"):
                cases, passed, failed = (int(x) for x in row(text, fn)[2:5])
                self.assertEqual(failed, 0, fn)
                self.assertGreater(passed, 0, fn)
            # Not implemented by the example: reported, never passed; named in one line,
            # and a row of its own with --show-unsupported.
            self.assertFalse([ln for ln in text.splitlines() if ln.split()[:1] == ["grpo_vectorized"]], text)
            line = next(ln for ln in text.splitlines() if "function(s) not provided" in ln)
            self.assertIn("grpo_vectorized", line.split(": ", 1)[1].split(", "))
            code, text = check(out, "--show-unsupported")
            self.assertEqual(code, 0, text)
            cells = row(text, "grpo_vectorized")
            self.assertEqual(int(cells[3]), 0)
            self.assertEqual(int(cells[6]), int(cells[2]))

    def test_dp_rows_pass_for_the_example_and_fail_for_a_local_mean(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as out:
            harness(out)
            code, text = check(out)
            self.assertEqual(code, 0, text)
            for fn in DP_FUNCTIONS + ("vanilla",):
                for k in (2, 4, 8):
                    cases, passed, failed = (int(x) for x in dp_row(text, fn, k)[2:5])
                    self.assertEqual(failed, 0, (fn, k))
                    self.assertGreater(passed, 0, (fn, k))
            code, doc = check(out, "--format", "json", "--only", "vanilla")
            rows = {f["function"]: f for f in json.loads(doc.split("\n", 1)[0])["functions"]}
            self.assertEqual(rows["vanilla [dp k=4]"]["check"], "dp-invariance")
            self.assertEqual(rows["vanilla [dp k=4]"]["dp_ranks"], 4)
            self.assertEqual(rows["vanilla"]["check"], "golden")
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as out:
            harness(out, bug="local_token_mean")
            code, text = check(out)
            self.assertEqual(code, 1, text)
            for k in (2, 4, 8):
                self.assertGreater(int(dp_row(text, "token-mean", k)[4]), 0, k)
                self.assertGreater(int(dp_row(text, "vanilla", k)[4]), 0, k)  # token-mean is its default mode
                self.assertEqual(int(dp_row(text, "token-sum", k)[4]), 0, k)
            self.assertIn("FAILED token-mean [dp k=2]/", text)
            report = os.path.join(out, "report.md")
            check(out, "--report", report)
            with open(report) as f:
                self.assertIn("| `token-mean [dp k=4]` | aggregation |", f.read())

    def test_planted_bug_is_named(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as out:
            harness(out, bug="biased_std")
            code, text = check(out)
            self.assertEqual(code, 1, text)
            self.assertIn("FAILED grpo/", text)
            self.assertIn("outputs/advantages: FAILED", text)
            self.assertIn("worst abs error", text)
            self.assertIn("at index (", text)
            self.assertIn("repro: " + CONFORM + " check", text)
            self.assertEqual(int(row(text, "vanilla")[4]), 0)  # the bug is only in GRPO


def tmpdir():
    return tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR"))


def write_spec(d):
    """`conform spec --json` written to d/spec.json, for the harness's --spec; its path."""
    path = os.path.join(d, "spec.json")
    with open(path, "w") as f:
        f.write(subprocess.run([CONFORM, "spec", "--json"], check=True, capture_output=True, text=True).stdout)
    return path


class Contract(unittest.TestCase):
    """Each test writes an adapter (and, where it matters, a framework module beside it),
    runs the harness on one or two golden family files, and reads what was written."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tmpdir()
        cls.tmp = cls._tmp.name
        cls.spec_path = write_spec(cls.tmp)
        with open(cls.spec_path) as f:
            cls.entries = registry_spec.by_key(json.load(f))

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def harness(self, work, adapter, files=("kl.h5",), helpers=None):
        """Write adapter (and helper modules) under work/, run the harness on the golden
        files named; return (exit code, output, candidate dir, goldens dir)."""
        ad = os.path.join(work, "adapter")
        gold = os.path.join(work, "goldens")
        out = os.path.join(work, "out")
        os.makedirs(ad)
        os.makedirs(gold)
        for name, src in dict(helpers or {}, mine_adapter=adapter).items():
            with open(os.path.join(ad, name + ".py"), "w") as f:
                f.write(textwrap.dedent(src))
        for fn in files:
            os.symlink(os.path.join(GOLDENS, fn), os.path.join(gold, fn))
        p = subprocess.run(
            [
                sys.executable,
                HARNESS,
                "--adapter",
                os.path.join(ad, "mine_adapter.py"),
                "--out",
                out,
                "--goldens",
                gold,
                "--spec",
                self.spec_path,
            ],
            capture_output=True,
            text=True,
        )
        return p.returncode, p.stdout + p.stderr, out, gold

    def conform(self, out, gold):
        p = subprocess.run([CONFORM, "check", "--against", gold, "--candidate", out], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    @staticmethod
    def golden_cases(gold, file, function):
        """Attributes of each golden case of `function` in gold/file, by case name."""
        with h5py.File(os.path.join(gold, file), "r") as f:
            return {cn: dict(f[function][cn].attrs) for cn in f[function]}

    @staticmethod
    def cases(path, function):
        with h5py.File(path, "r") as f:
            return {
                cn: (
                    dict(f[function][cn].attrs),
                    {
                        sub: {k: f[function][cn][sub][k][()] for k in f[function][cn][sub]}
                        for sub in f[function][cn]
                        if isinstance(f[function][cn][sub], h5py.Group) and sub != "metrics"
                    },
                    "metrics" in f[function][cn],
                )
                for cn in f[function]
            }

    # token-mean with SHARD hooks: one given verl's counts, one dividing by its rank's tokens.
    with open(os.path.join(HERE, "testdata", "token_mean_adapter.py")) as f:
        TOKEN_MEAN = f.read()

    def test_shard_hook_with_verls_counts_passes_and_a_local_one_fails(self):
        for hook, fails in (("given_count", False), ("rank_count", True)):
            with tmpdir() as work:
                src = self.TOKEN_MEAN + f"SHARD = {{'aggregation/token-mean': {hook}}}\n"
                code, text, out, gold = self.harness(work, src, files=("aggregation.h5",))
                self.assertEqual(code, 0, text)
                code, text = self.conform(out, gold)
                for k in (2, 4, 8):
                    cells = dp_row(text, "token-mean", k)
                    if fails:
                        self.assertGreater(int(cells[4]), 0, (hook, k, text))
                    else:
                        self.assertEqual(int(cells[4]), 0, (hook, k, text))
                        self.assertGreater(int(cells[3]), 0, (hook, k, text))

    def test_shard_hook_that_is_never_called_fails_at_load(self):
        for table, want in (
            ("{'token-sum': given_count}", "SHARD[aggregation/token-sum]: the function is not in FUNCTIONS"),
            ("{'k1': given_count}", "SHARD[kl/k1]: the function takes no global-batch arguments"),
        ):
            with tmpdir() as work:
                src = self.TOKEN_MEAN + f"FUNCTIONS['k1'] = token_mean\nSHARD = {table}\n"
                code, text, _, _ = self.harness(work, src, files=("aggregation.h5",))
                self.assertEqual(code, 2, text)
                self.assertIn(want, text)

    def test_a_sharding_plan_that_is_not_one_is_exit_2(self):
        with tmpdir() as work:
            code, text, out, gold = self.harness(work, self.TOKEN_MEAN, files=("aggregation.h5",))
            self.assertEqual(code, 0, text)
            path = os.path.join(out, "aggregation.h5")
            with h5py.File(path, "r") as f:
                calls = sorted(cn for cn in f["token-mean"] if ".dp4." in cn)
                rows = {cn: f["token-mean"][cn].attrs["why"] for cn in calls}
            first, second = calls[0], calls[1]
            case = first.split(".dp4.")[0]
            self.assertIn("_4x", case)  # four rows: no sharding over 8 ranks
            for change, want in (
                (lambda f: f["token-mean"][second].attrs.__setitem__("why", rows[first]), "given twice"),
                (lambda f: f["token-mean"][first].attrs.__setitem__("why", "dp rows 0 x"), "'x' is not a row number"),
                (lambda f: f["token-mean"][first].attrs.__setitem__("why", "rows 0"), "a sharded call's is"),
                (lambda f: f["token-mean"].move(first, case + ".dp4.r0.m7"), "skips micro-batch"),
                (lambda f: f["token-mean"].move(first, case + ".dp3.r0.m0"), "sharded over 3 ranks"),
                (lambda f: f["token-mean"].copy(first, case + ".dp8.r0.m0"), "no dp-invariance row over 8 ranks"),
                # "r00" beside "r0": a second spelling of the same call, never a silent replacement.
                (lambda f: f["token-mean"].copy(first, case + ".dp4.r00.m0"), "no leading zeros"),
                (lambda f: f["token-mean"].move(first, case + ".dp04.r0.m0"), "reads as '" + case + ".dp4.r0.m0'"),
            ):
                bad = os.path.join(work, "bad")
                shutil.rmtree(bad, ignore_errors=True)
                shutil.copytree(out, bad)
                with h5py.File(os.path.join(bad, "aggregation.h5"), "a") as f:
                    change(f)
                code, text = self.conform(bad, gold)
                self.assertEqual(code, 2, text)
                self.assertIn(want, text)
                self.assertIn("aggregation.h5:/token-mean/" + case, text)

    def test_declines_by_none_and_by_exception(self):
        with tmpdir() as work:
            code, text, out, gold = self.harness(
                work,
                """
                from verlconf_harness import Decline
                name = "mine"
                def versions(): return {}
                def k1(inputs, cfg, dtype):
                    if dtype == "float32":
                        return None
                    raise Decline("no float64 path yet")
                FUNCTIONS = {"k1": k1}
            """,
            )
            self.assertEqual(code, 0, text)
            cases = self.cases(os.path.join(out, "kl.h5"), "k1")
            n = len(self.golden_cases(gold, "kl.h5", "k1"))  # one candidate case per golden case
            self.assertGreater(n, 0)
            self.assertEqual(len(cases), n)
            for cn, (attrs, subs, _) in cases.items():
                want = "the adapter returned None" if cn.endswith("_f32") else "no float64 path yet"
                self.assertEqual(attrs.get("declined"), want, cn)
                self.assertNotIn("expect_error", attrs, cn)
                self.assertNotIn("outputs", subs, cn)
                self.assertIn("logprob", subs["inputs"], cn)
            code, report = self.conform(out, gold)
            self.assertEqual(code, 4, report)  # nothing compared: not green
            cells = row(report, "k1")
            self.assertEqual((int(cells[3]), int(cells[6])), (0, n), report)  # none passed, all UNSUPPORTED

    def test_adapter_not_implemented_is_declined_never_passed(self):
        # verl raises a bare NotImplementedError for "full"; the same raised by the
        # adapter is the adapter not computing the case.
        with tmpdir() as work:
            code, text, out, gold = self.harness(
                work,
                """
                name = "mine"
                def versions(): return {}
                def full(inputs, cfg, dtype):
                    raise NotImplementedError
                FUNCTIONS = {"full": full}
            """,
            )
            self.assertEqual(code, 0, text)
            for cn, (attrs, subs, _) in self.cases(os.path.join(out, "kl.h5"), "full").items():
                self.assertEqual(attrs.get("declined"), "NotImplementedError", cn)
                self.assertNotIn("expect_error", attrs, cn)
            code, report = self.conform(out, gold)
            cells = row(report, "full")
            n = len(self.golden_cases(gold, "kl.h5", "full"))
            self.assertGreater(n, 0)
            self.assertEqual((int(cells[3]), int(cells[6])), (0, n), report)

    FRAMEWORK = """
        def token_mean(loss_mat, mask, dp_size):
            raise ValueError("(global) batch_num_tokens is required when dp_size > 1")
        def kl_full(logprob, ref):
            raise NotImplementedError
    """

    def test_framework_exceptions_are_compared_with_verls(self):
        with tmpdir() as work:
            code, text, out, gold = self.harness(
                work,
                """
                import mini_framework as fw
                name = "mine"
                def versions(): return {}
                def token_mean(inputs, cfg, dtype):
                    return {"outputs": {"loss": fw.token_mean(inputs["loss_mat"], inputs["loss_mask"], cfg["dp_size"])}}
                def full(inputs, cfg, dtype):
                    return {"outputs": {"kl": fw.kl_full(inputs["logprob"], inputs["ref_logprob"])}}
                FUNCTIONS = {"token-mean": token_mean, "full": full}
            """,
                files=("kl.h5", "aggregation.h5"),
                helpers={"mini_framework": self.FRAMEWORK},
            )
            self.assertEqual(code, 0, text)
            for cn, (attrs, _, _) in self.cases(os.path.join(out, "kl.h5"), "full").items():
                self.assertEqual(attrs.get("expect_error"), "NotImplementedError", cn)
            code, report = self.conform(out, gold)
            self.assertEqual(code, 1, report)  # token-mean raises where verl returns
            self.assertEqual(int(row(report, "full")[3]), len(self.golden_cases(gold, "kl.h5", "full")), report)
            # token-mean passes exactly where verl raises the same (its expect_error cases)
            raises = sum(
                "expect_error" in attrs for attrs in self.golden_cases(gold, "aggregation.h5", "token-mean").values()
            )
            self.assertGreater(raises, 0)
            cells = row(report, "token-mean")
            self.assertEqual((int(cells[3]), int(cells[4])), (raises, int(cells[2]) - raises), report)

    def test_adapter_exceptions_never_match(self):
        # The same ValueError, raised by the adapter's own code: glue failing, not a result.
        with tmpdir() as work:
            code, text, out, gold = self.harness(
                work,
                """
                name = "mine"
                def versions(): return {}
                def token_mean(inputs, cfg, dtype):
                    raise ValueError("(global) batch_num_tokens is required when dp_size > 1")
                FUNCTIONS = {"token-mean": token_mean}
            """,
                files=("aggregation.h5",),
            )
            self.assertEqual(code, 0, text)
            self.assertIn("adapter error (never matches verl): aggregation/token-mean/", text)
            for cn, (attrs, _, _) in self.cases(os.path.join(out, "aggregation.h5"), "token-mean").items():
                self.assertEqual(
                    attrs.get("expect_error"),
                    "AdapterError: ValueError: (global) batch_num_tokens is required when dp_size > 1 (adapter line 5)",
                    cn,
                )
            code, report = self.conform(out, gold)
            self.assertEqual(code, 1, report)
            cells = row(report, "token-mean")
            self.assertEqual((int(cells[3]), int(cells[4])), (0, int(cells[2])), report)

    def test_a_raise_is_the_frameworks_only_through_a_call_into_its_packages(self):
        # The rule follows the adapter's call, not the innermost frame: numpy raising under
        # the framework's code is the framework's result; numpy (or the standard library)
        # raising under a call the adapter made itself is the adapter's glue failing.
        helper = """
            import numpy as np
            def token_mean(loss_mat, mask):
                return np.reshape(loss_mat, (7, 11))
        """
        adapters = {
            "through the framework": ("return fw.token_mean(inputs['loss_mat'], inputs['loss_mask'])", None),
            "numpy called by the adapter": ("return np.reshape(inputs['loss_mat'], (7, 11))", "a call into numpy"),
            "the standard library called by the adapter": ("return json.loads('not json')", "a call into json"),
        }
        for declared in ("", 'FRAMEWORK = ("mini_framework",)'):
            for what, (body, adapter_site) in adapters.items():
                with self.subTest(what=what, declared=declared), tmpdir() as work:
                    code, text, out, _ = self.harness(
                        work,
                        f"""
                        import json
                        import numpy as np
                        import mini_framework as fw
                        {declared}
                        name = "mine"
                        def versions(): return {{}}
                        def token_mean(inputs, cfg, dtype):
                            {body}
                        FUNCTIONS = {{"token-mean": token_mean}}
                    """,
                        files=("aggregation.h5",),
                        helpers={"mini_framework": helper},
                    )
                    self.assertEqual(code, 0, text)
                    errors = [
                        attrs.get("expect_error", "")
                        for attrs, _, _ in self.cases(os.path.join(out, "aggregation.h5"), "token-mean").values()
                    ]
                    self.assertTrue(errors)
                    for error in errors:
                        if adapter_site is None:
                            self.assertTrue(error.startswith("ValueError: "), error)
                        else:
                            self.assertTrue(error.startswith("AdapterError: "), error)
                            self.assertIn(adapter_site, error)
                            self.assertRegex(error, r"\(adapter line \d+, ")
                    if adapter_site is None:
                        self.assertIn("0 adapter errors", text)
                    else:
                        self.assertNotIn("0 adapter errors", text)

    def test_framework_code_run_without_a_module_name_is_still_the_frameworks(self):
        # An adapter may run a framework function's source exec'd in a bare namespace (its
        # module's own imports would pull in a trainer stack), under a stand-in package that
        # has only a __path__: what that code raises is the framework's result, not glue.
        helper = """
            def token_mean(loss_mat, mask):
                raise ValueError("the framework refuses this batch")
        """
        with tmpdir() as work:
            code, text, out, _ = self.harness(
                work,
                """
                import os
                import sys
                import types
                here = os.path.dirname(os.path.abspath(__file__))
                fw = types.ModuleType("mini_framework")
                fw.__path__ = [here]
                sys.modules["mini_framework"] = fw
                source = os.path.join(here, "mini_framework.py")
                with open(source) as f:
                    ns = {}
                    exec(compile(f.read(), source, "exec"), ns)
                name = "mine"
                def versions(): return {}
                def token_mean(inputs, cfg, dtype):
                    return ns["token_mean"](inputs["loss_mat"], inputs["loss_mask"])
                FUNCTIONS = {"token-mean": token_mean}
            """,
                files=("aggregation.h5",),
                helpers={"mini_framework": helper},
            )
            self.assertEqual(code, 0, text)
            self.assertIn("0 adapter errors", text)
            for cn, (attrs, _, _) in self.cases(os.path.join(out, "aggregation.h5"), "token-mean").items():
                self.assertEqual(attrs.get("expect_error"), "ValueError: the framework refuses this batch", cn)

    def test_a_framework_declared_elsewhere_makes_the_helper_glue(self):
        # FRAMEWORK names the packages: a helper beside the adapter that is not among them
        # is the adapter's own code.
        with tmpdir() as work:
            code, text, out, _ = self.harness(
                work,
                """
                import mini_framework as fw
                FRAMEWORK = ("some_other_framework",)
                name = "mine"
                def versions(): return {}
                def token_mean(inputs, cfg, dtype):
                    return {"outputs": {"loss": fw.token_mean(inputs["loss_mat"], inputs["loss_mask"], 2)}}
                FUNCTIONS = {"token-mean": token_mean}
            """,
                files=("aggregation.h5",),
                helpers={"mini_framework": self.FRAMEWORK},
            )
            self.assertEqual(code, 0, text)
            for cn, (attrs, _, _) in self.cases(os.path.join(out, "aggregation.h5"), "token-mean").items():
                self.assertIn("a call into mini_framework", attrs.get("expect_error", ""), cn)

    def test_misspelled_fields_are_errors(self):
        for where, adapter in (
            ("outputs/kl_value", 'return {"outputs": {"kl_value": inputs["logprob"]}}'),
            (
                "grads/log_prob",
                'return {"outputs": {"kl": inputs["logprob"]}, "grads": {"log_prob": inputs["logprob"]}}',
            ),
            ("metrics/kl_mean", 'return {"outputs": {"kl": inputs["logprob"]}, "metrics": {"kl_mean": 0.5}}'),
            ("result key 'output'", 'return {"output": {"kl": inputs["logprob"]}}'),
        ):
            with self.subTest(where=where), tmpdir() as work:
                code, text, out, _ = self.harness(
                    work,
                    f"""
                    name = "mine"
                    def versions(): return {{}}
                    def k1(inputs, cfg, dtype):
                        {adapter}
                    FUNCTIONS = {{"k1": k1}}
                """,
                )
                self.assertEqual(code, 2, text)
                self.assertRegex(text, r"harness: error: k1/[a-z0-9_]+_f(64|32): " + where.replace("'", "."))
                self.assertIn("nothing written", text)
                self.assertFalse(os.path.exists(out) and os.listdir(out), text)

    def test_non_float_results_are_errors(self):
        for what, expr in (
            ("int64", 'inputs["logprob"].astype("int64")'),
            ("bool", 'inputs["logprob"] > 0'),
            ("object", 'np.array(["a"] * inputs["logprob"].size, dtype=object)'),
        ):
            with self.subTest(what=what), tmpdir() as work:
                code, text, out, _ = self.harness(
                    work,
                    f"""
                    import numpy as np
                    name = "mine"
                    def versions(): return {{}}
                    def k1(inputs, cfg, dtype):
                        return {{"outputs": {{"kl": {expr}}}}}
                    FUNCTIONS = {{"k1": k1}}
                """,
                )
                self.assertEqual(code, 2, text)
                self.assertRegex(text, rf"k1/[a-z0-9_]+_f64: outputs/kl: returned as {what}")
                self.assertFalse(os.path.exists(out) and os.listdir(out), text)

    def test_dtypes_are_written_as_returned(self):
        # float32 for a float64 case stays float32 (conform, not the harness, judges it);
        # a plain Python float takes the case dtype.
        with tmpdir() as work:
            code, text, out, _ = self.harness(
                work,
                """
                import numpy as np
                name = "mine"
                def versions(): return {}
                def k1(inputs, cfg, dtype):
                    lp, ref = inputs["logprob"], inputs["ref_logprob"]
                    return {"outputs": {"kl": (lp - ref).astype(np.float32)},
                            "grads": {"logprob": np.ones(lp.shape, dtype=np.float64)}}
                def token_sum(inputs, cfg, dtype):
                    return {"outputs": {"loss": float((inputs["loss_mat"] * inputs["loss_mask"]).sum())}}
                FUNCTIONS = {"k1": k1, "token-sum": token_sum}
            """,
                files=("kl.h5", "aggregation.h5"),
            )
            self.assertEqual(code, 0, text)
            for cn, (attrs, subs, _) in self.cases(os.path.join(out, "kl.h5"), "k1").items():
                self.assertEqual(subs["outputs"]["kl"].dtype, np.float32, cn)
                self.assertEqual(subs["grads"]["logprob"].dtype, np.float64, cn)
            n = 0
            for cn, (attrs, subs, _) in self.cases(os.path.join(out, "aggregation.h5"), "token-sum").items():
                if "expect_error" in attrs:
                    continue
                self.assertEqual(subs["outputs"]["loss"].dtype, np.dtype(attrs["dtype"]), cn)
                n += 1
            self.assertGreater(n, 0)

    def test_partial_results_stay_partial(self):
        with tmpdir() as work:
            code, text, out, _ = self.harness(
                work,
                """
                import numpy as np
                name = "mine"
                def versions(): return {}
                def vanilla(inputs, cfg, dtype):
                    return {"outputs": {"pg_loss": np.zeros((), dtype=dtype)}}
                def k1(inputs, cfg, dtype):
                    return {"grads": {"logprob": np.ones_like(inputs["logprob"])}}
                FUNCTIONS = {"policy_loss/vanilla": vanilla, "k1": k1}
            """,
                files=("kl.h5", "policy_loss.h5"),
            )
            self.assertEqual(code, 0, text)
            for cn, (attrs, subs, has_metrics) in self.cases(os.path.join(out, "policy_loss.h5"), "vanilla").items():
                if "expect_error" in attrs:
                    continue
                self.assertEqual(sorted(subs["outputs"]), ["pg_loss"], cn)
                self.assertNotIn("grads", subs, cn)
                self.assertFalse(has_metrics, cn)
            for cn, (attrs, subs, _) in self.cases(os.path.join(out, "kl.h5"), "k1").items():
                self.assertEqual(subs.get("outputs", {}), {}, cn)
                self.assertEqual(sorted(subs["grads"]), ["logprob"], cn)

    def test_ambiguous_bare_key_fails_at_load(self):
        with tmpdir() as work:
            marker = os.path.join(work, "called")
            code, text, out, _ = self.harness(
                work,
                f"""
                name = "mine"
                def versions(): return {{}}
                def gpg(inputs, cfg, dtype):
                    open({marker!r}, "w").close()
                FUNCTIONS = {{"gpg": gpg, "k1": gpg}}
            """,
            )
            self.assertEqual(code, 2, text)
            self.assertIn(
                "bare key 'gpg' names functions in 2 families; key them 'advantage/gpg' or 'policy_loss/gpg'", text
            )
            self.assertFalse(os.path.exists(marker), "a case ran before the keys were resolved")
            self.assertFalse(os.path.exists(out), text)

    def test_unknown_key_fails_at_load(self):
        with tmpdir() as work:
            code, text, out, _ = self.harness(
                work,
                """
                name = "mine"
                def versions(): return {}
                FUNCTIONS = {"policy_loss/vanila": print}
            """,
            )
            self.assertEqual(code, 2, text)
            self.assertIn("key 'policy_loss/vanila' names no registry function", text)


class CaptureShares(unittest.TestCase):
    """The capture loads and judges adapters with the same code: the same key errors at
    load time, the same field check (a case with an unknown field fails the capture)."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tmpdir()
        cls.spec_path = write_spec(cls._tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def capture(self, work, adapter):
        path = os.path.join(work, "mine_adapter.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(adapter))
        p = subprocess.run(
            [
                sys.executable,
                os.path.join(FIXTURES, "capture.py"),
                "--adapter",
                path,
                "--out",
                os.path.join(work, "out"),
                "--only",
                "k1",
                "--spec",
                self.spec_path,
            ],
            capture_output=True,
            text=True,
        )
        return p.returncode, p.stdout + p.stderr

    def test_ambiguous_key(self):
        with tmpdir() as work:
            code, text = self.capture(
                work,
                """
                name = "mine"
                def versions(): return {}
                FUNCTIONS = {"gpg": print, "k1": print}
            """,
            )
            self.assertEqual(code, 1, text)
            self.assertIn("bare key 'gpg' names functions in 2 families", text)

    def test_unknown_field_fails_the_case(self):
        with tmpdir() as work:
            code, text = self.capture(
                work,
                """
                name = "mine"
                def versions(): return {}
                def k1(inputs, cfg, dtype):
                    return {"outputs": {"kl": inputs["logprob"] - inputs["ref_logprob"], "kl_value": inputs["logprob"]}}
                FUNCTIONS = {"k1": k1}
            """,
            )
            self.assertEqual(code, 1, text)
            self.assertRegex(text, r"capture: FAILED: k1/[a-z0-9_]+_f64: outputs/kl_value: not a field of kl/k1")
            self.assertFalse(os.path.exists(os.path.join(work, "out", "kl.h5")), text)

    def test_a_failed_capture_keeps_the_previous_file(self):
        with tmpdir() as work:
            os.makedirs(os.path.join(work, "out"))
            path = os.path.join(work, "out", "kl.h5")
            shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), path)
            with open(path, "rb") as f:
                before = f.read()
            code, text = self.capture(
                work,
                """
                name = "mine"
                def versions(): return {}
                FUNCTIONS = {"k1": lambda inputs, cfg, dtype: 1 / 0}
            """,
            )
            self.assertEqual(code, 1, text)
            self.assertIn("the adapter's own code raised", text)
            self.assertIn("kl.h5 not written", text)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), before)
            self.assertEqual(sorted(os.listdir(os.path.join(work, "out"))), ["kl.h5"])


class Projections(unittest.TestCase):
    """The plumbing of stop-gradient projections through one adapter call: passed only to a
    function that takes them, vjps checked against the registry and the projections."""

    @classmethod
    def setUpClass(cls):
        spec = json.loads(
            subprocess.run([CONFORM, "spec", "--json"], check=True, capture_output=True, text=True).stdout
        )
        cls.entries = registry_spec.by_key(spec)
        cls.inputs = {"logprob": np.zeros((2, 3)), "ref_logprob": np.zeros((2, 3))}
        cls.proj = {"kl": np.full((2, 3), 0.5)}

    def call(self, fn, projections, name=("kl", "k1"), cfg=None):
        return adapter_call.call(
            fn, __file__, "k1/x_f64", self.entries[name], self.inputs, cfg or {}, "float64", projections
        )

    def test_passed_to_a_function_that_takes_them(self):
        seen = {}

        def fn(inputs, cfg, dtype, projections=None):
            seen["p"] = projections
            return {"outputs": {"kl": inputs["logprob"]}, "vjps": {"kl/logprob": projections["kl"] * 2}}

        out = self.call(fn, self.proj)
        self.assertEqual(out.problems, [])
        np.testing.assert_array_equal(seen["p"]["kl"], self.proj["kl"])
        np.testing.assert_array_equal(out.vjps["kl/logprob"], np.ones((2, 3)))

    def test_not_passed_to_a_function_without_the_keyword(self):
        out = self.call(lambda inputs, cfg, dtype: {"outputs": {"kl": inputs["logprob"]}}, self.proj)
        self.assertEqual((out.kind, out.problems), ("result", []))

    def test_vjps_need_projections_and_registry_names(self):
        def fn(inputs, cfg, dtype, projections=None):
            return {"vjps": {"kl/logprob": np.zeros((2, 3)), "kl/ref_logprob": np.zeros((2, 3))}}

        out = self.call(fn, None)
        self.assertTrue(
            any("kl/logprob: a vjp for an output the case gave no projection of" in p for p in out.problems),
            out.problems,
        )
        self.assertTrue(any("vjps/kl/ref_logprob: not a field" in p for p in out.problems), out.problems)

    def test_metric_placeholders_take_the_case_config(self):
        entry = ("rollout_correction", "compute_rs_metrics")
        ok = self.call(
            lambda i, c, d: {"metrics": {"rollout_rs_token_k1_mean": 1.0}}, None, entry, {"option_name": "token_k1"}
        )
        self.assertEqual(ok.problems, [])
        bad = self.call(
            lambda i, c, d: {"metrics": {"rollout_rs_token_k2_mean": 1.0}}, None, entry, {"option_name": "token_k1"}
        )
        self.assertEqual(len(bad.problems), 1, bad.problems)


MINE = """
    name = "mine"
    def versions():
        return {"mine_version": "1.2", "verl_version": "0.0.1"}
    def k1(inputs, cfg, dtype):
        return {"outputs": {"kl": inputs["logprob"] - inputs["ref_logprob"]}}
    FUNCTIONS = {"k1": k1}
"""


def listing(d):
    # Importing an adapter may leave Python's bytecode cache beside it; that is not the harness's.
    return sorted(n for n in os.listdir(d) if n != "__pycache__")


def snapshot(d):
    """Every entry of d (hidden ones included) with its bytes, or its kind."""
    out = {}
    for n in sorted(os.listdir(d)):
        p = os.path.join(d, n)
        if os.path.islink(p):
            out[n] = "link to " + os.readlink(p)
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                out[n] = hashlib.sha256(f.read()).hexdigest()
        else:
            out[n] = "not a regular file"
    return out


class Outputs(unittest.TestCase):
    """Where the harness writes. Each run starts in an empty directory of its own, which
    must stay empty; the goldens are a copy of kl.h5 (so a harness that wrote over them
    would damage only the copy), checked byte for byte after every refusal."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tmpdir()
        cls.tmp = cls._tmp.name
        cls.spec = write_spec(cls.tmp)
        cls.gold = os.path.join(cls.tmp, "gold")
        os.makedirs(cls.gold)
        shutil.copy(os.path.join(GOLDENS, "kl.h5"), cls.gold)
        cls.adapter = os.path.join(cls.tmp, "adapter", "mine_adapter.py")
        os.makedirs(os.path.dirname(cls.adapter))
        with open(cls.adapter, "w") as f:
            f.write(textwrap.dedent(MINE))
        cls.gold_state = snapshot(cls.gold)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def setUp(self):
        self._work = tmpdir()
        self.work = self._work.name

    def tearDown(self):
        self._work.cleanup()
        self.assertEqual(snapshot(self.gold), self.gold_state, "the goldens changed")

    def run_harness(self, *args, base=True, env=None):
        """The harness from an empty directory: (exit code, stdout, stderr)."""
        cwd = os.path.join(self.work, "cwd")
        os.makedirs(cwd)
        try:
            extra = ["--adapter", self.adapter, "--goldens", self.gold, "--spec", self.spec] if base else []
            p = subprocess.run(
                [sys.executable, HARNESS, *extra, *args],
                cwd=cwd,
                capture_output=True,
                text=True,
                env=dict(os.environ, **(env or {})),
            )
            self.assertEqual(os.listdir(cwd), [], "the harness wrote into the current directory")
        finally:
            shutil.rmtree(cwd)
        return p.returncode, p.stdout, p.stderr

    def refused(self, message, *args, base=True):
        code, out, err = self.run_harness(*args, base=base)
        self.assertEqual((code, out, err), (2, "", f"harness: error: {message}\n"))

    def test_an_empty_value_is_a_usage_error(self):
        full = {
            "--adapter": self.adapter,
            "--out": os.path.join(self.work, "out"),
            "--goldens": self.gold,
            "--spec": self.spec,
            "--conform": CONFORM,
        }
        for option in full:
            for form in ([option, ""], [option + "="]):
                with self.subTest(form=form):
                    args = [a for k, v in full.items() if k != option for a in (k, v)]
                    self.refused(f"option {option}: an empty value", *args, *form, base=False)
                    self.assertFalse(os.path.exists(full["--out"]))

    def test_an_option_given_twice_or_unknown(self):
        a, b = os.path.join(self.work, "a"), os.path.join(self.work, "b")
        self.refused(f"option --out given twice ('{a}' and '{b}')", "--out", a, "--out", b)
        self.refused("option --force given twice", "--out", a, "--force", "--force")
        self.refused("unrecognized arguments: --outt", "--out", a, "--outt")
        self.refused("unrecognized arguments: --ou", "--out", a, "--ou")  # no abbreviations, as in conform
        self.refused("the following arguments are required: --out")
        self.assertEqual(os.listdir(self.work), [])

    def test_never_over_the_goldens(self):
        link = os.path.join(self.work, "link")
        os.symlink(self.gold, link)
        for out in (self.gold, self.gold + "/", os.path.join(self.gold, "..", "gold"), link):
            for force in ([], ["--force"]):
                with self.subTest(out=out, force=force):
                    self.refused(
                        f"--out {out}: the goldens directory {self.gold}; refusing to write over it",
                        "--out",
                        out,
                        *force,
                    )
        for out in (os.path.join(self.gold, "mine"), os.path.join(link, "a", "b")):
            with self.subTest(out=out):
                self.refused(
                    f"--out {out}: inside the goldens directory {self.gold}; refusing to write into it", "--out", out
                )
                self.assertFalse(os.path.exists(out))

    def test_never_through_the_goldens_links(self):
        # A golden set of links: its files' own directory is just as much an input.
        links = os.path.join(self.work, "links")
        os.makedirs(links)
        os.symlink(os.path.join(self.gold, "kl.h5"), os.path.join(links, "kl.h5"))
        self.refused(
            f"--out {self.gold}: {os.path.realpath(self.gold)}, the directory of the golden "
            f"{links}/kl.h5; refusing to write over it",
            "--adapter",
            self.adapter,
            "--spec",
            self.spec,
            "--goldens",
            links,
            "--out",
            self.gold,
            "--force",
            base=False,
        )

    def test_never_over_the_bundled_goldens(self):
        # Without --force: were the rule broken, "already holds results" would still
        # refuse, so this test can never remove the repository's goldens.
        self.refused(
            f"--out {GOLDENS}: the goldens directory {GOLDENS}; refusing to write over it",
            "--adapter",
            self.adapter,
            "--spec",
            self.spec,
            "--out",
            GOLDENS,
            base=False,
        )
        self.refused(
            f"--out {GOLDENS}: the golden set {GOLDENS} of this repository; refusing to write over it", "--out", GOLDENS
        )

    def test_never_over_another_input(self):
        with open(self.adapter, "rb") as f:
            before = f.read()
        self.refused(
            f"--out {self.adapter}: the same file as the input --adapter {self.adapter}; refusing to "
            "overwrite an input",
            "--out",
            self.adapter,
        )
        self.refused(
            f"--out {self.spec}: the same file as the input --spec {self.spec}; refusing to overwrite an input",
            "--out",
            self.spec,
            "--force",
        )
        with open(self.adapter, "rb") as f:
            self.assertEqual(f.read(), before)
        # A result file that is an input (a link to a golden) is not replaced, even with --force.
        out = os.path.join(self.work, "out")
        os.makedirs(out)
        os.symlink(os.path.join(self.gold, "kl.h5"), os.path.join(out, "kl.h5"))
        self.refused(
            f"--out {out}: holds kl.h5, the same file as the golden {self.gold}/kl.h5; refusing to overwrite an input",
            "--out",
            out,
            "--force",
        )
        self.assertEqual(os.readlink(os.path.join(out, "kl.h5")), os.path.join(self.gold, "kl.h5"))

    def test_not_a_directory(self):
        file = os.path.join(self.work, "file")
        with open(file, "w") as f:
            f.write("mine\n")
        fifo = os.path.join(self.work, "fifo")
        os.mkfifo(fifo)
        to_file, to_nothing = os.path.join(self.work, "to_file"), os.path.join(self.work, "to_nothing")
        os.symlink(file, to_file)
        os.symlink(os.path.join(self.work, "nothing"), to_nothing)
        tail = "; the harness writes into a directory or a new name"
        for out, what in (
            (file, "a regular file"),
            (fifo, "a FIFO"),
            (to_file, "a symbolic link to a regular file"),
            (to_nothing, "a symbolic link to nothing"),
        ):
            for force in ([], ["--force"]):
                with self.subTest(out=out, force=force):
                    self.refused(f"--out {out}: {what}{tail}", "--out", out, *force)
        self.refused(f"--out {file}/sub: {file} is not a directory", "--out", os.path.join(file, "sub"))
        with open(file) as f:
            self.assertEqual(f.read(), "mine\n")
        self.assertEqual(sorted(os.listdir(self.work)), ["fifo", "file", "to_file", "to_nothing"])

    def test_earlier_results_need_force(self):
        out = os.path.join(self.work, "out")
        os.makedirs(out)
        for name, text in (("kl.h5", "previous run"), ("old.h5", "stale"), ("notes.txt", "mine")):
            with open(os.path.join(out, name), "w") as f:
                f.write(text)
        before = snapshot(out)
        self.refused(
            f"--out {out}: already holds 2 result file(s) (kl.h5, old.h5); pass --force to replace them", "--out", out
        )
        self.assertEqual(snapshot(out), before)
        code, stdout, err = self.run_harness("--out", out, "--force")
        self.assertEqual(code, 0, err)
        self.assertEqual(sorted(os.listdir(out)), ["kl.h5", "notes.txt"])  # old.h5 was a result too
        with open(os.path.join(out, "notes.txt")) as f:
            self.assertEqual(f.read(), "mine")
        with h5py.File(os.path.join(out, "kl.h5"), "r") as f:
            self.assertEqual(f.attrs["producer"], "mine")
        self.assertEqual(self.conform_check(out)[0], 0)

    def test_force_removes_the_results_even_when_the_run_fails(self):
        # As conform with --report: a failed run leaves no earlier run's set behind.
        out = os.path.join(self.work, "out")
        os.makedirs(out)
        with open(os.path.join(out, "kl.h5"), "w") as f:
            f.write("previous run")
        bad = os.path.join(self.work, "bad_adapter.py")
        with open(bad, "w") as f:
            f.write('name = "bad"\ndef versions(): return {}\nFUNCTIONS = {"vanila": print}\n')
        code, stdout, err = self.run_harness(
            "--adapter", bad, "--goldens", self.gold, "--spec", self.spec, "--out", out, "--force", base=False
        )
        self.assertEqual(code, 2, err)
        self.assertIn("harness: error: 1 problem(s); nothing written\n", err)
        self.assertTrue(err.endswith(f"harness: --force removed the previous results from {out} (1 file(s))\n"), err)
        self.assertEqual(os.listdir(out), [])

    def test_an_empty_or_missing_directory_is_fine(self):
        empty = os.path.join(self.work, "empty")
        os.makedirs(empty)
        missing = os.path.join(self.work, "a", "b", "c")
        for out in (empty, missing):
            with self.subTest(out=out):
                code, stdout, err = self.run_harness("--out", out)
                self.assertEqual((code, err), (0, ""))
                self.assertTrue(stdout.endswith(f"-> {out}\n"), stdout)
                self.assertEqual(os.listdir(out), ["kl.h5"])

    def test_relative_to_where_bazel_run_was_typed(self):
        # As conform: under `bazel run` the tool starts in its runfiles tree, and a relative
        # --out means relative to BUILD_WORKING_DIRECTORY.
        typed = os.path.join(self.work, "typed")
        os.makedirs(typed)
        code, stdout, err = self.run_harness("--out", "mine", env={"BUILD_WORKING_DIRECTORY": typed})
        self.assertEqual((code, err), (0, ""))
        self.assertEqual(os.listdir(os.path.join(typed, "mine")), ["kl.h5"])

    def test_a_failed_run_creates_nothing(self):
        out = os.path.join(self.work, "a", "b")
        bad = os.path.join(self.work, "bad_adapter.py")
        with open(bad, "w") as f:
            f.write(
                'name = "bad"\ndef versions(): return {}\n'
                'def k1(inputs, cfg, dtype): return {"outputs": {"kl_value": inputs["logprob"]}}\n'
                'FUNCTIONS = {"k1": k1}\n'
            )
        code, stdout, err = self.run_harness(
            "--adapter", bad, "--goldens", self.gold, "--spec", self.spec, "--out", out, base=False
        )
        self.assertEqual(code, 2, err)
        self.assertEqual(listing(self.work), ["bad_adapter.py"])

    def conform_check(self, out):
        p = subprocess.run(
            [CONFORM, "check", "--against", self.gold, "--candidate", out, "--format", "json"],
            capture_output=True,
            text=True,
        )
        return p.returncode, p.stdout, p.stderr


class Writing(unittest.TestCase):
    """The write itself, in-process with a writer of the test's own: every file through an
    exclusive temporary in the target directory, renamed into place only when all are
    complete; a failure or a signal removes the temporaries, the files already renamed and
    the directories the write created."""

    @classmethod
    def setUpClass(cls):
        from verlconf import run_candidate

        cls.rc = run_candidate

    FILES = [("a.h5", {}, []), ("b.h5", {}, []), ("c.h5", {}, [])]

    def writer(self, out, fail=None):
        seen = []

        def write(path, root, records):
            name = os.path.basename(path)
            self.assertEqual(os.path.dirname(path), out)
            self.assertTrue(os.path.isfile(path), "the temporary exists before it is written")
            self.assertRegex(name, r"^\.[abc]\.h5\.harness-tmp-")
            self.assertFalse(
                [n for n in os.listdir(out) if n.endswith(".h5")], "a file renamed before all were written"
            )
            seen.append(name)
            if fail and name.startswith(f".{fail[0]}.h5"):
                fail[1]()
            with open(path, "w") as f:
                f.write(name)

        return write, seen

    def test_all_or_nothing(self):
        with tmpdir() as work:
            out = os.path.join(work, "out")
            write, seen = self.writer(out)
            self.rc.write_candidate(out, self.FILES, writer=write)
            self.assertEqual(sorted(os.listdir(out)), ["a.h5", "b.h5", "c.h5"])
            self.assertEqual(len(seen), 3)

    def test_a_failure_removes_what_it_wrote(self):
        def enospc():
            raise OSError(28, "No space left on device")

        with tmpdir() as work:
            out = os.path.join(work, "new", "out")
            write, _ = self.writer(out, ("b", enospc))
            with self.assertRaises(OSError):
                self.rc.write_candidate(out, self.FILES, writer=write)
            self.assertEqual(os.listdir(work), [])  # new/out was created by the write, and removed

    def test_a_signal_removes_what_it_wrote(self):
        with tmpdir() as work:
            with open(os.path.join(work, "notes.txt"), "w") as f:
                f.write("mine")
            write, _ = self.writer(work, ("c", lambda: os.kill(os.getpid(), signal.SIGTERM)))
            before = signal.getsignal(signal.SIGTERM)
            with self.assertRaises(self.rc.Signalled) as cm:
                self.rc.write_candidate(work, self.FILES, writer=write)
            self.assertEqual(cm.exception.signum, signal.SIGTERM)
            self.assertEqual(signal.getsignal(signal.SIGTERM), before)
            self.assertEqual(os.listdir(work), ["notes.txt"])

    def test_an_interrupted_harness_dies_by_the_signal_and_leaves_nothing(self):
        # The real harness, killed while it writes: the adapter's versions() (called after
        # the cases, before the files) arranges a SIGTERM for the first write.
        with tmpdir() as work:
            gold = os.path.join(work, "gold")
            os.makedirs(gold)
            os.symlink(os.path.join(GOLDENS, "kl.h5"), os.path.join(gold, "kl.h5"))
            adapter = os.path.join(work, "mine_adapter.py")
            with open(adapter, "w") as f:
                f.write(
                    textwrap.dedent("""
                    import os, signal
                    from verlconf import h5schema
                    name = "mine"
                    def versions():
                        real = h5schema.write_fixture_file
                        def killed(path, *a, **k):
                            real(path, *a, **k)
                            os.kill(os.getpid(), signal.SIGTERM)
                        h5schema.write_fixture_file = killed
                        return {}
                    FUNCTIONS = {"k1": lambda inputs, cfg, dtype: {"outputs": {"kl": inputs["logprob"]}}}
                """)
                )
            out = os.path.join(work, "out")
            p = subprocess.run(
                [sys.executable, HARNESS, "--adapter", adapter, "--goldens", gold, "--out", out],
                cwd=work,
                capture_output=True,
                text=True,
            )
            self.assertEqual(p.returncode, -signal.SIGTERM, p.stderr)
            self.assertEqual(listing(work), ["gold", "mine_adapter.py"])


class Provenance(unittest.TestCase):
    """The candidate root: what conform requires (family, the goldens' verl_version), the
    adapter's producer and versions, and this interpreter's versions under harness_* names,
    never the goldens' capture provenance."""

    def run_on_kl(self, work, adapter_src):
        gold = os.path.join(work, "gold")
        os.makedirs(gold)
        os.symlink(os.path.join(GOLDENS, "kl.h5"), os.path.join(gold, "kl.h5"))
        adapter = os.path.join(work, "mine_adapter.py")
        with open(adapter, "w") as f:
            f.write(textwrap.dedent(adapter_src))
        out = os.path.join(work, "out")
        p = subprocess.run(
            [sys.executable, HARNESS, "--adapter", adapter, "--goldens", gold, "--out", out, "--conform", CONFORM],
            capture_output=True,
            text=True,
        )
        self.assertEqual(p.returncode, 0, p.stderr)
        with h5py.File(os.path.join(out, "kl.h5"), "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        return attrs, gold, out

    def test_the_root_describes_this_run(self):
        with tmpdir() as work:
            attrs, gold, out = self.run_on_kl(work, MINE)
            with h5py.File(os.path.join(GOLDENS, "kl.h5"), "r") as f:
                golden_verl = f.attrs["verl_version"]
                golden_verl = golden_verl.decode() if isinstance(golden_verl, bytes) else golden_verl
            try:
                torch = {"harness_torch_version": importlib.metadata.version("torch")}
            except importlib.metadata.PackageNotFoundError:
                torch = {}
            want = {
                "schema_version": 2,
                "family": "kl",
                "verl_version": golden_verl,
                "producer": "mine",
                "mine_version": "1.2",
                "adapter_verl_version": "0.0.1",
                "harness_python_version": platform.python_version(),
                "harness_numpy_version": np.__version__,
                "harness_h5py_version": h5py.__version__,
                **torch,
            }
            with h5py.File(os.path.join(GOLDENS, "kl.h5"), "r") as f:
                if "dtypes" in f.attrs:  # which dtypes the goldens hold travels with the answer
                    want["dtypes"] = f.attrs["dtypes"]
            self.assertEqual(attrs, want)
            p = subprocess.run(
                [CONFORM, "check", "--against", gold, "--candidate", out, "--format", "json"],
                capture_output=True,
                text=True,
            )
            self.assertEqual(p.returncode, 0, p.stderr)
            shown = json.loads(p.stdout)["provenance"]["candidate"]
            for k in (
                "producer",
                "harness_python_version",
                "harness_numpy_version",
                "harness_h5py_version",
                "mine_version",
                *torch,
            ):
                self.assertEqual(shown.get(k), want[k], k)

    def test_the_adapters_torch_is_the_one_recorded(self):
        with tmpdir() as work:
            attrs, _, _ = self.run_on_kl(
                work,
                """
                import sys, types
                sys.modules["torch"] = types.SimpleNamespace(__version__="0.0.1+adapter")
                name = "mine"
                def versions(): return {}
                FUNCTIONS = {}
            """,
            )
            self.assertEqual(attrs["harness_torch_version"], "0.0.1+adapter")

    def test_torch_is_never_imported_for_it(self):
        from verlconf import run_candidate

        had = "torch" in sys.modules
        versions = run_candidate.harness_versions()
        self.assertEqual("torch" in sys.modules, had)
        self.assertEqual(versions["harness_python_version"], platform.python_version())


class ProgressLine(unittest.TestCase):
    """The harness's bar: on a terminal only, with counts, the case and an ETA."""

    def test_not_a_terminal_sees_nothing(self):
        import io
        from verlconf.progress import Progress

        buf = io.StringIO()
        p = Progress(3, stream=buf)
        for k in range(3):
            p.step(f"grpo/case{k}")
        p.close()
        self.assertEqual(buf.getvalue(), "")

    def test_the_line_counts_names_and_estimates(self):
        import io
        from verlconf.progress import Progress

        p = Progress(10, stream=io.StringIO(), force=True)
        p.start = 100.0
        p.done = 4
        line = p.line("vanilla/seed3_f32", now=108.0)  # 2 s per case, 6 to go
        self.assertEqual(line, "harness [#########...............] 4/10 ETA 0:12 vanilla/seed3_f32")
        p.step("vanilla/seed4_f32")
        p.close()
        self.assertTrue(p.stream.getvalue().endswith("\r\033[K"))


if __name__ == "__main__":
    unittest.main()
