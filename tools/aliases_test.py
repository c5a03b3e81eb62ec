#!/usr/bin/env python3
"""The paths a user types keep working where their folders moved.

fixtures/adapters and fixtures/python are symbolic links (tracked by git as links) to
tools/adapters and tools/python; fixtures/capture.py and tools/setup_capture.sh are entry
scripts that run the capture from its folder. For each alias: it is what it claims to be,
and a command written against the old path does what it did (the adapter loads through it
and the harness runs a function of it; the package, the contract module and the pytest
plugin import from it; the capture's entry answers --help). Runs in the source tree
(tools/BUILD.bazel: local), from the repository root when run directly.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import unittest


def repo_root() -> str:
    # Under Bazel this file is a link from the runfiles into the checkout.
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


REPO = repo_root()
PYTHON = "/usr/bin/python3"  # Debian's: numpy and h5py, as the harness needs
# alias -> what it stands for
LINKS = {"fixtures/adapters": "tools/adapters", "fixtures/python": "tools/python"}


def run(args, **kw):
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300, **kw)


class Aliases(unittest.TestCase):
    def test_links_are_tracked_links_to_the_moved_folders(self):
        for alias, target in LINKS.items():
            full = os.path.join(REPO, alias)
            self.assertTrue(os.path.islink(full), f"{alias} is not a symbolic link")
            self.assertEqual(os.path.realpath(full), os.path.join(REPO, target), alias)
            staged = run(["git", "ls-files", "-s", alias]).stdout.split()
            if staged:  # a checkout; an export without .git has no index to ask
                self.assertEqual(staged[0], "120000", f"{alias} is not tracked as a link")

    def test_package_imports_through_the_old_pythonpath(self):
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "fixtures", "python"))
        code = (
            "import verlconf, verlconf_harness, verlconf.run_candidate, verlconf.serve\n"
            "from verlconf import layout\n"
            "print(layout.REPO); print(layout.ADAPTERS); print(layout.FIXTURES)\n"
        )
        p = run([PYTHON, "-c", code], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(
            p.stdout.split("\n")[:3],
            [REPO, os.path.join(REPO, "tools", "adapters"), os.path.join(REPO, "fixtures")],
        )

    def test_harness_runs_an_adapter_named_by_its_old_path(self):
        with tempfile.TemporaryDirectory() as out:
            p = run(
                [
                    PYTHON,
                    "tools/harness/run_candidate.py",
                    "--adapter",
                    "fixtures/adapters/numpy_example_adapter.py",
                    "--only",
                    "kl/low_var_kl",
                    "--out",
                    out,
                ]
            )
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["kl.h5"], p.stdout)

    def test_capture_entry_runs_from_its_old_path(self):
        for entry in (["fixtures/capture.py"], ["fixtures/capture/capture.py"]):
            p = run([PYTHON, *entry, "--help"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("--out", p.stdout)

    def test_setup_capture_entry_points_at_the_real_script(self):
        with open(os.path.join(REPO, "tools", "setup_capture.sh"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("../fixtures/capture/setup_capture.sh", text)
        self.assertTrue(os.path.isfile(os.path.join(REPO, "fixtures", "capture", "setup_capture.sh")))


if __name__ == "__main__":
    unittest.main()
