"""The Ray driver of sharded explore (verlconf.ray_explore) on its own, with a fake conform
that emulates `explore --shard I/N` and `explore merge`: the command lines it builds, the
progress line, its usage errors, a shard's usage error stopping the run with that shard's
message, Ray missing, and, through a real local Ray instance (the venv tools/setup.sh makes),
every shard merged, the options passed through, and a shard whose worker is killed retried.

The Ray instance runs in the interpreter of that venv, found where tools/setup.sh puts it
(VERLCONF_TOOLS, else ~/.cache/verlconf-tools); this test fails saying so where it is
missing. `explore_cli_test`-style argv: none.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from ray_testing import KILLER, PACKAGE_PARENT, ray_python

sys.path.insert(0, PACKAGE_PARENT)
from verlconf import ray_explore  # noqa: E402

# The fake: each shard reports its share of the cases, a difference in every odd shard, and
# the command line and VERLCONF_ variables it was given; the merge sums the totals and lists
# what it was handed. FAKE_FAIL=I makes shard I a usage error.
FAKE_CONFORM = r"""
import json, os, sys
argv = sys.argv[1:]
def opt(name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default
if argv[:2] == ["explore", "merge"]:
    files = [a for a in argv[2:] if a.endswith(".json")]
    docs = [json.load(open(f)) for f in files]
    totals = {k: sum(d["totals"][k] for d in docs) for k in ("cases", "differences")}
    doc = {"merged": sorted(d["shard"]["index"] for d in docs), "totals": totals, "argv": argv,
           "shard_argvs": [d["run"]["argv"] for d in docs], "shard_env": [d["run"]["env"] for d in docs]}
    print(json.dumps(doc) if opt("--format") == "json" else f"merged {len(docs)} shards")
    sys.exit(1 if totals["differences"] else 0)
index, count = map(int, opt("--shard").split("/"))
if os.environ.get("FAKE_FAIL") == str(index):
    print(f"conform explore: --only vanila: no such function (shard {index})", file=sys.stderr)
    sys.exit(2)
cases = int(opt("--cases"))
mine = cases // count + (index < cases % count)
env = {k: v for k, v in os.environ.items() if k.startswith("VERLCONF_")}
doc = {"schema": "verlconf.explore", "shard": {"index": index, "count": count},
       "run": {"argv": argv, "env": env},
       "totals": {"cases": mine, "differences": index % 2, "explore_seconds": 0.01, "shrink_seconds": 0.0}}
print(json.dumps(doc))
sys.exit(index % 2)
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def short_tmp():
    # Ray's socket paths (TEMP/session_.../sockets/plasma_store) must fit in 107 bytes; a
    # Bazel TEST_TMPDIR does not leave room for them.
    base = os.environ.get("TEST_TMPDIR") or tempfile.gettempdir()
    return tempfile.mkdtemp(prefix="vr", dir=base if len(base) < 40 else "/tmp")


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = short_tmp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.fake = executable(os.path.join(self.tmp, "conform"), f"#!{sys.executable}\n{FAKE_CONFORM}")

    def driver(self, *args, python=None, env=None):
        # No authentication token written into a HOME the test does not own.
        e = {**os.environ, "PYTHONPATH": PACKAGE_PARENT, "RAY_AUTH_MODE": "disabled", **(env or {})}
        cmd = [python or ray_python(), "-m", "verlconf.ray_explore", *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=300)

    def local(self, *args):
        return ("--num-cpus", "2", "--temp-dir", os.path.join(self.tmp, "ray"), *args)


class CommandLines(unittest.TestCase):
    def test_a_shard_gets_the_driver_options_the_pass_through_and_its_own_shard(self):
        a = ray_explore.parse(
            ["--adapter", "numpy_example", "--cases", "40", "--shards", "8", "--seed", "3", "--out", "/o", "--",
             "--only", "kl", "--python", "/usr/bin/python3"]
        )  # fmt: skip
        self.assertEqual(
            ray_explore.shard_argv(a, 5),
            ["explore", "--adapter", "numpy_example", "--cases", "40", "--seed", "3", "--only", "kl", "--python",
             "/usr/bin/python3", "--shard", "5/8", "--format", "json"],
        )  # fmt: skip
        self.assertEqual(ray_explore.merge_argv(a, ["x.json"]), ["explore", "merge", "--out", "/o", "--format", "text",
                                                                   "x.json"])  # fmt: skip

    def test_the_differential_mode_passes_through(self):
        a = ray_explore.parse(["--cases", "10", "--shards", "2", "--", "--reference", "verl", "--python", "/p"])
        self.assertEqual(ray_explore.shard_argv(a, 0)[:7], ["explore", "--cases", "10", "--seed", "0", "--reference",
                                                            "verl"])  # fmt: skip

    def test_the_progress_line(self):
        line = ray_explore.progress_line(3, 8, 4.07, {"cases": 1250, "differences": 2}, 5)
        self.assertEqual(line, "shard 3/8 done in 4.1 s: 1250 cases, 2 differences (5 of 8)")

    def test_usage_errors(self):
        for argv, needle in (
            (["--adapter", "a", "--cases", "5"], "--shards"),
            (["--adapter", "a", "--shards", "0"], "--shards 0"),
            (["--adapter", "a", "--shards", "2", "--", "--out", "x"], "--out after `--`"),
            (["--adapter", "a", "--shards", "2", "--", "--shard=1/2"], "--shard after `--`"),
            (["--shards", "2"], "--adapter or --impl"),
            (["--adapter", "a", "--shards", "2", "--address", "auto", "--num-cpus", "2"], "--num-cpus"),
        ):
            with self.subTest(argv=argv):
                try:
                    with open(os.devnull, "w") as devnull:
                        stderr, sys.stderr = sys.stderr, devnull
                        try:
                            ray_explore.parse(argv)
                        finally:
                            sys.stderr = stderr
                except ray_explore.Usage as e:
                    self.assertIn(needle, str(e))
                except SystemExit as e:  # argparse's own
                    self.assertEqual(e.code, 2)
                else:
                    self.fail(argv)


class WithoutRay(Tmp):
    def test_ray_missing_is_exit_2_with_the_extra_to_install(self):
        # A `ray` that fails to import, whatever this machine has installed.
        os.makedirs(os.path.join(self.tmp, "noray", "ray"))
        with open(os.path.join(self.tmp, "noray", "ray", "__init__.py"), "w") as f:
            f.write("raise ImportError('no ray here')\n")
        p = self.driver(
            "--conform", self.fake, "--adapter", "numpy_example", "--shards", "2", python=sys.executable,
            env={"PYTHONPATH": os.path.join(self.tmp, "noray") + os.pathsep + PACKAGE_PARENT},
        )  # fmt: skip
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("pip install 'verlconf[ray]'", p.stderr)

    def test_a_conform_that_is_not_there(self):
        p = self.driver("--conform", os.path.join(self.tmp, "nothing"), "--adapter", "a", "--shards", "2",
                        python=sys.executable)  # fmt: skip
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("not an executable file", p.stderr)


class OnRay(Tmp):
    def test_every_shard_merged_with_the_options_passed_through(self):
        out = os.path.join(self.tmp, "out")
        p = self.driver(
            *self.local("--conform", self.fake, "--adapter", "numpy_example", "--cases", "10", "--shards", "4",
                        "--seed", "7", "--out", out, "--report", "r.md", "--junit", "j.xml", "--format", "json",
                        "--timings", os.path.join(self.tmp, "t.json"),
                        "--", "--only", "kl", "--dp-cases", "3"),
            env={"VERLCONF_EXAMPLE_BUG": "k3_no_clamp"},
        )  # fmt: skip
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["merged"], [0, 1, 2, 3])
        self.assertEqual(doc["totals"], {"cases": 10, "differences": 2})
        self.assertEqual(doc["argv"][:8], ["explore", "merge", "--out", out, "--report", "r.md", "--junit", "j.xml"])
        self.assertEqual(doc["argv"][8:10], ["--format", "json"])
        for argv in doc["shard_argvs"]:
            self.assertEqual(argv[argv.index("--only") :][:4], ["--only", "kl", "--dp-cases", "3"])
            self.assertEqual(argv[argv.index("--seed") + 1], "7")
        for env in doc["shard_env"]:
            self.assertEqual(env.get("VERLCONF_EXAMPLE_BUG"), "k3_no_clamp")
        progress = [ln for ln in p.stderr.splitlines() if ln.startswith("shard ")]
        self.assertEqual(len(progress), 4, p.stderr)
        for line in progress:
            self.assertRegex(line, r"^shard [0-3]/4 done in \d+\.\d s: [23] cases, [01] differences \([1-4] of 4\)$")
        self.assertRegex(p.stderr, r"4 shards in [\d.]+ s wall \(Ray start [\d.]+ s, merge [\d.]+ s\)")
        self.assertIn("per-shard overhead (task wall - explore - shrink): min", p.stderr)
        with open(os.path.join(self.tmp, "t.json")) as f:
            timings = json.load(f)
        self.assertEqual([t["index"] for t in timings["shards"]], [0, 1, 2, 3])
        self.assertEqual(sum(t["cases"] for t in timings["shards"]), 10)
        self.assertGreater(timings["wall_seconds"], timings["ray_start_seconds"])

    def test_a_shard_usage_error_stops_the_run_with_its_message(self):
        p = self.driver(*self.local("--conform", self.fake, "--adapter", "a", "--shards", "3"), env={"FAKE_FAIL": "1"})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("shard 1/3: conform explore --adapter a", p.stderr)
        self.assertIn("--only vanila: no such function (shard 1)", p.stderr)
        self.assertNotIn("merged", p.stdout)

    def test_a_killed_worker_is_retried(self):
        marker = os.path.join(self.tmp, "killed")
        killer = executable(os.path.join(self.tmp, "killer"), KILLER.format(index=2, marker=marker, real=self.fake))
        p = self.driver(
            *self.local("--conform", killer, "--adapter", "a", "--cases", "8", "--shards", "4", "--format", "json")
        )
        self.assertTrue(os.path.exists(marker), p.stderr)
        self.assertEqual(p.returncode, 1, p.stderr + p.stdout)
        self.assertEqual(json.loads(p.stdout)["merged"], [0, 1, 2, 3])
        self.assertEqual(len(re.findall(r"(?m)^shard 2/4 done", p.stderr)), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
