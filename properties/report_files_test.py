"""The files conform writes (--junit, --report) and its stdout: only a regular file or a
new name is written, never an input (goldens, candidate, adapter, interpreter, baseline,
the --out directory's files), never through a planted link; nothing is removed or
replaced before the run has its result, so a run that exits 2 leaves the previous file as
it was; a table that did not reach stdout is exit 2.
Each test asserts the exit code and the one line on stderr."""

import hashlib
import os
import sys
import shutil
import stat
import tempfile
import unittest

from cli_support import GOLDENS, assert_bad_input, run  # noqa: E402


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class ReportFiles(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_k3(self, *extra):
        return run("check", "--against", GOLDENS, "--only", "k3", *extra)

    def assertBadInput(self, result, *needles):
        return assert_bad_input(self, result, *needles)

    def assertNoTemporaries(self, directory):
        left = [n for n in os.listdir(directory) if "conform-tmp" in n or ".tmp." in n]
        self.assertEqual(left, [], "temporary files left behind")

    # --- what may be written -------------------------------------------------------
    def test_non_regular_targets_are_refused(self):
        fifo = os.path.join(self.tmp, "fifo.xml")
        os.mkfifo(fifo)
        sub = os.path.join(self.tmp, "adir.md")
        os.mkdir(sub)
        to_device = os.path.join(self.tmp, "devnull.xml")
        os.symlink("/dev/null", to_device)
        dangling = os.path.join(self.tmp, "dangling.md")
        os.symlink(os.path.join(self.tmp, "nothing", "here"), dangling)
        for option, target, what in (
            ("--junit", fifo, "a FIFO"),
            ("--report", sub, "a directory"),
            ("--junit", to_device, "a symbolic link to a character device"),
            ("--report", dangling, "a symbolic link to nothing"),
        ):
            # A FIFO would block a writer forever: the timeout is part of the assertion.
            self.assertBadInput(
                self.check_k3(
                    option,
                    target,
                ),
                option,
                target,
                what,
            )
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertTrue(os.path.isdir(sub))
        self.assertTrue(stat.S_ISCHR(os.stat("/dev/null").st_mode))
        self.assertTrue(os.path.islink(dangling) and not os.path.exists(dangling))

    def test_a_symlink_to_a_regular_file_is_replaced_not_followed(self):
        victim = os.path.join(self.tmp, "victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        link = os.path.join(self.tmp, "out.xml")
        os.symlink(victim, link)
        code, out, err = self.check_k3("--junit", link)
        self.assertEqual(code, 0, out + err)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertFalse(os.path.islink(link))
        with open(link) as f:
            self.assertIn('<testsuite name="conform.oracle.k3"', f.read())
        self.assertNoTemporaries(self.tmp)

    def test_an_input_is_never_overwritten(self):
        goldens = os.path.join(self.tmp, "goldens")
        shutil.copytree(GOLDENS, goldens)
        kl = os.path.join(goldens, "kl.h5")
        before = digest(kl)
        self.assertBadInput(
            run("check", "--against", goldens, "--only", "k3", "--report", kl),
            "--report",
            kl,
            "the same file as the input",
        )
        # The same inode under another name (a hard link to the candidate).
        cand = os.path.join(self.tmp, "cand.h5")
        shutil.copyfile(kl, cand)
        alias = os.path.join(self.tmp, "alias.xml")
        os.link(cand, alias)
        self.assertBadInput(
            run("check", "--against", goldens, "--candidate", cand, "--junit", alias),
            alias,
            "the same file as the input " + cand,
        )
        self.assertBadInput(run("drift", goldens, GOLDENS, "--report", kl), kl, "the same file as the input")
        self.assertEqual(digest(kl), before)
        self.assertEqual(digest(cand), before)

    def test_two_outputs_naming_one_file(self):
        out = os.path.join(self.tmp, "both")
        self.assertBadInput(self.check_k3("--junit", out, "--report", out), out, "another output of this run")

    def test_missing_directory(self):
        bad = os.path.join(self.tmp, "no", "such", "dir", "out.md")
        self.assertBadInput(self.check_k3("--report", bad), bad, "does not exist")

    # --- nothing removed before the run has its result -----------------------------
    def test_a_run_that_exits_2_leaves_the_previous_file_as_it_was(self):
        junit = os.path.join(self.tmp, "junit.xml")
        report = os.path.join(self.tmp, "report.md")
        code, out, err = self.check_k3("--junit", junit, "--report", report)
        self.assertEqual(code, 0, out + err)
        before = (digest(junit), digest(report))
        # Bad input found during the run (an unknown --only name) and a usage error: the
        # exit status says the run failed; the user's files are not touched.
        self.assertBadInput(self.check_k3("--junit", junit, "--report", report, "--only", "k9"), "k9")
        self.assertEqual((digest(junit), digest(report)), before)
        self.assertBadInput(self.check_k3("--junit", junit, "--bogus"), "--bogus")
        self.assertEqual(digest(junit), before[0])
        drift = os.path.join(self.tmp, "drift.md")
        code, out, err = run("drift", GOLDENS, GOLDENS, "--report", drift)
        self.assertEqual(code, 0, out + err)
        kept = digest(drift)
        self.assertBadInput(run("drift", GOLDENS, os.path.join(self.tmp, "nowhere"), "--report", drift), "nowhere")
        self.assertEqual(digest(drift), kept)
        # An option the command does not take is refused before any output is looked at.
        self.assertBadInput(run("drift", GOLDENS, GOLDENS, "--write-baseline", drift), "--write-baseline")
        self.assertBadInput(run("list", "--junit", drift), "--junit")
        self.assertEqual(digest(drift), kept)
        self.assertNoTemporaries(self.tmp)

    def test_an_output_naming_an_input_of_the_run_is_refused_untouched(self):
        # The adapter file and the interpreter are inputs of validate and explore.
        adapter = os.path.join(self.tmp, "my_adapter.py")
        with open(adapter, "w") as f:
            f.write("FUNCTIONS = {}\n")
        python = os.path.join(self.tmp, "python3")
        shutil.copyfile(sys.executable, python)
        os.chmod(python, 0o755)
        kept = (digest(adapter), digest(python))
        for cmd in (
            ["validate", "--adapter", adapter, "--python", python],
            ["explore", "--adapter", adapter, "--python", python, "--cases", "1"],
        ):
            for option in ("--report", "--junit") if cmd[0] == "validate" else ("--report",):
                for target in (adapter, python):
                    self.assertBadInput(run(*cmd, option, target), "the same file as the input")
        self.assertEqual((digest(adapter), digest(python)), kept)
        # explore --out: a report inside it, a golden set as it, a parent that does not exist.
        goldens = os.path.join(self.tmp, "g")
        shutil.copytree(GOLDENS, goldens)
        explore = ["explore", "--impl", "cuda-host", "--only", "k3", "--cases", "1"]
        self.assertBadInput(run(*explore, "--out", goldens), "holds .h5 files")
        out = os.path.join(self.tmp, "out")
        os.mkdir(out)
        self.assertBadInput(run(*explore, "--out", out, "--report", os.path.join(out, "explore.json")), "inside --out")
        self.assertBadInput(run(*explore, "--out", os.path.join(self.tmp, "no", "out")), "does not exist")
        self.assertEqual(os.listdir(out), [])
        self.assertNoTemporaries(self.tmp)

    # --- stdout ---------------------------------------------------------------------
    @unittest.skipUnless(os.path.exists("/dev/full"), "needs /dev/full")
    def test_a_table_that_cannot_be_written_is_exit_2(self):
        junit = os.path.join(self.tmp, "junit.xml")
        with open("/dev/full", "w") as full:
            for args in (
                ["check", "--against", GOLDENS, "--only", "k3", "--junit", junit],
                ["spec", "--json"],
                ["list", "--against", GOLDENS],
                ["drift", GOLDENS, GOLDENS],
            ):
                self.assertBadInput(run(*args, stdout=full), "cannot write the results to standard output")
        self.assertFalse(os.path.exists(junit))  # no report for a table nobody saw


if __name__ == "__main__":
    unittest.main()
