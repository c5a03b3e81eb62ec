"""The conform CLI as a user meets it: exit codes and one-line messages.

What a user relies on: a planted error in a copy of a golden file makes
`conform check --candidate` exit 1 naming function, case, output, worst error and
index; a truncated file, a missing dataset and a wrong shape each exit 2 with one
clear line; `list --json` reports verl 0.9.1 from the files' provenance.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import CONFORM, GOLDENS, assert_bad_input, row, run  # noqa: E402

# Every option each command accepts, as a user would look them up in its --help.
OPTIONS = {
    "check": [
        "--against",
        "--candidate",
        "--impl",
        "--only",
        "--junit",
        "--report",
        "--format",
        "--jobs",
        "--require-all",
        "--show-unsupported",
        "--verbose",
        "--baseline",
        "--write-baseline",
        "--strict-baseline",
        "--help",
    ],
    "validate": [
        "--adapter",
        "--python",
        "--out",
        "--force",
        "--against",
        "--only",
        "--jobs",
        "--junit",
        "--report",
        "--format",
        "--require-all",
        "--show-unsupported",
        "--verbose",
        "--baseline",
        "--write-baseline",
        "--strict-baseline",
        "--help",
    ],
    "list": ["--against", "--json", "--help"],
    "spec": ["--json", "--pretty", "--help"],
    "drift": ["--only", "--report", "--format", "--help"],
}
EPS64, EPS32 = 2.0**-52, 2.0**-23


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
        dispatched = [
            f["name"]
            for f in json.loads(out)["functions"]
            if f["family"] == "advantage" and "verl_dispatch_kwargs" in f
        ]
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

    def test_drift_that_compares_nothing_is_exit_4(self):
        # No case in common (two families), and every common case with other inputs.
        old, new, moved = (os.path.join(self.tmp, n) for n in ("old", "new", "moved"))
        for d, fam in ((old, "kl.h5"), (new, "aggregation.h5"), (moved, "kl.h5")):
            os.mkdir(d)
            shutil.copyfile(os.path.join(GOLDENS, fam), os.path.join(d, fam))
            os.chmod(os.path.join(d, fam), 0o644)
        with h5py.File(os.path.join(moved, "kl.h5"), "r+") as f:
            for fn in f:
                for c in f[fn]:
                    ds = f[fn][c]["inputs"]["logprob"]
                    ds[...] = ds[()] + 0.25
        for a, b in ((old, new), (old, moved)):
            code, out, err = run("drift", a, b)
            self.assertEqual(code, 4, out + err)
            self.assertIn("nothing compared", err)
            self.assertNotIn("no drift beyond tolerance", out)

    def test_junit_written(self):
        junit = os.path.join(self.tmp, "out.xml")
        code, out, err = run("check", "--against", GOLDENS, "--only", "k3", "--junit", junit)
        self.assertEqual(code, 0, out + err)
        with open(junit) as f:
            self.assertIn('<testsuite name="conform.oracle.k3"', f.read())


class NewUser(unittest.TestCase):
    """What a first run shows: SKIPPED apart from UNSUPPORTED, --only by family, names that
    do not resolve answered with the closest ones, a function's cases with their reasons,
    the version in every report, and a drift that leads with what changed."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_skipped_and_unsupported_are_counted_apart(self):
        # cuda-host computes in float32: every float64 case is SKIPPED, none UNSUPPORTED.
        code, out, err = run("check", "--against", GOLDENS, "--impl", "cuda-host", "--only", "grpo")
        self.assertEqual(code, 0, out + err)
        header = next(ln for ln in out.splitlines() if ln.startswith("function ")).split()
        self.assertEqual(header[6:8], ["unsup", "skip"])
        cells = row(out, "grpo")
        with h5py.File(os.path.join(GOLDENS, "advantage.h5"), "r") as f:
            f64 = sum(1 for c in f["grpo"] if c.endswith("_f64"))
        self.assertEqual((int(cells[6]), int(cells[7])), (0, f64))
        self.assertIn("0 unsupported, %d skipped" % f64, out)
        report = os.path.join(self.tmp, "r.md")
        code, out, err = run(
            "check",
            "--against",
            GOLDENS,
            "--impl",
            "cuda-host",
            "--only",
            "grpo",
            "--format",
            "json",
            "--report",
            report,
        )
        (fn,) = json.loads(out)["functions"]
        self.assertEqual((fn["outcomes"]["UNSUPPORTED"], fn["outcomes"]["SKIPPED"]), (0, f64))
        self.assertIsNone(fn["worst"]["float64"])  # nothing compared in float64
        with open(report) as f:
            md = f.read()
        self.assertIn("| unsupported | skipped |", md)
        line = next(ln for ln in md.splitlines() if ln.startswith("| `grpo` |"))
        self.assertEqual([c.strip() for c in line.strip("|").split("|")][6:8], ["0", str(f64)])

    def test_only_takes_a_family(self):
        code, out, err = run("check", "--against", GOLDENS, "--only", "kl")
        self.assertEqual(code, 0, out + err)
        table = out.split("\n\n")[0].splitlines()
        start = next(k for k, ln in enumerate(table) if ln.startswith("function "))
        rows = [ln.split() for ln in table[start + 1 :]]
        self.assertTrue(rows, out)
        self.assertEqual({r[1] for r in rows}, {"kl"})
        code, spec, err = run("spec", "kl")
        self.assertEqual(code, 0, err)
        for r in rows:
            self.assertIn("kl/" + r[0], spec)

    def test_unknown_names_get_the_closest_ones(self):
        for args, name, suggestion in (
            (["check", "--against", GOLDENS, "--only", "grpoo"], "'grpoo'", "did you mean 'grpo'"),
            (["check", "--against", GOLDENS, "--only", "advantag"], "'advantag'", "did you mean 'advantage'"),
            (["check", "--against", GOLDENS, "--only", "kl/k3/nope_case"], "'kl/k3/nope_case'", "no such"),
            (["list", "--against", GOLDENS, "vanila"], "'vanila'", "did you mean 'vanilla'"),
            (["drift", GOLDENS, GOLDENS, "--only", "k33"], "'k33'", "did you mean 'k3'"),
        ):
            assert_bad_input(self, run(*args), name, suggestion)
        line = assert_bad_input(self, run("check", "--against", GOLDENS, "--only", "zzzzzzzzzzzz"), "'zzzzzzzzzzzz'")
        self.assertNotIn("did you mean", line)  # nothing close: no guess

    def test_list_function_gives_its_cases_and_why(self):
        code, out, err = run("list", "--against", GOLDENS, "k3")
        self.assertEqual(code, 0, out + err)
        with h5py.File(os.path.join(GOLDENS, "kl.h5"), "r") as f:
            cases = {c: f["k3"][c].attrs["why"] for c in f["k3"]}
        lines = out.splitlines()
        self.assertEqual(lines[-1], "%d case(s)" % len(cases))
        for c, why in cases.items():
            why = why.decode() if isinstance(why, bytes) else str(why)
            (ln,) = [ln for ln in lines if ln.split()[:1] == ["kl/k3/" + c]]
            self.assertIn(why, ln)
        code, out, err = run("list", "--against", GOLDENS, "kl/k3", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual({c["case"] for c in json.loads(out)}, set(cases))

    def test_version_is_printed_and_in_every_report(self):
        code, out, err = run("--version")
        self.assertEqual(code, 0, err)
        first = out.splitlines()[0]
        self.assertRegex(first, r"^conform \S+$")
        revision = first.split()[1]
        self.assertIn("  verl_version: 0.9.1", out)
        self.assertIn("  torch_version: ", out)
        report, junit = os.path.join(self.tmp, "r.md"), os.path.join(self.tmp, "j.xml")
        code, out, err = run(
            "check", "--against", GOLDENS, "--only", "k3", "--format", "json", "--report", report, "--junit", junit
        )
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["conform_revision"], revision)
        with open(report) as f:
            self.assertIn("| conform | revision | %s |" % revision, f.read())
        with open(junit) as f:
            self.assertIn('<property name="conform_revision" value="%s"/>' % revision, f.read())
        code, out, err = run("drift", GOLDENS, GOLDENS, "--format", "json")
        self.assertEqual(json.loads(out)["conform_revision"], revision)

    def test_revision_outside_git_is_unknown(self):
        # A source tarball: no .git above the script's working directory.
        script = os.path.join(os.environ.get("TEST_SRCDIR", os.getcwd()), "verlconf", "tools", "workspace_status.sh")
        p = subprocess.run(["sh", script], cwd=self.tmp, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "STABLE_VERLCONF_REVISION unknown\n")
        # A binary without its revision runfile says so, and still runs.
        alone = os.path.join(self.tmp, "conform")
        shutil.copyfile(CONFORM, alone)
        os.chmod(alone, 0o755)
        env = {k: v for k, v in os.environ.items() if k not in ("RUNFILES_DIR", "TEST_SRCDIR")}
        p = subprocess.run([alone, "--version"], cwd=self.tmp, capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], "conform unknown")

    def test_drift_text_leads_with_what_changed(self):
        old, new = os.path.join(self.tmp, "old"), os.path.join(self.tmp, "new")
        for d in (old, new):
            os.mkdir(d)
            shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), os.path.join(d, "kl.h5"))
            os.chmod(os.path.join(d, "kl.h5"), 0o644)
        with h5py.File(os.path.join(new, "kl.h5"), "r+") as f:
            case = sorted(c for c in f["k1"] if "expect_error" not in f["k1"][c].attrs and c.endswith("_f64"))[0]
            ds = f["k1"][case]["outputs"]["kl"]
            data = ds[()]
            data.flat[1] += 0.5
            ds[...] = data
            index = np.unravel_index(1, data.shape)
        code, out, err = run("drift", old, new)
        self.assertEqual(code, 1, out + err)
        lines = out.splitlines()
        self.assertRegex(lines[2], r"^\d+ field\(s\) of \d+ function\(s\) changed")
        self.assertEqual(lines[3].split()[:2], ["function", "field"])
        rows = [ln.split() for ln in lines[4:] if ln.strip() and not ln.startswith(" ")]
        k1 = next(r for r in rows if r[:2] == ["k1", "outputs/kl"])
        self.assertAlmostEqual(float(k1[9]), 0.5, delta=1e-6)  # that element's abs change
        self.assertEqual(" ".join(k1[11:]), "%s(%s)" % (case, ", ".join(str(int(x)) for x in index)))
        unchanged = [ln for ln in lines if ln.startswith("unchanged: ")]
        self.assertEqual(len(unchanged), 1, out)
        self.assertLess(lines.index(unchanged[0]), len(lines))
        self.assertNotIn("k3 ", "\n".join(lines[: lines.index(unchanged[0])]))  # unchanged rows are summed
        self.assertLess(len(lines), 40, out)


class Help(unittest.TestCase):
    """--help for the tool and every command: exit 0, every option the command accepts
    and the exit codes, and nothing run; an unknown option still exits 2, pointing there."""

    def test_every_command_lists_every_option_and_the_exit_codes(self):
        for cmd, options in OPTIONS.items():
            with self.subTest(cmd=cmd):
                code, out, err = run(cmd, "--help")
                self.assertEqual(code, 0, out + err)
                self.assertEqual(err, "")
                self.assertTrue(out.startswith("usage: conform " + cmd), out)
                for o in options:
                    self.assertRegex(out, r"(?m)^  %s\b" % o, "%s --help does not list %s" % (cmd, o))
                self.assertIn("exit codes: 0 ", out)
                self.assertIn("2 bad input or usage", out)
                # The same from `conform help CMD`, and --help wins over anything else given.
                self.assertEqual(run("help", cmd), (0, out, ""))
                self.assertEqual(run(cmd, "--only", "nope", "-h"), (0, out, ""))

    def test_overview_names_every_command(self):
        for args in (["--help"], ["-h"], ["help"]):
            code, out, err = run(*args)
            self.assertEqual(code, 0, out + err)
            for cmd in list(OPTIONS) + ["help"]:
                self.assertRegex(out, r"(?m)^  %s " % cmd)
            self.assertIn("exit codes:", out)

    def test_unknown_options_and_commands_still_exit_2(self):
        for cmd in OPTIONS:
            args = [cmd, "--frobnicate"] + ([GOLDENS, GOLDENS] if cmd == "drift" else [])
            assert_bad_input(self, run(*args), cmd + ": unknown option --frobnicate", "conform %s --help" % cmd)
        assert_bad_input(self, run("help", "frobnicate"), "unknown command 'frobnicate'")
        assert_bad_input(self, run("check", "--format", "xml"), "--format", "'xml'")
        assert_bad_input(self, run("spec", "--pretty"), "--json")


class Spec(unittest.TestCase):
    """`conform spec` reads as a description; `--json` stays the machine form."""

    @classmethod
    def setUpClass(cls):
        code, out, err = run("spec", "--json")
        assert code == 0, err
        cls.json_text = out
        cls.functions = json.loads(out)["functions"]

    def test_one_function_of_each_family(self):
        families = {}
        for f in self.functions:
            families.setdefault(f["family"], f)
        self.assertGreaterEqual(len(families), 7)
        names = [f["name"] for f in self.functions]
        for family, f in sorted(families.items()):
            key = f["name"] if names.count(f["name"]) == 1 else family + "/" + f["name"]
            with self.subTest(key=key):
                code, out, err = run("spec", key)
                self.assertEqual(code, 0, out + err)
                blocks = [ln for ln in out.splitlines() if ln and not ln.startswith(" ")]
                self.assertEqual(blocks, [family + "/" + f["name"]], out)  # exactly one function
                self.assertIn("mirrors verl's " + f["verl_symbol"], out)
                for i in f["inputs"]:
                    self.assertRegex(out, r"(?m)^    %s +\S" % re.escape(i["name"]))
                    self.assertIn(i["role"], out)
                for c in f["config"]:
                    self.assertRegex(out, r"(?m)^    %s +\S+ += " % re.escape(c["name"]))
                for o in f["outputs"]:
                    self.assertRegex(out, r"(?m)^    %s: (scalar|tensor)" % re.escape(o["name"]))
                for m in f["metrics"] + f["grads"]:
                    self.assertIn(m, out)
                for c in f["config"]:  # verl's default, as Python spells it
                    d = c["verl_default"]
                    shown = (
                        "None"
                        if d is None
                        else repr(bool(d))
                        if c["type"] == "bool"
                        else ('"%s"' % d if isinstance(d, str) else repr(d))
                    )
                    self.assertRegex(out, r"(?m)^    %s +\S+ += %s( |$)" % (re.escape(c["name"]), re.escape(shown)))
                if f["notes"]:  # wrapped to the terminal's width
                    self.assertIn(" ".join(("notes: " + f["notes"]).split()), " ".join(out.split()))

    def test_shapes_and_defaults_read_as_written(self):
        code, out, err = run("spec", "policy_loss/vanilla")
        self.assertEqual(code, 0, out + err)
        self.assertRegex(out, r"(?m)^    old_log_prob +B x T +tokens")
        self.assertRegex(out, r"(?m)^    response_mask +B x T +tokens, mask \(0/1\)")
        vanilla = next(f for f in self.functions if f["name"] == "vanilla" and f["family"] == "policy_loss")
        clip = next(c for c in vanilla["config"] if c["name"] == "clip_ratio")
        self.assertRegex(out, r"(?m)^    clip_ratio +float += %s " % re.escape(repr(clip["verl_default"])))

    def test_ambiguous_name_qualified_and_unknown(self):
        code, out, err = run("spec", "advantage/gpg")
        self.assertEqual(code, 0, out + err)
        self.assertIn("advantage/gpg\n", out)
        self.assertNotIn("policy_loss/gpg", out)
        code, out, err = run("spec", "reward_kl")  # a family: all of its functions
        self.assertEqual(code, 0, out + err)
        self.assertEqual(
            [ln for ln in out.splitlines() if ln.startswith("reward_kl/")],
            ["reward_kl/" + f["name"] for f in self.functions if f["family"] == "reward_kl"],
        )
        code, out, err = run("spec", "kl")  # the KL estimator "kl", not the family "kl"
        self.assertEqual(code, 0, out + err)
        self.assertEqual([ln for ln in out.splitlines() if ln and not ln.startswith(" ")], ["kl/kl"])
        assert_bad_input(self, run("spec", "no_such_function"), "'no_such_function'")

    def test_json_is_the_machine_form_and_pretty_is_the_same_document(self):
        code, out, err = run("spec", "--json", "--pretty")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out), json.loads(self.json_text))
        self.assertGreater(out.count("\n"), 100)
        self.assertEqual(self.json_text.count("\n"), 1)  # the compact form stays one line
        code, out, err = run("spec", "k3", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(json.loads(out)["functions"], [f for f in self.functions if f["name"] == "k3"])

    def test_without_a_name_every_function_is_described(self):
        code, out, err = run("spec")
        self.assertEqual(code, 0, out + err)
        for f in self.functions:
            self.assertIn("\n%s/%s\n" % (f["family"], f["name"]), out)


class CheckReport(unittest.TestCase):
    """The table's err/tol columns and the JSON report say what the verdict says."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    copy = ConformCli.copy

    def plant(self):
        """A float64 GRPO case of a copy of advantage.h5 with one element off: (path, case,
        (i, j), got, want)."""
        path = self.copy("advantage.h5")
        with h5py.File(path, "r+") as f:
            case = next(
                c
                for c in sorted(f["grpo"].keys())
                if c.endswith("_f64") and np.any(f["grpo"][c]["outputs"]["advantages"][()] != 0)
            )
            ds = f["grpo"][case]["outputs"]["advantages"]
            data = ds[()]
            i, j = (int(x) for x in np.argwhere(data != 0)[0])
            want = float(data[i, j])
            data[i, j] = want * 1.5 + 0.25
            ds[...] = data
            got = float(ds[i, j])
        return path, case, (i, j), got, want

    def test_planted_error_read_back_from_json(self):
        path, case, (i, j), got, want = self.plant()
        code, out, err = run("check", "--against", GOLDENS, "--candidate", path, "--format", "json")
        self.assertEqual(code, 1, err)
        doc = json.loads(out)  # stdout is the one JSON object, nothing else
        self.assertEqual((doc["schema"], doc["schema_version"]), ("verlconf.check", 1))
        self.assertEqual(doc["exit_code"], 1)
        # (The golden file stores equal datasets once, so the planted element may show in
        # other functions' cases too: grpo_vectorized, outputs/returns.)
        self.assertEqual(doc["totals"]["failed"], sum(f["outcomes"]["FAILED"] for f in doc["functions"]))
        fn = next(f for f in doc["functions"] if f["function"] == "grpo")
        self.assertEqual(fn["family"], "advantage")
        self.assertEqual(fn["outcomes"]["FAILED"], 1)
        failed = [c for c in fn["cases"] if c["outcome"] == "FAILED"]
        self.assertEqual([c["case"] for c in failed], [case])
        c = failed[0]
        self.assertEqual(c["dtype"], "float64")
        self.assertIn("--only grpo/" + case, c["repro"])
        field = next(f for f in c["fields"] if f["field"] == "outputs/advantages")
        self.assertEqual(field["outcome"], "FAILED")
        self.assertEqual(field["worst_index"], [i, j])
        self.assertEqual(field["mismatched"], 1)
        # The documented float64 default (its atol times the case's condition number, when
        # the group's spread makes one, as the reason says), and the ratio is
        # |got - want| / (atol + rtol |want|).
        self.assertEqual(field["tolerance"]["rtol"], 2.0**18 * EPS64)
        self.assertGreaterEqual(field["tolerance"]["atol"], 2.0**10 * EPS64)
        if field["tolerance"]["atol"] > 2.0**10 * EPS64:
            self.assertIn("atol scaled by the case's condition number", field["tolerance"]["reason"])
        ratio = abs(got - want) / (field["tolerance"]["atol"] + field["tolerance"]["rtol"] * abs(want))
        self.assertAlmostEqual(field["err_tol"] / ratio, 1.0, places=12)
        self.assertGreater(field["err_tol"], 1.0)
        self.assertEqual(c["err_tol"], max(f["err_tol"] for f in c["fields"] if f["err_tol"] is not None))
        self.assertEqual(fn["err_tol"]["float64"], c["err_tol"])
        self.assertAlmostEqual(field["worst_abs"], abs(got - want), places=15)
        # The function's worst is one element: its err/tol, abs and rel, case, field, index.
        # (outputs/returns may hold the same planted element: equal datasets are stored once.)
        worst = fn["worst"]["float64"]
        self.assertEqual((worst["err_tol"], worst["case"], worst["index"]), (c["err_tol"], case, [i, j]))
        self.assertIn(worst["field"], ("outputs/advantages", "outputs/returns"))
        self.assertAlmostEqual(worst["abs"], abs(got - want), places=15)
        self.assertAlmostEqual(worst["rel"], abs(got - want) / abs(want), places=12)
        # Every other case and field: the figure agrees with the verdict.
        for f in doc["functions"]:
            for cc in f["cases"]:
                if cc["outcome"] in ("PASSED", "MISTRUSTED"):
                    self.assertTrue(cc["err_tol"] is None or cc["err_tol"] <= 1.0, cc)
                if cc["outcome"] == "FAILED":
                    self.assertTrue(cc["err_tol"] == "inf" or cc["err_tol"] > 1.0, cc)
        # The table shows the same figure, as a multiple of the tolerance.
        code, text, err = run("check", "--against", GOLDENS, "--candidate", path)
        self.assertEqual(code, 1, err)
        header = next(ln for ln in text.splitlines() if ln.startswith("function ")).split()
        self.assertEqual(header[11:15], ["err/tol", "abs", "rel", "worst"])
        cells = row(text, "grpo")
        self.assertAlmostEqual(float(cells[11]) / field["err_tol"], 1.0, delta=0.01)  # 3 significant digits
        self.assertGreater(float(cells[11]), 1.0)
        # abs and rel are that element's, and the row names it.
        self.assertAlmostEqual(float(cells[12]) / abs(got - want), 1.0, delta=0.01)
        self.assertAlmostEqual(float(cells[13]) / (abs(got - want) / abs(want)), 1.0, delta=0.01)
        self.assertEqual(" ".join(cells[14:]), "%s %s(%d, %d)" % (case, worst["field"], i, j))

    def test_markdown_report_has_provenance_matrix_and_differences(self):
        path, case, (i, j), got, want = self.plant()
        with h5py.File(path, "r+") as f:
            f.attrs["producer"] = "planted-framework"
            f.attrs["planted_version"] = "9.9.9"
        report = os.path.join(self.tmp, "report.md")
        code, out, err = run("check", "--against", GOLDENS, "--candidate", path, "--report", report)
        self.assertEqual(code, 1, err)
        with open(report) as f:
            md = f.read()
        sections = [ln for ln in md.splitlines() if ln.startswith("## ")]
        self.assertEqual(sections, ["## Provenance", "## Fields", "## Differences", "## Failures"])
        prov = md.split("## Provenance")[1].split("## Fields")[0]
        with h5py.File(os.path.join(GOLDENS, "advantage.h5"), "r") as f:
            verl = f.attrs["verl_version"]
            verl = verl.decode() if isinstance(verl, bytes) else str(verl)
        self.assertIn(f"| goldens | verl_version | {verl} |", prov)
        self.assertIn("| candidate | producer | planted-framework |", prov)
        self.assertIn("| candidate | planted_version | 9.9.9 |", prov)
        # Copied unchanged from the goldens, verl_version says nothing about the candidate.
        self.assertNotIn("| candidate | verl_version |", prov)
        fields = md.split("## Fields")[1].split("## Differences")[0]
        grpo = [ln for ln in fields.splitlines() if ln.startswith("| `grpo` | advantage | `outputs/advantages` |")]
        self.assertEqual(len(grpo), 1, fields)
        self.assertEqual(grpo[0].split("|")[5].strip(), "1")  # failed once
        diffs = md.split("## Differences")[1].split("## Failures")[0]
        line = next(ln for ln in diffs.splitlines() if ln.startswith("| `grpo` | advantage | `outputs/advantages` |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[3], "1")
        self.assertGreater(float(cells[4]), 1.0)
        self.assertAlmostEqual(float(cells[5]) / abs(got - want), 1.0, delta=0.01)
        self.assertAlmostEqual(float(cells[6]) / (abs(got - want) / abs(want)), 1.0, delta=0.01)
        self.assertEqual(cells[7], f"`{case} outputs/advantages({i}, {j})` (float64)")
        self.assertIn(f"--only grpo/{case}", cells[8])
        # The summary row: the same element, named.
        table = md.split("## Provenance")[0]
        line = next(ln for ln in table.splitlines() if ln.startswith("| `grpo` | advantage |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[6:8], ["0", "0"])  # unsupported, skipped
        self.assertAlmostEqual(float(cells[12]) / abs(got - want), 1.0, delta=0.01)
        self.assertRegex(cells[14], r"^`%s outputs/(advantages|returns)\(%d, %d\)`$" % (case, i, j))
        # The JSON form carries the same provenance.
        code, out, err = run("check", "--against", GOLDENS, "--candidate", path, "--format", "json")
        doc = json.loads(out)
        self.assertEqual(doc["provenance"]["candidate"]["producer"], "planted-framework")
        self.assertEqual(doc["provenance"]["goldens"]["verl_version"], verl)
        self.assertNotIn("verl_version", doc["provenance"]["candidate"])

    def test_passing_run_shows_ratios_at_most_one(self):
        code, out, err = run("check", "--against", GOLDENS, "--only", "vanilla,grpo,k3,token-mean")
        self.assertEqual(code, 0, out + err)
        for fn in ("vanilla", "grpo", "k3", "token-mean"):
            cells = row(out, fn)
            self.assertTrue(cells[11] == "-" or float(cells[11]) <= 1.0, out)
        code, out, err = run("check", "--against", GOLDENS, "--only", "vanilla", "--format", "json")
        self.assertEqual(code, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["exit_code"], 0)
        (fn,) = doc["functions"]
        self.assertLessEqual(fn["err_tol"]["float64"], 1.0)
        self.assertLessEqual(fn["err_tol"]["float32"], 1.0)

    def test_jobs_change_nothing_but_the_time(self):
        only = ("--only", "grpo,vanilla,clip_cov,k3,token-mean,decoupled_seq_is,masked_whiten")
        serial = run("check", "--against", GOLDENS, *only)
        self.assertEqual(serial[0], 0, serial[1] + serial[2])
        self.assertEqual(run("check", "--against", GOLDENS, *only, "--jobs", "3"), serial)
        path, case, _, _, _ = self.plant()
        serial = run("check", "--against", GOLDENS, "--candidate", path, "--format", "json")
        self.assertEqual(serial[0], 1, serial[2])
        self.assertEqual(
            run("check", "--against", GOLDENS, "--candidate", path, "--format", "json", "--jobs", "4"), serial
        )
        for bad in ("0", "-1", "x", "257"):
            assert_bad_input(self, run("check", "--jobs", bad), "--jobs")
        assert_bad_input(self, run("check", "--impl", "cuda-host", "--jobs", "2"), "--jobs", "one case at a time")

    def test_functions_not_provided_are_one_line(self):
        cand = os.path.join(self.tmp, "cand")
        os.mkdir(cand)
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), os.path.join(cand, "kl.h5"))
        code, out, err = run("check", "--against", GOLDENS, "--candidate", cand, "--verbose")
        self.assertEqual(code, 0, out + err)
        row(out, "k3")  # provided: a row
        self.assertFalse([ln for ln in out.splitlines() if ln.split()[:1] == ["grpo"]], out)
        line = next(ln for ln in out.splitlines() if "function(s) not provided" in ln)
        names = line.split(": ", 1)[1].split(", ")
        self.assertIn("grpo", names)
        self.assertIn("policy_loss/gpg", names)  # a name in two families is qualified
        self.assertNotIn("k3", names)
        self.assertNotIn("has no cases of", out)  # --verbose is about what was provided
        code, out, err = run("check", "--against", GOLDENS, "--candidate", cand, "--show-unsupported")
        self.assertEqual(code, 0, out + err)
        cells = row(out, "grpo")
        self.assertEqual((int(cells[3]), int(cells[6]), int(cells[7])), (0, int(cells[2]), 0))
        self.assertEqual(cells[11:], ["-", "-", "-", "-"])  # nothing compared
        self.assertNotIn("function(s) not provided", out)


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
        self.assertBadInput(["check", "--candidate", "--junit", "x.xml"], "--candidate needs a value", "--junit")
        self.assertBadInput(
            ["check", "--impl", "cuda", "--candidate", os.path.join(GOLDENS, "kl.h5")], "--impl and --candidate"
        )

    def test_every_only_name_must_resolve(self):
        for args, needle in (
            (["check", "--only", "k3,no_such_function"], "'no_such_function'"),
            (["check", "--only", "k3", "--only", "k3/no_such_case"], "'k3/no_such_case'"),
            (["check", "--only", "policy_loss/k3"], "'policy_loss/k3'"),
            (["check", "--only", "a/b/c/d"], "'a/b/c/d'"),
            (["drift", GOLDENS, GOLDENS, "--only", "k3,nope"], "'nope'"),
        ):
            self.assertBadInput(args + ["--against", GOLDENS] if args[0] == "check" else args, needle)
        # The qualified forms select exactly one family's function.
        code, out, err = run("check", "--against", GOLDENS, "--only", "advantage/gpg")
        self.assertEqual(code, 0, out + err)
        families = {ln.split()[1] for ln in out.splitlines() if ln.split()[:1] == ["gpg"]}
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
        cells = next(ln.split() for ln in out.splitlines() if ln.split()[:2] == ["k3", "outputs/kl"])
        compared, same, miss = int(cells[2]), int(cells[3]), int(cells[6])
        self.assertEqual(miss, 1)
        self.assertEqual(same, compared)  # the missing case is not among the "same"
        self.assertIn("drift found beyond tolerance", out)

    def test_drift_json_names_the_changed_case_and_field(self):
        with h5py.File(os.path.join(self.new, "kl.h5"), "r+") as f:
            case = sorted(c for c in f["k3"] if "expect_error" not in f["k3"][c].attrs and c.endswith("_f64"))[0]
            ds = f["k3"][case]["outputs"]["kl"]
            data = ds[()]
            data.flat[0] += 1e-3
            ds[...] = data
        code, out, err = run("drift", self.old, self.new, "--format", "json")
        self.assertEqual(code, 1, out + err)
        doc = json.loads(out)
        self.assertEqual(
            (doc["schema"], doc["schema_version"], doc["exit_code"], doc["drift"]), ("verlconf.drift", 1, 1, True)
        )
        # (k3+ takes k3's value, and the golden file stores equal datasets once, so the
        # planted change shows there too.)
        self.assertTrue(all(c["err_tol"] == "inf" or c["err_tol"] > 1.0 for c in doc["changes"]), doc["changes"])
        (change,) = [c for c in doc["changes"] if c["function"] == "k3"]
        self.assertEqual((change["function"], change["case"], change["field"]), ("k3", case, "outputs/kl"))
        self.assertGreater(change["err_tol"], 1.0)
        self.assertIn("--only kl/k3/" + case, change["repro"])
        k3 = next(f for f in doc["functions"] if f["function"] == "k3")
        kl = next(f for f in k3["fields"] if f["field"] == "outputs/kl")
        self.assertEqual(kl["changed"], 1)
        self.assertEqual(kl["err_tol"], change["err_tol"])
        # The worst element: that one element's change, where it is.
        for w in (kl["worst"], change["worst"]):
            self.assertEqual((w["err_tol"], w["case"], w["field"]), (change["err_tol"], case, "outputs/kl"))
            self.assertEqual(w["index"], [0] * data.ndim)
            self.assertAlmostEqual(w["abs"], 1e-3, delta=1e-9)
        code, out, err = run("drift", self.old, self.old, "--format", "json")
        self.assertEqual(code, 0, out + err)
        doc = json.loads(out)
        self.assertEqual((doc["drift"], doc["changes"]), (False, []))

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

    def test_markdown_report_gives_err_tol_abs_rel_and_one_side_fields(self):
        with h5py.File(os.path.join(self.new, "kl.h5"), "r+") as f:
            ok = sorted(c for c in f["k3"] if "expect_error" not in f["k3"][c].attrs and c.endswith("_f64"))
            ds = f["k3"][ok[0]]["outputs"]["kl"]
            data = ds[()]
            data.flat[0] += 1e-3
            ds[...] = data
            del f["k1"][sorted(c for c in f["k1"] if "expect_error" not in f["k1"][c].attrs)[0]]["outputs"]
            f.attrs["torch_version"] = "9.9.9"
        report = os.path.join(self.tmp, "drift.md")
        code, out, err = run("drift", self.old, self.new, "--report", report)
        self.assertEqual(code, 1, out + err)
        with open(report) as f:
            md = f.read()
        # Both sides' provenance, the per-file value where the files of a set disagree.
        self.assertRegex(md, r"\| `torch_version` \| `[^`|]+` \| `[^`|]*9\.9\.9[^`|]*` \|")
        changed = md.split("### Changed beyond tolerance, or on one side only", 1)[1].split("###", 1)[0]
        self.assertIn("| max err/tol | abs | rel | worst at |", changed)
        k3 = next(ln for ln in changed.splitlines() if ln.startswith("| `k3` | `outputs/kl` |")).split("|")
        self.assertGreater(float(k3[6]), 1.0)  # err/tol beyond the tolerance
        self.assertAlmostEqual(float(k3[7]), 1e-3, delta=1e-9)  # the planted absolute change
        self.assertEqual(k3[9].strip(), "`%s(%s)`" % (ok[0], ", ".join(["0"] * data.ndim)))
        k1 = next(ln for ln in changed.splitlines() if ln.startswith("| `k1` | `outputs/kl` |")).split("|")
        self.assertEqual(int(k1[5]), 1)  # one case has it on one side only
        self.assertIn("outputs/kl (only in the old set)", md.split("### Fields present on one side only", 1)[1])
        same = md.split("### Unchanged or rounding only", 1)[1]
        self.assertIn("| flips | max err/tol | abs | rel | worst at |", same)

    def test_a_set_of_one_dtype_is_compared_on_that_dtype_alone(self):
        with h5py.File(os.path.join(self.new, "kl.h5"), "r+") as f:
            f.attrs["dtypes"] = "float32"
            n = 0
            for fn in [k for k in f if not k.startswith("_")]:
                for c in [c for c in f[fn] if f[fn][c].attrs["dtype"] == "float64"]:
                    del f[fn][c]
                    n += 1
        for d in (self.old, self.new):
            os.remove(os.path.join(d, "policy_loss.h5"))
        code, out, err = run("drift", self.old, self.new)
        self.assertEqual(code, 0, out + err)
        self.assertIn("%d float64 case(s) of the old set not compared: the new set holds no float64 cases" % n, out)
        self.assertNotIn("only in old set", out)
        self.assertIn("no drift beyond tolerance", out)


if __name__ == "__main__":
    unittest.main()
