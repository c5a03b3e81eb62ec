"""Sharded explore on a real local Ray instance (python -m verlconf.ray_explore, in the Ray
venv tools/setup.sh makes) against conform explore run whole: with a planted fault in the
numpy example, the merged report has the same rows, counts and differences as the
unsharded run; and it still has them when the Ray worker running one shard is killed
(SIGKILL) on that shard's first attempt and Ray reruns it.

argv[1] is the conform binary, as for explore_cli_test. The Ray venv's interpreter is found
where tools/setup.sh puts it (VERLCONF_TOOLS, else ~/.cache/verlconf-tools); this test
fails saying so where it is missing.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from ray_testing import KILLER, PACKAGE_PARENT, ray_python

CONFORM = os.path.abspath(sys.argv.pop(1))
BUG = "k3_no_clamp"
CASES = "200"
SHARDS = "4"
EXPLORE = ("--only", "kl/k3,policy_loss/actor_kl_loss", "--python", sys.executable)


def environment():
    # The fault reaches the workers both ways: the local instance inherits this
    # environment, and the driver forwards VERLCONF_ variables with each task. No Ray
    # authentication token is written into a HOME the test does not own.
    return {**os.environ, "VERLCONF_EXAMPLE_BUG": BUG, "PYTHONPATH": PACKAGE_PARENT, "RAY_AUTH_MODE": "disabled"}


def judged(j):
    """What a run judged, without its timings: every row's counts and each difference's identity."""
    rows = [{k: v for k, v in f.items() if "second" not in k} for f in j["functions"]]
    diffs = sorted(
        {(d["function"], d["dp_ranks"], d["field"], d["kind"], d["cause"]) for d in j["differences"]}, key=repr
    )
    return rows, diffs


class Sharded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = subprocess.run(
            [CONFORM, "explore", "--adapter", "numpy_example", *EXPLORE, "--cases", CASES, "--format", "json"],
            capture_output=True,
            text=True,
            env=environment(),
            timeout=600,
        )
        assert p.returncode == 1, (p.returncode, p.stderr)
        cls.whole = json.loads(p.stdout)

    def setUp(self):
        # Ray's socket paths (TEMP/session_.../sockets/plasma_store) must fit in 107 bytes; a
        # Bazel TEST_TMPDIR leaves no room for them.
        base = os.environ.get("TEST_TMPDIR") or tempfile.gettempdir()
        self.tmp = tempfile.mkdtemp(prefix="vr", dir=base if len(base) < 40 else "/tmp")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def sharded(self, conform):
        argv = [ray_python(), "-m", "verlconf.ray_explore", "--conform", conform, "--num-cpus", "2",
                "--temp-dir", os.path.join(self.tmp, "ray"), "--adapter", "numpy_example", "--cases", CASES,
                "--shards", SHARDS, "--format", "json", "--", *EXPLORE]  # fmt: skip
        p = subprocess.run(argv, capture_output=True, text=True, env=environment(), timeout=600)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr.count(" done in "), int(SHARDS), p.stderr)
        return json.loads(p.stdout), p.stderr

    def test_the_merged_run_is_the_whole_run(self):
        rows, diffs = judged(self.whole)
        self.assertTrue(diffs, self.whole["differences"])
        self.assertTrue(any(d[0] == "kl/k3" for d in diffs), diffs)
        merged, _ = self.sharded(CONFORM)
        self.assertEqual(judged(merged), (rows, diffs))

    def test_a_killed_worker_is_rerun_and_the_run_is_the_same(self):
        marker = os.path.join(self.tmp, "killed")
        killer = os.path.join(self.tmp, "conform")
        with open(killer, "w") as f:
            f.write(KILLER.format(index=1, marker=marker, real=CONFORM))
        os.chmod(killer, os.stat(killer).st_mode | stat.S_IXUSR)
        merged, err = self.sharded(killer)
        self.assertTrue(os.path.exists(marker), err)
        self.assertEqual(judged(merged), judged(self.whole))


if __name__ == "__main__":
    unittest.main()
