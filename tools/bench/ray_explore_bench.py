#!/usr/bin/env python3
"""How sharded explore scales on Ray (python -m verlconf.ray_explore), with the numpy
example as the candidate.

    bazel build -c opt //tools:conform
    python3 tools/bench/ray_explore_bench.py bazel-bin/tools/conform [--cases 4000] [--shards 8]
        [--ray-python PY] [--python PY] [--cores 2,64]

Runs the driver on a local Ray instance twice, with one worker core (--num-cpus 1) and with
two, on the same cases (the pristine example, every function it provides, --cases per
function cut into --shards shards), and prints:
  (a) cases judged per second of each run, end to end (Ray's start and the merge included),
      and the ratio of the two;
  (b) what sharding costs: each shard's overhead (its task's wall time less the seconds
      explore itself spent judging and shrinking: conform's start, the adapter's load, the
      JSON written), Ray's start and the merge;
  (c) extrapolated, not measured: cases per second per worker core (the one-core run's
      judging rate), and the wall time 10^6 cases per function over every function the
      example provides would take on W cores (--cores), from that rate, the per-shard
      overhead, Ray's start and the merge as measured here.
The driver runs in --ray-python (default: the Ray venv tools/setup.sh makes, else this
interpreter), the adapter in --python. A benchmark, not a test: run it on an otherwise idle
machine and quote its output.
"""

import argparse
import json
import math
import os
import pwd
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_PARENT = os.path.join(HERE, "..", "..", "tools", "python")
PROJECTED_CASES = 10**6  # per function
SHARDS_PER_CORE = 4  # in the projection: a few shards per core, so that no core idles at the end


def default_ray_python():
    for root in (
        os.environ.get("VERLCONF_TOOLS"),
        os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".cache", "verlconf-tools"),
    ):
        if root and os.access(os.path.join(root, "ray-venv", "bin", "python"), os.X_OK):
            return os.path.join(root, "ray-venv", "bin", "python")
    return sys.executable


def drive(a, num_cpus, tmp):
    timings = os.path.join(tmp, f"timings-{num_cpus}.json")
    cmd = [a.ray_python, "-m", "verlconf.ray_explore", "--conform", a.conform, "--num-cpus", str(num_cpus),
           "--temp-dir", os.path.join(tmp, f"ray{num_cpus}"), "--adapter", "numpy_example", "--cases",
           str(a.cases), "--shards", str(a.shards), "--format", "json", "--timings", timings, "--",
           "--python", a.python]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PACKAGE_PARENT), VERLCONF_EXAMPLE_BUG="")
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.monotonic() - start
    if p.returncode not in (0, 1):
        sys.exit(f"ray_explore_bench: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr.strip()}")
    with open(timings) as f:
        return json.loads(p.stdout), json.load(f), wall


def overheads(t):
    return [s["task_seconds"] - s["explore_seconds"] - s["shrink_seconds"] for s in t["shards"]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("conform")
    ap.add_argument("--cases", type=int, default=4000, help="cases per function (default 4000)")
    ap.add_argument("--shards", type=int, default=8, help="shards of each run (default 8)")
    ap.add_argument("--ray-python", default=default_ray_python(), help="the interpreter with Ray")
    ap.add_argument("--python", default="/usr/bin/python3", help="the interpreter the adapter runs in")
    ap.add_argument("--cores", default="2,64", help="worker cores W to extrapolate to (default 2,64)")
    a = ap.parse_args()
    a.conform = os.path.abspath(a.conform)

    with tempfile.TemporaryDirectory(prefix="vrb", dir="/tmp") as tmp:  # short: Ray's socket paths
        runs = {n: drive(a, n, tmp) for n in (1, 2)}

    print(f"(a) throughput, numpy example, {a.cases} cases per function in {a.shards} shards, end to end:")
    rate, warm = {}, {}
    for n, (doc, t, wall) in runs.items():
        cases = doc["totals"]["cases"]
        rate[n] = cases / wall
        # Ray's start is paid once per run however many cases follow: the rate without it too.
        warm[n] = cases / (t["wall_seconds"] - t["ray_start_seconds"])
        print(
            f"  {n} worker core(s): {cases} cases in {wall:.1f} s = {rate[n]:.0f} cases/s, "
            f"{warm[n]:.0f} cases/s after Ray's start ({t['ray_start_seconds']:.1f} s; "
            f"merge {t['merge_seconds']:.2f} s)"
        )
    print(f"  2 cores / 1 core: {rate[2] / rate[1]:.2f}x end to end, {warm[2] / warm[1]:.2f}x after Ray's start")

    print("(b) overhead per shard (task wall - explore - shrink), seconds:")
    for n, (_, t, _) in runs.items():
        o = overheads(t)
        print(
            f"  {n} worker core(s): min {min(o):.2f}, median {statistics.median(o):.2f}, max {max(o):.2f}; "
            f"Ray start {t['ray_start_seconds']:.2f}, merge of {len(t['shards'])} shards {t['merge_seconds']:.2f}"
        )

    doc, t, _ = runs[1]
    judging = sum(s["explore_seconds"] + s["shrink_seconds"] for s in t["shards"])
    per_core = sum(s["cases"] for s in t["shards"]) / judging
    functions = len([f for f in doc["functions"] if not f["dp_ranks"]])
    # dp rows and all: the whole run's cases scaled to PROJECTED_CASES per function.
    total = doc["totals"]["cases"] * PROJECTED_CASES / a.cases
    over = statistics.median(overheads(t))
    print(
        f"(c) extrapolated, not measured (from the 1-core run: {per_core:.0f} cases/s per worker core while judging):"
    )
    print(
        f"  {PROJECTED_CASES:.0e} cases per function x {functions} functions of the numpy example "
        f"(+ their dp rows) = {total:.3g} cases"
    )
    for w in (int(x) for x in a.cores.split(",")):
        shards = SHARDS_PER_CORE * w
        wall = (
            t["ray_start_seconds"]
            + total / (per_core * w)
            + math.ceil(shards / w) * over
            + t["merge_seconds"]  # measured for --shards shards, assumed the same for more
        )
        print(f"  extrapolated, W = {w} cores, {shards} shards: {wall:.0f} s ({wall / 3600:.2f} h)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
