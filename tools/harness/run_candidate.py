#!/usr/bin/env python3
"""Run a candidate framework on the golden inputs and write a candidate set.

    python3 tools/harness/run_candidate.py --adapter ADAPTER --out DIR
        [--goldens fixtures/verl-0.9.1] [--spec SPEC.json | --conform PATH/TO/conform]

ADAPTER is a module path (my_adapter.py) or a bundled adapter name
(fixtures/adapters/NAME_adapter.py). An adapter is the same kind of module the capture
script runs for verl (fixtures/adapters/verl_adapter.py documents the interface):
`name`, `versions()`, and `FUNCTIONS`, mapping registry names to
`fn(inputs, cfg, dtype) -> {"outputs": ..., "grads": ..., "metrics": ...}`.

For every case of every golden file the harness copies the inputs and config, calls the
adapter's function if it has one, and writes DIR/<family>.h5 in the fixture schema:
outputs, grads and metrics where the function returned, `expect_error` where it raised,
nothing where the adapter lacks the function (conform then reports UNSUPPORTED, never
passed). Judge the result with:

    bazel run //tools:conform -- check --candidate DIR

The registry (`conform spec --json`) decides which names exist and which config keys a
function takes; a function name the registry does not know is an error, so a typo in an
adapter cannot silently skip a function.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "fixtures"))

import numpy as np  # noqa: E402

import h5schema  # noqa: E402
from capture import error_string, load_adapter  # noqa: E402


def load_spec(spec_path: Optional[str], conform: Optional[str]) -> Dict[str, Any]:
    if spec_path:
        with open(spec_path) as f:
            return json.load(f)
    conform = conform or os.path.join(REPO, "bazel-bin", "tools", "conform")
    out = subprocess.run([conform, "spec", "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run(adapter_spec: str, goldens: str, out_dir: str, spec: Dict[str, Any]) -> Dict[str, int]:
    adapter, _ = load_adapter(adapter_spec)
    by_key = {(f["family"], f["name"]): f for f in spec["functions"]}
    names = {f["name"] for f in spec["functions"]} | {f"{f['family']}/{f['name']}" for f in spec["functions"]}
    unknown = sorted(set(adapter.FUNCTIONS) - names)
    if unknown:
        raise SystemExit(f"harness: adapter {adapter.name!r} provides {unknown}, which the registry does not know")
    counts = {"called": 0, "raised": 0, "not_provided": 0}
    paths = sorted(p for p in os.listdir(goldens) if p.endswith(".h5"))
    if not paths:
        raise SystemExit(f"harness: no .h5 files in {goldens}")
    for p in paths:
        golden = h5schema.read_fixture_file(os.path.join(goldens, p))
        family = golden.attrs["family"]
        records = []
        for (fn, cn), g in sorted(golden.cases.items()):
            entry = by_key.get((family, fn))
            if entry is None:
                raise SystemExit(f"harness: {p}:/{fn}: not in the registry (conform spec --json)")
            rec = h5schema.CaseRecord(function=fn, name=cn, dtype=g.dtype, seed=g.seed, why=g.why,
                                      cfg=dict(g.cfg), inputs=g.inputs)
            call = adapter.FUNCTIONS.get(f"{family}/{fn}")
            if call is None and sum(n == fn for (_, n) in by_key) == 1:  # a bare name only when unambiguous
                call = adapter.FUNCTIONS.get(fn)
            if call is None:
                counts["not_provided"] += 1
                records.append(rec)
                continue
            # Every config key of the function, None where the golden passed None.
            cfg = {k["name"]: g.cfg.get(k["name"]) for k in entry["config"]}
            try:
                result = call({k: np.array(v, copy=True) for k, v in g.inputs.items()}, cfg, g.dtype)
            except Exception as ex:  # the candidate's error is compared with verl's
                rec.expect_error = error_string(ex)
                counts["raised"] += 1
                records.append(rec)
                continue
            counts["called"] += 1
            want = np.dtype(g.dtype)
            rec.outputs = {k: np.asarray(v).astype(want, copy=False) for k, v in result.get("outputs", {}).items()}
            rec.grads = {k: np.asarray(v).astype(want, copy=False) for k, v in result.get("grads", {}).items()}
            rec.metrics = {k: float(v) for k, v in result.get("metrics", {}).items()}
            records.append(rec)
        root = dict(golden.attrs)
        root["producer"] = adapter.name
        root.update({k: str(v) for k, v in adapter.versions().items()})
        h5schema.write_fixture_file(os.path.join(out_dir, p), root, records)
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--out", required=True, help="directory for the candidate files")
    ap.add_argument("--goldens", default=os.path.join(REPO, "fixtures", "verl-0.9.1"))
    ap.add_argument("--spec", help="a saved `conform spec --json`")
    ap.add_argument("--conform", help="the conform binary (default: bazel-bin/tools/conform)")
    args = ap.parse_args(argv)
    counts = run(args.adapter, args.goldens, args.out, load_spec(args.spec, args.conform))
    print(f"harness: {counts['called']} cases computed, {counts['raised']} raised, "
          f"{counts['not_provided']} not provided -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
