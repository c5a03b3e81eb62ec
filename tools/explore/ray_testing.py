"""What the Ray driver's two tests share: where the checkout's verlconf package is, the Ray
venv's interpreter (tools/setup.sh makes it), and the wrapper that kills the worker running
one shard on its first attempt."""

import os
import pwd

RUNFILES = os.environ.get("TEST_SRCDIR")
ROOT = (
    os.path.join(RUNFILES, "verlconf")
    if RUNFILES
    else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
PACKAGE_PARENT = os.path.join(ROOT, "tools", "python")

# For one shard, on its first attempt only (the marker), the Ray worker running it is
# killed (SIGKILL), as the OOM killer or a lost node would, before the real conform runs.
KILLER = """#!/bin/sh
case " $* " in
  *" --shard {index}/"*)
    if [ ! -e '{marker}' ]; then
      : > '{marker}'
      kill -9 $PPID
      exit 137
    fi ;;
esac
exec '{real}' "$@"
"""


def ray_python() -> str:
    """The Ray venv's interpreter: under VERLCONF_TOOLS, else ~/.cache/verlconf-tools."""
    roots = [
        os.environ.get("VERLCONF_TOOLS"),
        os.path.join(os.path.expanduser("~"), ".cache", "verlconf-tools"),
        # Bazel may point HOME at the test's own directory: the user's is where setup.sh wrote.
        os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "verlconf-tools"),
    ]
    for root in filter(None, roots):
        py = os.path.join(root, "ray-venv", "bin", "python")
        if os.access(py, os.X_OK):
            return py
    raise AssertionError(
        "no Ray venv (ray-venv/bin/python) under " + " or ".join(filter(None, roots)) + ": run tools/setup.sh"
    )
