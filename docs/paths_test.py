#!/usr/bin/env python3
"""Every repository path a document or a comment names exists.

Scanned: README.md, fixtures/README.md and docs/**/*.md in full; the comments (and, in
Python and Starlark, the docstrings) of every tracked *.cc *.h *.cu *.cuh *.py *.sh
*.bzl BUILD.bazel file. In them:

- a token that starts with a top-level folder (oracle/ cuda_impl/ fixtures/ properties/
  tools/ docs/ third_party/) or .ci/ names a path that exists in the tree: literally, or
  as a pattern where it holds placeholders (`<family>`, `{stem}`, `$VAR`, `*`, or a word
  in capitals such as NAME or X: `docs/peers/NAME.md`), which then matches at least one
  tracked path;
- a bare `NAME.md` is a file at the root or beside the file that names it;
- any other bare file name, one with a source-like suffix (BARE_SUFFIXES: .cc .cpp .c .h
  .hpp .cu .cuh .py .pyi .sh .bzl .bazel .md .json .jsonl .toml .txt .tsv .csv .h5 .yaml
  .yml .cfg .ini .gz .xz) that is not part of a longer path (no `/` before or after it),
  is the basename of at least one tracked file, or matches one as a pattern (placeholders
  as above: `NAME_adapter.py`, `<family>.h5`, `$fam.json`), or is in ALLOWED (generated
  outputs, examples) or UPSTREAM (a file of verl, a peer framework, torch or Python that
  the text cites by name, each with whose it is and what it holds);
- a Markdown link's target exists, and its `#anchor` is a heading of the target;
- a section cited as `<doc>.md, "Title"` or `<doc>.md "Title"` is a heading of that file;
- nothing points outside the repository (the design notes and the perf anchor's notes
  live in a folder beside the checkout: not part of it, so not to be cited).

Paths and names that are generated or not tracked on purpose are listed in ALLOWED with the
reason; every UPSTREAM name is still cited somewhere.
Run by `bazel test //docs:paths_test`, or directly from the repository root:
`python3 docs/paths_test.py`.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import io
import os
import re
import subprocess
import tokenize
import unittest
from typing import Dict, Iterator, List, Set, Tuple


def _root() -> str:
    # Bazel runs this beside symlinks into the source tree (the test is tagged local so
    # that they lead there); run directly, the repository is this file's parent's parent.
    here = os.path.realpath(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


ROOT = _root()
TOP = ("oracle", "cuda_impl", "fixtures", "properties", "tools", "docs", "third_party", ".ci")

# (pattern, reason): paths named on purpose that are not in the tree.
ALLOWED = [
    (
        "fixtures/verl-*-cuda*",
        "a GPU golden set's folder: unpacked from its committed .tar.xz by fixtures/unpack_goldens.py "
        "(Bazel unpacks it for the tests), or a new capture of tools/gpu/gpu_capture.sh",
    ),
    ("ratio_table.md", "written by tools/bench/ratio_table.py into the GPU check's output folder"),
    # Bare names of files that a run writes (none is committed).
    ("explore.json", "conform explore's result in its --out folder (and in docs/peers/explore/*.tar.xz)"),
    ("bench.json", "tools/gpu/gpu_check.sh's CUDA benchmark result in its output folder"),
    ("bench_verl.json", "tools/gpu/gpu_check.sh's verl benchmark result in its output folder"),
    ("cuda_bench.json", "the CUDA benchmark's JSON in tools/bench/ratio_table.py's usage line"),
    ("summary.txt", "the GPU check's and the GPU capture's one-line summary in their output folders"),
    ("gpu-check.tar.gz", "tools/gpu/bundle_run.sh's archive of every log and JSON of a GPU check"),
    ("verl-0.9.1-cpu.tar.gz", "tools/gpu/gpu_capture.sh's archive of the CPU golden set it captures"),
    ("verl-0.9.1-cuda.tar.gz", "tools/gpu/gpu_capture.sh's archive of the GPU golden set it captures"),
    # Example names: a user's files in usage lines and tables, not files of the project.
    ("mine.h5", "a user's candidate file in docs/bad-input.md's table"),
    ("old.h5", "a result file a test plants in tools/harness/harness_test.py"),
    ("x.h5", "the file of an example Bazel-label-like path in this file's found()"),
    ("my_adapter.py", "a user's adapter in the usage lines of tools/python/verlconf"),
]

# (name, whose, what it is): files of other projects that comments and documents name bare,
# as the project cites the code it mirrors or works around. Not a blanket exception: each
# name is listed, and test_every_upstream_name_is_cited fails on one no longer cited.
UPSTREAM = [
    ("core_algos.py", "verl", "verl/trainer/ppo/core_algos.py: the losses, advantages and KL the oracle mirrors"),
    ("rollout_corr_helper.py", "verl", "verl/trainer/ppo/rollout_corr_helper.py: rollout correction"),
    ("algorithm.py", "verl", "verl/trainer/config/algorithm.py: RolloutCorrectionConfig and its presets"),
    ("dp_actor.py", "verl", "verl/workers/actor/dp_actor.py: the legacy actor (docs/verl-quirks.md)"),
    ("protocol.py", "verl", "verl/protocol.py: DataProto, which tools/bench/bench_verl.py stands in for"),
    ("functional.py", "AReaL", "areal/utils/functional/functional.py: its actor and critic losses"),
    ("critic.py", "AReaL", "areal/trainer/ppo/critic.py: the critic trainer's loss"),
    ("data.py", "AReaL", "areal/utils/data.py: KLEstimator and Normalization"),
    ("cli_args.py", "AReaL", "areal/api/cli_args.py: the configs the adapter takes from it"),
    ("fsdp_engine.py", "AReaL", "areal/engine/fsdp_engine.py: FSDPEngine.train_batch"),
    ("config.py", "SkyRL", "skyrl/train/config/config.py: AlgorithmConfig"),
    ("worker.py", "SkyRL", "skyrl/backends/skyrl_train/workers/worker.py: the policy and critic workers"),
    ("ppo_critic.py", "OpenRLHF", "openrlhf/trainer/ray/ppo_critic.py: CriticPPOTrainer.ppo_train"),
    ("samples_generator.py", "OpenRLHF", "openrlhf/trainer/ppo_utils/samples_generator.py: the trainer's masks"),
    ("ppo_utils.py", "SkyRL", "skyrl/backends/skyrl_train/utils/ppo_utils.py: its losses and estimators"),
    ("torch_utils.py", "SkyRL", "skyrl/backends/skyrl_train/utils/torch_utils.py: masked_mean"),
    ("off_policy_correction_utils.py", "SkyRL", "skyrl/backends/skyrl_train/utils/off_policy_correction_utils.py"),
    ("trainer.py", "SkyRL", "skyrl/train/trainer.py: RayPPOTrainer and its advantage normalisation"),
    ("worker_utils.py", "SkyRL", "skyrl/backends/skyrl_train/workers/worker_utils.py: micro-batch helpers"),
    ("model_wrapper.py", "SkyRL", "skyrl/backends/skyrl_train/workers/model_wrapper.py: the entropy's logits"),
    ("grpo_loss.py", "Liger-Kernel", "liger_kernel/chunked_loss/grpo_loss.py and liger_kernel/ops/grpo_loss.py"),
    ("fused_linear_ppo.py", "Liger-Kernel", "liger_kernel/chunked_loss/fused_linear_ppo.py: the chunked base"),
    ("SumKernel.cpp", "PyTorch", "aten/src/ATen/native/cpu/SumKernel.cpp: the CPU sum's cascade order"),
    ("site.py", "CPython", "the interpreter's start-up module, which runs .pth files"),
]

# (file, what it names, reason): stale names let through on purpose, each an exact
# (file, name) pair so that nothing else in those files is; none today.
OWNED_ELSEWHERE: list = []

DOCS = ("README.md", "fixtures/README.md")
SOURCE_SUFFIXES = (".cc", ".h", ".cu", ".cuh", ".py", ".sh", ".bzl")

# A path runs to the first blank or quote; <placeholders>, {a,b} and [01] groups belong to it.
PATH_TOKEN = re.compile(
    r"(?<![\w./@$-])((?:%s)/(?:<[^>\s]*>|\{[^}\s]*\}|\[[^\]\s]*\]|[^\s`'\"()\[\],;|<])*)"
    % "|".join(re.escape(t) for t in TOP)
)
BARE_MD = re.compile(r"(?<![\w./-])([A-Za-z0-9_-]+\.md)\b")
BARE_SUFFIXES = (
    "cc cpp c h hpp cu cuh py pyi sh bzl bazel md json jsonl toml txt tsv csv h5 yaml yml cfg ini gz xz".split()
)
# A bare file name: word characters, `-`, `+`, inner dots and placeholders, then one of the
# suffixes; not preceded by a path, an escape (`cand\nx.h5`) or a placeholder's end, and not
# followed by more of a name or a path (`oracle/core/` as a folder, `x.json.bak`).
_PLACEHOLDER = r"<[^>\s]*>|\{[^}\s]*\}|\$\{?\w+\}?"
BARE_NAME = re.compile(
    r"(?<![\w./@$<>{}*\\-])((?:%s|[\w*+-])(?:%s|[\w*+-]|\.(?=[\w<{$*]))*\.(?:%s))(?![\w/<{$*+-]|\.\w)"
    % (_PLACEHOLDER, _PLACEHOLDER, "|".join(sorted(BARE_SUFFIXES, key=len, reverse=True)))
)
MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SECTION = re.compile(r"([\w./-]+\.md),? \"([^\"]+)\"")
OUTSIDE = re.compile(r"\.\./shared\b|/work/shared\b|\bDESIGN\.md\b")


def tracked() -> Set[str]:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        files = {f for f in out.split("\0") if f}
    except (OSError, subprocess.CalledProcessError):
        files = set()
        for d, dirs, names in os.walk(ROOT):
            dirs[:] = [x for x in dirs if not x.startswith((".git", "bazel-"))]
            files |= {os.path.relpath(os.path.join(d, n), ROOT) for n in names}
    # New files count once they are on disk and not ignored; deleted ones no longer do.
    return {f for f in files if os.path.lexists(os.path.join(ROOT, f))}


FILES = tracked()
DIRS = {os.path.dirname(f) for f in FILES}
for _f in list(DIRS):
    while _f:
        _f = os.path.dirname(_f)
        DIRS.add(_f)


BASENAMES = {os.path.basename(f) for f in FILES}


def exists(path: str) -> bool:
    p = path.rstrip("/")
    return p in FILES or p in DIRS


def as_pattern(path: str) -> str:
    p = re.sub(r"<[^>]*>|\{[^}]*\}|\$\{?\w+\}?", "*", path)
    return re.sub(r"(?<![A-Za-z])[A-Z][A-Z0-9_]*(?![a-z])", "*", p)


def matches(pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    return any(fnmatch.fnmatchcase(f, pattern) for f in FILES | DIRS)


def allowed(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path.rstrip("/"), pat) for pat, _ in ALLOWED)


def owned_elsewhere(f: str, text: str) -> bool:
    return any(f == o and name in text for o, name, _ in OWNED_ELSEWHERE)


def clean(token: str) -> str:
    return token.rstrip(".:,!?'\"")


def found(p: str) -> bool:
    """A path, a Bazel label's package (`tools/gpu:cuda_test`, `x.h5:/group`), a module
    named by its stem (`tools/cli/report_file` for report_file.h and .cc), or a pattern."""
    p = p.split(":", 1)[0]
    return exists(p) or allowed(p) or matches(as_pattern(p)) or matches(as_pattern(p) + ".*")


def upstream(name: str) -> bool:
    return any(name == u for u, _, _ in UPSTREAM)


def bare_name_found(name: str) -> bool:
    """A bare file name is some tracked file's basename (or matches one as a pattern), a
    generated or example name in ALLOWED, or another project's file in UPSTREAM."""
    if name in BASENAMES or allowed(name) or upstream(name):
        return True
    pattern = as_pattern(name)
    return any(fnmatch.fnmatchcase(b, pattern) for b in BASENAMES)


def bare_names(text: str) -> Iterator[str]:
    """The bare file names in a piece of text, less the `NAME.md` ones BARE_MD checks."""
    for m in BARE_NAME.finditer(text):
        if not BARE_MD.fullmatch(m.group(1)):
            yield m.group(1)


def python_comments(text: str) -> Iterator[Tuple[int, str]]:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError):
        pass
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    yield first.lineno, first.value.value


def hash_comments(text: str) -> Iterator[Tuple[int, str]]:
    for n, line in enumerate(text.split("\n"), 1):
        m = re.search(r"(?:^|\s)(#.*)$", line)
        if m:
            yield n, m.group(1)


def c_comments(text: str) -> Iterator[Tuple[int, str]]:
    # String and character literals first, so that "//label" in code is no comment.
    blank = re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', lambda m: " " * len(m.group(0)), text)
    for m in re.finditer(r"//[^\n]*|/\*.*?\*/", blank, re.S):
        yield text.count("\n", 0, m.start()) + 1, text[m.start() : m.end()]


def comments(path: str, text: str) -> Iterator[Tuple[int, str]]:
    name = os.path.basename(path)
    if path.endswith(".py"):
        yield from python_comments(text)
    elif path.endswith((".bzl",)) or name == "BUILD.bazel":
        yield from hash_comments(text)
        yield from ((n, s) for n, s in python_comments(text) if not s.startswith("#"))
    elif path.endswith(".sh"):
        yield from hash_comments(text)
    else:
        yield from c_comments(text)


def headings(path: str) -> Set[str]:
    out = set()
    fence = False
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and line.startswith("#"):
                out.add(line.lstrip("#").strip())
    return out


def slug(title: str) -> str:
    s = title.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def scanned() -> Dict[str, List[Tuple[int, str]]]:
    """path -> (line, text) pieces to read."""
    out: Dict[str, List[Tuple[int, str]]] = {}
    for f in sorted(FILES):
        full = os.path.join(ROOT, f)
        if f in DOCS or (f.startswith("docs/") and f.endswith(".md")):
            with open(full, encoding="utf-8") as fh:
                out[f] = [(n, line) for n, line in enumerate(fh.read().split("\n"), 1)]
        elif f.endswith(SOURCE_SUFFIXES) or os.path.basename(f) == "BUILD.bazel":
            if f.startswith("third_party/") and not f.endswith((".bzl", "BUILD.bazel")):
                continue  # vendored shims keep their upstream comments
            try:
                with open(full, encoding="utf-8") as fh:
                    text = fh.read()
            except (UnicodeDecodeError, OSError):
                continue
            pieces = []
            for n, c in comments(f, text):
                pieces += [(n + k, line) for k, line in enumerate(c.split("\n"))]
            out[f] = pieces
    return out


def problems() -> List[str]:
    out: List[str] = []
    for f, pieces in scanned().items():
        here = os.path.dirname(f)
        is_md = f.endswith(".md")
        for n, text in pieces:
            where = f"{f}:{n}"
            for m in PATH_TOKEN.finditer(text):
                p = clean(m.group(1))
                if "://" in text[max(m.start() - 12, 0) : m.start()]:
                    continue  # part of a URL
                if found(p) or owned_elsewhere(f, p):
                    continue
                out.append(f"{where}: {p} does not exist")
            for m in BARE_MD.finditer(text):
                name = m.group(1)
                if name == "DESIGN.md":
                    continue  # reported below
                candidates = [name, os.path.join(here, name), os.path.join("docs", name)]
                if allowed(name) or any(exists(c) or matches(as_pattern(c)) for c in candidates):
                    continue
                out.append(f"{where}: {name} is neither at the root nor beside {f}")
            for name in bare_names(text):
                if not (bare_name_found(name) or owned_elsewhere(f, name)):
                    out.append(f"{where}: {name} is the name of no tracked file")
            if OUTSIDE.search(text):
                out.append(f"{where}: points outside the repository ({OUTSIDE.search(text).group(0)})")
            for m in SECTION.finditer(text):
                doc, title = m.group(1), m.group(2)
                target = doc if exists(doc) else os.path.normpath(os.path.join(here, doc))
                if owned_elsewhere(f, m.group(0)):
                    continue
                if exists(target) and title.replace("`", "") not in {h.replace("`", "") for h in headings(target)}:
                    out.append(f'{where}: {doc} has no section "{title}"')
            if not is_md:
                continue
            for m in MD_LINK.finditer(text):
                link = m.group(1)
                if re.match(r"[a-z]+:", link):
                    continue
                file_part, _, anchor = link.partition("#")
                target = os.path.normpath(os.path.join(here, file_part)) if file_part else f
                if not exists(target):
                    out.append(f"{where}: link to {link}: {target} does not exist")
                elif anchor and target.endswith(".md") and anchor not in {slug(h) for h in headings(target)}:
                    out.append(f"{where}: link to {link}: {target} has no section #{anchor}")
    return out


class RepositoryPaths(unittest.TestCase):
    def test_the_tree_was_found(self):
        self.assertIn("README.md", FILES, ROOT)
        self.assertIn("oracle", DIRS)

    def test_every_named_path_exists(self):
        found = problems()
        self.assertEqual(found, [], "\n" + "\n".join(found))

    def test_the_checks_catch_what_they_are_for(self):
        self.assertTrue(exists("oracle/core"))
        self.assertTrue(matches(as_pattern("oracle/<family>/spec*.cc")))
        self.assertTrue(matches(as_pattern("docs/peers/NAME.md")))
        self.assertFalse(matches(as_pattern("oracle/<family>/no_such_file.cc")))
        self.assertEqual(slug("Set up and run"), "set-up-and-run")
        self.assertEqual(clean("fixtures/README.md)."), "fixtures/README.md)")
        self.assertEqual(PATH_TOKEN.findall("see `tools/lint.sh` and //tools:conform"), ["tools/lint.sh"])
        self.assertTrue(OUTSIDE.search("the notes in ../shared/x.md"))

    def test_bare_file_names_are_checked(self):
        text = "see no_such_file.cc, spec_common.h and core_algos.py; not oracle/core/gone.cc"
        self.assertEqual(list(bare_names(text)), ["no_such_file.cc", "spec_common.h", "core_algos.py"])
        self.assertFalse(bare_name_found("no_such_file.cc"))  # a made-up stale name
        self.assertIn("spec_common.h", BASENAMES)
        self.assertTrue(bare_name_found("spec_common.h"))  # an existing basename
        self.assertTrue(bare_name_found("core_algos.py"))  # verl's, in UPSTREAM
        self.assertTrue(bare_name_found("explore.json"))  # generated, in ALLOWED
        self.assertTrue(bare_name_found("NAME_adapter.py"))  # a pattern of tracked names
        self.assertFalse(bare_name_found("NAME_no_such.py"))
        # Not bare names: a folder, a longer suffix, an escape, a sentence's end is not one.
        self.assertEqual(list(bare_names("tools/x.py/ a.json.bak cand\\nx.h5 run.sh.")), ["run.sh"])
        self.assertEqual(list(bare_names("`<family>.h5` and gpu-check.tar.gz")), ["<family>.h5", "gpu-check.tar.gz"])
        self.assertEqual(list(bare_names("README.md is BARE_MD's")), [])

    def test_every_upstream_name_is_cited(self):
        cited = {n for pieces in scanned().values() for _, text in pieces for n in bare_names(text)}
        self.assertEqual([u for u, _, _ in UPSTREAM if u not in cited], [])


if __name__ == "__main__":
    unittest.main()
