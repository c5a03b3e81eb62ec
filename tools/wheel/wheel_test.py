"""The verlconf wheel as a user meets it: `pip install` into a fresh venv, no Bazel and no
network, then the `verlconf` command, `python -m verlconf` and the pytest plugin on the
numpy example, pristine and with its planted bug (VERLCONF_EXAMPLE_BUG=biased_std).

The venv sees the system's site-packages only for numpy, h5py and pytest (Debian's, from
tools/setup.sh; nothing can be downloaded here). Every command runs with the test's
Bazel variables (runfiles, PYTHONPATH) removed, so that only the installed wheel can
answer. The wheel's file itself: a valid RECORD, the entry points, and a binary that needs
nothing but glibc, no newer than its platform tag says.
"""

import base64
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

import build_wheel

WHEEL_DIR = os.path.abspath(sys.argv.pop(1))
PYTHON = "/usr/bin/python3"  # Debian's: the one with numpy, h5py and pytest (tools/setup.sh)
BAZEL_VARS = ("PYTHONPATH", "RUNFILES_DIR", "RUNFILES_MANIFEST_FILE", "TEST_SRCDIR", "BUILD_WORKSPACE_DIRECTORY")

venv = work = wheel = None


def setUpModule():
    global venv, work, wheel
    (wheel,) = glob.glob(os.path.join(WHEEL_DIR, "*.whl"))
    root = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    venv = os.path.join(root, "venv")
    work = os.path.join(root, "work")  # an empty directory: no checkout to fall back on
    os.mkdir(work)
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", venv], check=True, env=env())
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-deps", "--no-index", "--no-cache-dir"]
    p = subprocess.run(pip + ["--disable-pip-version-check", "-q", wheel], capture_output=True, text=True, env=env())
    if p.returncode != 0:
        raise AssertionError("pip install failed:\n" + p.stdout + p.stderr)


def tearDownModule():
    shutil.rmtree(os.path.dirname(venv), ignore_errors=True)


def env(**extra):
    e = {k: v for k, v in os.environ.items() if k not in BAZEL_VARS and not k.startswith("VERLCONF_")}
    e.update(extra)
    return e


def run(*argv, **extra):
    """(exit status, stdout, stderr) of a command of the venv (bin/NAME), run in `work`."""
    cmd = [os.path.join(venv, "bin", argv[0]), *argv[1:]]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(**extra), cwd=work, timeout=600)
    return p.returncode, p.stdout, p.stderr


@functools.lru_cache(maxsize=None)
def example_report():
    """`verlconf validate --adapter numpy_example --format json`: the counts the table and
    the plugin must agree with, so that a new function or golden case changes no line here."""
    code, out, err = run("verlconf", "validate", "--adapter", "numpy_example", "--format", "json")
    assert code == 0, out + err
    return json.loads(out)


def golden_total():
    """The bundled goldens' case count, from `verlconf list --json`."""
    code, out, err = run("verlconf", "list", "--json")
    assert code == 0, out + err
    return sum(sum(f["golden_cases"].values()) for f in json.loads(out)["functions"])


def row(out, function):
    for line in out.splitlines():
        if line.split()[:1] == [function]:
            return line.split()
    raise AssertionError("no row for %s in\n%s" % (function, out))


class Command(unittest.TestCase):
    def test_validate_the_numpy_example(self):
        code, out, err = run("verlconf", "validate", "--adapter", "numpy_example")
        self.assertEqual(code, 0, out + err)
        # The goldens are the installed ones, beside the binary.
        site = os.path.join(venv, "lib")
        self.assertRegex(out.splitlines()[0], r"^conform validate: adapter numpy_example against " + re.escape(site))
        self.assertIn("/site-packages/verlconf/_data/fixtures/verl-0.9.1 (verl 0.9.1)", out.splitlines()[0])
        self.assertEqual(int(row(out, "grpo")[3]), 28)
        self.assertEqual(int(row(out, "vanilla")[3]), 48)
        t = example_report()["totals"]
        self.assertEqual(t["failed"], 0)
        self.assertGreater(t["cases"], golden_total())  # the dp-invariance rows included
        self.assertIn("\n%d cases: %d passed, 0 failed" % (t["cases"], t["passed"]), out)

    def test_planted_bug_in_another_interpreter_fails_with_a_verlconf_repro(self):
        # Debian's python3 has numpy and h5py but not verlconf: the harness loads the
        # installed package from its files.
        code, out, err = run(
            "verlconf",
            "validate",
            "--adapter",
            "numpy_example",
            "--python",
            PYTHON,
            "--only",
            "grpo,vanilla",
            VERLCONF_EXAMPLE_BUG="biased_std",
        )
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED grpo/", out)
        self.assertIn("  repro: verlconf validate --adapter numpy_example --python " + PYTHON + " --only grpo/", out)
        self.assertGreater(int(row(out, "grpo")[4]), 0)
        self.assertEqual(int(row(out, "vanilla")[4]), 0)
        self.assertEqual(int(row(out, "vanilla")[3]), 48)

    def test_python_dash_m(self):
        code, out, err = run("python", "-m", "verlconf", "--version")
        self.assertEqual(code, 0, out + err)
        self.assertRegex(out, r"^conform (?!unknown)\S+\n")  # the revision travels in the wheel
        self.assertIn("bundled goldens: fixtures/verl-0.9.1", out)
        self.assertIn("verl_version: 0.9.1", out)
        code, out, err = run(
            "python", "-m", "verlconf", "check", "--only", "grpo/g4_binary_8x8_f64", "--format", "json"
        )
        self.assertEqual(code, 0, out + err)
        self.assertIn('"repro":"python -m verlconf check --only grpo/g4_binary_8x8_f64"', out)

    def test_bad_input_is_one_line(self):
        code, out, err = run("verlconf", "validate", "--adapter", "missing_adapter.py")
        self.assertEqual(code, 2, out + err)
        self.assertEqual(err.strip(), "conform: error: --adapter missing_adapter.py: no such file")


class Plugin(unittest.TestCase):
    def pytest(self, *args, **extra):
        return run("python", "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args, **extra)

    def test_pristine_example_all_pass(self):
        code, out, err = self.pytest("--verlconf-adapter=numpy_example")
        self.assertEqual(code, 0, out + err)
        # One item per function and dp row of the report, and "compared": passed where the
        # adapter provides it and some case passed (none failed), skipped otherwise.
        rows = example_report()["functions"]
        passed = 1 + sum(
            1
            for f in rows
            if f["provided"]
            and f["outcomes"]["FAILED"] == 0
            and f["outcomes"]["PASSED"] + f["outcomes"]["BASELINED"] > 0
        )
        self.assertGreater(passed, 1)
        self.assertRegex(out, r"\n=+ %d passed, %d skipped in " % (passed, len(rows) + 1 - passed))
        self.assertIn("PASSED verlconf::compared", out)
        self.assertIn("PASSED verlconf::advantage/grpo", out)
        self.assertIn("PASSED verlconf::advantage/gae", out)
        self.assertIn("SKIPPED [1] verlconf:1: advantage/gdpo: not provided by adapter numpy_example", out)
        t = example_report()["totals"]
        line = (
            "verlconf: verlconf validate --adapter numpy_example --format json: exit 0; %d cases: %d passed, 0 failed"
        )
        self.assertIn(line % (t["cases"], t["passed"]), out)

    def test_planted_bug_fails_the_grpo_item_alone(self):
        only = "--verlconf-only=grpo,vanilla,k1,k3,token-mean"
        code, out, err = self.pytest("--verlconf-adapter=numpy_example", only, VERLCONF_EXAMPLE_BUG="biased_std")
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED verlconf::advantage/grpo", out)
        self.assertIn("PASSED verlconf::policy_loss/vanilla", out)
        self.assertIn("PASSED verlconf::kl/k3", out)
        # The failure is conform's own text.
        self.assertIn("advantage/grpo: 21 of 32 case(s) FAILED", out)
        self.assertIn("  outputs/advantages: FAILED", out)
        self.assertIn("  repro: verlconf validate --adapter numpy_example --only grpo/", out)
        self.assertIn("PASSED verlconf::aggregation/token-mean", out)
        self.assertIn("PASSED verlconf::aggregation/token-mean [dp k=4]", out)
        self.assertRegex(out, r"\n=+ 1 failed, 11 passed in ")

    def test_a_baseline_accepts_the_difference_and_keywords_select(self):
        with open(os.path.join(work, "accepted.txt"), "w") as f:
            f.write("advantage/grpo  outputs/advantages  # population std on purpose\n")
            f.write("advantage/grpo  outputs/returns  # population std on purpose\n")
            f.write("kl/k3  outputs/kl  # an old difference, fixed since\n")
        args = ("--verlconf-adapter=numpy_example", "--verlconf-only=grpo,k3", "--verlconf-baseline=accepted.txt")
        code, out, err = self.pytest(*args, "-k", "grpo", VERLCONF_EXAMPLE_BUG="biased_std")
        self.assertEqual(code, 0, out + err)
        self.assertIn("PASSED verlconf::advantage/grpo", out)
        self.assertNotIn("verlconf::kl/k3", out)  # deselected by -k
        self.assertRegex(out, r"\n=+ 1 passed, 2 deselected in ")
        # The validate ran on k3 all the same: the entry that matches nothing is named.
        self.assertIn("accepted.txt:3: kl/k3 outputs/kl *: no difference of this run matches it", out)

    def test_a_run_that_compares_nothing_fails(self):
        # Every case declined: validate exits 4, and the session is not green.
        with open(os.path.join(work, "declines_adapter.py"), "w") as f:
            f.write("name = 'declines'\ndef versions(): return {}\nFUNCTIONS = {'k1': lambda i, c, d: None}\n")
        code, out, err = self.pytest("--verlconf-adapter=declines_adapter.py", "--verlconf-only=k1")
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED verlconf::compared", out)
        self.assertIn("nothing was compared", out)

    def test_an_explore_budget_guards_generated_cases_too(self):
        args = ("--verlconf-adapter=numpy_example", "--verlconf-only=k3", "--verlconf-explore-cases=60")
        code, out, err = self.pytest(*args)
        self.assertEqual(code, 0, out + err)
        self.assertIn("PASSED verlconf-explore::kl/k3", out)
        code, out, err = self.pytest(*args, VERLCONF_EXAMPLE_BUG="k3_no_clamp")
        self.assertEqual(code, 1, out + err)
        self.assertIn("FAILED verlconf-explore::kl/k3", out)
        self.assertIn("outputs/kl (value, material)", out)
        self.assertIn("verlconf: verlconf explore --cases 60", out)


class WheelFile(unittest.TestCase):
    def test_record_and_entry_points(self):
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
            listed = {}
            for line in z.read(record).decode().splitlines():
                path, digest, size = line.rsplit(",", 2)
                listed[path] = (digest, size)
            self.assertEqual(set(listed), set(names))
            for n in names:
                if n == record:
                    continue
                data = z.read(n)
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual(listed[n], (want, str(len(data))), n)
            entry_points = z.read(record.replace("RECORD", "entry_points.txt")).decode()
            self.assertIn("verlconf = verlconf.command:main", entry_points)
            self.assertIn("[pytest11]\nverlconf = verlconf.pytest_plugin", entry_points)
            self.assertEqual(z.getinfo("verlconf/_data/conform").external_attr >> 16, 0o100755)
            self.assertEqual(len([n for n in names if n.startswith("verlconf/_data/fixtures/verl-0.9.1/")]), 7)

    def test_binary_needs_glibc_alone_no_newer_than_the_tag(self):
        binary = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "verlconf", "_data", "conform"))[0]
        needed, versions = build_wheel.elf_needs(binary)
        self.assertLessEqual(set(needed), build_wheel.GLIBC_LIBS)
        self.assertNotIn("libstdc++.so.6", needed)
        tag = re.search(r"-py3-none-manylinux_(\d+)_(\d+)_x86_64\.whl$", wheel)
        self.assertIsNotNone(tag, wheel)
        newest = max(
            tuple(int(x) for x in re.match(r"GLIBC_(\d+)\.(\d+)", v).groups())
            for v in versions
            if v.startswith("GLIBC_")
        )
        self.assertEqual(newest, (int(tag.group(1)), int(tag.group(2))))
        # Debian 12's glibc is 2.36: the wheel installs there.
        self.assertLessEqual(newest, (2, 36))


if __name__ == "__main__":
    unittest.main()
