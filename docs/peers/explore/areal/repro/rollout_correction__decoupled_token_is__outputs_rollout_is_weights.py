#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

rollout_correction/decoupled_token_is, outputs/rollout_is_weights (value): 1 row x 1 token, float64.
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
fn = adapter.FUNCTIONS.get("rollout_correction/decoupled_token_is") or adapter.FUNCTIONS["decoupled_token_is"]

inputs = {
    "old_log_prob": np.array([[-1]], dtype=np.float64),
    "response_mask": np.array([[1]], dtype=np.float64),
    "rollout_log_prob": np.array([[0]], dtype=np.float64),
}
cfg = {
    "threshold": 2,
}

try:
    result = fn(inputs, cfg, "float64")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
np.set_printoptions(precision=17, floatmode="unique")
if result is not None:
    got = (result.get("outputs") or {}).get("rollout_is_weights")
    print("adapter   outputs/rollout_is_weights:", None if got is None else np.asarray(got))
print("reference outputs/rollout_is_weights:", np.array([[0.36787944117144233]], dtype=np.float64))
