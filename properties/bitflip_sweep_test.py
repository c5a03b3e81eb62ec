"""One flipped bit in a bundled golden file, at a fixed, seeded set of places in every
family file: the real conform binary ends in a result (exit 0 or 1) or a one-line
bad-input refusal naming the file (exit 2), never a signal and never an internal error
(exit 3). docs/bad-input.md, "The reader's limits".

Most flips land in the file's metadata (object headers, B-trees, local, global and
fractal heaps: what libhdf5 parses and has crashed or looped on), found as the bytes
outside every dataset's stored data; those runs are `conform list`, which reads every
group, attribute and dataset. The rest land in stored data and run `conform check`, so
that damaged values go through validation and the judge.

VERLCONF_BITFLIP_FLIPS sets the number of flips per file (default 64, 448 runs: about a
minute on 2 cores, two and a half under AddressSanitizer)."""

import concurrent.futures
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import h5py

from cli_support import GOLDENS, run  # noqa: E402

FLIPS = int(os.environ.get("VERLCONF_BITFLIP_FLIPS", "64"))
# One in DATA_EVERY flips lands in stored data.
DATA_EVERY = 4
# A loop inside libhdf5 costs the reader's CPU limit; the default minute would make one
# such flip dominate the sweep.
CPU_SECONDS = "20"


def data_extents(path):
    """Sorted (start, end) byte ranges of every dataset's stored data (contiguous
    datasets and chunks; compact data lives in the object header, which is metadata)."""
    out = []
    with h5py.File(path, "r") as f:

        def visit(_, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            layout = obj.id.get_create_plist().get_layout()
            if layout == h5py.h5d.CONTIGUOUS and obj.id.get_offset() is not None:
                out.append((obj.id.get_offset(), obj.id.get_offset() + obj.id.get_storage_size()))
            elif layout == h5py.h5d.CHUNKED:
                for k in range(obj.id.get_num_chunks()):
                    chunk = obj.id.get_chunk_info(k)
                    out.append((chunk.byte_offset, chunk.byte_offset + chunk.size))

        f.visititems(visit)
    return sorted(out)


def complement(extents, size):
    """The byte ranges of [0, size) outside `extents`."""
    out, at = [], 0
    for start, end in extents:
        if start > at:
            out.append((at, start))
        at = max(at, end)
    if at < size:
        out.append((at, size))
    return out


def pick(ranges, rng):
    """A byte offset uniformly over the union of `ranges`."""
    k = rng.randrange(sum(end - start for start, end in ranges))
    for start, end in ranges:
        if k < end - start:
            return start + k
        k -= end - start
    raise AssertionError("unreachable")


def flips(name, path):
    """The sweep's (offset, bit, in stored data) for one family file: the same every run."""
    rng = random.Random("verlconf bit-flip sweep " + name)
    data = data_extents(path)
    meta = complement(data, os.path.getsize(path))
    out = []
    for k in range(FLIPS):
        in_data = k % DATA_EVERY == DATA_EVERY - 1 and bool(data)
        out.append((pick(data if in_data else meta, rng), rng.randrange(8), in_data))
    return out


class BitFlipSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        os.environ["VERLCONF_READER_CPU_SECONDS"] = CPU_SECONDS

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        del os.environ["VERLCONF_READER_CPU_SECONDS"]

    def one(self, name, offset, bit, in_data):
        """conform on a directory holding the family file with one bit flipped: None, or
        what is wrong with the outcome."""
        d = os.path.join(self.tmp, "%s_%d_%d" % (name, offset, bit))
        os.mkdir(d)
        path = os.path.join(d, name + ".h5")
        shutil.copyfile(os.path.join(GOLDENS, name + ".h5"), path)
        with open(path, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)[0]
            f.seek(offset)
            f.write(bytes([byte ^ (1 << bit)]))
        args = ["check", "--against", d] if in_data else ["list", "--against", d]
        code, _, err = run(*args, stdout=subprocess.DEVNULL, timeout=300)
        shutil.rmtree(d, ignore_errors=True)
        where = "%s.h5 byte %d bit %d (%s)" % (name, offset, bit, " ".join(args[:1]))
        lines = [line for line in err.splitlines() if line.strip()]
        if code < 0:
            return "%s: killed by signal %d\n%s" % (where, -code, err)
        if code not in (0, 1, 2):
            return "%s: exit %d\n%s" % (where, code, err)
        if code == 2 and (len(lines) != 1 or not lines[0].startswith("conform: error: " + path)):
            return "%s: exit 2 without one line naming the file\n%s" % (where, err)
        return None

    def test_every_family_file(self):
        names = sorted(n[:-3] for n in os.listdir(GOLDENS) if n.endswith(".h5"))
        self.assertEqual(len(names), 7, names)
        jobs = [(n, *f) for n in names for f in flips(n, os.path.join(GOLDENS, n + ".h5"))]
        # Two at a time: each run is one process reading one file in a child.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            problems = [p for p in pool.map(lambda j: self.one(*j), jobs) if p]
        self.assertEqual(problems, [], "\n\n".join(problems))


if __name__ == "__main__":
    unittest.main()
