#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

rollout_correction/decoupled_seq_is, error (exception vs result): 1 row x 1 token, float32.
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
fn = adapter.FUNCTIONS.get("rollout_correction/decoupled_seq_is") or adapter.FUNCTIONS["decoupled_seq_is"]

inputs = {
    "old_log_prob": np.array([[0]], dtype=np.float32),
    "response_mask": np.array([[1]], dtype=np.float32),
    "rollout_log_prob": np.array([[0]], dtype=np.float32),
}
cfg = {
    "threshold": 1,
}

try:
    result = fn(inputs, cfg, "float32")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
print("reference        ", "returns a result")
if result is not None:
    print("adapter returned ", result)
