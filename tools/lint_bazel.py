#!/usr/bin/env python3
"""The BUILD/.bzl style gate where buildifier cannot be had (tools/lint.sh runs buildifier
when it is installed, this otherwise: neither Debian 12 nor PyPI packages buildifier).

    python3 tools/lint_bazel.py FILE...

Checks the subset of buildifier's formatting that a reader notices and that can be
checked without its parser: the file is Starlark that Python's parser accepts; no tabs,
no trailing whitespace, one newline at the end (or an empty file) and no runs of blank
lines; every list of plain strings given to `srcs`, `hdrs`, `deps`, `data`,
`textual_hdrs` or `exports_files` is free of duplicates and in buildifier's order (file
names, then `:targets`, then `//labels`, then `@repositories`, each compared as its
`.`- and `:`-separated parts), unless, as buildifier allows, a `# do not sort` comment
stands on the line before the list or on its first line (static archives in link
order). Exit 1 naming each file and line that breaks one; 0 when all pass.
"""

from __future__ import annotations

import ast
import sys
from typing import List, Tuple

SORTED_ATTRS = ("srcs", "hdrs", "deps", "data", "textual_hdrs")


def _sort_key(value: str) -> Tuple[int, List[str]]:
    if value.startswith(":"):
        phase = 1
    elif value.startswith("//"):
        phase = 2
    elif value.startswith("@"):
        phase = 3
    else:
        phase = 0
    return phase, value.replace(":", ".").split(".")


def _string_list(node: ast.AST):
    if (
        isinstance(node, ast.List)
        and node.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    ):
        return [e.value for e in node.elts]
    return None


def check_lists(path: str, tree: ast.AST, lines: List[str]) -> List[str]:
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        lists = [(kw.arg, kw.value) for kw in node.keywords if kw.arg in SORTED_ATTRS]
        if isinstance(node.func, ast.Name) and node.func.id == "exports_files" and node.args:
            lists.append(("exports_files", node.args[0]))
        for attr, value in lists:
            # A list joined with another (`[...] + glob(...)`) is checked on its own.
            for part in (value.left, value.right) if isinstance(value, ast.BinOp) else (value,):
                items = _string_list(part)
                if items is None:
                    continue
                around = lines[max(part.lineno - 2, 0) : part.lineno]
                if any("do not sort" in line for line in around):
                    continue
                if len(set(items)) != len(items):
                    out.append(f"{path}:{part.lineno}: {attr} lists a name twice")
                if items != sorted(items, key=_sort_key):
                    want = ", ".join(sorted(items, key=_sort_key))
                    out.append(f"{path}:{part.lineno}: {attr} is not in buildifier's order: {want}")
    return out


def check_text(path: str, text: str) -> List[str]:
    out = []
    lines = text.split("\n")
    if text and (not text.endswith("\n") or text.endswith("\n\n")):
        out.append(f"{path}: must end with exactly one newline")
    blank = 0
    for n, line in enumerate(lines[:-1], 1):
        if "\t" in line:
            out.append(f"{path}:{n}: tab")
        if line != line.rstrip():
            out.append(f"{path}:{n}: trailing whitespace")
        blank = blank + 1 if not line.strip() else 0
        if blank == 3:
            out.append(f"{path}:{n}: more than two blank lines in a row")
    return out


def check_file(path: str) -> List[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = check_text(path, text)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as ex:
        return out + [f"{path}:{ex.lineno}: does not parse: {ex.msg}"]
    return out + check_lists(path, tree, text.split("\n"))


def main(argv: List[str]) -> int:
    problems = [p for path in argv for p in check_file(path)]
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
