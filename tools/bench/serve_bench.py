#!/usr/bin/env python3
"""Round trips per second through the adapter server (verlconf.serve), over a pipe.

    /usr/bin/python3 tools/bench/serve_bench.py [--seconds 5] [--adapter numpy_example]
        [--rows 8] [--tokens 16]

Alternates a GRPO and a vanilla PPO request of ROWS x TOKENS float64 inputs, one
request in flight at a time (as one `conform explore` worker drives its server), and
prints the rate of each and of the mix. The requests are encoded once: what is timed is
the pipe, the server's decoding, the adapter call through adapter_call and the encoded
answer, not this client's JSON. A figure to compare, not a test: it depends on the machine.
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "harness", "serve_adapter.py")


def enc(a):
    a = np.asarray(a)
    return {"dtype": a.dtype.name, "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode("ascii")}


def requests(rows, tokens):
    rng = np.random.default_rng(0)
    shape = (rows, tokens)
    mask = (rng.random(shape) < 0.9).astype(np.float64)
    grpo = {
        "function": "advantage/grpo",
        "case": "bench",
        "dtype": "float64",
        "inputs": {
            "token_level_rewards": enc(rng.normal(size=shape)),
            "response_mask": enc(mask),
            "index": enc(np.arange(rows, dtype=np.int64) // 4),
        },
        "config": {"epsilon": 1e-6, "norm_adv_by_std_in_grpo": True},
    }
    vanilla = {
        "function": "policy_loss/vanilla",
        "case": "bench",
        "dtype": "float64",
        "inputs": {
            "old_log_prob": enc(rng.normal(size=shape) * 0.1),
            "log_prob": enc(rng.normal(size=shape) * 0.1),
            "advantages": enc(rng.normal(size=shape)),
            "response_mask": enc(mask),
        },
        "config": {"clip_ratio": 0.2, "clip_ratio_c": 3.0, "loss_agg_mode": "token-mean"},
    }
    # The id goes first so that it can be spliced into the pre-encoded rest.
    return [json.dumps(r, separators=(",", ":"))[1:].encode("ascii") for r in (grpo, vanilla)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--adapter", default="numpy_example")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16)
    args = ap.parse_args()
    p = subprocess.Popen(
        [sys.executable, SERVER, "--adapter", args.adapter], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    hello = json.loads(p.stdout.readline())
    if not hello.get("ok"):
        sys.exit(f"serve_bench: the server did not start: {hello}")
    bodies = requests(args.rows, args.tokens)
    times = [0.0, 0.0]
    counts = [0, 0]
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        which = n % 2
        t0 = time.perf_counter()
        p.stdin.write(b'{"id":%d,' % n + bodies[which] + b"\n")
        p.stdin.flush()
        line = p.stdout.readline()
        times[which] += time.perf_counter() - t0
        counts[which] += 1
        if n == 0 or n == 1:
            r = json.loads(line)
            if r.get("kind") != "result" or r.get("problems"):
                sys.exit(f"serve_bench: unexpected answer: {line[:300]!r}")
        n += 1
    total = time.perf_counter() - start
    p.stdin.close()
    p.wait()
    print(f"serve_bench: adapter {hello['adapter']}, {args.rows}x{args.tokens} float64, {total:.1f} s")
    for name, t, c in zip(("grpo", "vanilla"), times, counts):
        print(f"  {name:8s} {c:7d} round trips  {c / t:8.0f}/s  {1e6 * t / c:7.1f} us each")
    print(f"  {'mix':8s} {n:7d} round trips  {n / total:8.0f}/s")


if __name__ == "__main__":
    main()
