#!/usr/bin/env python3
"""Write a peer framework's conformance report, or the cross-framework matrix.

    make_report.py report --name NAME --adapter A --requirements R --causes C.tsv
        --inventory I.tsv --unjudged U.tsv --versions V.json --freeze PIP_FREEZE --python VERSION
        --explore docs/peers/explore/NAME.tar.xz [--sharding S.md] --out docs/peers/NAME.md SET=CHECK.json ...
    make_report.py readme --out docs/peers/README.md
    make_report.py control --requirements R --versions V.json --out tools/peers/control.json CHECK.json ...

`report` reads `conform check --format json` results (schema verlconf.check), one or more
per golden set (SET=A.json,B.json: one per family file), the golden files conform refused
(U.tsv: SET<TAB>FAMILY<TAB>reason; allowed only outside the primary set and for families the
adapter provides nothing of), `conform explore`'s run with the framework (explore.json in the archive,
its shrunk cases and the framework's results on them beside it), and the causes file
(tools/peers/demos.py: `family/function<TAB>CASE ...<TAB>cause`, the cause naming the
framework's file and function, read in its installed source, and the cases naming explore's
minimal cases that show it). A function that differs (on a golden set or in explore) without
a stated cause, a cause for a function that does not differ, a case no difference of the run,
or a difference no cause names is an error (exit 1): the report never shows an unexplained
difference. S.md says how the framework's trainer computes each rank's normaliser (read in its
source); it is required when explore has data-parallel rows.
The inventory (tools/peers/inventory/NAME.tsv: `family/function<TAB>counterpart<TAB>note`, one
line per registry function) says where each function's counterpart lives in the framework's
source, or why there is none; it must list every function the checks list, name a
counterpart for every function the adapter provides, and list no function the registry
(fixtures/spec.json) lacks (exit 1 otherwise; so must the checks). A registry function the
checks do not list (results of a run from before it was added) gets "not yet checked" rows
in the verdict and inventory tables, as does a registry function the inventory lacks.
`readme` rebuilds the matrix from the committed reports (peer_report.parse; a report with no
verdict for a function another framework provides shows "not yet checked"), with the control
run's summary (tools/peers/control.json: verl itself under the peers' torch, written by
`control` from tools/peers/control.sh's checks).
Standard library only."""

from __future__ import annotations

import argparse
import ast
import collections
import datetime
import glob
import hashlib
import json
import os
import re
import sys
from typing import Dict, List, Tuple

import demos  # beside this script, which is run as one (its folder is first on sys.path)
import peer_report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(REPO, "fixtures", "spec.json")
TITLES = {
    "openrlhf": "OpenRLHF",
    "skyrl": "SkyRL",
    "areal": "AReaL",
    "trl": "TRL",
    "torchrl": "TorchRL",
    "liger": "Liger-Kernel",
}


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_check(path: str) -> Dict:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != "verlconf.check" or doc.get("schema_version") != 1:
        raise SystemExit(f"{path}: not a verlconf.check version 1 result")
    return doc


def verdict(fn: Dict) -> Tuple[str, str]:
    o = fn["outcomes"]
    n, passed, failed = fn["cases_total"], o.get("PASSED", 0), o.get("FAILED", 0)
    mistrusted, declined = o.get("MISTRUSTED", 0), o.get("UNSUPPORTED", 0)
    rest = n - passed - failed - mistrusted - declined
    # Compared and declined counts in every cell: a "conforms" with half its cases declined says so.
    counts = f"{passed} passed, {mistrusted} mistrusted, {declined} declined" + (f", {rest} other" if rest else "")
    if failed:
        return "differs", f"differs ({failed} failed, {counts} of {n})"
    if fn["provided"] and passed:
        return "conforms", f"conforms ({counts} of {n})"
    return "not provided", "not provided" if not fn["provided"] else f"not provided (0 compared of {n})"


def qualified(cell: str, qualifier: str) -> str:
    """A "differs (...)" cell with what all of the function's causes are (demos.CLASSES)."""
    if not qualifier or not cell.startswith("differs ("):
        return cell
    return f"differs ({qualifier}; " + cell[len("differs (") :]


def newest_release(package: str) -> str:
    """The newest release of `package` on PyPI (its JSON API, whatever Python it requires)."""
    import urllib.request

    with urllib.request.urlopen(f"https://pypi.org/pypi/{package}/json", timeout=30) as r:
        return str(json.load(r)["info"]["version"])


def release_row(pins: List[str], requirements: str) -> str:
    """The provenance row that says which release the report covers against the newest one; a
    report of an older release must say why, in a '# newest: ...' line of its requirements."""
    package, _, pinned = pins[0].partition("==")
    try:
        newest = newest_release(package)
    except OSError as ex:
        raise SystemExit(f"could not ask PyPI for {package}'s newest release ({ex})") from None
    if newest == pinned:
        return f"| newest release | `{package}` {newest} on PyPI at this run: the one covered |"
    with open(os.path.join(REPO, requirements), encoding="utf-8") as f:
        why = [ln[len("# newest:") :].strip() for ln in f if ln.startswith("# newest:")]
    if not why:
        raise SystemExit(
            f"{requirements}: {package} {pinned} is pinned, PyPI's newest is {newest}: cover it or say why "
            "not in a '# newest: ...' line"
        )
    return f"| newest release | `{package}` {newest} on PyPI at this run, not covered: {' '.join(why)} |"


def ratio(x) -> str:
    if x is None:
        return "-"
    return x if isinstance(x, str) else f"{x:.3g}"


def read_inventory(path: str) -> Dict[str, Tuple[str, str]]:
    try:
        return peer_report.read_inventory(path)
    except peer_report.ReportError as ex:
        raise SystemExit(str(ex)) from None


def read_unjudged(path: str) -> List[Tuple[str, str, str]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise SystemExit(f"{path}:{i}: expected 'SET<TAB>FAMILY<TAB>reason'")
            rows.append((parts[0], parts[1], parts[2].replace("|", "/")))
    return rows


# check's label of a dp-invariance row: "vanilla [dp k=4]".
DP_ROW = re.compile(r" \[dp k=(\d+)\]$")


def rel(path: str) -> str:
    return os.path.relpath(os.path.abspath(path), REPO)


def explore_cell(t) -> str:
    """The explore verdict of one function (or one sharding of it), with its case counts."""
    if not t:
        return "not provided"
    counts = f"{t['passed']} passed, {t['mistrusted']} mistrusted, {t['unsupported']} declined"
    if t["failed"]:
        return f"differs ({t['failed']} failed, {counts} of {t['cases']})"
    if t["passed"]:
        return f"conforms ({counts} of {t['cases']})"
    return f"not provided (0 compared of {t['cases']})"


def verl_changes(per: Dict[str, Dict]) -> set:
    """The cases of one function that fail against the older golden set and pass (or agree,
    mistrusted) against the primary one."""
    new, old = per.get(peer_report.SETS[0]), per.get(peer_report.SETS[1])
    if not new or not old:
        return set()
    agrees = {c["case"] for c in new["cases"] if c["outcome"] in ("PASSED", "MISTRUSTED")}
    return {c["case"] for c in old["cases"] if c["outcome"] == "FAILED" and c["case"] in agrees}


def field_matrix(fn: Dict) -> Dict[str, collections.Counter]:
    m: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for case in fn["cases"]:
        for fld in case["fields"]:
            m[fld["field"]][fld["outcome"]] += 1
    return m


def cmd_report(a) -> int:
    checks = {}
    for arg in a.sets:
        s, _, path = arg.partition("=")
        if s not in peer_report.SETS or not path:
            raise SystemExit(f"bad set argument '{arg}' (want one of {peer_report.SETS}=FILE)")
        docs = [load_check(p) for p in path.split(",")]
        merged = dict(docs[0])
        merged["functions"] = [fn for d in docs for fn in d["functions"]]
        checks[s] = merged
    if set(checks) != set(peer_report.SETS):
        raise SystemExit(f"need results for every golden set: {peer_report.SETS}")
    for s, doc in checks.items():
        rev = str(doc.get("conform_revision", "unknown"))
        if rev == "unknown" or rev.endswith("-dirty"):
            raise SystemExit(
                f"{s}: conform revision '{rev}': judge with a conform built by bazel from a committed tree"
            )
    try:
        causes = demos.read_causes(a.causes)
        with demos.unpacked_explore(a.explore) as unpacked:
            explore = demos.load_explore(os.path.join(unpacked, "explore.json"))
    except demos.DemoError as ex:
        print(ex, file=sys.stderr)
        return 1
    tallies = demos.tallies(explore)
    diffs = demos.differences(explore)
    inventory = read_inventory(a.inventory)
    unjudged = read_unjudged(a.unjudged)
    with open(a.requirements, encoding="utf-8") as f:
        pins = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    with open(a.freeze, encoding="utf-8") as f:
        freeze = [ln.strip() for ln in f if ln.strip()]
    by_fn: Dict[Tuple[str, str], Dict[str, Dict]] = collections.defaultdict(dict)
    golden_dp: Dict[Tuple[str, str], Dict[str, Dict]] = collections.defaultdict(dict)
    for s, doc in checks.items():
        for fn in doc["functions"]:
            if DP_ROW.search(fn["function"]):  # check's dp-invariance rows: their own section
                golden_dp[(fn["family"], fn["function"])][s] = fn
            else:
                by_fn[(fn["family"], fn["function"])][s] = fn
    for s, fam, why in unjudged:
        provided = [
            fn["function"] for d in checks.values() for fn in d["functions"] if fn["family"] == fam and fn["provided"]
        ]
        if s == peer_report.SETS[0] or provided:
            print(
                f"{a.unjudged}: {s}/{fam}.h5 was not judged ({why}), yet the report needs it "
                f"(provided: {', '.join(provided) or 'primary golden set'})",
                file=sys.stderr,
            )
            return 1
    # A case that fails against verl 0.8.0's golden but passes against 0.9.1's is verl's own change
    # between the versions (the framework follows the newer verl), not the framework's difference.
    version_change = {
        key: cases for key, cases in ((f"{fam}/{fn}", verl_changes(per)) for (fam, fn), per in by_fn.items()) if cases
    }
    differs = sorted(
        {
            f"{fam}/{fn}"
            for (fam, fn), per in by_fn.items()
            if any(
                verdict(x)[0] == "differs"
                and any(
                    c["outcome"] == "FAILED" and c["case"] not in version_change.get(f"{fam}/{fn}", set())
                    for c in x["cases"]
                )
                for x in per.values()
            )
        }
        | {fn for (fn, _), t in tallies.items() if t["failed"]}
    )
    missing = [k for k in differs if k not in causes]
    stale = sorted(set(causes) - set(differs))
    unshown = demos.problems(causes, explore, a.causes)
    if missing or stale or unshown:
        for k in missing:
            print(f"{a.causes}: no cause stated for {k}, which differs", file=sys.stderr)
        for k in stale:
            print(f"{a.causes}: {k} has a cause but does not differ", file=sys.stderr)
        print("\n".join(unshown), file=sys.stderr, end="\n" if unshown else "")
        return 1
    # What a function's verdicts say of it where every one of its causes is classed.
    qualifier = {key: demos.qualifier(causes[key]) for key in differs}
    dp_rows = sorted({(fn, k) for (fn, k) in tallies if k})
    golden_dp_rows = {
        (f"{fam}/{DP_ROW.sub('', name)}", int(DP_ROW.search(name).group(1))): per
        for (fam, name), per in golden_dp.items()
        if any(x["provided"] for x in per.values())
    }
    if (dp_rows or golden_dp_rows) and not (a.sharding and os.path.isfile(a.sharding)):
        print(
            f"explore has data-parallel rows for {a.name}: say how its trainer computes each rank's "
            f"normaliser in tools/peers/sharding/{a.name}.md (--sharding)",
            file=sys.stderr,
        )
        return 1
    registry = peer_report.registry(SPEC)
    listed = {f"{fam}/{fn}" for fam, fn in by_fn}
    # Registry functions the checks have no results for: "not yet checked" in both tables.
    unchecked = registry - listed
    provided = {f"{fam}/{fn}" for (fam, fn), per in by_fn.items() if any(x["provided"] for x in per.values())}
    bad = [
        f"{k}: the checks list it, yet it is no registry function of {rel(SPEC)} (results of another conform?)"
        for k in sorted(listed - registry)
    ]
    bad += [
        f"{a.inventory}: {k} is a registry function the inventory does not list"
        for k in sorted(listed - set(inventory))
    ]
    bad += [f"{a.inventory}: {k} is no registry function" for k in sorted(set(inventory) - registry)]
    bad += [
        f"{a.inventory}: the adapter provides {k}, yet the inventory names no counterpart"
        for k in sorted(provided)
        if inventory.get(k, ("-",))[0] == "-"
    ]
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    first = checks[peer_report.SETS[0]]
    with open(a.versions, encoding="utf-8") as f:
        vers = json.load(f)
    title = TITLES.get(a.name, a.name)
    out: List[str] = [
        f"# {title} against verl: conformance report",
        "",
        peer_report.MARKER,
        "",
        f"Produced by `tools/peers/run.sh {a.name}` on "
        f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')}; regenerate it the same "
        "way after changing the adapter (CI checks the adapter's sha256 below).",
        "",
        "## Provenance",
        "",
        "| what | value |",
        "|---|---|",
        f"| framework | `{pins[0]}` |",
        release_row(pins, a.requirements),
        f"| adapter | `{a.adapter}` |",
        f"| adapter sha256 | `{sha256(os.path.join(REPO, a.adapter))}` |",
        f"| requirements | `{a.requirements}` |",
        f"| requirements sha256 | `{sha256(os.path.join(REPO, a.requirements))}` |",
        f"| inventory | `{a.inventory}` |",
        f"| inventory sha256 | `{sha256(os.path.join(REPO, a.inventory))}` |",
        f"| torch | `{vers['torch']}` (shared venv, `tools/peers/torch-requirements.txt`) |",
        f"| conform revision | `{checks[peer_report.SETS[0]].get('conform_revision', '?')}` |",
        f"| explore | `{rel(a.explore)}` |",
        f"| explore sha256 | `{sha256(a.explore)}` |",
        f"| explore run | seed {explore['seed']}, {explore['cases_per_function']} cases per function, "
        f"conform revision `{explore.get('conform_revision', '?')}` |",
        f"| python | `{a.python}` |",
        f"| environment | `{' '.join(freeze)}` |",
    ]
    for s in peer_report.SETS:
        g = vers["goldens"][s]
        out.append(f"| goldens {s} | verl `{g.get('verl_version', '?')}`, torch `{g.get('torch_version', '?')}` |")
    with open(os.path.join(REPO, a.adapter), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read(), a.adapter)) or ""
    out += [
        "",
        "## Adapter",
        "",
        f"What `{a.adapter}` calls, how verl's config keys map onto the framework's settings, what it "
        "declines and which placeholders stand in for modules the math does not use (its docstring):",
        "",
        "```text",
        doc,
        "```",
    ]
    out += [
        "",
        "## Verdicts",
        "",
        "Per function and golden set: conforms (every compared case PASSED), differs (at least one FAILED), "
        "not provided (the framework has no such function, or the adapter declined every case), with the "
        "case counts: failed, passed, mistrusted (agreeing, but proving nothing), declined (UNSUPPORTED: the "
        "framework has no setting for the case). The explore column judges the framework on generated "
        f"cases against the oracle (verl 0.9.1's semantics; seed {explore['seed']}, "
        f"{explore['cases_per_function']} cases per function, `conform explore`), where the goldens' inputs "
        "do not reach."
        + (
            f" {peer_report.NOT_CHECKED}: a registry function this run has no results for (added after it); "
            f"the next `tools/peers/run.sh {a.name}` checks it."
            if unchecked
            else ""
        ),
        "",
        "| family | function | " + " | ".join(peer_report.SETS) + " | explore | worst err/tol f64 / f32 (0.9.1) |",
        "|---|---|" + "---|" * (len(peer_report.SETS) + 1) + "---|",
    ]
    not_judged = {(s, fam) for s, fam, _ in unjudged}
    for fam, fn in sorted(set(by_fn) | {tuple(k.split("/", 1)) for k in unchecked}):
        if (fam, fn) not in by_fn:
            nc = peer_report.NOT_CHECKED
            out.append(f"| {fam} | `{fn}` | " + " | ".join([nc] * len(peer_report.SETS)) + f" | {nc} | - / - |")
            continue
        per = by_fn[(fam, fn)]
        q = qualifier.get(f"{fam}/{fn}", "")
        cells = [
            qualified(verdict(per[s])[1], q)
            if s in per
            else "not provided (file not judged)"
            if (s, fam) in not_judged
            else "not provided"
            for s in peer_report.SETS
        ]
        e = per.get(peer_report.SETS[0], {}).get("err_tol", {})
        ex = qualified(explore_cell(tallies.get((f"{fam}/{fn}", 0))), q)
        out.append(
            f"| {fam} | `{fn}` | "
            + " | ".join(cells)
            + f" | {ex} | {ratio(e.get('float64'))} / {ratio(e.get('float32'))} |"
        )
    if unjudged:
        out += [
            "",
            "Golden files `conform check` refused, so not judged (the adapter provides no function of them):",
            "",
        ]
        out += [f"- `fixtures/{s}/{fam}.h5`: {why}" for s, fam, why in unjudged]
    out += [
        "",
        "## Function x field matrix",
        "",
        "Provided functions only; per field and golden set, the case count per outcome "
        "(P passed, F failed, M mistrusted, U not provided or declined).",
        "",
        "| family | function | field | " + " | ".join(peer_report.SETS) + " |",
        "|---|---|---|" + "---|" * len(peer_report.SETS),
    ]
    for (fam, fn), per in sorted(by_fn.items()):
        if not any(x["provided"] for x in per.values()):
            continue
        mats = {s: field_matrix(per[s]) for s in per}
        fields = sorted(set().union(*[set(m) for m in mats.values()]))
        for fld in fields:
            cells = []
            for s in peer_report.SETS:
                c = mats.get(s, {}).get(fld, collections.Counter())
                cells.append(f"{c['PASSED']}P {c['FAILED']}F {c['MISTRUSTED']}M {c['UNSUPPORTED']}U")
            out.append(f"| {fam} | `{fn}` | `{fld}` | " + " | ".join(cells) + " |")
    if dp_rows or golden_dp_rows:
        with open(a.sharding, encoding="utf-8") as f:
            sharding_text = f.read().strip()
        ks = sorted({k for _, k in dp_rows} | {k for _, k in golden_dp_rows})
        out += [
            "",
            "## Data-parallel invariance",
            "",
            "Each batch split over k ranks and micro-batches, the framework called once per micro-batch (through "
            "the adapter's `SHARD` hook where it has one: how the framework's trainer calls its loss on one "
            "rank), the results combined as DDP/FSDP combine gradients (summed within a rank, averaged over "
            "ranks) and judged against what verl's semantics give for that sharding (`docs/verl-quirks.md`, "
            '"Data-parallel sharding"). Per function and k: on the goldens (`conform check`, the harness\'s '
            f"fixed plan, {peer_report.SETS[0]}) and on generated cases (`conform explore`, random plans).",
            "",
            "| function | " + " | ".join(f"k={k} goldens | k={k} explore" for k in ks) + " |",
            "|---|" + "---|---|" * len(ks),
        ]
        for fn in sorted({fn for fn, _ in dp_rows} | {fn for fn, _ in golden_dp_rows}):
            cells = []
            q = qualifier.get(fn, "")
            for k in ks:
                g = golden_dp_rows.get((fn, k), {}).get(peer_report.SETS[0])
                cells.append(qualified(verdict(g)[1], q) if g else "not provided")
                cells.append(qualified(explore_cell(tallies.get((fn, k))), q))
            out.append(f"| `{fn}` | " + " | ".join(cells) + " |")
        out += ["", f"How the framework's trainer computes each rank's normaliser (`{rel(a.sharding)}`):", ""]
        out += [sharding_text]
    out += [
        "",
        "## Differences and their causes",
        "",
        "Each cause was read in the framework's installed source (file and function named), and each is "
        "shown by the minimal case `conform explore` shrank (its fixture and the framework's result on it "
        f"are in `{rel(a.explore)}`, which `tar -xJf` unpacks; `conform check --against cases --candidate "
        "candidate` in that folder replays them, and CI checks that each named case fails for its field). "
        "A cause marked (input validation) is one side raising where the other returns; one marked (verl's "
        "own float32 quirk) is verl's float32 arithmetic (`docs/verl-quirks.md`) that the framework does not "
        "copy. A function all of whose causes are so marked says it in its verdicts. Grades: rounding (within "
        "the case dtype's rounding: 1e-5 relative in float32, 1e-12 in float64, or only the dtype differs), "
        "small (within 1e-3), material (beyond, a non-finite value, a shape, an error).",
        "",
    ]
    for key in differs:
        fam, fn = key.split("/", 1)
        out.append(f"- `{key}`:")
        for c in causes[key]:
            out.append(f"  - {c.rendered()}")
            for case in c.cases:
                d = diffs[case]
                out.append(f"    - shown by {demos.render(case, d, tallies.get((key, d['dp_ranks'])))}")
        for s in peer_report.SETS:
            x = by_fn[(fam, fn)].get(s)
            if not x or verdict(x)[0] != "differs":
                continue
            failed = [c for c in x["cases"] if c["outcome"] == "FAILED"]
            changed = [c for c in failed if s == peer_report.SETS[1] and c["case"] in version_change.get(key, set())]
            failed = [c for c in failed if c not in changed]
            if changed:
                out.append(
                    f"  - {s}: {len(changed)} case(s) fail only against this older verl and pass against "
                    f"{peer_report.SETS[0]}: verl's own change between the versions, not the framework's "
                    f"(`docs/drift-verl-0.8.0-to-0.9.1.md`): "
                    + ", ".join(f"`{c['case']}`" for c in changed[:6])
                    + (" ..." if len(changed) > 6 else "")
                )
            if not failed:
                continue
            flds = collections.Counter(f["field"] for c in failed for f in c["fields"] if f["outcome"] == "FAILED")
            errors = sum(1 for c in failed if not any(f["outcome"] == "FAILED" for f in c["fields"]))
            what = ", ".join(
                [f"`{k}` {v}" for k, v in sorted(flds.items())]
                + ([f"raised or returned unlike verl {errors}"] if errors else [])
            )
            worst = max(failed, key=lambda c: float("inf") if c["err_tol"] in (None, "inf") else c["err_tol"])
            out.append(
                f"  - {s}: {len(failed)} case(s) failed ({what}); e.g. `{worst['case']}`: "
                f"{worst['detail'][:160].replace('|', '/')}"
            )
    only_changed = sorted(set(version_change) - set(differs))
    if only_changed:
        out += [
            "",
            "Functions whose only failures against verl 0.8.0 are verl's own change between the versions (each "
            "failing case passes against 0.9.1; `docs/drift-verl-0.8.0-to-0.9.1.md`), so not the framework's:",
            "",
        ]
        out += [
            f"- `{k}`: "
            + ", ".join(f"`{c}`" for c in sorted(version_change[k])[:8])
            + (" ..." if len(version_change[k]) > 8 else "")
            for k in only_changed
        ]
    n_cp = sum(1 for cp, _ in inventory.values() if cp != "-")
    not_listed = sorted(registry - set(inventory))
    out += [
        "",
        "## Source inventory",
        "",
        f"Every verl registry function, where its counterpart lives in the framework's source (file:symbol in "
        f"the installed package) or why there is none, from `{a.inventory}`: {n_cp} of {len(inventory)} have a "
        f"counterpart, {len(provided)} are provided by the adapter. 'wired' in a note means the adapter calls it."
        + (
            f" {len(not_listed)} registry function(s) the inventory does not list yet are {peer_report.NOT_CHECKED}."
            if not_listed
            else ""
        ),
        "",
        "| family | function | counterpart | note |",
        "|---|---|---|---|",
    ]
    for key, cp, note in peer_report.inventory_table(inventory, registry):
        fam, fn = key.split("/", 1)
        out.append(f"| {fam} | `{fn}` | {'`' + cp + '`' if cp != '-' else '-'} | {note} |")
    out += [
        "",
        "## Declined cases",
        "",
        "Cases the adapter declined because the framework has no setting for them (reason as recorded):",
        "",
    ]
    reasons: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for fn in first["functions"]:
        for c in fn["cases"]:
            if c["outcome"] == "UNSUPPORTED" and fn["provided"]:
                reasons[f"{fn['family']}/{fn['function']}"][c["detail"][:200].replace("|", "/")] += 1
    for key in sorted(reasons):
        for r, n in reasons[key].most_common():
            out.append(f"- `{key}` ({n} in verl-0.9.1): {r}")
    if not reasons:
        out.append("- none")
    with open(os.path.join(REPO, a.out) if not os.path.isabs(a.out) else a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return 0


CONTROL = os.path.join(REPO, "tools", "peers", "control.json")


def cmd_control(a) -> int:
    docs = [load_check(p) for p in a.checks]
    with open(a.versions, encoding="utf-8") as f:
        vers = json.load(f)
    totals: collections.Counter = collections.Counter()  # counts, and failed_by_grade per grade
    failed, flips = [], 0
    for d in docs:
        for k, v in d["totals"].items():
            if isinstance(v, dict):  # failed_by_grade: counts per grade
                totals.setdefault(k, collections.Counter()).update(v)
            else:
                totals[k] += v
        for fn in d["functions"]:
            for c in fn["cases"]:
                flips += c.get("flips", 0)
                if c["outcome"] == "FAILED":
                    flds = [x for x in c["fields"] if x["outcome"] == "FAILED"]
                    failed.append(
                        {
                            "function": f"{fn['family']}/{fn['function']}",
                            "case": c["case"],
                            "fields": [x["field"] for x in flds],
                            "worst_abs": max((x["worst_abs"] or 0.0) for x in flds) if flds else None,
                            # The case's size (check's grade: rounding is the case dtype's).
                            "grade": max(
                                (x.get("grade", "material") for x in flds),
                                key=("rounding", "small", "material").index,
                                default="material",
                            ),
                            "detail": c["detail"],
                        }
                    )
    golden = docs[0].get("provenance", {}).get("goldens", {})
    out = {
        "verl": vers["verl"],
        "torch": vers["torch"],
        "python": vers["python"],
        "goldens": docs[0]["against"],
        "goldens_torch": golden.get("torch_version", "?"),
        "conform_revision": docs[0].get("conform_revision", "?"),
        "requirements": a.requirements,
        "requirements_sha256": sha256(os.path.join(REPO, a.requirements)),
        "totals": {k: dict(v) if isinstance(v, collections.Counter) else v for k, v in totals.items()},
        "flips": flips,
        "failed": failed,
    }
    with open(a.out if os.path.isabs(a.out) else os.path.join(REPO, a.out), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


def control_section() -> List[str]:
    if not os.path.isfile(CONTROL):
        return ["## Control run", "", "None recorded yet: run `tools/peers/control.sh`.", ""]
    with open(CONTROL, encoding="utf-8") as f:
        c = json.load(f)
    t = c["totals"]
    lines = [
        "## Control run: verl itself under the peers' torch",
        "",
        f"`tools/peers/control.sh` runs verl {c['verl']} (`tools/adapters/verl_adapter.py`, installed with "
        f"`{c['requirements']}`) on the peers' torch `{c['torch']}` against its own goldens `{c['goldens']}` "
        f"(captured with torch `{c['goldens_torch']}`), conform revision `{c['conform_revision']}`: "
        f"{t['cases']} cases, {t['passed']} passed, {t['failed']} failed, {t['mistrusted']} mistrusted, "
        f"{t['unsupported']} unsupported; {c['flips']} elements judged as boundary flips. "
        "(A float64 value where the golden holds exactly 0 is small, not rounding, once it is past 1e-13: "
        "rounding is the case dtype's.) "
        + (
            "Failures by grade (rounding is the case dtype's): "
            + ", ".join(f"{t['failed_by_grade'].get(g, 0)} {g}" for g in ("material", "small", "rounding"))
            + ". "
            if isinstance(t.get("failed_by_grade"), dict)
            else ""
        )
        + "So the torch change alone moves verl by this much; a difference a report shows beyond it is the "
        "framework's.",
        "",
    ]
    if c["failed"]:
        lines.append(
            "Cases verl itself fails under the peers' torch (a peer failing only these, on these fields, "
            "may be showing torch, not its own code):"
        )
        lines.append("")
        for x in c["failed"]:
            lines.append(
                f"- `{x['function']}` `{x['case']}`: {', '.join('`' + f + '`' for f in x['fields'])} "
                f"(worst abs {x['worst_abs']:.3g}, {x.get('grade', 'ungraded')})"
                if x["worst_abs"] is not None
                else f"- `{x['function']}` `{x['case']}`: {x['detail'][:160]}"
            )
        lines.append("")
    return lines


def cmd_readme(a) -> int:
    reports = {}
    for path in sorted(glob.glob(os.path.join(REPO, "docs", "peers", "*.md"))):
        if os.path.basename(path) == "README.md":
            continue
        reports[os.path.basename(path)[:-3]] = peer_report.parse(path)
    names = sorted(reports)
    fns = sorted(set().union(*[set(r.verdicts) for r in reports.values()])) if reports else []
    out = [
        "# Peer frameworks against verl",
        "",
        "How the algorithm layers of other RL frameworks compare with verl's, function by function, on "
        "verlconf's golden inputs. Each column links to that framework's report (provenance, the "
        "function x field matrix, and the cause of every difference, read in the framework's source). "
        "Regenerated by `tools/peers/run.sh NAME`, which also rewrites this file; "
        "`docs/peers/reports_test.py` (CI) checks that it agrees with the reports.",
        "",
        "Cells: the verdict against verl 0.9.1's goldens with its case counts (failed, passed, mistrusted, "
        "declined); `[0.8.0: ...]` where the verdict against verl 0.8.0's differs; `explore:` the verdict on "
        "generated cases (`conform explore`, against the oracle); `not yet checked` where the framework's "
        "report predates the function's registry entry (`tools/peers/run.sh NAME` checks it). Every function some "
        "framework provides has its row; functions no framework provides are left out. `differs (input "
        "validation only; ...)` and `differs (verl's own float32 quirk only; ...)`: every cause the report "
        "finds for the function is of that kind (one side raises where the other returns; verl's float32 "
        "arithmetic, `docs/verl-quirks.md`, which the framework does not copy).",
        "",
        "| family | function | " + " | ".join(f"[{TITLES.get(n, n)}]({n}.md)" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    nc = peer_report.NOT_CHECKED
    for key in fns:
        # A report with no verdict row for the function was run before the function was in the registry.
        if not any(peer_report.provided(reports[n].verdicts.get(key, {})) for n in names):
            continue  # no framework provides it (or none has been checked on it yet)
        cells = []
        for n in names:
            if key not in reports[n].verdicts:
                cells.append(nc)
                continue
            v = reports[n].verdicts[key]
            full = reports[n].cells[key][peer_report.SETS[0]]
            cell = full if v[peer_report.SETS[0]] not in ("not provided", nc) else v[peer_report.SETS[0]]
            if v[peer_report.SETS[1]] != v[peer_report.SETS[0]]:
                cell += f" [0.8.0: {v[peer_report.SETS[1]]}]"
            ex = reports[n].explore[key].split(" (")[0]
            q = reports[n].explore[key][len("differs (") :].split(";")[0] if ex == "differs" else ""
            if q.endswith(" only"):
                ex += f" ({q})"
            if ex not in ("not provided", nc):
                cell += f"; explore: {ex}"
            cells.append(cell)
        out.append(f"| {key[0]} | `{key[1]}` | " + " | ".join(cells) + " |")
    out += [
        "",
        "## One policy for declines",
        "",
        "Every adapter declines a case (UNSUPPORTED, never FAILED) only when the case asks for something the "
        "framework cannot be told: a config value it has no setting for, an input it takes no argument for, a "
        "batch layout it cannot represent. A value a framework fixes in its code where verl has a setting (a "
        "hard-coded epsilon, clip bound or reduction) is a setting with one value: a case at verl's default for "
        "that key runs, so the fixed value stands against verl's default and is counted where it differs (the "
        "difference a user porting verl's default configuration meets); a case at the framework's own value "
        "runs; any other value is declined, naming the fixed value (`fixed_setting`, "
        "`docs/adapter-contract.md`). Where verl's function ignores a setting (SAPO's `loss_agg_mode`), the "
        "adapter does not map it onto the framework's. Each report lists its declined cases with their reasons.",
        "",
        "## How the environments are built",
        "",
        "`tools/peers/run.sh NAME` installs one torch for all frameworks (`.venv-peers/torch`, "
        "`tools/peers/torch-requirements.txt`: torch 2.10.0, the newest inside AReaL 1.0.4's declared "
        "range; the other frameworks accept it) and gives each framework a venv of its own that sees "
        "that torch through a `.pth` file and gets the framework wheel plus the few light packages its "
        "algorithm modules import, pinned in `tools/peers/NAME-requirements.txt`, installed with "
        "`--no-deps`. Trainer-stack modules the math does not use are placeholders, named in each "
        "adapter's docstring and report. Each report's provenance names PyPI's newest release of the framework "
        "at its run, and why not where the report covers an older one: SkyRL 0.4.0 declares Requires-Python "
        ">=3.12, which Debian 12's python 3.11 is not, so the SkyRL report covers 0.3.0 (its requirements file "
        "says what 0.4.0 changes in the modules called). TorchRL's wheel runs on torch 2.10 except its compiled "
        "extension (used by prioritised replay buffers only; the TorchRL adapter's docstring says so).",
        "",
        "The goldens were captured with torch 2.15 and these runs use torch 2.10. Decisions exactly at a "
        "clip bound, where the two torches' clamp gradients differ, are judged as boundary flips, not "
        "failures; the control run below measures what the torch change alone does to verl.",
        "",
    ]
    out += control_section()
    out += [
        "## Trainer methods",
        "",
        "TRL writes its losses, aggregation, KL term and advantages inside `GRPOTrainer` / `RLOOTrainer` "
        "methods, not free functions. Its adapter runs those methods (`_compute_loss`, "
        "`_generate_and_score_completions`) as TRL's training loop does, on a trainer object whose "
        "non-math parts are stubbed: the model forward returns the case's log-probs, the accelerator is "
        "one process, generation and the reward function return the case's tokens and scores "
        "(`tools/adapters/peers/trl_adapter.py` names every stub). OpenRLHF's advantage estimators "
        "(RemoteExperienceMaker.compute_advantages_and_returns) and its actor KL and entropy losses "
        "(ActorPPOTrainer.training_step) are run the same way, and so are SkyRL's KL and entropy terms "
        "(PolicyWorkerBase._forward_backward_micro, its one device call pointed at the CPU). Each report's "
        "source inventory lists, for "
        "every verl registry function, where the framework has it or why not (or that it is not yet checked).",
        "",
        "Versions:",
        "",
    ]
    for n in names:
        h = reports[n].header
        torch = h["torch"].split("`")[1] if h["torch"].startswith("`") else h["torch"]
        out.append(
            f"- [{TITLES.get(n, n)}]({n}.md): `{h['framework']}`, torch `{torch}`, "
            f"adapter `{h['adapter']}` (sha256 `{h['adapter sha256'][:12]}`)"
        )
    with open(os.path.join(REPO, a.out) if not os.path.isabs(a.out) else a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report")
    for opt in (
        "--name",
        "--adapter",
        "--requirements",
        "--causes",
        "--inventory",
        "--unjudged",
        "--versions",
        "--freeze",
        "--python",
        "--explore",
        "--out",
    ):
        r.add_argument(opt, required=True)
    r.add_argument("--sharding")
    r.add_argument("sets", nargs="+", metavar="SET=CHECK.json")
    m = sub.add_parser("readme")
    m.add_argument("--out", required=True)
    c = sub.add_parser("control")
    for opt in ("--requirements", "--versions", "--out"):
        c.add_argument(opt, required=True)
    c.add_argument("checks", nargs="+", metavar="CHECK.json")
    a = ap.parse_args()
    try:
        return {"report": cmd_report, "readme": cmd_readme, "control": cmd_control}[a.cmd](a)
    except peer_report.ReportError as ex:
        print(f"make_report.py: {ex}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
