"""No CUDA family calls a Thrust algorithm: every pass is a row template (rows.cuh,
select.cuh) that declares its footprint, so the traffic model counts it.

The host policy (host_policy.cuh) marks at run time any algorithm of its list called
outside the templates; this reads the sources for the rest: every `thrust::NAME(` in
cuda_impl must be one of the helpers below (tuples, iterators, pointers, the policies),
never an algorithm, whether the host policy lists it or not. The host policy's own
forwarding and the planted call in rows_test.cc, which checks its marking, are the
exceptions.
"""

import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELPERS = {
    "cpp::par",
    "cuda::par_nosync",
    "cuda_cub::stream",
    "get",
    "get_temporary_buffer",
    "make_constant_iterator",
    "make_counting_iterator",
    "make_discard_iterator",
    "make_pair",
    "make_permutation_iterator",
    "make_transform_iterator",
    "make_tuple",
    "make_zip_iterator",
    "raw_pointer_cast",
    "return_temporary_buffer",
    "tie",
}
PLANTED = ("cuda_impl/core/rows_test.cc", "transform")
FORWARDER = "cuda_impl/core/host_policy.cuh"
CALL = re.compile(r"thrust::([A-Za-z_][A-Za-z_:]*)\s*(?:<[^;()]*>)?\s*\(")


def calls():
    base = os.path.join(ROOT, "cuda_impl")
    for d, _, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith((".cu", ".cuh", ".h", ".cc")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, ROOT)
            if rel == FORWARDER:
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if line.lstrip().startswith("//"):
                        continue
                    for m in CALL.finditer(line):
                        yield rel, n, m.group(1)


class NoRawThrustTest(unittest.TestCase):
    def test_every_thrust_call_is_a_helper(self):
        found = list(calls())
        self.assertGreater(len(found), 20, "the scan found almost no Thrust calls: is it reading cuda_impl?")
        raw = [f"{rel}:{n}: thrust::{name}" for rel, n, name in found if name not in HELPERS and (rel, name) != PLANTED]
        self.assertEqual(raw, [], "Thrust algorithms called outside the row templates:\n" + "\n".join(raw))

    def test_the_scan_sees_an_algorithm(self):
        planted = [f for f in calls() if (f[0], f[2]) == PLANTED]
        self.assertEqual(len(planted), 1, "rows_test.cc's planted thrust::transform should be seen")


if __name__ == "__main__":
    sys.exit(unittest.main())
