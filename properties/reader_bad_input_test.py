"""Bad input that attacks the fixture reader itself (docs/bad-input.md, "The reader's
limits"): declared sizes the file does not back, link structures that never end,
paths that are not regular files, names and values that would break the one-line
message, and libhdf5 refusals that must say what they are. Every test runs the real
conform binary on a file it crafts with h5py and expects exit 2 with exactly one
stderr line naming the file (and the case and field where there is one), within a
timeout: a hang is a failure too."""

import fcntl
import os
import resource
import signal
import shutil
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

from cli_support import GOLDENS, assert_bad_input, run  # noqa: E402
from h5_structure import attack_flips, global_heap_collections, last_string_before_free_space, signatures


def first_case(f, function):
    return next(c for c in sorted(f[function]) if "expect_error" not in f[function][c].attrs)


def flip(path, offset, bit):
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ (1 << bit)]))


class ReaderBadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.dir = os.path.join(self.tmp, "goldens")
        os.mkdir(self.dir)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def family(self, name="kl"):
        path = os.path.join(self.dir, name + ".h5")
        shutil.copyfile(os.path.join(GOLDENS, name + ".h5"), path)
        os.chmod(path, 0o644)
        return path

    def edit(self, edit, family="kl", function="k1"):
        """Copies one golden family file into the set, applies edit(file, case group)
        to the first case of `function`; returns (path, "function/case")."""
        path = self.family(family)
        with h5py.File(path, "r+") as f:
            case = first_case(f, function)
            edit(f, f[function][case])
        return path, function + "/" + case

    def assertBadInput(self, args, *needles, timeout=120):
        try:
            result = run(*args, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail("conform %s did not finish within %d s" % (" ".join(args), timeout))
        line = assert_bad_input(self, result, *needles)
        self.assertTrue(line.startswith("conform: error: "), line)
        self.assertTrue(line.isprintable(), repr(line))
        return line

    def check(self, *needles, **kw):
        return self.assertBadInput(["check", "--against", self.dir], *needles, **kw)

    # --- declared sizes -----------------------------------------------------------
    def replace_input(self, g, shape, **kw):
        del g["inputs"]["logprob"]
        g["inputs"].create_dataset("logprob", shape=shape, dtype="f8", **kw)

    def test_dimension_products_beyond_int64_or_the_cap(self):
        # Products that wrap int64 (2^66, 2^64), that fit int64 but not memory, and a
        # zero dimension beside a huge one (no elements, but indices beyond any cap).
        for shape in [(16, 2**62), (2**32, 2**32), (2**31, 1), (3, 2**61, 5), (2**63 - 1,)]:
            with self.subTest(shape=shape):
                chunks = (1,) * len(shape)
                path, case = self.edit(lambda f, g: self.replace_input(g, shape, chunks=chunks))
                self.check(path, case, "inputs/logprob", "exceeds 16777216 elements")
        path, case = self.edit(lambda f, g: self.replace_input(g, (0, 2**62), maxshape=(None, None), chunks=(1, 1)))
        self.check(path, case, "inputs/logprob", "exceeds 16777216 elements")

    def test_declared_data_that_is_not_stored(self):
        # Below the caps, but never written: the file is small and would still cost
        # the full size in fill values.
        for layout, kw, needle in [
            ("chunked", {"chunks": (100, 100)}, "holds no data"),
            ("contiguous", {}, "stores 0 bytes"),
        ]:
            with self.subTest(layout=layout):
                path, case = self.edit(lambda f, g: self.replace_input(g, (1000, 1000), **kw))
                self.check(path, case, "inputs/logprob", needle, "the schema has no fill values")

    def test_some_chunks_missing(self):
        def edit(f, g):
            self.replace_input(g, (2, 64), chunks=(1, 16))
            g["inputs/logprob"][0, :] = 1.0  # row 1's four chunks stay unwritten

        path, case = self.edit(edit)
        self.check(path, case, "inputs/logprob", "holds no data")

    def test_case_cap_counts_hard_linked_copies(self):
        # One stored dataset of 2^23 + 1 elements (compressed zeros: a small file),
        # linked twice into one case: each link is read, so the case exceeds 2^24.
        def edit(f, g):
            del g["outputs"]["kl"]
            g["outputs"].create_dataset("kl", data=np.zeros(2**23 + 1), compression="gzip", chunks=(2**20,))
            g["grads"]["logprob_twin"] = g["outputs"]["kl"]

        path, case = self.edit(edit)
        self.check(path, case, "the case would hold more than 16777216 elements")

    # --- link structure -----------------------------------------------------------
    def test_hard_link_cycles(self):
        for name, target in [
            ("self", lambda f, g: g["inputs"]),
            ("case", lambda f, g: g),
            ("function", lambda f, g: g.parent),
        ]:
            with self.subTest(loop_to=name):

                def edit(f, g):
                    g["inputs"]["loop"] = target(f, g)

                path, case = self.edit(edit)
                self.check(path, case, "inputs", "cycle")
        # Through the root, whose members are functions and cases: bounded by depth.
        path, case = self.edit(
            lambda f, g: (
                g["metrics"].__setitem__("root", f["/"])
                if "metrics" in g
                else g.create_group("metrics").__setitem__("root", f["/"])
            )
        )
        self.check(path, case, "metrics")

    def test_links_other_than_hard_links(self):
        fifo = os.path.join(self.tmp, "pipe")
        os.mkfifo(fifo)
        for kind, link in [
            ("external link", h5py.ExternalLink(fifo, "/")),
            ("external link", h5py.ExternalLink(os.path.join(GOLDENS, "kl.h5"), "/k1")),
            ("soft link", h5py.SoftLink("/k1")),
        ]:
            with self.subTest(link=str(link)):
                path, case = self.edit(lambda f, g: g["inputs"].__setitem__("elsewhere", link))
                self.check(
                    path,
                    case,
                    "inputs/elsewhere",
                    "is an " + kind if kind[0] == "e" else "is a " + kind,
                    "hard links only",
                    timeout=60,
                )
        path = self.family()
        with h5py.File(path, "r+") as f:
            f["k9"] = h5py.ExternalLink(fifo, "/")
        self.check(path, "k9", "external link", timeout=60)

    # --- paths that are not regular files -------------------------------------------
    def test_fifo_and_other_non_regular_paths(self):
        self.family()
        fifo = os.path.join(self.tmp, "cand.h5")
        os.mkfifo(fifo)
        self.assertBadInput(["check", "--against", self.dir, "--candidate", fifo], fifo, "is a FIFO", timeout=60)
        # Inside a directory: an entry named *.h5 that is not a regular file is refused
        # by name, not skipped.
        os.mkfifo(os.path.join(self.dir, "pipe.h5"))
        self.check(os.path.join(self.dir, "pipe.h5"), "is a FIFO", timeout=60)
        os.unlink(os.path.join(self.dir, "pipe.h5"))
        os.mkdir(os.path.join(self.dir, "sub.h5"))
        self.check(os.path.join(self.dir, "sub.h5"), "is a directory")
        os.rmdir(os.path.join(self.dir, "sub.h5"))
        os.symlink(fifo, os.path.join(self.dir, "link.h5"))
        self.check(os.path.join(self.dir, "link.h5"), "is a FIFO", timeout=60)

    def test_storage_outside_the_file(self):
        raw = os.path.join(self.tmp, "raw.bin")
        with open(raw, "wb") as out:
            out.write(np.zeros(32).tobytes())
        path, case = self.edit(lambda f, g: self.replace_input(g, (4, 8), external=[(raw, 0, 256)]))
        self.check(path, case, "inputs/logprob", "external raw file")

        def virtual(f, g):
            layout = h5py.VirtualLayout(shape=(4, 8), dtype="f8")
            layout[:] = h5py.VirtualSource(os.path.join(GOLDENS, "kl.h5"), "/k1/x", shape=(4, 8))
            del g["inputs"]["logprob"]
            g["inputs"].create_virtual_dataset("logprob", layout)

        path, case = self.edit(virtual)
        self.check(path, case, "inputs/logprob", "virtual dataset")

    # --- names and values -----------------------------------------------------------
    def test_names_outside_the_schema_character_sets(self):
        bad = [
            (b"new\nline_f64", "\\x0A"),
            (b"tab\tbed_f64", "\\x09"),
            (b"bell\x07_f64", "\\x07"),
            (b"not\xffutf8_f64", "\\xFF"),
            (b"Upper_f64", "Upper_f64"),
            (b"sp ace_f64", "sp ace_f64"),
            ("caf\u00e9_f64".encode(), "\\xC3\\xA9"),
        ]
        for raw, shown in bad:
            with self.subTest(case=raw):
                path = self.family()
                with h5py.File(path, "r+") as f:
                    f["k1"].copy(first_case(f, "k1"), raw)
                line = self.check(path, "k1", "case", shown, "[a-z0-9][a-z0-9_.-]*")
                self.assertNotIn(raw.decode("utf-8", "replace"), line.replace(shown, ""))
        for raw, shown in [(b"k1\n", "\\x0A"), (b"k\xfe1", "\\xFE"), (b"+k1", "+k1")]:
            with self.subTest(function=raw):
                path = self.family()
                with h5py.File(path, "r+") as f:
                    f.copy("k1", raw)
                self.check(path, shown, "[A-Za-z0-9_][A-Za-z0-9_+-]*")
        path, case = self.edit(lambda f, g: g["inputs"].__setitem__(b"log\rprob", g["inputs"]["logprob"]))
        self.check(path, case, "inputs", "\\x0D")
        path, case = self.edit(lambda f, g: g.attrs.__setitem__(b"cfg.a\nb", 1.0))
        self.check(path, case, "attribute name", "cfg.a\\x0Ab")

    def test_string_values_that_break_a_line_or_utf8(self):
        for key, value, needle in [
            ("why", "two\nlines", "control characters"),
            ("dtype", "float64\x1b[31m", "control characters"),
            ("why", np.bytes_(b"\xff\xfe"), "not UTF-8"),
        ]:
            with self.subTest(key=key, value=value):
                path, case = self.edit(lambda f, g: g.attrs.__setitem__(key, value))
                self.check(path, case, "'" + key + "'", needle)
        path = self.family()
        with h5py.File(path, "r+") as f:
            f.attrs["verl_version"] = "0.9.1\nPASSED"
        self.check(path, "'verl_version'", "\\x0A")

    def test_non_finite_config_values(self):
        for value in (np.nan, np.inf, -np.inf):
            with self.subTest(value=value):
                path, case = self.edit(
                    lambda f, g: g.attrs.__setitem__("cfg.clip_ratio", np.float64(value)),
                    family="policy_loss",
                    function="vanilla",
                )
                self.check(
                    path,
                    case,
                    "cfg.clip_ratio",
                    "non-finite value " + str(value).lower(),
                    "config values must be finite",
                )

    # --- what libhdf5 refuses -----------------------------------------------------
    def test_a_file_size_limit_does_not_touch_reading(self):
        # The reader's hand-back is a pipe: ulimit -f (RLIMIT_FSIZE) far below the goldens'
        # size, with SIGXFSZ at its default or ignored, reads them as without it.
        from cli_support import CONFORM  # noqa: E402

        def limit(ignore):
            def pre():
                resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
                if ignore:
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

            return pre

        want = run("check", "--against", GOLDENS, "--only", "kl,token-mean")
        self.assertEqual(want[0], 0, want)
        for ignore in (False, True):
            p = subprocess.run(
                [CONFORM, "check", "--against", GOLDENS, "--only", "kl,token-mean"],
                capture_output=True, text=True, timeout=600, preexec_fn=limit(ignore),
            )  # fmt: skip
            self.assertEqual((p.returncode, p.stdout), (0, want[1]), p.stderr)

    def test_locked_by_another_process(self):
        path = self.family()
        with open(path, "rb") as held:
            fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # what a writing libhdf5 holds
            self.check(path, "locked by another process")

    def test_filter_this_build_lacks(self):
        def edit(f, g):
            del g["inputs"]["logprob"]
            g["inputs"].create_dataset("logprob", data=np.zeros((4, 8)), compression="lzf")

        path, case = self.edit(edit)
        self.check(path, case, "inputs/logprob", "needs HDF5 filter 'lzf' (id 32000), which this build lacks")

    # --- damage libhdf5 itself trips over -------------------------------------------
    # One flipped bit where libhdf5 1.10 trusts the file kills the process that reads it
    # (glibc's "double free or corruption", SIGSEGV) or never returns; conform reads each
    # file in a child process, so it is exit 2 naming the file whatever libhdf5 does.
    def assertDamaged(self, args, path, *needles, **kw):
        line = self.assertBadInput(args, path, *needles, **kw)
        if "HDF5 library" in line:
            self.assertIn("damaged or not written by h5py/HDF5", line)
        return line

    def alone(self, name):
        """The family file, the only one in the set (each subtest damages another)."""
        for n in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, n))
        return self.family(name)

    def damaged(self, name, offset, bit):
        path = self.alone(name)
        flip(path, offset, bit)
        return path

    def test_the_flipped_bits_the_attack_found(self):
        # Two double frees (a dense group's link heap block failing its checksum, after
        # which libhdf5 freed the link table's unset entries) and a SIGSEGV (a string's
        # size grown by 2^19, copied into the attribute's buffer), located by structure
        # (h5_structure.attack_flips) so that a recapture keeps the same damage.
        kl = os.path.join(GOLDENS, "kl.h5")
        needles = ["kl.h5", "kl.h5", "the HDF5 library crashed reading this file"]
        for (offset, bit, what), needle in zip(attack_flips(kl)[:3], needles):
            with self.subTest(offset=offset, bit=bit, what=what):
                path = self.damaged("kl", offset, bit)
                self.assertDamaged(["check", "--against", self.dir], path, needle)
                self.assertDamaged(["check", "--against", self.dir, "--jobs", "4"], path, needle)
                self.assertDamaged(["list", "--against", self.dir], path, needle)
                # The same file as a candidate, and on either side of a drift.
                self.assertDamaged(["check", "--candidate", path], path, needle)
                self.assertDamaged(["drift", GOLDENS, self.dir], path, needle)
                self.assertDamaged(["drift", self.dir, GOLDENS], path, needle)

    def test_a_fractal_heap_block_that_fails_its_checksum(self):
        # Other files, blocks, bytes and bits of the same class (the heaps of dense groups'
        # links and of dense attribute storage).
        for name, block, byte, bit in [
            ("policy_loss", 0, 40, 0),
            ("advantage", -1, 200, 7),
            ("rollout_correction", 0, 33, 4),
            ("kl", 0, 100, 5),
        ]:
            with self.subTest(file=name, byte=byte, bit=bit):
                path = self.alone(name)
                blocks = signatures(path, b"FHDB")
                self.assertTrue(blocks, "%s has no dense group" % name)
                flip(path, blocks[block] + byte, bit)
                self.assertDamaged(["check", "--against", self.dir], path)

    def test_a_global_heap_object_whose_size_grew(self):
        # By 2^24 to 2^47 bytes: libhdf5 copies that much into the string's buffer.
        for name, which, byte, bit in [
            ("advantage", 0, 4, 0),
            ("policy_loss", 2, 5, 6),
            ("reward_kl", 1, 3, 7),
            ("kl", -2, 4, 3),
        ]:
            with self.subTest(file=name, byte=byte, bit=bit):
                path = self.alone(name)
                at, _, _ = global_heap_collections(path)[0][which]
                flip(path, at + 8 + byte, bit)
                self.assertDamaged(["check", "--against", self.dir], path, "the HDF5 library crashed reading this file")

    def test_a_global_heap_object_that_grew_into_the_free_space(self):
        # By 128 bytes, so that the next object header libhdf5 decodes is the free
        # space's zeros: an object of size 0, which its parser steps over by 0 bytes,
        # forever. The child's CPU limit ends it (a minute; 3 s here).
        os.environ["VERLCONF_READER_CPU_SECONDS"] = "3"
        try:
            for name in ("kl", "aggregation", "torch_functional"):
                with self.subTest(file=name):
                    path = self.alone(name)
                    at, _, size = last_string_before_free_space(path)
                    self.assertLess(size, 128)
                    flip(path, at + 8, 7)
                    self.assertDamaged(
                        ["check", "--against", self.dir], path, "did not finish reading this file in 3 s of CPU time"
                    )
        finally:
            del os.environ["VERLCONF_READER_CPU_SECONDS"]

    def test_path_with_a_control_character(self):
        self.family()
        odd = os.path.join(self.tmp, "cand\nx.h5")
        shutil.copyfile(os.path.join(GOLDENS, "kl.h5"), odd)
        self.assertBadInput(["check", "--against", self.dir, "--candidate", odd], "cand\\x0Ax.h5", "control characters")


if __name__ == "__main__":
    unittest.main()
