"""What the tests of the conform binary share: the binary under test (the first argument
Bazel passes), the bundled goldens in the runfiles, one run of conform, a table row, and
the bad-input promise (exit 2, exactly one line on stderr, naming what it must)."""

import os
import subprocess
import sys

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else "tools/conform"
RUNFILES = os.environ.get("TEST_SRCDIR", os.getcwd())
GOLDENS = os.path.join(RUNFILES, "verlconf", "fixtures", "verl-0.9.1")
if not os.path.isdir(GOLDENS):
    GOLDENS = os.path.join(os.getcwd(), "fixtures", "verl-0.9.1")


def run(*args, stdout=subprocess.PIPE, timeout=600):
    """(exit status, stdout, stderr) of `conform ARGS`; bytes that are not UTF-8 are kept
    as \\x escapes, so a message that carries them can still be asserted on."""
    p = subprocess.run(
        [CONFORM, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout, errors="backslashreplace"
    )
    return p.returncode, p.stdout or "", p.stderr


def row(out, function):
    """The table row of `function`, split into cells."""
    for line in out.splitlines():
        if line.split()[:1] == [function]:
            return line.split()
    raise AssertionError("no row for %s in\n%s" % (function, out))


def assert_bad_input(test, result, *needles):
    """`result` (from run) is exit 2 with one stderr line holding every needle; the line."""
    code, out, err = result
    test.assertEqual(code, 2, "expected exit 2\n" + out + err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    test.assertEqual(len(lines), 1, err)
    for n in needles:
        test.assertIn(n, lines[0])
    return lines[0]
