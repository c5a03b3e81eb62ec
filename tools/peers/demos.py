"""A peer report's causes and the minimal cases that demonstrate them.

The causes file (tools/peers/causes/NAME.tsv) holds one line per cause,

    family/function<TAB>CASE[ CASE...]<TAB>cause[<TAB>CLASS]

where each CASE names a difference `conform explore` found with the framework and shrank
(explore.json in docs/peers/explore/NAME.tar.xz): `family/function/min_FIELD` for a shrunk
case, whose fixture and the framework's result on it are archived with it (cases/,
candidate/), or
`family/function/dpK_FIELD` for a sharded one (judged in the explore run, not shrunk). A
function may have several causes; every cause names at least one case of its own function,
and every difference explore found is named by a cause. The cause text says why, in the
framework's source (file and function); the case shows it: shape, inputs, got and want.
CLASS, where given, says the difference is of a kind a reader weighs apart (CLASSES): the
report's verdicts then say "differs (... only; ...)" for a function all of whose causes are
classed. An input-validation cause must be shown by error differences (one side raised).
Standard library only: CI runs it with the system python3."""

from __future__ import annotations

import collections
import contextlib
import json
import lzma
import math
import os
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

EXPLORE_SCHEMA = "verlconf.explore"


class DemoError(Exception):
    pass


# A cause's class: what the verdict of a function all of whose causes have it says.
CLASSES = {
    # One side refuses the inputs (raises) where the other returns: the numbers agree
    # wherever both compute.
    "input-validation": "input validation only",
    # verl's own float32 arithmetic (docs/verl-quirks.md), which the framework does not copy:
    # the framework is the more exact one.
    "verl-quirk": "verl's own float32 quirk only",
}


@dataclass
class Cause:
    function: str  # family/function
    cases: List[str]  # family/function/min_... or family/function/dpK_...
    text: str
    line: int
    klass: str = ""  # a key of CLASSES, or "" for a difference of the framework's semantics

    def rendered(self) -> str:
        """The cause as the report shows it: its class first, where it has one."""
        tag = f"({CLASSES[self.klass].replace(' only', '')}) " if self.klass else ""
        return (tag + self.text).replace("|", "/")


def qualifier(causes: List[Cause]) -> str:
    """What the verdicts of a function with these causes say of it: its causes' classes where
    every cause has one, else ""."""
    classes = {c.klass for c in causes}
    if not classes or "" in classes:
        return ""
    return " and ".join(CLASSES[k] for k in sorted(classes)).replace(" only and ", " and ")


def tsv_rows(path: str) -> Iterator[Tuple[int, List[str]]]:
    """(line number, tab-separated fields) of each line of the peers' TSV files that is
    neither blank nor a # comment."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.strip() and not line.startswith("#"):
                yield i, line.split("\t")


def read_causes(path: str) -> Dict[str, List[Cause]]:
    out: Dict[str, List[Cause]] = collections.defaultdict(list)
    for i, parts in tsv_rows(path):
        if len(parts) not in (3, 4) or parts[0].count("/") != 1 or not parts[1].strip() or not parts[2].strip():
            raise DemoError(f"{path}:{i}: expected 'family/function<TAB>CASE[ CASE...]<TAB>cause[<TAB>CLASS]'")
        klass = parts[3].strip() if len(parts) == 4 else ""
        if len(parts) == 4 and klass not in CLASSES:
            raise DemoError(f"{path}:{i}: class '{klass}' is not one of {sorted(CLASSES)}")
        fn = parts[0]
        cases = parts[1].split()
        for c in cases:
            if not c.startswith(fn + "/") or c.count("/") != 2:
                raise DemoError(f"{path}:{i}: {c} is not a case of {fn} (family/function/NAME)")
        out[fn].append(Cause(fn, cases, parts[2].strip(), i, klass))
    return dict(out)


def load_explore(path: str) -> Dict:
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != EXPLORE_SCHEMA or doc.get("schema_version") != 1:
        raise DemoError(f"{path}: not a {EXPLORE_SCHEMA} version 1 result")
    return doc


def differences(doc: Dict) -> Dict[str, Dict]:
    """Every difference of an explore run by its case name, family/function/NAME."""
    out = {}
    for d in doc["differences"]:
        out[f"{d['function']}/{d['minimal']['name']}"] = d
    return out


def tallies(doc: Dict) -> Dict[Tuple[str, int], Dict]:
    return {(t["function"], t["dp_ranks"]): t for t in doc["functions"]}


def problems(causes: Dict[str, List[Cause]], doc: Dict, causes_path: str) -> List[str]:
    """What is wrong between the causes and an explore run: a named case that is no difference
    of the run, a difference no cause names, an input-validation cause shown by a difference
    that is no error, an error difference whose record shows the same outcome on both sides
    (a run by a conform that did not record the sharded calls' errors), or a run whose conform
    revision is not a clean commit's."""
    diffs = differences(doc)
    out = []
    rev = str(doc.get("conform_revision", "unknown"))
    if rev == "unknown" or rev.endswith("-dirty"):
        out.append(
            f"explore.json: conform revision '{rev}': run explore with a conform built by bazel from a "
            "committed tree (a copied binary loses the runfile that carries its revision)"
        )
    named = set()
    for fn, cs in sorted(causes.items()):
        for c in cs:
            for case in c.cases:
                named.add(case)
                if case not in diffs:
                    out.append(f"{causes_path}:{c.line}: {case} is no difference of the explore run")
                elif c.klass == "input-validation" and diffs[case]["field"] != "error":
                    out.append(
                        f"{causes_path}:{c.line}: {case} fails on {diffs[case]['field']}, yet its cause is classed "
                        "input-validation (an error difference: one side raised)"
                    )
    for case, d in sorted(diffs.items()):
        if d["field"] == "error" and d.get("got_error") == d.get("want_error"):
            out.append(
                f"explore.json: {case} is an error difference whose record shows '{d.get('got_error')}' on both "
                "sides: rerun explore with a current conform"
            )
    for case in sorted(set(diffs) - named):
        d = diffs[case]
        out.append(
            f"{causes_path}: explore's difference {case} ({d['field']}, {d['kind']}, {d['grade']}) is named by no cause"
        )
    return out


def _number(x) -> str:
    if x is None:
        return "nan"
    if isinstance(x, str):
        return x
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.10g}"


def _literal(shape: List[int], values: List, limit: int = 24) -> str:
    if len(values) > limit:
        nz = sum(1 for v in values if v not in (0, 0.0))
        return f"<{' x '.join(map(str, shape))}: {nz} of {len(values)} nonzero>"

    def rec(dim: int, off: int) -> str:
        if not shape:
            return _number(values[0])
        stride = 1
        for s in shape[dim + 1 :]:
            stride *= s
        items = [
            _number(values[off + i]) if dim + 1 == len(shape) else rec(dim + 1, off + i * stride)
            for i in range(shape[dim])
        ]
        return "[" + ", ".join(items) + "]"

    return rec(0, 0)


def render(case: str, d: Dict, explored: Optional[Dict], max_elements: int = 4) -> str:
    """One line of Markdown: the case, what fails on it, its inputs and got vs want."""
    m = d["minimal"]
    n = explored["cases"] if explored else "?"
    where = (
        f"sharded, {d.get('sharding', '')}; not shrunk"
        if d["dp_ranks"]
        else f"{m['rows']} row(s) x {m['tokens']} token(s)"
    )
    parts = [
        f"`{case}` (`{d['field']}`, {d['kind']}, {d['grade']}; {d['cases']} of {n} explored cases): "
        f"{where}, {m['dtype']}"
    ]
    ins = "; ".join(f"`{k} = {_literal(v['shape'], v['values'])}`" for k, v in m["inputs"].items())
    if ins:
        parts.append(ins)
    cfg = m.get("config_not_default", {})
    parts.append("config: " + (", ".join(f"`{k}={v}`" for k, v in cfg.items()) if cfg else "verl's defaults"))
    if d["field"] == "error":
        parts.append(f"got `{d.get('got_error', '')}`, want `{d.get('want_error', '')}`")
    elif d["elements"]:
        els = [
            f"{e['index']}{' ' + e['status'] if e['status'] else ''}: got {_number(e['got'])}, "
            f"want {_number(e['want'])}"
            for e in d["elements"][:max_elements]
        ]
        more = len(d["elements"]) - max_elements
        parts.append("; ".join(els) + (f"; and {more} more" if more > 0 else ""))
    return "; ".join(parts).replace("|", "/")


def replay_failures(check_doc: Dict) -> Dict[str, Tuple[str, set]]:
    """From `conform check --format json` over the committed cases: case name ->
    (outcome, the fields that FAILED); field "error" when the case failed on the error
    semantics (one side raised) with no field compared."""
    out = {}
    for fn in check_doc["functions"]:
        for c in fn["cases"]:
            failed = {f["field"] for f in c.get("fields", []) if f["outcome"] == "FAILED"}
            if c["outcome"] == "FAILED" and not failed:
                failed = {"error"}
            out[f"{fn['family']}/{fn['function']}/{c['case']}"] = (c["outcome"], failed)
    return out


def unconfirmed(causes: Dict[str, List[Cause]], doc: Dict, check_doc: Dict) -> List[str]:
    """Every named shrunk case must fail, for its difference's field, when `conform check`
    replays the committed fixture against the committed candidate result."""
    diffs = differences(doc)
    got = replay_failures(check_doc)
    out = []
    for cs in causes.values():
        for c in cs:
            for case in c.cases:
                d = diffs.get(case)
                if d is None or d["dp_ranks"]:
                    continue
                outcome, failed = got.get(case, ("absent", set()))
                if outcome != "FAILED" or d["field"] not in failed:
                    out.append(
                        f"{case}: replayed, it is {outcome} with failing fields {sorted(failed)}; "
                        f"its cause says {d['field']} fails"
                    )
    return out


# What a committed explore run keeps: the result and the replayable minimal cases. One xz
# archive per framework (docs/peers/explore/NAME.tar.xz): explore.json repeats every case's
# inputs, and the archive holds the four frameworks' runs in about a tenth of the space the
# folders took, which keeps the tree the GPU machine is sent within its limit.
ARCHIVED = ("explore.json", "cases", "candidate")


def explore_archive(repo: str, name: str) -> str:
    return os.path.join(repo, "docs", "peers", "explore", f"{name}.tar.xz")


def pack_explore(src: str, archive: str) -> None:
    """Archive explore's --out folder (its ARCHIVED parts) so that the same run gives the same
    bytes: members sorted, no times, owners or modes of this machine."""
    paths = []
    for top in ARCHIVED:
        root = os.path.join(src, top)
        if os.path.isfile(root):
            paths.append(top)
        for d, dirs, files in os.walk(root):
            dirs.sort()
            paths += [os.path.relpath(os.path.join(d, f), src) for f in sorted(files)]
    if "explore.json" not in paths:
        raise DemoError(f"{src}: no explore.json to archive")
    tmp = archive + ".partial"
    with tarfile.open(tmp, "w:xz", preset=9, format=tarfile.PAX_FORMAT) as t:
        for rel in paths:
            info = tarfile.TarInfo(rel)
            info.size = os.path.getsize(os.path.join(src, rel))
            info.mode = 0o644
            with open(os.path.join(src, rel), "rb") as f:
                t.addfile(info, f)
    os.replace(tmp, archive)


@contextlib.contextmanager
def unpacked_explore(archive: str) -> Iterator[str]:
    """The folder a committed explore archive unpacks to, for the length of the block.
    Only regular files under ARCHIVED are taken; anything else is a DemoError."""
    if not os.path.isfile(archive):
        raise DemoError(f"{archive}: not a file")
    with tempfile.TemporaryDirectory(prefix="explore-") as d:
        try:
            with tarfile.open(archive, "r:xz") as t:
                for m in t.getmembers():
                    parts = m.name.split("/")
                    if not m.isfile() or parts[0] not in ARCHIVED or ".." in parts or os.path.isabs(m.name):
                        raise DemoError(f"{archive}: unexpected member {m.name!r}")
                    out = os.path.join(d, *parts)
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    with t.extractfile(m) as src, open(out, "wb") as dst:
                        dst.write(src.read())
        except (tarfile.TarError, lzma.LZMAError, EOFError) as ex:
            raise DemoError(f"{archive}: not a readable explore archive ({ex})") from ex
        yield d


def main(argv: List[str]) -> int:
    if len(argv) != 3 or argv[0] != "pack":
        print("usage: demos.py pack EXPLORE_OUT_DIR ARCHIVE.tar.xz", file=sys.stderr)
        return 2
    try:
        pack_explore(argv[1], argv[2])
    except (DemoError, OSError) as ex:
        print(f"demos.py: {ex}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
