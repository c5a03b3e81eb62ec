"""README.md's example output is conform's real current output: every block marked
`<!-- sync: NAME -->` (the line before its opening fence) is compared with what the
command of BLOCKS[NAME] prints now, and each count in PROSE with what conform reports.

    python3 docs/readme_sync_test.py CONFORM            # the test (CONFORM: bazel-bin/tools/conform)
    python3 docs/readme_sync_test.py CONFORM --write    # rewrite the stale blocks and counts in place

A block shows the lines its entry's `view` picks from the output, `...` where it leaves
some out; the first `keep` lines of a block are not conform's (the command, pip's line)
and are never compared or rewritten. What a clock decides (seconds, cases/s, pytest's
duration) is masked on both sides (MASKS). --write keeps the README's text of a line that
differs only in masked parts, so a rerun does not churn the figures; any other line is
written as the real output prints it, its clock figures included. Temporary paths are
shown as the README's (/tmp/explore, /tmp/mine, ...), the bundled goldens' folder as the
README's placeholder.

Commands run from the repository root (the runfiles' under Bazel) with Debian's
/usr/bin/python3 (numpy, h5py and pytest; tools/setup.sh) as the adapters' interpreter,
and repro lines name the command as `bazel run //tools:conform --` (VERLCONF_PROG) where
the README runs it that way. The pytest plugin runs from tools/python with its
binary pointed at CONFORM (the wheel would carry it beside the package).
"""

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Dict, List, Tuple

CONFORM = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else ""
WRITE = "--write" in sys.argv
if WRITE:
    sys.argv.remove("--write")
if "TEST_SRCDIR" in os.environ:
    ROOT = os.path.join(os.environ["TEST_SRCDIR"], "verlconf")
else:
    ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
PYTHON = "/usr/bin/python3"  # Debian's, as the README's commands name it
BAZEL_RUN = "bazel run //tools:conform --"
EXAMPLE = "tools/adapters/numpy_example_adapter.py"
MARKER = re.compile(r"^<!-- sync: ([\w-]+) -->$")
ELIDE = "..."
FIX = "python3 docs/readme_sync_test.py CONFORM --write  (CONFORM: bazel-bin/tools/conform)"

# What a clock decides: explore's seconds and rate, shrink times, pytest's duration.
MASKS = [
    (re.compile(r"in [\d.]+ s \([\d.]+ cases/s\)"), "in <s> s (<n> cases/s)"),
    (re.compile(r"\([\d.]+ s; "), "(<s> s; "),
    (re.compile(r"trials, [\d.]+ s\)"), "trials, <s> s)"),
    (re.compile(r"^=+ (.*) in [\d.]+s =+$"), r"== \1 in <s>s =="),
]

TMP = ""


def mask(line: str) -> str:
    for pattern, repl in MASKS:
        line = pattern.sub(repl, line)
    return line


def env(prog: str = BAZEL_RUN, bug: str = "") -> Dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("VERLCONF_", "PYTEST_"))}
    e.update(VERLCONF_PROG=prog, COLUMNS="80")
    if bug:
        e["VERLCONF_EXAMPLE_BUG"] = bug
    return e


def tmp(name: str) -> str:
    """A new folder under the test's temporary directory (blocks may run at once)."""
    return tempfile.mkdtemp(prefix=name + "-", dir=TMP)


def conform(*args: str, prog: str = BAZEL_RUN, bug: str = "", codes=(0, 1)) -> Tuple[str, str]:
    p = subprocess.run([CONFORM, *args], cwd=ROOT, env=env(prog, bug), capture_output=True, text=True, timeout=300)
    if p.returncode not in codes:
        raise AssertionError(f"conform {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout, p.stderr


def goldens_as(shown: str) -> Callable[[str], str]:
    """The bundled goldens' folder (wherever this conform finds them) as the README shows it."""
    return lambda text: re.sub(r"against \S+/fixtures/verl-", f"against {shown}/fixtures/verl-", text)


# ---- the commands ---------------------------------------------------------------------


def check_oracle() -> str:
    return conform()[0]


def validate_example() -> str:
    out = conform("validate", "--adapter", EXAMPLE, "--python", PYTHON)[0]
    return goldens_as("...")(out)


def torch_adapter() -> str:
    d = tmp("torch")
    with open(os.path.join(d, "torch_adapter.py"), "w") as f:
        f.write("import torch  # noqa\n")
    _, err = conform("validate", "--adapter", os.path.join(d, "torch_adapter.py"), "--python", PYTHON, codes=(2,))
    return err.replace(d + "/", "/tmp/")


@lru_cache(maxsize=None)
def write_baseline() -> str:
    d = tmp("written")
    path = os.path.join(d, "accepted.txt")
    conform(
        "validate",
        "--adapter",
        EXAMPLE,
        "--python",
        PYTHON,
        "--only",
        "grpo,vanilla",
        "--write-baseline",
        path,
        bug="biased_std",
    )
    with open(path) as f:
        return f.read()


def baseline() -> str:
    # The written baseline reviewed as the README says: the reasons written, and an entry
    # for a difference fixed since.
    d = tmp("reviewed")
    path = os.path.join(d, "accepted.txt")
    reviewed = write_baseline().replace(
        "# TODO: why this difference is accepted", "# we normalise by the population std (ddof=0) on purpose"
    )
    with open(path, "w") as f:
        f.write(reviewed + "kl/k3  outputs/kl  # an old difference, fixed since\n")
    out = conform(
        "validate",
        "--adapter",
        EXAMPLE,
        "--python",
        PYTHON,
        "--only",
        "grpo,vanilla,k3",
        "--baseline",
        path,
        bug="biased_std",
    )[0]
    return out.replace(path, "/tmp/accepted.txt")


def wheel_validate() -> str:
    out = conform(
        "validate", "--adapter", "numpy_example", "--only", "grpo,vanilla,k3", "--python", PYTHON, prog="verlconf"
    )[0]
    return goldens_as("/tmp/venv/lib/python3.11/site-packages/verlconf/_data")(out)


def pytest_plugin(*args: str, bug: str = "") -> str:
    """`python -m pytest ARGS` with the wheel's plugin, its conform this one."""
    d = tmp("pytest")
    shim = (
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(ROOT, 'tools', 'python')!r})\n"
        "from verlconf import layout\n"
        f"layout.CONFORM = {CONFORM!r}\n"
        "import pytest\n"
        "sys.exit(pytest.main(sys.argv[1:]))\n"
    )
    argv = [PYTHON, "-c", shim, "-p", "verlconf.pytest_plugin", "-p", "no:cacheprovider", *args]
    p = subprocess.run(argv, cwd=d, env=env("verlconf", bug), capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1):
        raise AssertionError(f"pytest {' '.join(args)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout


def explore_example() -> str:
    return conform("explore", "--adapter", "numpy_example", "--python", PYTHON, "--cases", "300", "--jobs", "2")[0]


def explore_fault() -> str:
    d = os.path.join(tmp("explore"), "explore")
    out = conform(
        "explore", "--adapter", "numpy_example", "--python", PYTHON, "--only", "grpo", "--out", d, bug="biased_std"
    )[0]
    return out.replace(d, "/tmp/explore")


def check_failure() -> str:
    # The harness's candidate through validate --out (the same files), then check on it.
    d = os.path.join(tmp("mine"), "mine")
    conform("validate", "--adapter", EXAMPLE, "--python", PYTHON, "--only", "grpo", "--out", d, bug="biased_std")
    return conform("check", "--candidate", d)[0].replace(d, "/tmp/mine")


def list_k3() -> str:
    return conform("list", "kl/k3")[0]


def drift_torch() -> str:
    return conform("drift", "fixtures/verl-0.9.1-torch-2.11.0", "fixtures/verl-0.9.1")[0]


# ---- what a block shows of the output -------------------------------------------------

Part = Callable[[List[str]], List[str]]


def head(n: int) -> Part:
    return lambda lines: lines[:n]


def drop(n: int) -> Part:
    return lambda lines: lines[n:]


def line(pattern: str) -> Part:
    return lambda lines: [lines[find(lines, pattern)]]


def elide(lines: List[str]) -> List[str]:
    return [ELIDE]


def last(lines: List[str]) -> List[str]:
    return lines[-1:]


def find(lines: List[str], pattern: str, start: int = 0) -> int:
    for i in range(start, len(lines)):
        if re.search(pattern, lines[i]):
            return i
    raise LookupError(f"no line matches {pattern!r}")


def row(name: str) -> Part:
    """A table's row of one function (or dp row): its name column is exactly `name`."""

    def exact(lines):
        col = lines[find(lines, r"^function +family ")].index("family")
        for line in lines:
            if line[:col].rstrip() == name:
                return [line]
        raise LookupError(f"no row {name!r}")

    return exact


def span(start: str, end: str = "") -> Part:
    """From the first line matching `start` through the next matching `end` (the end without)."""

    def part(lines):
        i = find(lines, start)
        return lines[i : find(lines, end, i + 1) + 1] if end else lines[i:]

    return part


def from_last(pattern: str) -> Part:
    def part(lines):
        i = max(k for k, line in enumerate(lines) if re.search(pattern, line))
        return lines[i:]

    return part


def view(*parts: Part) -> Callable[[List[str]], List[str]]:
    return lambda lines: [x for p in parts for x in p(lines)]


def cut_list(lines: List[str], pattern: str, items: int) -> List[str]:
    """A long `...: a, b, c, ...` line cut after its first `items` names."""
    out = []
    for line in lines:
        m = re.search(pattern, line)
        if m:
            head_, names = line[: m.end()], line[m.end() :].split(", ")
            line = head_ + ", ".join(names[:items] + [ELIDE])
        out.append(line)
    return out


@dataclass
class Block:
    command: str  # as the README runs it
    run: Callable[[], str]
    view: Callable[[List[str]], List[str]] = lambda lines: lines
    keep: int = 0  # the block's first lines that are not conform's output


def validate_view(lines: List[str]) -> List[str]:
    rows = view(head(9), elide, span(r"^token-mean ", r"^token-mean \[dp k=8\]"), elide, span(r"^token_k1 "))
    return cut_list(rows(lines), r"function\(s\) not provided \(.*?\): ", 2)


# name -> the command whose output the block marked `<!-- sync: name -->` shows.
BLOCKS: Dict[str, Block] = {
    "check-oracle": Block(
        "conform",
        check_oracle,
        view(line(r"^function +family "), row("grpo"), row("vanilla"), row("token_k1"), elide, last),
    ),
    "validate-example": Block(
        f"conform validate --adapter {EXAMPLE} --python {PYTHON}", validate_example, validate_view
    ),
    "validate-torch-adapter": Block("conform validate --adapter /tmp/torch_adapter.py (imports torch)", torch_adapter),
    "write-baseline": Block("cat the file validate --write-baseline wrote (biased_std)", write_baseline),
    "baseline": Block("conform validate ... --baseline /tmp/accepted.txt (biased_std)", baseline, drop(1)),
    "wheel-validate": Block("verlconf validate --adapter numpy_example --only grpo,vanilla,k3", wheel_validate, keep=1),
    "pytest-pristine": Block(
        "python -m pytest --verlconf-adapter=numpy_example -rs",
        lambda: pytest_plugin("--verlconf-adapter=numpy_example", "-rs"),
        view(span(r"^collected ", r"^SKIPPED "), elide, last),
        keep=1,
    ),
    "pytest-fault": Block(
        'python -m pytest --verlconf-adapter=numpy_example -k "grpo or vanilla" (biased_std)',
        lambda: pytest_plugin("--verlconf-adapter=numpy_example", "-k", "grpo or vanilla", bug="biased_std"),
        view(span(r"^collected ", r"^    worst abs error "), elide, from_last(r"^  repro: ")),
    ),
    "explore-example": Block("conform explore --adapter numpy_example --cases 300 --jobs 2", explore_example),
    "explore-fault": Block(
        "conform explore --adapter numpy_example --only grpo --out /tmp/explore (biased_std)", explore_fault
    ),
    "check-failure": Block(
        "conform check --candidate /tmp/mine (biased_std)",
        check_failure,
        view(span(r"^FAILED grpo/g4_binary_8x8_f64 ", r"^  repro: ")),
    ),
    "list-k3": Block("conform list kl/k3", list_k3, view(head(3), elide)),
    "drift-torch": Block("conform drift fixtures/verl-0.9.1-torch-2.11.0 fixtures/verl-0.9.1", drift_torch),
}


@lru_cache(maxsize=None)
def rendered(name: str) -> Tuple[str, ...]:
    block = BLOCKS[name]
    return tuple(block.view(block.run().rstrip("\n").split("\n")))


def golden_total() -> int:
    return int(re.match(r"(\d+) cases:", rendered("check-oracle")[-1]).group(1))


def golden_cases(*functions: str) -> int:
    doc = json.loads(conform("list", "--json")[0])
    by_name = {f["name"]: f for f in doc["functions"]}
    return sum(sum(by_name[f]["golden_cases"].values()) for f in functions)


# Counts in the README's prose: a pattern whose one group is the count, and where it comes from.
PROSE: List[Tuple[str, Callable[[], int]]] = [
    (r"judge a candidate on the (\d+) inputs verl was captured on", golden_total),
    (r"\(`properties:golden_test`; (\d+) cases of verl", golden_total),
    (r"example_vanilla +# (\d+) cases: vanilla, low_var_kl, k3", lambda: golden_cases("vanilla", "low_var_kl", "k3")),
]


# ---- the README's blocks ----------------------------------------------------------------


def read_readme() -> List[str]:
    with open(README, encoding="utf-8") as f:
        return f.read().split("\n")


def marked_blocks(lines: List[str]) -> List[Tuple[str, int, int]]:
    """(name, first line, end) of each marked block: lines[first:end] is its text, 0-based."""
    out = []
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise AssertionError(f"README.md:{i + 1}: a sync marker must be followed by a fenced block")
        end = next((k for k in range(i + 2, len(lines)) if lines[k].startswith("```")), None)
        if end is None:
            raise AssertionError(f"README.md:{i + 2}: the block has no closing fence")
        out.append((m.group(1), i + 2, end))
    return out


def new_block(old: List[str], keep: int, real: List[str]) -> List[str]:
    """The block as it should read: its kept lines, then the real output, keeping the
    README's text of each line that differs only in masked parts."""
    body = old[keep:]
    out = old[:keep]
    for i, line in enumerate(real):
        out.append(body[i] if i < len(body) and mask(body[i]) == mask(line) else line)
    return out


def block_problem(name: str, lines: List[str], first: int, end: int) -> str:
    block = BLOCKS[name]
    old = lines[first:end]
    want = [mask(x) for x in rendered(name)]
    have = [mask(x) for x in old[block.keep :]]
    if have == want:
        return ""
    diff = difflib.unified_diff(have, want, "README.md (masked)", f"{block.command} (masked)", lineterm="", n=2)
    return (
        f"README.md:{first + 1}: the block `{name}` is not what `{block.command}` prints now\n"
        + "\n".join(diff)
        + f"\nfix: {FIX}"
    )


def prose_problems(lines: List[str]) -> List[str]:
    out = []
    for pattern, count in PROSE:
        hits = [(i, m) for i, line in enumerate(lines) for m in [re.search(pattern, line)] if m]
        if len(hits) != 1:
            out.append(f"README.md: {len(hits)} lines match {pattern!r}, not one (PROSE in docs/readme_sync_test.py)")
            continue
        (i, m) = hits[0]
        if int(m.group(1)) != count():
            out.append(f"README.md:{i + 1}: says {m.group(1)} where conform counts {count()} ({pattern!r})\nfix: {FIX}")
    return out


def prefetch(name: str) -> None:
    try:
        rendered(name)
    except Exception:  # noqa: BLE001 -- the block's own test runs it again and reports it
        pass


def setUpModule():
    # Two at a time: the pytest runs and the full validate take most of the time.
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(prefetch, BLOCKS))


class ReadmeSync(unittest.TestCase):
    def test_every_entry_marks_one_block(self):
        names = [name for name, _, _ in marked_blocks(read_readme())]
        self.assertEqual(sorted(n for n in names if n not in BLOCKS), [], "markers naming no entry of BLOCKS")
        self.assertEqual(sorted(n for n in BLOCKS if names.count(n) != 1), [], "entries not marked exactly once")

    def test_blocks_are_the_real_output(self):
        lines = read_readme()
        for name, first, end in marked_blocks(lines):
            if name in BLOCKS:
                with self.subTest(block=name):
                    problem = block_problem(name, lines, first, end)
                    self.assertEqual(problem, "", "\n" + problem)

    def test_counts_in_the_prose(self):
        found = prose_problems(read_readme())
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_masks_and_rewrites(self):
        self.assertEqual(
            mask("explored 1 rows, 100 cases in 0.2 s (574 cases/s): 41 passed"),
            mask("explored 1 rows, 100 cases in 12.5 s (8 cases/s): 41 passed"),
        )
        self.assertNotEqual(
            mask("100 cases in 0.2 s (574 cases/s): 41 passed"), mask("100 cases in 0.2 s (574 cases/s): 40 passed")
        )
        self.assertEqual(
            mask("===== 36 passed, 146 skipped in 9.48s ====="), mask("== 36 passed, 146 skipped in 10.87s ==")
        )
        self.assertEqual(
            new_block(["$ cmd", "a in 1.0 s (5 cases/s)", "b"], 1, ["a in 2.0 s (9 cases/s)", "c"]),
            ["$ cmd", "a in 1.0 s (5 cases/s)", "c"],
        )
        self.assertEqual(
            cut_list(["2 function(s) not provided (x): a, b, c"], r"not provided \([^)]*\): ", 2),
            ["2 function(s) not provided (x): a, b, ..."],
        )


def write() -> int:
    setUpModule()
    lines = read_readme()
    changed = []
    for name, first, end in reversed(marked_blocks(lines)):
        if name in BLOCKS and block_problem(name, lines, first, end):
            lines[first:end] = new_block(lines[first:end], BLOCKS[name].keep, list(rendered(name)))
            changed.append(f"README.md:{first + 1}: {name}")
    for pattern, count in PROSE:
        for i, line in enumerate(lines):
            m = re.search(pattern, line)
            if m and int(m.group(1)) != count():
                lines[i] = line[: m.start(1)] + str(count()) + line[m.end(1) :]
                changed.append(f"README.md:{i + 1}: {pattern!r}")
    with open(README, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print("\n".join(sorted(changed)) if changed else "README.md is current")
    return 0


if __name__ == "__main__":
    if not CONFORM:
        sys.exit("usage: readme_sync_test.py CONFORM [--write] [unittest options]")
    TMP = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    try:
        if WRITE:
            sys.exit(write())
        unittest.main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
