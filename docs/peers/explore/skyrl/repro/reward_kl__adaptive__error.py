#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

reward_kl/adaptive, error (exception vs result): 0 rows, float64.
Run it with the interpreter that has the framework; it calls the adapter's function on
these literal arrays and prints its result beside the reference's.
"""

import importlib.util
import os
import sys

import numpy as np

ADAPTER = "fixtures/adapters/peers/skyrl_adapter.py"
sys.path[:0] = [os.path.dirname(ADAPTER), "/work/wt-peer2-skyrl/fixtures/python"]
_spec = importlib.util.spec_from_file_location("adapter_under_test", ADAPTER)
adapter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(adapter)
fn = adapter.FUNCTIONS.get("reward_kl/adaptive") or adapter.FUNCTIONS["adaptive"]

inputs = {
    "current_kl": np.array(0, dtype=np.float64),
}
cfg = {
    "kl_coef": 0.001,
    "target_kl": 0.1,
    "horizon": 0,
    "n_steps": 3171,
}

try:
    result = fn(inputs, cfg, "float64")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
print("reference        ", "AssertionError: horizon must be larger than 0")
if result is not None:
    print("adapter returned ", result)
