"""Reading a peer report back (docs/peers/NAME.md): the header table and the verdict
table, in the exact form make_report.py writes them; the registry's functions
(fixtures/spec.json) and a source inventory (tools/peers/inventory/NAME.tsv). Shared by
make_report.py (to write a report, and to build docs/peers/README.md from the committed
reports) and docs/peers/reports_test.py.

The registry is the only edge: a registry function a report has no data on (no verdict
row, no inventory row: it was added after the framework's last run) is "not yet checked",
never an error; the next `tools/peers/run.sh NAME` checks it. Standard library only: CI
runs it with the system python3."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

MARKER = "<!-- verlconf peer report, schema 2 -->"
# The verdict of a registry function the framework's last run had no results for.
NOT_CHECKED = "not yet checked"
VERDICTS = ("conforms", "differs", "not provided", NOT_CHECKED)
# The verdicts of a function the framework provides.
PROVIDED = ("conforms", "differs")
SETS = ("verl-0.9.1", "verl-0.8.0")


class ReportError(Exception):
    pass


@dataclass
class Report:
    path: str
    header: Dict[str, str] = field(default_factory=dict)
    # (family, function) -> {set: verdict}
    verdicts: Dict[Tuple[str, str], Dict[str, str]] = field(default_factory=dict)
    # (family, function) -> {set: the whole cell, verdict and case counts}
    cells: Dict[Tuple[str, str], Dict[str, str]] = field(default_factory=dict)
    # (family, function) -> the explore column's whole cell (generated cases)
    explore: Dict[Tuple[str, str], str] = field(default_factory=dict)
    # function -> its causes (one per line under its bullet), for every function that differs
    causes: Dict[str, List[str]] = field(default_factory=dict)
    # function -> the explore cases its causes name ("shown by `CASE`")
    shown_by: Dict[str, List[str]] = field(default_factory=dict)
    # functions whose only failures are verl's own change between the golden sets
    verl_change: List[str] = field(default_factory=list)
    # "family/function" -> (counterpart or "-", note): the source inventory
    inventory: Dict[str, Tuple[str, str]] = field(default_factory=dict)


def registry(spec_path: str) -> set:
    """The registry's functions, "family/function", from its committed copy (fixtures/spec.json)."""
    with open(spec_path, encoding="utf-8") as f:
        return {f"{fn['family']}/{fn['name']}" for fn in json.load(f)["functions"]}


def read_inventory(path: str) -> Dict[str, Tuple[str, str]]:
    """A source inventory (tools/peers/inventory/NAME.tsv): "family/function" -> (counterpart
    or "-", note), the note with "|" as "/" (as the report's table shows it). Blank lines and
    # comments are skipped."""
    rows: Dict[str, Tuple[str, str]] = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 3 or "/" not in parts[0] or not parts[1] or not parts[2].strip():
                raise ReportError(f"{path}:{i}: expected 'family/function<TAB>counterpart or -<TAB>note'")
            if parts[0] in rows:
                raise ReportError(f"{path}:{i}: {parts[0]} listed twice")
            rows[parts[0]] = (parts[1].strip(), parts[2].strip().replace("|", "/"))
    return rows


def inventory_table(inventory: Dict[str, Tuple[str, str]], functions) -> List[Tuple[str, str, str]]:
    """The rows of a report's Source inventory: (key, counterpart or "-", note) for every row
    of the inventory and, for every registry function in `functions` it has no row for,
    (key, "-", NOT_CHECKED); sorted by (family, function)."""
    rows = dict(inventory)
    for key in functions:
        rows.setdefault(key, ("-", NOT_CHECKED))
    return [(k, *rows[k]) for k in sorted(rows, key=lambda k: tuple(k.split("/", 1)))]


def provided(verdicts: Dict[str, str]) -> bool:
    """Whether a function's verdicts (set -> verdict) say the framework provides it."""
    return any(v in PROVIDED for v in verdicts.values())


def _cells(line: str) -> List[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unquote(cell: str) -> str:
    return cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == "`" else cell


def _section(lines: List[str], title: str, path: str) -> List[str]:
    try:
        start = lines.index(title)
    except ValueError:
        raise ReportError(f"{path}: no '{title}' section") from None
    out = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        out.append(line)
    return out


def _table(block: List[str], path: str, title: str) -> List[List[str]]:
    rows = [ln for ln in block if ln.startswith("|")]
    if len(rows) < 2:
        raise ReportError(f"{path}: '{title}' has no table")
    return [_cells(r) for r in rows[2:]]


def parse(path: str) -> Report:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if MARKER not in lines:
        raise ReportError(f"{path}: not a peer report (no '{MARKER}' line)")
    rep = Report(path=path)
    for cells in _table(_section(lines, "## Provenance", path), path, "Provenance"):
        if len(cells) != 2:
            raise ReportError(f"{path}: Provenance row {cells} does not have 2 cells")
        rep.header[cells[0]] = _unquote(cells[1])
    for key in (
        "framework",
        "newest release",
        "adapter",
        "adapter sha256",
        "requirements",
        "requirements sha256",
        "inventory",
        "inventory sha256",
        "explore",
        "explore sha256",
        "torch",
        "python",
        "environment",
    ):
        if not rep.header.get(key):
            raise ReportError(f"{path}: Provenance has no '{key}'")
    for cells in _table(_section(lines, "## Verdicts", path), path, "Verdicts"):
        if len(cells) != 2 + len(SETS) + 2:
            raise ReportError(f"{path}: Verdicts row {cells} does not have {4 + len(SETS)} cells")
        fam, fn = _unquote(cells[0]), _unquote(cells[1])
        v = {}
        for s, cell in zip(SETS, cells[2 : 2 + len(SETS)]):
            verdict = cell.split(" (")[0]
            if verdict not in VERDICTS:
                raise ReportError(f"{path}: {fam}/{fn}: verdict '{cell}' for {s} is not one of {VERDICTS}")
            v[s] = verdict
        if (fam, fn) in rep.verdicts:
            raise ReportError(f"{path}: {fam}/{fn} listed twice in Verdicts")
        rep.verdicts[(fam, fn)] = v
        rep.cells[(fam, fn)] = dict(zip(SETS, cells[2 : 2 + len(SETS)]))
        rep.explore[(fam, fn)] = cells[2 + len(SETS)]
        if rep.explore[(fam, fn)].split(" (")[0] not in VERDICTS:
            raise ReportError(f"{path}: {fam}/{fn}: explore verdict '{cells[2 + len(SETS)]}' is not one of {VERDICTS}")
    for cells in _table(_section(lines, "## Source inventory", path), path, "Source inventory"):
        if len(cells) != 4:
            raise ReportError(f"{path}: Source inventory row {cells} does not have 4 cells")
        key = f"{cells[0]}/{_unquote(cells[1])}"
        if key in rep.inventory:
            raise ReportError(f"{path}: {key} listed twice in the Source inventory")
        rep.inventory[key] = (_unquote(cells[2]), cells[3])
    key = None
    for line in _section(lines, "## Differences and their causes", path):
        m = re.match(r"^- `([^`]+)`: `", line)
        if m:
            rep.verl_change.append(m.group(1))
            key = None
            continue
        m = re.match(r"^- `([^`]+)`:$", line)
        if m:
            key = m.group(1)
            rep.causes.setdefault(key, [])
            rep.shown_by.setdefault(key, [])
            continue
        if key is None:
            continue
        m = re.match(r"^  - (?!verl-)(.+)$", line)
        if m:
            rep.causes[key].append(m.group(1))
        m = re.match(r"^    - shown by `([^`]+)`", line)
        if m:
            rep.shown_by[key].append(m.group(1))
    return rep
