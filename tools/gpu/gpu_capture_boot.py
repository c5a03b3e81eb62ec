#!/usr/bin/env python3
"""Runs the capture (fixtures/capture/capture.py) on a machine that has torch, numpy and h5py but neither verl
nor the few packages verl's algorithm modules import (the GPU machine: no registry to
install from). tools/gpu/gpu_capture.sh bundles this file with the capture's own files.

    python3 gpu_capture_boot.py --wheels DIR [--stub ray] [--simulate-bare] -- CAPTURE_ARGS...

--wheels DIR: the carried wheels (verl, omegaconf, tensordict, ...). Those whose tag suits
this interpreter (py3-none-any, or cpXY of this Python) are unpacked into a temporary
directory put first on sys.path: a wheel is a zip of its site-packages tree, so no pip is
needed. --stub NAME (repeatable; default ray): a top-level package that may be replaced by
bench_verl.py's permissive stub module when, and only when, the real import fails. Ray is
imported at the top of verl/protocol.py for its distributed futures and never called on
a path the capture runs; its wheel alone would not fit the device tool's 64 MiB. Every
stub actually used is printed. --simulate-bare hides, as bench_verl.py --simulate-bare
does, every installed package the GPU machine lacks (except the carried wheels), so that
a run here reproduces that machine's import situation.

Exit status: capture.py's; 2 for bad arguments or an unusable wheel directory.
"""

from __future__ import annotations

import argparse
import os
import re
import runpy
import sys
import tempfile
import zipfile
from typing import List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))  # this file is tools/gpu/ of the repository or of the bundle
sys.path.insert(0, os.path.join(REPO, "tools", "bench"))

import bench_verl  # noqa: E402  (stubs and the bare-machine filter, torch-free)


def suitable_wheels(directory: str) -> List[str]:
    """The wheels of `directory` this interpreter can import, one per distribution."""
    tag = "cp%d%d" % sys.version_info[:2]
    chosen = {}
    for name in sorted(os.listdir(directory)):
        m = re.fullmatch(r"([^-]+)-([^-]+)-([^-]+)-([^-]+)-([^-]+)\.whl", name)
        if not m:
            continue
        dist, _version, py, abi, _plat = m.groups()
        if py == "py3" and abi == "none" or py == tag:
            chosen[dist.lower()] = os.path.join(directory, name)
    return sorted(chosen.values())


def unpack(wheels: List[str], into: str) -> List[str]:
    """Extracts the wheels; returns the top-level import names they provide."""
    tops = set()
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            z.extractall(into)
            for n in z.namelist():
                head = n.split("/")[0]
                if head.endswith((".dist-info", ".data")):
                    continue
                tops.add(head[:-3] if head.endswith(".py") else head.split(".")[0])
    return sorted(tops)


def parse(argv: List[str]) -> Tuple[argparse.Namespace, List[str]]:
    if "--" not in argv:
        raise SystemExit("gpu_capture_boot: expected '--' before capture.py's arguments")
    cut = argv.index("--")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheels", required=True)
    ap.add_argument("--stub", action="append", default=None)
    ap.add_argument("--simulate-bare", action="store_true")
    ap.add_argument(
        "--capture",
        default=os.path.join(REPO, "fixtures", "capture", "capture.py"),
        help="the capture script (default: the repository's, or the bundle's fixtures/capture/capture.py)",
    )
    return ap.parse_args(argv[:cut]), argv[cut + 1 :]


def main(argv=None) -> int:
    args, rest = parse(sys.argv[1:] if argv is None else argv)
    if not os.path.isdir(args.wheels):
        print(f"gpu_capture_boot: --wheels {args.wheels}: not a directory", file=sys.stderr)
        return 2
    wheels = suitable_wheels(args.wheels)
    if not any(os.path.basename(w).startswith("verl-") for w in wheels):
        print(f"gpu_capture_boot: no verl wheel in {args.wheels}", file=sys.stderr)
        return 2
    site = tempfile.mkdtemp(prefix="verlconf-capture-site-")
    tops = unpack(wheels, site)
    print("gpu_capture_boot: carried wheels:", ", ".join(os.path.basename(w) for w in wheels))
    if args.simulate_bare:
        hidden = bench_verl.simulate_bare(keep=tuple(tops))
        print(f"gpu_capture_boot: simulate-bare: {len(hidden)} installed package(s) hidden")
    sys.path.insert(0, site)
    finder = bench_verl.StubFinder(args.stub if args.stub is not None else ["ray"])
    sys.meta_path.append(finder)
    sys.argv = [args.capture] + rest
    code = 0
    try:
        runpy.run_path(args.capture, run_name="__main__")
    except SystemExit as ex:
        code = ex.code if isinstance(ex.code, int) else (0 if ex.code is None else 1)
    for s in sorted(set(finder.stubbed)):
        print(f"gpu_capture_boot: stubbed {s} (its real import failed; permissive stub module)")
    if not finder.stubbed:
        print("gpu_capture_boot: no module stubbed")
    return code


if __name__ == "__main__":
    sys.exit(main())
