"""`conform explore` as users meet it: the pristine numpy example shows no difference over a
deterministic budget; each planted fault of the example (numpy_example_impl.BUGS) is found
and shrunk to the minimal case documented for it; the minimal case replays through
`conform check` and through its standalone Python repro; the same seed gives the same run
with one job or two; bad input is exit 2 with one line; and the CUDA implementation,
through Thrust's host path, is explored against the oracle on a small budget with the
differences a baseline accepts (each with its reason) and no other.
"""

import json
import math
import os
import resource
import subprocess
import sys
import time
import tempfile
import unittest

import numpy as np

CONFORM = os.path.abspath(sys.argv.pop(1))
RUNFILES = os.environ.get("TEST_SRCDIR", os.getcwd())
ROOT = os.path.join(RUNFILES, "verlconf")
sys.path.insert(0, os.path.join(ROOT, "tools", "adapters"))
import numpy_example_impl  # noqa: E402

CUDA_BASELINE = os.path.join(ROOT, "properties", "explore", "cuda_host.baseline")
BUDGET = "120"

# fault -> (function, field, rows, tokens, {input: values} the minimal case must hold)
EXPECTED = {
    "biased_std": ("advantage/grpo", "outputs/advantages", 2, 1, {"index": [0, 0], "token_level_rewards": [0, 1]}),
    "singleton_std": ("advantage/grpo", "outputs/advantages", 1, 1, {"index": [0], "response_mask": [1]}),
    "dual_clip_positive": ("policy_loss/vanilla", "outputs/pg_loss", 1, 1, {"advantages": [1]}),
    "clipfrac_ties": ("policy_loss/vanilla", "metrics/actor/pg_clipfrac", 1, 1, {"log_prob": [0], "old_log_prob": [0]}),
    "agg_counts_padding": ("aggregation/token-mean", "grads/loss_mat", 1, 2, {"loss_mask": [1, 0]}),
    "k3_no_clamp": ("kl/k3", "outputs/kl", 1, 1, {"logprob": [-3], "ref_logprob": [0]}),
    "grad_through_clamp": ("policy_loss/vanilla", "grads/log_prob", 1, 1, {"advantages": [1]}),
    # The observation token before the valid ones or between them: either restarts the recursion.
    "gae_resets_at_observation": ("advantage/gae", "outputs/advantages", 1, 3, {}),
    "local_token_mean": ("aggregation/token-mean", "grads/loss_mat", 1, 1, {"loss_mask": [1]}),
    # The log-ratio the shrinker keeps is exactly -log of one of the threshold's bounds
    # (test_an_exclusive_bound_shrinks_onto_the_bound checks which).
    "exclusive_k1_bounds": ("rollout_correction/token_k1", "outputs/modified_response_mask", 1, 1, {}),
    "kl_unmasked_mean": ("policy_loss/actor_kl_loss", "outputs/kl_term", 1, 2, {"response_mask": [1, 0]}),
}


def explore(*args, bug="", timeout=600):
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug)
    p = subprocess.run([CONFORM, "explore", *args], capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def example(*args, bug=""):
    return explore("--adapter", "numpy_example", "--python", sys.executable, *args, bug=bug)


def as_json(result):
    code, out, err = result
    return code, json.loads(out), err


def without_timings(j):
    j = json.loads(json.dumps(j))
    for k in ("explore_seconds", "shrink_seconds"):
        j["totals"].pop(k, None)
    for d in j["differences"]:
        d["minimal"].pop("shrink_seconds", None)
    return j


class Pristine(unittest.TestCase):
    def test_no_difference_and_the_same_run_with_one_job_or_two(self):
        code, j, err = as_json(example("--cases", "300", "--jobs", "2", "--seed", "7", "--format", "json"))
        self.assertEqual(code, 0, err)
        self.assertEqual(j["totals"]["failed"], 0)
        self.assertEqual(j["differences"], [])
        self.assertGreater(j["totals"]["passed"], 3000)
        self.assertEqual(len([f for f in j["functions"] if not f["dp_ranks"]]), 14)
        code1, j1, _ = as_json(example("--cases", "300", "--jobs", "1", "--seed", "7", "--format", "json"))
        self.assertEqual(code1, 0)
        self.assertEqual(without_timings(j1), without_timings(j))

    def test_the_text_report(self):
        code, out, err = example("--cases", "20", "--only", "grpo")
        self.assertEqual(code, 0, err)
        self.assertIn("advantage/grpo", out)
        self.assertIn("no difference", out)
        self.assertIn("conform explore: candidate numpy_example", out)


class Faults(unittest.TestCase):
    def test_every_fault_has_its_expected_minimal_case(self):
        self.assertEqual(set(EXPECTED), set(numpy_example_impl.BUGS))

    def test_each_fault_is_found_and_shrunk_to_its_minimal_case(self):
        for bug, (function, field, rows, tokens, values) in EXPECTED.items():
            with self.subTest(bug=bug):
                code, j, err = as_json(example("--cases", BUDGET, "--only", function, "--format", "json", bug=bug))
                self.assertEqual(code, 1, err)
                # One difference per way the field fails (a NaN, a wrong number): the first.
                found = [d for d in j["differences"] if d["function"] == function and d["field"] == field]
                self.assertTrue(found, [(d["function"], d["field"]) for d in j["differences"]])
                m = found[0]["minimal"]
                self.assertEqual((m["rows"], m["tokens"]), (rows, tokens), m)
                for name, want in values.items():
                    self.assertEqual(m["inputs"][name]["values"], want, m)
                if bug == "gae_resets_at_observation":
                    self.assertIn(m["inputs"]["response_mask"]["values"], ([0, 1, 1], [1, 0, 1]), m)
                self.assertFalse(m["budget_ran_out"])
                self.assertLess(m["shrink_seconds"], 30)
                self.assertTrue(found[0]["elements"] or field == "error", found[0])

    def test_a_local_mean_per_rank_fails_the_sharded_rows_only_where_the_pristine_passes(self):
        rows = {}
        for bug in ("", "local_token_mean"):
            _, j, err = as_json(example("--cases", "40", "--only", "token-mean", "--format", "json", bug=bug))
            rows[bug] = {f["dp_ranks"]: f for f in j["functions"]}
            self.assertEqual(sorted(rows[bug]), [0, 2, 4, 8], err)
        for k in (2, 4, 8):
            self.assertEqual(rows[""][k]["failed"], 0)
            self.assertGreater(rows[""][k]["passed"], 0)
            self.assertGreater(rows["local_token_mean"][k]["failed"], 0)

    def test_the_shard_hook_runs_the_sharded_calls(self):
        # A framework given the batch's token count through its own hook passes; one that
        # divides by its rank's tokens fails, as a local mean does.
        with open(os.path.join(ROOT, "tools", "harness", "testdata", "token_mean_adapter.py")) as f:
            src = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            for hook, fails in (("given_count", False), ("rank_count", True)):
                path = os.path.join(tmp, hook + "_adapter.py")
                with open(path, "w") as f:
                    f.write(src + f"SHARD = {{'token-mean': {hook}}}\n")
                _, j, err = as_json(
                    explore("--adapter", path, "--python", sys.executable, "--cases", "20", "--only", "token-mean",
                            "--format", "json")
                )  # fmt: skip
                dp = {f["dp_ranks"]: f for f in j["functions"] if f["dp_ranks"]}
                self.assertEqual(sorted(dp), [2, 4, 8], err)
                for k in (2, 4, 8):
                    if fails:
                        self.assertGreater(dp[k]["failed"], 0, (hook, k))
                    else:
                        self.assertEqual(dp[k]["failed"], 0, (hook, k, dp[k]))
                        self.assertGreater(dp[k]["passed"], 0, (hook, k))

    def test_the_minimal_case_replays_in_check_and_in_python(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run")
            code, text, err = example("--cases", BUDGET, "--only", "grpo", "--out", out, bug="biased_std")
            self.assertEqual(code, 1, err)
            self.assertIn("differing elements", text)
            self.assertIn("row 0, group 0, valid token", text)
            for sub in ("cases", "candidate", "repro"):
                self.assertTrue(os.listdir(os.path.join(out, sub)), sub)
            p = subprocess.run(
                [
                    CONFORM,
                    "check",
                    "--against",
                    os.path.join(out, "cases"),
                    "--candidate",
                    os.path.join(out, "candidate"),
                ],
                capture_output=True,
                text=True,
            )
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("grpo", p.stdout)
            (repro,) = [
                os.path.join(out, "repro", f)
                for f in os.listdir(os.path.join(out, "repro"))
                if f.startswith("advantage__grpo__outputs_advantages")
            ]
            env = dict(os.environ, VERLCONF_EXAMPLE_BUG="biased_std")
            p = subprocess.run([sys.executable, repro], capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = [ln for ln in p.stdout.splitlines() if "outputs/advantages" in ln]
            self.assertEqual(len(lines), 2, p.stdout)
            self.assertNotEqual(lines[0].split(":", 1)[1], lines[1].split(":", 1)[1])
            # The same repro on the pristine example gives the reference's values.
            p = subprocess.run([sys.executable, repro], capture_output=True, text=True)
            lines = [ln for ln in p.stdout.splitlines() if "outputs/advantages" in ln]
            self.assertEqual(lines[0].split(":", 1)[1], lines[1].split(":", 1)[1], p.stdout)
            # A second run into the same directory would mix two runs' files.
            code, _, err = example("--cases", "5", "--only", "grpo", "--out", out)
            self.assertEqual(code, 2)
            self.assertIn("earlier run", err)


class Causes(unittest.TestCase):
    """One minimal case per cause, each with its own files, and the knobs around them."""

    def test_two_causes_in_one_field_are_two_differences_each_with_its_files(self):
        # A missing log-ratio clamp in the gradient and a dual clip on positive advantages:
        # both show in grads/log_prob, at different tokens.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run")
            code, j, err = as_json(
                example("--cases", "400", "--only", "vanilla", "--dp-cases", "0", "--out", out, "--format", "json",
                        bug="dual_clip_positive,grad_through_clamp")
            )  # fmt: skip
            self.assertEqual(code, 1, err)
            grads = [d for d in j["differences"] if d["field"] == "grads/log_prob"]
            causes = {d["cause"] for d in grads}
            self.assertGreaterEqual(len(causes), 2, [(d["cause"], d["grade"]) for d in grads])
            self.assertTrue(any("clamp" in c for c in causes), causes)
            self.assertTrue(any("A > 0" in c and "clamp" not in c for c in causes), causes)
            # Every difference keeps its own repro, replay case and candidate case.
            repros = sorted(d["repro"] for d in j["differences"] if "repro" in d)
            self.assertEqual(len(repros), len([d for d in j["differences"] if not d["dp_ranks"]]))
            self.assertEqual(len(set(repros)), len(repros), repros)
            self.assertEqual(sorted(os.path.join(out, "repro", f) for f in os.listdir(os.path.join(out, "repro"))),
                             repros)  # fmt: skip
            names = [d["minimal"]["name"] for d in j["differences"]]
            self.assertEqual(len(set(names)), len(names), names)
            self.assertEqual(j["totals"]["shrinks_at_budget"], 0, j["totals"])
            # The dual clip's groups say they may share a cause with the loss; the clamp's does not.
            for d in grads:
                shared = [m["field"] for m in d["may_share_a_cause_with"]]
                self.assertEqual("outputs/pg_loss" in shared, "clamp" not in d["cause"], d)

    def test_an_exclusive_bound_shrinks_onto_the_bound(self):
        code, j, err = as_json(
            example("--cases", BUDGET, "--only", "token_k1", "--format", "json", bug="exclusive_k1_bounds")
        )
        self.assertEqual(code, 1, err)
        (d,) = [x for x in j["differences"] if x["field"] == "outputs/modified_response_mask"][:1]
        m = d["minimal"]
        self.assertEqual((m["rows"], m["tokens"]), (1, 1), m)
        (lr,) = m["inputs"]["log_ratio"]["values"]
        threshold = m["config_not_default"].get("rollout_rs_threshold") or m["config_not_default"]
        self.assertTrue(str(threshold), m)
        # k1 = -lr sits exactly on log(lower) or log(upper) of the case's threshold.
        bounds = [float(x) for x in str(threshold).strip("'\"").split("_")]
        if len(bounds) == 1:
            bounds = [1 / bounds[0], bounds[0]]
        dtype = np.float32 if m["dtype"] == "float32" else np.float64
        on = [b for b in bounds if dtype(-lr) == dtype(math.log(b))]
        self.assertTrue(on, (lr, bounds, m["dtype"]))
        # The pristine comparison passes on that very case.
        code, j, err = as_json(example("--cases", BUDGET, "--only", "token_k1", "--format", "json"))
        self.assertEqual((code, j["differences"]), (0, []), err)

    def test_config_pins_restrict_the_draw_and_survive_the_shrink(self):
        only = ("--only", "actor_kl_loss", "--dp-cases", "0", "--format", "json")
        _, free, _ = as_json(example("--cases", "60", *only))
        code, pinned, err = as_json(example("--cases", "60", *only, "--config", "kl_loss_type=low_var_kl,k1"))
        self.assertEqual(code, 0, err)
        self.assertGreater(free["totals"]["unsupported"], 0)  # the '+' and other types are declined
        self.assertEqual(pinned["totals"]["unsupported"], 0, pinned["totals"])
        self.assertGreater(pinned["totals"]["passed"], free["totals"]["passed"])
        # A fault shrunk under a pin keeps it.
        code, j, err = as_json(
            example("--cases", "60", *only, "--config", "kl_loss_type=k1", "--config", "loss_agg_mode=token-mean",
                    bug="kl_unmasked_mean")
        )  # fmt: skip
        self.assertEqual(code, 1, err)
        for d in j["differences"]:
            self.assertEqual(d["minimal"]["config_not_default"].get("kl_loss_type"), '"k1"', d["minimal"])

    def test_a_sharded_row_counts_its_own_cases(self):
        code, out, err = example("--cases", "20", "--dp-cases", "5", "--only", "token-mean", bug="local_token_mean")
        self.assertEqual(code, 1, err)
        self.assertRegex(out, r"\[dp k=\d\] grads/loss_mat .* in \d of 5 cases")
        self.assertRegex(out, r"\d+ of \d+ shrinks stopped at the budget")

    def test_geo_mean_sharded_cases_are_skipped_with_the_reason(self):
        code, j, err = as_json(
            explore("--impl", "cuda-host", "--cases", "10", "--only", "geo_mean", "--format", "json")
        )
        self.assertIn(code, (0, 1), err)
        dp = [f for f in j["functions"] if f["dp_ranks"]]
        self.assertTrue(dp)
        for f in dp:
            self.assertEqual(f["refused"], 0, f)
            self.assertGreater(f["skipped"], 0, f)


class BadInput(unittest.TestCase):
    def assert_bad(self, result, needle):
        code, out, err = result
        self.assertEqual(code, 2, out + err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        self.assertTrue(lines and needle in lines[-1], err)

    def test_usage(self):
        self.assert_bad(explore(), "--adapter or --impl is required")
        self.assert_bad(explore("--adapter", "numpy_example", "--impl", "cuda-host"), "not both")
        self.assert_bad(explore("--impl", "gpu"), "--impl gpu")
        self.assert_bad(explore("--impl", "oracle"), "the oracle is the reference")
        self.assert_bad(explore("--impl", "cuda-host", "--reference", "torch"), "--reference torch")
        self.assert_bad(explore("--impl", "cuda-host", "--cases", "0"), "--cases")
        self.assert_bad(explore("--impl", "cuda-host", "--seed", "-1"), "--seed")
        self.assert_bad(explore("--impl", "cuda-host", "--only", "vanila"), "vanila")
        self.assert_bad(explore("--impl", "cuda-host", "--cases", ""), "empty value")
        self.assert_bad(explore("--adapter", "missing_adapter.py"), "no such file")
        self.assert_bad(explore("--impl", "cuda-host", "--baseline", "/nonexistent"), "no such file")
        self.assert_bad(explore("--impl", "cuda-host", "--config", "no_such_key=1"), "no_such_key")
        self.assert_bad(explore("--impl", "cuda-host", "--config", "clip_ratio"), "KEY=VALUE")
        self.assert_bad(explore("--impl", "cuda-host", "--config", "clip_ratio=abc"), "clip_ratio=abc")
        self.assert_bad(explore("--impl", "cuda-host", "--config", "clip_ratio=0.2,"), "an empty value")
        self.assert_bad(explore("--impl", "cuda-host", "--config", "loss_agg_mode=token-avg"), "token-avg")
        self.assert_bad(
            explore("--impl", "cuda-host", "--config", "clip_ratio=0.1", "--config", "clip_ratio=0.3"), "given twice"
        )

    def test_cuda_where_it_cannot_run_compared_nothing(self):
        # This conform has no device code (a GPU build on a machine without a GPU says
        # "no CUDA device" the same way: tools/gpu/verlconf_gpu_test.sh): the reason, as
        # check gives it, and exit 4, never an internal error at the first allocation.
        code, out, err = explore("--impl", "cuda", "--cases", "5", "--seed", "1")
        self.assertEqual(code, 4, out + err)
        self.assertRegex(out, r"(?m)^CUDA: (this conform was built without device code|no CUDA device)")
        self.assertIn("--impl cuda cannot run here", err)
        self.assertNotIn("internal error", err)
        code, out, err = explore("--impl", "cuda", "--cases", "5", "--format", "json")
        self.assertEqual((code, out), (4, ""), err)
        # The arguments are read before the device is asked for.
        self.assert_bad(explore("--impl", "cuda", "--only", "vanila"), "vanila")

    def test_an_adapter_that_breaks_the_contract(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad_adapter.py")
            with open(path, "w") as f:
                f.write(
                    "import numpy as np\nname = 'bad'\n"
                    "def versions():\n    return {}\n"
                    "def k1(inputs, cfg, dtype):\n"
                    "    return {'outputs': {'kl': np.zeros(inputs['logprob'].shape, dtype=np.int64)}}\n"
                    "FUNCTIONS = {'k1': k1}\n"
                )
            self.assert_bad(explore("--adapter", path, "--python", sys.executable, "--cases", "3"), "outputs/kl")
            with open(path, "w") as f:
                f.write("FUNCTIONS = {'vanila': print}\nname = 'bad'\n\ndef versions():\n    return {}\n")
            self.assert_bad(explore("--adapter", path, "--python", sys.executable, "--cases", "3"), "vanila")

    def test_a_result_of_the_wrong_shape_never_reaches_the_combination(self):
        # token-mean whose gradient gains a column, whose loss is empty, or has no loss: on
        # the sharded rows each is exit 2 naming the call (never a write past the batch).
        with open(os.path.join(ROOT, "tools", "harness", "testdata", "token_mean_adapter.py")) as f:
            src = f.read()
        damage = {
            "grads/loss_mat: shape": "r['grads']['loss_mat'] = np.pad(r['grads']['loss_mat'], ((0, 0), (0, 1)))",
            "a loss is one number": "r['outputs']['loss'] = np.zeros(0)",
        }
        with tempfile.TemporaryDirectory() as tmp:
            for want, change in damage.items():
                path = os.path.join(tmp, "bad_shape_adapter.py")
                with open(path, "w") as f:
                    f.write(
                        src + "def bad(inputs, cfg, dtype):\n    r = token_mean(inputs, cfg, dtype)\n"
                        f"    {change}\n    return r\nFUNCTIONS = {{'token-mean': bad}}\n"
                    )
                r = explore("--adapter", path, "--python", sys.executable, "--cases", "10", "--only", "token-mean",
                            "--dp-cases", "3")  # fmt: skip
                self.assert_bad(r, want)
                self.assertIn("token-mean [dp k=", r[2])
                self.assertIn("rank ", r[2])

    def test_a_hanging_call_is_an_adapter_error_and_the_run_goes_on(self):
        # One call hangs in Python (the server's timer ends it), one in native code (the
        # server is ended and restarted); every other case is judged.
        with tempfile.TemporaryDirectory() as tmp:
            for hang in ("time.sleep(600)", "os.system('sleep 600')"):
                path, marker = os.path.join(tmp, "hang_adapter.py"), os.path.join(tmp, hang[:4] + ".hung")
                with open(path, "w") as f:
                    f.write(
                        "import os, time\nimport numpy as np\nname = 'hang'\n"
                        "def versions():\n    return {}\n"
                        "seen = []\n"
                        "def k1(inputs, cfg, dtype):\n"
                        "    seen.append(1)\n"
                        f"    if len(seen) == 2 and not os.path.exists({marker!r}):\n"
                        f"        open({marker!r}, 'w').close()\n        {hang}\n"
                        "    lp, ref = inputs['logprob'], inputs['ref_logprob']\n"
                        "    kl, g = (lp - ref).astype(lp.dtype), np.ones_like(lp)\n"
                        "    return {'outputs': {'kl': kl}, 'grads': {'logprob': g}}\n"
                        "FUNCTIONS = {'k1': k1}\n"
                    )
                start = time.time()
                code, out, err = explore("--adapter", path, "--python", sys.executable, "--cases", "6", "--only",
                                         "k1", "--call-timeout", "1", "--format", "json")  # fmt: skip
                self.assertLess(time.time() - start, 120, hang)
                self.assertEqual(code, 1, out + err)
                j = json.loads(out)
                (row,) = j["functions"]
                self.assertEqual(row["cases"], 6, hang)
                self.assertEqual((row["passed"], row["failed"]), (5, 1), (hang, row))


class CudaHost(unittest.TestCase):
    def test_the_host_path_against_the_oracle(self):
        # Several seeds: a defect one seed's cases miss (a tie at a pick's edge, a ratio on
        # a bound in a sharded row) another's meet.
        for seed in ("0", "1", "2", "3", "4", "7"):
            with self.subTest(seed=seed):
                code, out, err = explore(
                    "--impl", "cuda-host", "--cases", "40", "--seed", seed, "--baseline", CUDA_BASELINE,
                    "--format", "json",
                )  # fmt: skip
                j = json.loads(out)
                self.assertEqual(code, 0, json.dumps(j["differences"], indent=1)[:4000] + err)
                self.assertEqual(j["stale_baseline"], [])
                self.assertGreater(j["totals"]["passed"], 2500)

    # AddressSanitizer reserves terabytes of address space and holds freed memory in its
    # quarantine: a footprint test means nothing there (the main phase runs it).
    @unittest.skipIf("ASAN_OPTIONS" in os.environ, "memory footprint under AddressSanitizer")
    def test_memory_does_not_grow_with_the_number_of_cases(self):
        # Ten times the cases, the same peak memory (within allocator noise), and within an
        # address-space limit of 1.5 GB.
        def peak_kib(cases):
            pid = os.fork()
            if pid == 0:
                resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
                os.execv(CONFORM, [CONFORM, "explore", "--impl", "cuda-host", "--only", "k3,token-mean", "--cases",
                                   str(cases), "--dp-cases", "0", "--shrink-seconds", "1"])  # fmt: skip
            _, status, usage = os.wait4(pid, 0)
            self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, 1), status)
            return usage.ru_maxrss

        small, large = peak_kib(2000), peak_kib(20000)
        self.assertLess(large, small * 1.25 + 16 * 1024, (small, large))


if __name__ == "__main__":
    unittest.main()
