#!/usr/bin/env python3
"""The committed peer reports (docs/peers/NAME.md) against what they claim.

For every report: it parses (peer_report.parse); the adapter and requirements files it
names exist and have the sha256 it records (a report produced with another revision of
its adapter is stale: rerun tools/peers/run.sh NAME); every function that differs has a
cause naming a framework source file; its source inventory (tools/peers/inventory/NAME.tsv,
with the sha256 it records) lists every registry function of fixtures/spec.json, and every
function the framework provides (a verdict other than "not provided" in some golden set) has
its row and names a counterpart in the framework's source. README.md is exactly the matrix make_report.py
builds from the reports. System python3 only; runs under Bazel (cwd: the runfiles tree)
or from the repository root."""

from __future__ import annotations

import ast
import glob
import hashlib
import json
import os
import re
import tempfile
import types
import unittest

import make_report  # //tools/peers:peer_report
import peer_report

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def registry():
    with open(os.path.join(REPO, "fixtures", "spec.json"), encoding="utf-8") as f:
        return {f"{fn['family']}/{fn['name']}" for fn in json.load(f)["functions"]}


def reports():
    return sorted(p for p in glob.glob(os.path.join(HERE, "*.md")) if os.path.basename(p) != "README.md")


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def problems(path: str):
    """Everything wrong with one report, as a list of messages."""
    out = []
    try:
        rep = peer_report.parse(path)
    except peer_report.ReportError as ex:
        return [str(ex)]
    stem = os.path.basename(path)[:-3]
    h = rep.header
    want_adapter = f"fixtures/adapters/peers/{stem}_adapter.py"
    if h["adapter"] != want_adapter:
        out.append(f"{path}: adapter is {h['adapter']}, expected {want_adapter}")
    pins = []
    if os.path.isfile(os.path.join(REPO, h["requirements"])):
        with open(os.path.join(REPO, h["requirements"]), encoding="utf-8") as f:
            pins = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    if pins and (h["framework"] != pins[0] or pins[0] not in h["environment"].split()):
        out.append(
            f"{path}: framework {h['framework']} is not the first pin of {h['requirements']} "
            f"({pins[0]}) installed in the environment it lists"
        )
    want_inventory = f"tools/peers/inventory/{stem}.tsv"
    if h["inventory"] != want_inventory:
        out.append(f"{path}: inventory is {h['inventory']}, expected {want_inventory}")
    for key in ("adapter", "requirements", "inventory"):
        f = os.path.join(REPO, h[key])
        if not os.path.isfile(f):
            out.append(f"{path}: {key} {h[key]} does not exist")
        elif sha256(f) != h[f"{key} sha256"]:
            out.append(
                f"{path}: {h[key]} has sha256 {sha256(f)}, the report was produced with "
                f"{h[key + ' sha256']}: rerun tools/peers/run.sh {stem}"
            )
    differs = sorted(f"{fam}/{fn}" for (fam, fn), v in rep.verdicts.items() if "differs" in v.values())
    for key in differs:
        cause = rep.causes.get(key)
        if not cause:
            out.append(f"{path}: {key} differs and has no cause")
        elif not re.search(r"[\w/]+\.py\b", cause):
            out.append(f"{path}: the cause of {key} names no source file: {cause}")
    for key in sorted(set(rep.causes) - set(differs)):
        out.append(f"{path}: {key} has a cause but does not differ")
    fns = registry()
    for key in sorted(fns - set(rep.inventory)):
        out.append(f"{path}: the source inventory has no row for {key}")
    for key in sorted(set(rep.inventory) - fns):
        out.append(f"{path}: the source inventory lists {key}, which is no registry function")
    for (fam, fn), v in sorted(rep.verdicts.items()):
        key = f"{fam}/{fn}"
        if any(x != "not provided" for x in v.values()) and rep.inventory.get(key, ("-", ""))[0] == "-":
            out.append(
                f"{path}: {key} is provided ({v[peer_report.SETS[0]]}) but its inventory row names no counterpart"
            )
    return out


def imported_modules(path: str):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


class ReportsTest(unittest.TestCase):
    def test_adapters_call_their_framework_not_verl(self):
        # A peer adapter that imported verl could hand verl's own results in as the framework's.
        adapters = sorted(glob.glob(os.path.join(REPO, "fixtures", "adapters", "peers", "*_adapter.py")))
        self.assertTrue(adapters)
        for path in adapters:
            with self.subTest(adapter=os.path.basename(path)):
                bad = [m for m in imported_modules(path) if m == "verl" or m.startswith("verl.")]
                self.assertEqual(bad, [])

    def test_at_least_three_frameworks(self):
        self.assertGreaterEqual(len(reports()), 3, [os.path.basename(p) for p in reports()])

    def test_each_report(self):
        for path in reports():
            with self.subTest(report=os.path.basename(path)):
                self.assertEqual(problems(path), [])

    def test_readme_is_the_matrix_of_the_reports(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "README.md")
            self.assertEqual(make_report.cmd_readme(types.SimpleNamespace(out=out)), 0)
            with open(out, encoding="utf-8") as f, open(os.path.join(HERE, "README.md"), encoding="utf-8") as g:
                self.assertEqual(
                    g.read(),
                    f.read(),
                    "docs/peers/README.md is stale: rerun "
                    "python3 tools/peers/make_report.py readme --out docs/peers/README.md",
                )

    def test_checker_catches_a_stale_adapter_and_a_missing_cause(self):
        # The checks above must be able to fail: tamper with a copy of a real report.
        path = reports()[0]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, os.path.basename(path))
            sha = peer_report.parse(path).header["adapter sha256"]
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(sha, "0" * 64))
            self.assertTrue(any("rerun tools/peers/run.sh" in p for p in problems(bad)), problems(bad))
            rep = peer_report.parse(path)
            if rep.causes:
                key = sorted(rep.causes)[0]
                with open(bad, "w", encoding="utf-8") as f:
                    f.write(text.replace(f"- `{key}`: ", "- removed: "))
                self.assertTrue(any(f"{key} differs and has no cause" in p for p in problems(bad)), problems(bad))
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(peer_report.MARKER, ""))
            self.assertTrue(problems(bad))
            # A provided function whose inventory row loses its counterpart, and a dropped row.
            provided = sorted(k for k, v in rep.verdicts.items() if any(x != "not provided" for x in v.values()))
            self.assertTrue(provided)
            fam, fn = provided[0]
            # The inventory is the last table whose rows start with the function and a quoted cell.
            row = [ln for ln in text.splitlines() if ln.startswith(f"| {fam} | `{fn}` | `")][-1]
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(row, f"| {fam} | `{fn}` | - | gone |"))
            self.assertTrue(any("names no counterpart" in p for p in problems(bad)), problems(bad))
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(row + "\n", ""))
            self.assertTrue(any("has no row for" in p for p in problems(bad)), problems(bad))


if __name__ == "__main__":
    unittest.main()
