"""Reader scaling benchmark: writes kl fixture files holding N cases of one function
(the capture's own writer, verlconf.h5schema, so the group layout is what a capture
produces) and times the C++ reader on each with tools/bench:fixture_read_bench.

    bazel build -c opt //tools/bench:fixture_read_bench
    /usr/bin/python3 tools/bench/fixture_read_bench.py bazel-bin/tools/bench/fixture_read_bench [N ...]

Default N: 5000 10000 20000. Reading time should grow linearly in N; the script prints
the per-case time of each file and the ratio of the largest to the smallest.
"""

import os
import re
import subprocess
import sys
import tempfile

import numpy as np

# An entry script: it finds the verlconf package of this checkout.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
from verlconf import h5schema  # noqa: E402


def write(path, n):
    rng = np.random.default_rng(0)
    logprob = rng.standard_normal((2, 4))
    ref = rng.standard_normal((2, 4))
    cases = [
        h5schema.CaseRecord(
            function="k1",
            name="case%06d_f64" % i,
            dtype="float64",
            seed=i,
            why="reader benchmark",
            cfg={},
            inputs={"logprob": logprob, "ref_logprob": ref},
            outputs={"kl": logprob - ref},
            grads={"logprob": np.ones((2, 4))},
        )
        for i in range(n)
    ]
    h5schema.write_fixture_file(path, {"family": "kl", "verl_version": "bench"}, cases)


def main():
    binary = sys.argv[1]
    sizes = [int(a) for a in sys.argv[2:]] or [5000, 10000, 20000]
    per_case = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = os.path.join(tmp, "kl_%d.h5" % n)
            write(path, n)
            out = subprocess.run([binary, path], capture_output=True, text=True, check=True).stdout
            print("%6d cases, %6.1f MB: %s" % (n, os.path.getsize(path) / 1e6, out.strip().split(": ", 1)[1]))
            per_case[n] = float(re.search(r"\(([0-9.]+) us/case\)", out).group(1))
    lo, hi = min(sizes), max(sizes)
    print(
        "per-case time at %d cases / at %d cases: %.2f (1.0 = linear; %.0f would be quadratic)"
        % (hi, lo, per_case[hi] / per_case[lo], hi / lo)
    )


if __name__ == "__main__":
    main()
