#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

kl/k1, grads/logprob (value): 1 row x 1 token, float32.
Run it with the interpreter that has the framework; it calls the adapter's function on
these literal arrays and prints its result beside the reference's.
"""

import importlib.util
import os
import sys

import numpy as np

ADAPTER = "fixtures/adapters/peers/areal_adapter.py"
sys.path[:0] = [os.path.dirname(ADAPTER), "/work/wt-peer2-areal/fixtures/python"]
_spec = importlib.util.spec_from_file_location("adapter_under_test", ADAPTER)
adapter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(adapter)
fn = adapter.FUNCTIONS.get("kl/k1") or adapter.FUNCTIONS["k1"]

inputs = {
    "logprob": np.array([[-11]], dtype=np.float32),
    "ref_logprob": np.array([[0]], dtype=np.float32),
}
cfg = {}

try:
    result = fn(inputs, cfg, "float32")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
np.set_printoptions(precision=17, floatmode="unique")
if result is not None:
    got = (result.get("grads") or {}).get("logprob")
    print("adapter   grads/logprob:", None if got is None else np.asarray(got))
print("reference grads/logprob:", np.array([[1]], dtype=np.float32))
