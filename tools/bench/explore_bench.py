#!/usr/bin/env python3
"""How fast `conform explore` judges and shrinks, with the numpy example as the candidate.

    bazel build -c opt //tools:conform
    python3 tools/bench/explore_bench.py bazel-bin/tools/conform [--python PY] [--cases N]

Prints, for --jobs 1 and 2, the end-to-end rate over the example's 12 functions (generated
cases of every shape the explorer draws, 80% of them at most 8 x 24, each one generated,
sent to the adapter's process, computed there, judged against the live oracle), and, for
every planted fault of the example (VERLCONF_EXAMPLE_BUG), the seconds its slowest
difference took to shrink. Rates are the explorer's own count of cases over the time
spent exploring (startup and shrinking excluded), as its JSON report gives them. A
benchmark, not a test: run it on an otherwise idle machine and quote its output.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "adapters"))


def explore(conform, python, *args, bug=""):
    env = dict(os.environ, VERLCONF_EXAMPLE_BUG=bug)
    cmd = [conform, "explore", "--adapter", "numpy_example", "--python", python, "--format", "json", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if p.returncode not in (0, 1):
        sys.exit(f"explore_bench: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("conform")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cases", type=int, default=2000, help="cases per function (default 2000)")
    a = ap.parse_args()
    import numpy_example_impl  # noqa: E402 - needs numpy, as the example does

    print("judging, pristine example:")
    for jobs in (1, 2):
        t = explore(a.conform, a.python, "--cases", str(a.cases), "--jobs", str(jobs))["totals"]
        print(
            f"  --jobs {jobs}: {t['cases']} cases in {t['explore_seconds']:.2f} s = "
            f"{t['cases'] / t['explore_seconds']:.0f} cases/s, {t['failed']} failed"
        )
    print("shrinking, each planted fault (200 cases per function explored first):")
    for bug in numpy_example_impl.BUGS:
        j = explore(a.conform, a.python, "--cases", "200", bug=bug)
        worst = max(j["differences"], key=lambda d: d["minimal"]["shrink_seconds"])
        m = worst["minimal"]
        print(
            f"  {bug:28s} {len(j['differences'])} difference(s), slowest {m['shrink_seconds']:.3f} s "
            f"({worst['function']} {worst['field']}: {m['rows']} x {m['tokens']}, {m['trials']} trials)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
