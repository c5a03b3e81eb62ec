#!/usr/bin/env python3
"""Every file conform writes goes through one writer: tools/cli/report_file.cc (AtomicFile:
an exclusive, unpredictable temporary beside the target, fsync, rename) or, for fixture
files, tools/h5/h5io.cc (WriteFixtureFile: the same rule through libhdf5). Any other
way of opening a file for writing in conform's sources is a finding, named by file and
line. Benchmarks, fuzzers, the device tests and the LibTorch example are not conform and
are not checked.

    tools/lint_writers.py FILE...
"""

import re
import sys

WRITERS = {"tools/cli/report_file.cc", "tools/h5/h5io.cc"}
PATTERNS = [
    (re.compile(r"\bstd::ofstream\b|\bstd::fstream\b"), "an ofstream"),
    (re.compile(r"\bfopen\s*\([^)]*\"[wa]"), "fopen for writing"),
    (re.compile(r"\bopen\s*\([^;]*O_(WRONLY|RDWR|CREAT)"), "open for writing"),
    (re.compile(r"\bH5Fcreate\s*\("), "H5Fcreate"),
    (re.compile(r"\.tmp\""), "a fixed temporary name"),
    (re.compile(r"\bstd::rename\s*\(|\brename\s*\("), "a rename into place"),
]
# Writes that are not files a user names: the reader's hand-back (a pipe), /dev/null.
ALLOWED = [re.compile(r"/dev/null")]


def main(paths):
    findings = []
    for path in paths:
        if path in WRITERS:
            continue
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                code = line.split("//")[0]
                if any(a.search(code) for a in ALLOWED):
                    continue
                for pattern, what in PATTERNS:
                    if pattern.search(code):
                        findings.append(f"{path}:{n}: {what}; write through AtomicFile (tools/cli/report_file.h)")
    for f in findings:
        print(f, file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
