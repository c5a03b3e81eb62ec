#!/usr/bin/env python3
"""Where things lie inside an HDF5 file, found by the structures' own signatures, so that a
test or a replay that damages one byte names it by what it is and not by an offset that
moves whenever the file is recaptured (a capture rewrites every family file's root
attributes, and everything after them shifts).

    h5_structure.py attack-flips KL_H5    one OFFSET:BIT per line (tools/fuzz/run.sh)

Standard library only.
"""

from __future__ import annotations

import struct
import sys
from typing import List, Tuple


def signatures(path: str, sig: bytes) -> List[int]:
    """Offsets of every occurrence of a 4-byte HDF5 structure signature in the file."""
    with open(path, "rb") as f:
        data = f.read()
    at, out = data.find(sig), []
    while at >= 0:
        out.append(at)
        at = data.find(sig, at + 1)
    return out


def global_heap_collections(path: str) -> List[List[Tuple[int, int, int]]]:
    """Per global heap collection (where h5py keeps variable-length strings), its objects
    as (offset, index, size): "GCOL", version, 3 reserved bytes, the collection's size
    (8), then objects of index (2), reference count (2), 4 reserved bytes, size (8) and
    the data padded to 8 bytes; the last, index 0, is the free space (zeros)."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    for start in signatures(path, b"GCOL"):
        (size,) = struct.unpack_from("<Q", data, start + 8)
        at, objects = start + 16, []
        while at + 16 <= start + size:
            index, _, _, length = struct.unpack_from("<HHIQ", data, at)
            objects.append((at, index, length))
            if index == 0:
                break
            at += 16 + (length + 7) // 8 * 8
        out.append(objects)
    return out


def last_string_before_free_space(path: str) -> Tuple[int, int, int]:
    """The last object of the last collection with more than 512 bytes of free space: grown
    by 128 bytes, its end reaches into the free space's zeros."""
    objects = next(c for c in reversed(global_heap_collections(path)) if c[-1][1] == 0 and c[-1][2] > 512)
    return objects[-2]


def attack_flips(kl_path: str) -> List[Tuple[int, int, str]]:
    """(offset, bit, what) of the single flipped bits in the bundled kl.h5 that an attack on
    the reader found, and the loop its replay adds."""
    blocks = signatures(kl_path, b"FHDB")
    collections = global_heap_collections(kl_path)
    if len(blocks) < 3 or len(collections) < 4:
        raise ValueError(f"{kl_path}: fewer fractal heap blocks or global heap collections than the attack's")
    (object_60,) = [at for at, index, _ in collections[3] if index == 60]
    grown, _, _ = last_string_before_free_space(kl_path)
    return [
        (blocks[1] + 283, 2, "a link heap block of a dense group fails its checksum"),
        (blocks[2] + 101, 2, "a link heap block of a dense group fails its checksum"),
        (object_60 + 8 + 2, 3, "a string's size gains 2^19 (SIGSEGV inside libhdf5)"),
        (grown + 8, 7, "a string grown into the free space (libhdf5's parser loops)"),
    ]


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "attack-flips":
        sys.exit("usage: h5_structure.py attack-flips KL_H5")
    for offset, bit, _ in attack_flips(sys.argv[2]):
        print(f"{offset}:{bit}")
