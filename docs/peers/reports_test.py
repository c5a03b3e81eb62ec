#!/usr/bin/env python3
"""The committed peer reports (docs/peers/NAME.md) against what they claim.

For every report: it parses (peer_report.parse); the adapter and requirements files it
names exist and have the sha256 it records (a report produced with another revision of
its adapter is stale: rerun tools/peers/run.sh NAME); every function that differs has a
cause naming a framework source file. Its source inventory (the file
tools/peers/inventory/NAME.tsv, with the sha256 the report records) lists no function the
registry (fixtures/spec.json) lacks, has a row for every registry function the report has a
verdict for, and names a counterpart in the framework's source for every function the
framework provides (conforms or differs in some golden set); the report's rendered Source
inventory is that file's rows plus "not yet checked" rows. README.md is exactly the matrix
make_report.py builds from the reports.

The registry is the only edge: a registry function the report has no verdict for (other
than "not yet checked") and its inventory no row for was added after the framework's last
run. It is "not yet checked" (not_yet_checked), not a problem: adding a function touches
no report and no inventory; `tools/peers/run.sh NAME` checks it when it next runs. A
function removed from the registry that a report has a verdict for or an inventory lists
is a problem.

Every cause is demonstrated: it names minimal cases of `conform explore`'s committed run
(docs/peers/explore/NAME.tar.xz, with the sha256 the report records), every difference of that run is
named by a cause, the report shows the causes file's causes and cases, and `conform check`
replaying the committed minimal cases against the framework's committed results on them
fails each named case for the field its difference names. System python3 only; runs under
Bazel (cwd: the runfiles tree; argv[1]: the conform binary) or from the repository root."""

from __future__ import annotations

import ast
import glob
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# Under Bazel, //tools/peers:peer_report puts these modules on the path; from the repository root, their folder.
sys.path.append(os.path.join(REPO, "tools", "peers"))

import demos  # noqa: E402
import make_report  # noqa: E402
import peer_report  # noqa: E402

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(REPO, "bazel-bin", "tools", "conform")


def registry() -> set:
    """The registry's functions, "family/function" (the unit tests patch this)."""
    return peer_report.registry(os.path.join(REPO, "fixtures", "spec.json"))


def inventory_file(rel: str):
    """The source inventory file a report names (the unit tests patch this)."""
    return peer_report.read_inventory(os.path.join(REPO, rel))


def checked(rep) -> set:
    """The functions a report has a verdict for, other than "not yet checked"."""
    return {
        f"{fam}/{fn}" for (fam, fn), v in rep.verdicts.items() if any(x != peer_report.NOT_CHECKED for x in v.values())
    }


def not_yet_checked(rep) -> list:
    """The registry functions the report's framework has not been run on yet."""
    return sorted(registry() - checked(rep))


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
    want_adapter = f"tools/adapters/peers/{stem}_adapter.py"
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
    differs = sorted(
        f"{fam}/{fn}"
        for (fam, fn), v in rep.verdicts.items()
        if ("differs" in v.values() and f"{fam}/{fn}" not in rep.verl_change)
        or rep.explore[(fam, fn)].startswith("differs")
    )
    for key in rep.verl_change:
        v = rep.verdicts.get(tuple(key.split("/", 1)), {})
        if v.get(peer_report.SETS[0]) == "differs" or v.get(peer_report.SETS[1]) != "differs":
            out.append(f"{path}: {key} is listed as verl's own change, yet its verdicts are {v}")
    for key in differs:
        cause = " ".join(rep.causes.get(key, []))
        if not cause:
            out.append(f"{path}: {key} differs and has no cause")
        elif not all(re.search(r"[\w/]+\.py\b", c) for c in rep.causes[key]):
            out.append(f"{path}: a cause of {key} names no source file: {rep.causes[key]}")
    for key in sorted(set(rep.causes) - set(differs)):
        out.append(f"{path}: {key} has a cause but does not differ")
    out += demo_problems(path, stem, rep)
    out += inventory_problems(path, stem, rep)
    return out


def inventory_problems(path: str, stem: str, rep) -> list:
    """The report's verdicts against the registry and its inventory file, and its rendered
    Source inventory against that file. A registry function with neither a verdict nor an
    inventory row is not yet checked, which is no problem."""
    src = rep.header["inventory"]
    try:
        tsv = inventory_file(src)
    except (OSError, peer_report.ReportError) as ex:
        return [f"{path}: {ex}"]
    out = []
    fns, judged = registry(), checked(rep)
    for key in sorted(judged - fns):
        out.append(f"{path}: {key} has a verdict, yet it is no registry function: rerun tools/peers/run.sh {stem}")
    for key in sorted(set(tsv) - fns):
        out.append(f"{path}: {src} lists {key}, which is no registry function")
    for key in sorted((judged & fns) - set(tsv)):
        out.append(f"{path}: {key} has a verdict, yet {src} has no row for it")
    for key in sorted(set(tsv) - {f"{fam}/{fn}" for fam, fn in rep.verdicts}):
        out.append(
            f"{path}: {src} lists {key}, which the report has no verdict row for: rerun tools/peers/run.sh {stem}"
        )
    for (fam, fn), v in sorted(rep.verdicts.items()):
        key = f"{fam}/{fn}"
        if peer_report.provided(v) and tsv.get(key, ("-", ""))[0] == "-":
            out.append(f"{path}: {key} is provided ({v[peer_report.SETS[0]]}) but {src} names no counterpart for it")
    # The sha256 pin says the file is the one the report was written from, not that the table
    # was left as written: each of the file's rows as it is, and "not yet checked" rows only.
    for key in sorted(set(tsv) | set(rep.inventory)):
        got, want = rep.inventory.get(key), tsv.get(key, ("-", peer_report.NOT_CHECKED))
        if got is None:
            out.append(f"{path}: its Source inventory has no row for {key}, which {src} lists")
        elif got != want:
            out.append(f"{path}: its Source inventory shows {key} as {got}, {src} as {want}")
    return out


def demo_problems(path: str, stem: str, rep) -> list:
    """The report's causes against the causes file and explore's committed run."""
    out = []
    want = f"docs/peers/explore/{stem}.tar.xz"
    if rep.header["explore"] != want:
        return [f"{path}: explore is {rep.header['explore']}, expected {want}"]
    archive = os.path.join(REPO, want)
    if not os.path.isfile(archive):
        return [f"{path}: {want} does not exist"]
    if sha256(archive) != rep.header["explore sha256"]:
        out.append(
            f"{path}: {want} is not the explore run the report was written from: rerun tools/peers/run.sh {stem}"
        )
    causes_path = os.path.join(REPO, "tools", "peers", "causes", f"{stem}.tsv")
    try:
        causes = demos.read_causes(causes_path)
        with demos.unpacked_explore(archive) as folder:
            doc = demos.load_explore(os.path.join(folder, "explore.json"))
            return out + causes_problems(path, stem, rep, causes, causes_path, doc, folder)
    except demos.DemoError as ex:
        return out + [str(ex)]


def causes_problems(path, stem, rep, causes, causes_path, doc, folder) -> list:
    """The causes file against the report and against explore's run unpacked in `folder`."""
    out = []
    out += demos.problems(causes, doc, causes_path)
    for key in sorted(set(causes) | set(rep.causes)):
        want_texts = [c.rendered() for c in causes.get(key, [])]
        if rep.causes.get(key, []) != want_texts:
            out.append(f"{path}: the causes of {key} are not those of {causes_path}: rerun tools/peers/run.sh {stem}")
        q = demos.qualifier(causes.get(key, []))
        fam_fn = tuple(key.split("/", 1))
        cells = list(rep.cells.get(fam_fn, {}).values()) + [rep.explore.get(fam_fn, "")]
        for cell in cells:
            if cell.startswith("differs (") and cell.startswith(f"differs ({q};") != bool(q):
                out.append(
                    f"{path}: {key}: verdict '{cell[:60]}' does not say what its causes are "
                    f"({q or 'not all classed'}): rerun tools/peers/run.sh {stem}"
                )
        want_cases = [case for c in causes.get(key, []) for case in c.cases]
        if rep.shown_by.get(key, []) != want_cases:
            out.append(f"{path}: {key} is shown by {rep.shown_by.get(key, [])}, the causes file names {want_cases}")
    if any(not d["dp_ranks"] for d in doc["differences"]):
        proc = subprocess.run(
            [
                CONFORM,
                "check",
                "--against",
                os.path.join(folder, "cases"),
                "--candidate",
                os.path.join(folder, "candidate"),
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode not in (0, 1):
            return out + [
                f"{path}: replaying {stem}.tar.xz: conform check exited {proc.returncode}: {proc.stderr.strip()[:300]}"
            ]
        out += [f"{path}: {m}" for m in demos.unconfirmed(causes, doc, json.loads(proc.stdout))]
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
        adapters = sorted(glob.glob(os.path.join(REPO, "tools", "adapters", "peers", "*_adapter.py")))
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
                    f.write(text.replace(f"- `{key}`:\n", "- removed:\n"))
                self.assertTrue(any(f"{key} differs and has no cause" in p for p in problems(bad)), problems(bad))
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(peer_report.MARKER, ""))
            self.assertTrue(problems(bad))
            # The rendered inventory against its file: a provided function's row edited, and a dropped row.
            provided = sorted(k for k, v in rep.verdicts.items() if peer_report.provided(v))
            self.assertTrue(provided)
            fam, fn = provided[0]
            # The inventory is the last table whose rows start with the function and a quoted cell.
            row = [ln for ln in text.splitlines() if ln.startswith(f"| {fam} | `{fn}` | `")][-1]
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(row, f"| {fam} | `{fn}` | - | gone |"))
            self.assertTrue(any(f"Source inventory shows {fam}/{fn} as" in p for p in problems(bad)), problems(bad))
            with open(bad, "w", encoding="utf-8") as f:
                f.write(text.replace(row + "\n", ""))
            self.assertTrue(
                any(f"Source inventory has no row for {fam}/{fn}" in p for p in problems(bad)), problems(bad)
            )
        # The inventory file itself: the provided function's counterpart gone, its row gone.
        tsv = inventory_file(rep.header["inventory"])
        key = f"{fam}/{fn}"
        with mock.patch(f"{__name__}.inventory_file", lambda _: {**tsv, key: ("-", "gone")}):
            self.assertTrue(
                any(f"{key} is provided" in p and "names no counterpart" in p for p in problems(path)), problems(path)
            )
        with mock.patch(f"{__name__}.inventory_file", lambda _: {k: v for k, v in tsv.items() if k != key}):
            self.assertTrue(any(f"{key} has a verdict, yet" in p for p in problems(path)), problems(path))

    def test_registry_is_the_only_edge(self):
        # A function added to the registry after the reports were written: no report and no
        # inventory has it, and that is no problem; the checker lists it as not yet checked.
        # A real function added since a report's last run is already in `before`: this test
        # holds whatever the registry has now.
        new = "kl/made_up_for_reports_test"
        real = registry()
        self.assertNotIn(new, real)
        before = {path: not_yet_checked(peer_report.parse(path)) for path in reports()}
        with mock.patch(f"{__name__}.registry", lambda: real | {new}):
            for path in reports():
                with self.subTest(report=os.path.basename(path)):
                    rep = peer_report.parse(path)
                    self.assertNotIn(("kl", "made_up_for_reports_test"), rep.verdicts)
                    self.assertNotIn(new, inventory_file(rep.header["inventory"]))
                    self.assertEqual(problems(path), [])
                    self.assertEqual(not_yet_checked(rep), sorted(before[path] + [new]))
                    # The report, when next written, shows it as not yet checked.
                    table = peer_report.inventory_table(inventory_file(rep.header["inventory"]), registry())
                    self.assertIn((new, "-", peer_report.NOT_CHECKED), table)
        # The same with an inventory row for a function that is no registry function: a problem.
        path = reports()[0]
        rep = peer_report.parse(path)
        tsv = inventory_file(rep.header["inventory"])
        with mock.patch(f"{__name__}.inventory_file", lambda _: {**tsv, new: ("-", "made up")}):
            self.assertTrue(any(f"lists {new}, which is no registry function" in p for p in problems(path)))
        # A function removed from the registry that the report judged and the inventory lists: a problem.
        gone = sorted(checked(rep) & set(tsv))[0]
        with mock.patch(f"{__name__}.registry", lambda: real - {gone}):
            got = problems(path)
            self.assertTrue(any(f"lists {gone}, which is no registry function" in p for p in got), got)
            self.assertTrue(any(f"{gone} has a verdict, yet it is no registry function" in p for p in got), got)

    def test_matrix_shows_a_framework_not_yet_checked(self):
        # A report written before a function that another framework provides: its cell in the
        # matrix is "not yet checked", not "not provided".
        parse = peer_report.parse
        reps = {os.path.basename(p)[:-3]: parse(p) for p in reports()}
        names = sorted(reps)
        victim = names[0]
        key = next(k for k in sorted(reps[names[1]].verdicts) if peer_report.provided(reps[names[1]].verdicts[k]))

        def parse_without(path):
            rep = parse(path)
            if os.path.basename(path) == f"{victim}.md":
                for table in (rep.verdicts, rep.cells, rep.explore):
                    del table[key]
            return rep

        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(peer_report, "parse", parse_without):
            out = os.path.join(tmp, "README.md")
            self.assertEqual(make_report.cmd_readme(types.SimpleNamespace(out=out)), 0)
            with open(out, encoding="utf-8") as f:
                rows = [ln for ln in f.read().splitlines() if ln.startswith(f"| {key[0]} | `{key[1]}` |")]
        self.assertEqual(len(rows), 1, rows)
        self.assertEqual(rows[0].strip("| ").split(" | ")[2 + names.index(victim)], peer_report.NOT_CHECKED)


class ReportWriterTest(unittest.TestCase):
    """make_report.py report on a run of our own: one function checked, every other registry
    function rendered "not yet checked" in the verdict and inventory tables."""

    def setUp(self):
        # PyPI stands still here: its newest release is the one pinned, unless a test says otherwise.
        self.newest = None
        real = make_report.newest_release

        def newest(package):
            return self.newest or self.pinned(package)

        make_report.newest_release = newest
        self.addCleanup(setattr, make_report, "newest_release", real)

    @staticmethod
    def pinned(package):
        with open(os.path.join(REPO, "tools", "peers", "trl-requirements.txt"), encoding="utf-8") as f:
            pins = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
        return pins[0].partition("==")[2]

    def write(self, tmp, inventory):
        def dump(name, doc):
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(doc if isinstance(doc, str) else json.dumps(doc))
            return os.path.join(tmp, name)

        case = {"case": "c1", "outcome": "PASSED", "fields": [{"field": "outputs/kl", "outcome": "PASSED"}]}
        check = {
            "schema": "verlconf.check",
            "schema_version": 1,
            "conform_revision": "8684e15",
            "functions": [
                {
                    "family": "kl",
                    "function": "k1",
                    "provided": True,
                    "cases_total": 1,
                    "outcomes": {"PASSED": 1},
                    "err_tol": {"float64": 0.1, "float32": 0.2},
                    "cases": [dict(case, detail="", err_tol=0.1)],
                }
            ],
        }
        os.makedirs(os.path.join(tmp, "explore"))
        dump(
            os.path.join("explore", "explore.json"),
            {
                "schema": demos.EXPLORE_SCHEMA,
                "schema_version": 1,
                "conform_revision": "8684e15",
                "seed": 1,
                "cases_per_function": 1,
                "functions": [
                    {
                        "function": "kl/k1",
                        "dp_ranks": 0,
                        "cases": 1,
                        "passed": 1,
                        "failed": 0,
                        "mistrusted": 0,
                        "unsupported": 0,
                    }
                ],
                "differences": [],
            },
        )
        demos.pack_explore(os.path.join(tmp, "explore"), os.path.join(tmp, "explore.tar.xz"))
        golden = {"verl_version": "v", "torch_version": "t"}
        return types.SimpleNamespace(
            name="trl",
            adapter="tools/adapters/peers/trl_adapter.py",
            requirements=os.path.join(REPO, "tools", "peers", "trl-requirements.txt"),
            causes=dump("causes.tsv", ""),
            inventory=dump("inventory.tsv", "".join(f"{k}\t{cp}\t{note}\n" for k, cp, note in inventory)),
            unjudged=dump("unjudged.tsv", ""),
            versions=dump("versions.json", {"torch": "t", "goldens": {s: golden for s in peer_report.SETS}}),
            freeze=dump("freeze.txt", "trl==0\n"),
            python="3",
            explore=os.path.join(tmp, "explore.tar.xz"),
            sharding=None,
            out=os.path.join(tmp, "trl.md"),
            sets=[f"{s}={dump(s + '.json', check)}" for s in peer_report.SETS],
        )

    def test_a_report_names_the_newest_release_or_why_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, [("kl/k1", "trl/x.py:k1", "wired")])
            self.assertEqual(make_report.cmd_report(a), 0)
            self.assertIn("the one covered", peer_report.parse(a.out).header["newest release"])
            self.newest = "99.0"
            with self.assertRaises(SystemExit) as refused:
                make_report.cmd_report(a)
            self.assertIn("say why not", str(refused.exception))
            req = os.path.join(tmp, "req.txt")
            with open(a.requirements, encoding="utf-8") as f, open(req, "w", encoding="utf-8") as g:
                g.write("# newest: 99.0 needs a python this machine lacks\n" + f.read())
            a.requirements = req
            self.assertEqual(make_report.cmd_report(a), 0)
            self.assertIn("not covered: 99.0 needs a python", peer_report.parse(a.out).header["newest release"])

    def test_results_of_an_uncommitted_conform_are_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, [("kl/k1", "trl/x.py:k1", "wired")])
            path = a.sets[0].partition("=")[2]
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            for rev in ("unknown", "8684e15-dirty"):
                doc["conform_revision"] = rev
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(doc, f)
                with self.assertRaises(SystemExit):
                    make_report.cmd_report(a)

    def test_unchecked_functions_render_as_not_yet_checked(self):
        fns = registry()
        self.assertIn("kl/k2", fns)
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, [("kl/k1", "trl/x.py:k1", "wired")])
            self.assertEqual(make_report.cmd_report(a), 0)
            rep = peer_report.parse(a.out)
        nc = peer_report.NOT_CHECKED
        self.assertEqual(rep.verdicts[("kl", "k1")], {s: "conforms" for s in peer_report.SETS})
        self.assertEqual(rep.inventory["kl/k1"], ("trl/x.py:k1", "wired"))
        self.assertEqual(set(rep.verdicts), {tuple(k.split("/", 1)) for k in fns})
        self.assertEqual(rep.verdicts[("kl", "k2")], {s: nc for s in peer_report.SETS})
        self.assertEqual(rep.explore[("kl", "k2")], nc)
        self.assertEqual(rep.inventory["kl/k2"], ("-", nc))
        self.assertEqual(set(rep.inventory), fns)
        self.assertEqual(checked(rep), {"kl/k1"})

    def test_refuses_an_inventory_row_of_no_registry_function(self):
        with tempfile.TemporaryDirectory() as tmp:
            a = self.write(tmp, [("kl/k1", "trl/x.py:k1", "wired"), ("kl/made_up", "-", "none")])
            with mock.patch("sys.stderr", io.StringIO()) as err:
                self.assertEqual(make_report.cmd_report(a), 1)
            self.assertIn("kl/made_up is no registry function", err.getvalue())
            self.assertFalse(os.path.exists(a.out))


class ExploreArchiveTest(unittest.TestCase):
    """The committed explore runs are xz archives: the same folder packs to the same bytes,
    unpacks to the same files, and an archive with anything else in it is refused."""

    def test_round_trip_and_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "out")
            os.makedirs(os.path.join(src, "cases"))
            os.makedirs(os.path.join(src, "repro"))
            files = {"explore.json": b'{"schema": 1}', os.path.join("cases", "kl.h5"): b"\x89HDF"}
            for rel, data in files.items():
                with open(os.path.join(src, rel), "wb") as f:
                    f.write(data)
            with open(os.path.join(src, "repro", "x.py"), "w") as f:
                f.write("print(1)")  # the Python repros stay out
            a, b = os.path.join(tmp, "a.tar.xz"), os.path.join(tmp, "b.tar.xz")
            demos.pack_explore(src, a)
            os.utime(os.path.join(src, "explore.json"), (1, 1))
            demos.pack_explore(src, b)
            self.assertEqual(sha256(a), sha256(b))
            with demos.unpacked_explore(a) as d:
                got = {os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs}
                self.assertEqual(got, set(files))
                with open(os.path.join(d, "cases", "kl.h5"), "rb") as f:
                    self.assertEqual(f.read(), b"\x89HDF")

    def test_refuses_other_members_and_other_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.tar.xz")
            with tarfile.open(bad, "w:xz") as t:
                info = tarfile.TarInfo("../escape")
                info.size = 1
                t.addfile(info, io.BytesIO(b"x"))
            with self.assertRaisesRegex(demos.DemoError, "unexpected member '../escape'"):
                with demos.unpacked_explore(bad):
                    pass
            junk = os.path.join(tmp, "junk.tar.xz")
            with open(junk, "wb") as f:
                f.write(b"not xz")
            with self.assertRaisesRegex(demos.DemoError, "not a readable explore archive"):
                with demos.unpacked_explore(junk):
                    pass
            with self.assertRaisesRegex(demos.DemoError, "not a file"):
                with demos.unpacked_explore(tmp):
                    pass


class DemoChecksTest(unittest.TestCase):
    """The demonstration checks must be able to fail, with inputs of our own."""

    DOC = {
        "schema": "verlconf.explore",
        "schema_version": 1,
        "conform_revision": "5845976",
        "functions": [{"function": "kl/k1", "dp_ranks": 0, "cases": 10, "failed": 1}],
        "differences": [
            {
                "function": "kl/k1",
                "dp_ranks": 0,
                "field": "outputs/kl",
                "kind": "value",
                "grade": "material",
                "minimal": {"name": "min_outputs_kl"},
            }
        ],
    }

    def check(self, outcome, fields):
        return {
            "functions": [
                {
                    "family": "kl",
                    "function": "k1",
                    "cases": [
                        {
                            "case": "min_outputs_kl",
                            "outcome": outcome,
                            "fields": [{"field": f, "outcome": o} for f, o in fields],
                        }
                    ],
                }
            ]
        }

    def test_named_and_unnamed(self):
        named = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_outputs_kl"], "why", 1)]}
        self.assertEqual(demos.problems(named, self.DOC, "c.tsv"), [])
        self.assertTrue(any("named by no cause" in p for p in demos.problems({}, self.DOC, "c.tsv")))
        wrong = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_grads_logprob"], "why", 3)]}
        self.assertTrue(any("is no difference" in p for p in demos.problems(wrong, self.DOC, "c.tsv")))

    def test_revision_must_be_a_commits(self):
        named = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_outputs_kl"], "why", 1)]}
        for rev in ("unknown", "5845976-dirty"):
            doc = dict(self.DOC, conform_revision=rev)
            self.assertTrue(any("conform revision" in p for p in demos.problems(named, doc, "c.tsv")), rev)
        missing = {k: v for k, v in self.DOC.items() if k != "conform_revision"}
        self.assertTrue(any("conform revision" in p for p in demos.problems(named, missing, "c.tsv")))

    def test_classes(self):
        validation = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_outputs_kl"], "why", 1, "input-validation")]}
        self.assertTrue(any("input-validation" in p for p in demos.problems(validation, self.DOC, "c.tsv")))
        error = dict(self.DOC)
        error["differences"] = [
            dict(
                self.DOC["differences"][0],
                field="error",
                kind="exception vs result",
                got_error="returned a result",
                want_error="ValueError: no",
                minimal={"name": "min_error"},
            )
        ]
        ok = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_error"], "why", 1, "input-validation")]}
        self.assertEqual(demos.problems(ok, error, "c.tsv"), [])
        self.assertEqual(demos.qualifier(ok["kl/k1"]), "input validation only")
        mixed = ok["kl/k1"] + [demos.Cause("kl/k1", ["kl/k1/min_error"], "why", 2)]
        self.assertEqual(demos.qualifier(mixed), "")
        both = ok["kl/k1"] + [demos.Cause("kl/k1", ["kl/k1/min_error"], "why", 2, "verl-quirk")]
        self.assertEqual(demos.qualifier(both), "input validation and verl's own float32 quirk only")
        self.assertTrue(ok["kl/k1"][0].rendered().startswith("(input validation) why"))
        # An error difference recorded as the same outcome on both sides is a stale record.
        stale = dict(error)
        stale["differences"] = [dict(error["differences"][0], want_error="returned a result")]
        self.assertTrue(any("both sides" in p for p in demos.problems(ok, stale, "c.tsv")))

    def test_replay_must_fail_for_the_field(self):
        named = {"kl/k1": [demos.Cause("kl/k1", ["kl/k1/min_outputs_kl"], "why", 1)]}
        ok = self.check("FAILED", [("outputs/kl", "FAILED"), ("grads/logprob", "PASSED")])
        self.assertEqual(demos.unconfirmed(named, self.DOC, ok), [])
        other_field = self.check("FAILED", [("outputs/kl", "PASSED"), ("grads/logprob", "FAILED")])
        self.assertEqual(len(demos.unconfirmed(named, self.DOC, other_field)), 1)
        passed = self.check("PASSED", [("outputs/kl", "PASSED")])
        self.assertEqual(len(demos.unconfirmed(named, self.DOC, passed)), 1)
        self.assertEqual(len(demos.unconfirmed(named, self.DOC, {"functions": []})), 1)

    def test_causes_file_format(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "c.tsv")
            with open(p, "w", encoding="utf-8") as f:
                f.write("kl/k1\tkl/k2/min_outputs_kl\twhy\n")
            with self.assertRaises(demos.DemoError):
                demos.read_causes(p)
            with open(p, "w", encoding="utf-8") as f:
                f.write("kl/k1\twhy only\n")
            with self.assertRaises(demos.DemoError):
                demos.read_causes(p)
            with open(p, "w", encoding="utf-8") as f:
                f.write("kl/k1\tkl/k1/min_error\twhy\tnot-a-class\n")
            with self.assertRaises(demos.DemoError):
                demos.read_causes(p)
            with open(p, "w", encoding="utf-8") as f:
                f.write("kl/k1\tkl/k1/min_error\twhy\tverl-quirk\n")
            self.assertEqual(demos.read_causes(p)["kl/k1"][0].klass, "verl-quirk")


if __name__ == "__main__":
    unittest.main()
