"""Proves py_test runs Debian's /usr/bin/python3 with numpy and h5py."""

import os
import sys
import unittest

import h5py
import numpy as np


class PythonToolchainSmoke(unittest.TestCase):
    def test_interpreter_is_system_python(self):
        self.assertEqual(os.path.realpath(sys.executable), os.path.realpath("/usr/bin/python3"))

    def test_h5py_roundtrip(self):
        path = os.path.join(os.environ["TEST_TMPDIR"], "smoke.h5")
        want = np.arange(6, dtype=np.float64).reshape(2, 3)
        with h5py.File(path, "w") as f:
            f["x"] = want
        with h5py.File(path, "r") as f:
            np.testing.assert_array_equal(f["x"][...], want)


if __name__ == "__main__":
    unittest.main()
