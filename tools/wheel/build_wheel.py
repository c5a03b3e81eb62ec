#!/usr/bin/env python3
"""Write the verlconf wheel from Bazel's outputs (tools/wheel/BUILD.bazel runs it).

    build_wheel.py --out DIR --version V --revision FILE --conform BINARY SHORT_PATH=PATH...

Each SHORT_PATH=PATH is a file of the repository (SHORT_PATH, from its root) that Bazel
has at PATH. The verlconf package (tools/python/verlconf/) and the module adapters
import the contract by (tools/python/verlconf_harness.py) go to the top of the wheel;
every other file to verlconf/_data/SHORT_PATH, and the binary to verlconf/_data/conform,
the layout conform and verlconf.layout look for.

The wheel is tagged for the glibc the binary asks for: manylinux_X_Y_x86_64 where
GLIBC_X.Y is the newest symbol version it needs. It must need nothing dynamically but
glibc's own libraries (the C++ runtime and HDF5 are linked in, tools/wheel/BUILD.bazel); the
build fails naming any other. Only the standard library writes it (zipfile), so the build
needs no network and no pip: the same inputs give the same bytes (fixed timestamps,
sorted entries).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import struct
import sys
import zipfile
from typing import Dict, List, Tuple

NAME = "verlconf"
PACKAGE_SRC = "tools/python/"
DATA = "verlconf/_data/"
# glibc's libraries: what every x86-64 Linux has, and the only ones the binary may need.
GLIBC_LIBS = frozenset(
    ["libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "libpthread.so.0", "libdl.so.2", "librt.so.1"]
)
EM_X86_64 = 62
SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1
ZIP_TIME = (1980, 1, 1, 0, 0, 0)

SUMMARY = "conform (verl's RL algorithm layer: golden cases, oracle, judge), its goldens, harness and pytest plugin"
DESCRIPTION = """\
verlconf checks an implementation of verl's algorithm layer (advantage estimators, policy
losses, loss aggregation, KL estimators, rollout correction) against upstream verl's
golden results. This wheel carries the conform binary (statically linked but for glibc),
the verl 0.9.1 goldens, the candidate harness and the bundled adapters:

    verlconf validate --adapter my_adapter.py
    pytest --verlconf-adapter=my_adapter.py
"""


class BadBinary(Exception):
    pass


def elf_needs(path: str) -> Tuple[List[str], List[str]]:
    """(DT_NEEDED libraries, version names it needs such as GLIBC_2.34) of an x86-64 ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise BadBinary(f"{path}: not a 64-bit little-endian ELF file")
    (e_machine,) = struct.unpack_from("<H", data, 18)
    if e_machine != EM_X86_64:
        raise BadBinary(f"{path}: built for machine {e_machine}, not x86-64")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for k in range(e_shnum):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info, ...
        _, sh_type, _, _, off, size, link, info = struct.unpack_from("<IIQQQQII", data, e_shoff + k * e_shentsize)
        sections.append((sh_type, off, size, link, info))

    def string(strtab: int, at: int) -> str:
        start = sections[strtab][1] + at
        return data[start : data.index(b"\0", start)].decode()

    needed: List[str] = []
    versions: List[str] = []
    for sh_type, off, size, link, info in sections:
        if sh_type == SHT_DYNAMIC:
            for k in range(size // 16):
                tag, val = struct.unpack_from("<qQ", data, off + 16 * k)
                if tag == DT_NEEDED:
                    needed.append(string(link, val))
        elif sh_type == SHT_GNU_VERNEED:
            at = off
            for _ in range(info):  # sh_info: the number of Verneed entries
                _, cnt, _, aux, nxt = struct.unpack_from("<HHIII", data, at)
                a = at + aux
                for _ in range(cnt):
                    _, _, _, name, anext = struct.unpack_from("<IHHII", data, a)
                    versions.append(string(link, name))
                    a += anext
                at += nxt
    return needed, versions


def platform_tag(conform: str) -> str:
    needed, versions = elf_needs(conform)
    other = sorted(set(needed) - GLIBC_LIBS)
    if other:
        raise BadBinary(
            f"{conform} needs {', '.join(other)} at run time: the wheel carries the binary alone; "
            "link them statically (tools/wheel/BUILD.bazel, conform's linkopts)"
        )
    glibc = [
        tuple(int(x) for x in m.groups())
        for m in (re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)*", v) for v in versions)
        if m
    ]
    major, minor = max(glibc, default=(2, 17))
    return f"manylinux_{major}_{minor}_x86_64"


def wheel_version(base: str, revision: str) -> str:
    """base, with the revision as a local version label where it is one (`git describe`)."""
    label = re.sub(r"[^a-z0-9]+", ".", revision.strip().lower()).strip(".")
    return base if label in ("", "unknown") else f"{base}+{label}"


def destinations(conform: str, files: List[str]) -> Dict[str, str]:
    """Path in the wheel -> file on disk."""
    out = {DATA + "conform": conform}
    for spec in files:
        short, _, path = spec.partition("=")
        if not path:
            raise ValueError(f"expected SHORT_PATH=PATH, got '{spec}'")
        dest = short[len(PACKAGE_SRC) :] if short.startswith(PACKAGE_SRC) else DATA + short
        if dest in out:
            raise ValueError(f"two files for {dest}: {out[dest]} and {path}")
        out[dest] = path
    return out


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def write_wheel(out_dir: str, version: str, tag: str, entries: Dict[str, str]) -> str:
    dist_info = f"{NAME}-{version}.dist-info"
    meta = {
        f"{dist_info}/METADATA": "".join(
            [
                "Metadata-Version: 2.1\n",
                f"Name: {NAME}\n",
                f"Version: {version}\n",
                f"Summary: {SUMMARY}\n",
                "Requires-Python: >=3.9\n",
                "Requires-Dist: numpy\n",
                "Requires-Dist: h5py\n",
                "Provides-Extra: pytest\n",
                'Requires-Dist: pytest>=7; extra == "pytest"\n',  # tested with Debian 12's 7.2
                "Provides-Extra: ray\n",
                'Requires-Dist: ray>=2.40; extra == "ray"\n',  # python -m verlconf.ray_explore; tested with 2.60
                "Description-Content-Type: text/plain\n",
                "\n",
                DESCRIPTION,
            ]
        ),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: verlconf tools/wheel/build_wheel.py\n"
            f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n"
        ),
        f"{dist_info}/entry_points.txt": (
            "[console_scripts]\nverlconf = verlconf.command:main\n\n[pytest11]\nverlconf = verlconf.pytest_plugin\n"
        ),
        f"{dist_info}/top_level.txt": "verlconf\nverlconf_harness\n",
    }
    path = os.path.join(out_dir, f"{NAME}-{version}-py3-none-{tag}.whl")
    record = []
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:

        def add(name: str, data: bytes, executable: bool = False) -> None:
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = (0o100755 if executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append(f"{name},{_digest(data)},{len(data)}")

        for name in sorted(entries):
            with open(entries[name], "rb") as f:
                add(name, f.read(), executable=name == DATA + "conform")
        for name in sorted(meta):
            add(name, meta[name].encode())
        rec = f"{dist_info}/RECORD"
        add_record = "\n".join(record + [f"{rec},,"]) + "\n"
        info = zipfile.ZipInfo(rec, ZIP_TIME)
        info.external_attr = 0o100644 << 16
        z.writestr(info, add_record, zipfile.ZIP_DEFLATED)
    os.replace(tmp, path)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the directory to write the wheel into")
    ap.add_argument("--version", required=True, help="the version, before the revision's local label")
    ap.add_argument("--revision", required=True, help="a file holding the source revision")
    ap.add_argument("--conform", required=True, help="the conform binary")
    ap.add_argument("files", nargs="+", metavar="SHORT_PATH=PATH")
    a = ap.parse_args(argv)
    try:
        tag = platform_tag(a.conform)
        with open(a.revision) as f:
            version = wheel_version(a.version, f.read())
        os.makedirs(a.out, exist_ok=True)
        print(write_wheel(a.out, version, tag, destinations(a.conform, a.files)))
    except (BadBinary, ValueError, OSError) as e:
        print(f"build_wheel: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
