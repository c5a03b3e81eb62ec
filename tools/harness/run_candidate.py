#!/usr/bin/env python3
"""Run a candidate framework on the golden inputs and write a candidate set.

    python3 tools/harness/run_candidate.py --adapter ADAPTER --out DIR
        [--goldens fixtures/verl-0.9.1] [--spec SPEC.json | --conform PATH/TO/conform]

ADAPTER is a module path (my_adapter.py) or a bundled adapter name
(fixtures/adapters/NAME_adapter.py). What an adapter is, what it returns, how it
declines a case and how its exceptions are judged: docs/adapter-contract.md. The
capture script runs verl through the same interface, key resolution and contract.

For every case of every golden file the harness copies the inputs and config, calls the
adapter's function where it has one, and writes DIR/<family>.h5 in the fixture schema;
then judge the result with

    bazel run //tools:conform -- check --candidate DIR

Exit status: 0 the candidate set was written; 2 bad usage, an adapter that cannot be
loaded (an ambiguous or unknown key included), a golden the registry does not know, or
an adapter that broke the contract (a field its function does not have, a non-float
value): each problem on its own line naming function, case and field, and nothing
written.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "fixtures"))

import adapter_call  # noqa: E402
import adapter_keys  # noqa: E402
import h5schema  # noqa: E402
import registry_spec  # noqa: E402

sys.path.insert(0, HERE)
from progress import Progress  # noqa: E402


class HarnessError(Exception):
    def __init__(self, problems: List[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


def _has_field(name: str) -> bool:
    return name in {f.name for f in dataclasses.fields(h5schema.CaseRecord)}


def _config(entry: Dict[str, Any], golden_cfg: Dict[str, Any]) -> Dict[str, Any]:
    # Every config key of the function, None where the golden passed None.
    return {k["name"]: golden_cfg.get(k["name"]) for k in entry["config"]}


def run(adapter_spec: str, goldens: str, out_dir: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    """Compute every case; write the files only when no problem was found. Returns the
    counts and the list of adapter errors."""
    entries = registry_spec.by_key(spec)
    try:
        adapter = adapter_keys.load_adapter(adapter_spec, entries)
    except adapter_keys.AdapterLoadError as ex:
        raise HarnessError(ex.problems) from None
    paths = sorted(p for p in os.listdir(goldens) if p.endswith(".h5")) if os.path.isdir(goldens) else []
    if not paths:
        raise HarnessError([f"no .h5 files in {goldens}"])
    counts = {"called": 0, "raised": 0, "declined": 0, "adapter_errors": 0, "not_provided": 0}
    adapter_errors: List[str] = []
    problems: List[str] = []
    files: List[Tuple[str, Dict[str, Any], List[h5schema.CaseRecord]]] = []
    goldens_read = [(p, h5schema.read_fixture_file(os.path.join(goldens, p))) for p in paths]
    progress = Progress(sum(len(g.cases) for _, g in goldens_read))
    try:
        for p, golden in goldens_read:
            family = golden.attrs.get("family")
            records = []
            for (fn, cn), g in sorted(golden.cases.items()):
                entry = entries.get((family, fn))
                if entry is None:
                    raise HarnessError([f"{p}:/{fn}: {family}/{fn} is not in the registry (conform spec --json)"])
                rec = h5schema.CaseRecord(function=fn, name=cn, dtype=g.dtype, seed=g.seed, why=g.why,
                                          cfg=dict(g.cfg), inputs=g.inputs)
                records.append(rec)
                progress.step(f"{fn}/{cn}")
                call = adapter.functions.get((family, fn))
                if call is None:
                    counts["not_provided"] += 1
                    continue
                # Golden projections (where the golden set has them) travel with the case so
                # that conform can compare the candidate's vjps.
                projections = getattr(g, "projections", None) or None
                if projections is not None:
                    if not (_has_field("projections") and _has_field("vjps")):
                        raise HarnessError([f"{p}:/{fn}/{cn}: the golden has projections, which this "
                                            "h5schema cannot write"])
                    rec.projections = dict(projections)
                out = adapter_call.call(call, adapter.path, f"{fn}/{cn}", entry, g.inputs, _config(entry, g.cfg),
                                        g.dtype, projections)
                problems.extend(out.problems)
                if out.kind != "result":
                    rec.projections = {}  # a case without a result carries no fields at all
                if out.kind == "declined":
                    counts["declined"] += 1
                    rec.declined = out.declined
                elif out.kind in ("raised", "adapter"):
                    rec.expect_error = out.error
                    if out.kind == "adapter":
                        counts["adapter_errors"] += 1
                        adapter_errors.append(f"{family}/{fn}/{cn}: {out.error}")
                    else:
                        counts["raised"] += 1
                else:
                    counts["called"] += 1
                    # Only what the adapter returned: a missing field stays missing.
                    rec.outputs, rec.grads, rec.metrics = out.outputs, out.grads, out.metrics
                    if out.vjps:
                        rec.vjps = out.vjps
            root = dict(golden.attrs)
            root["producer"] = adapter.name
            root.update({k: str(v) for k, v in adapter.module.versions().items()})
            files.append((p, root, records))
    finally:
        progress.close()
    if problems:
        raise HarnessError(problems)
    for p, root, records in files:
        h5schema.write_fixture_file(os.path.join(out_dir, p), root, records)
    return {"counts": counts, "adapter_errors": adapter_errors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--adapter", required=True)
    ap.add_argument("--out", required=True, help="directory for the candidate files")
    ap.add_argument("--goldens", default=os.path.join(REPO, "fixtures", "verl-0.9.1"))
    ap.add_argument("--spec", help="a saved `conform spec --json` (default: fixtures/spec.json)")
    ap.add_argument("--conform", help="run this conform binary's `spec --json` instead of reading a saved spec")
    args = ap.parse_args(argv)
    try:
        spec = registry_spec.load_spec(args.spec, args.conform)
        res = run(args.adapter, args.goldens, args.out, spec)
    except registry_spec.SpecError as ex:
        print(f"harness: {ex}", file=sys.stderr)
        return 2
    except HarnessError as ex:
        for line in ex.problems:
            print(f"harness: {line}", file=sys.stderr)
        print(f"harness: {len(ex.problems)} problem(s); nothing written", file=sys.stderr)
        return 2
    c = res["counts"]
    for line in res["adapter_errors"]:
        print(f"harness: adapter error (never matches verl): {line}")
    print(f"harness: {c['called']} cases computed, {c['raised']} raised, {c['declined']} declined, "
          f"{c['adapter_errors']} adapter errors, {c['not_provided']} not provided -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
