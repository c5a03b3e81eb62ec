#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

advantage/reinforce_plus_plus, outputs/returns (value): 1 row x 3 tokens, float32.
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
fn = adapter.FUNCTIONS.get("advantage/reinforce_plus_plus") or adapter.FUNCTIONS["reinforce_plus_plus"]

inputs = {
    "response_mask": np.array([[1, 0, 1]], dtype=np.float32),
    "token_level_rewards": np.array([[0, 0, 1]], dtype=np.float32),
}
cfg = {
    "gamma": 1,
}

try:
    result = fn(inputs, cfg, "float32")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
np.set_printoptions(precision=17, floatmode="unique")
if result is not None:
    got = (result.get("outputs") or {}).get("returns")
    print("adapter   outputs/returns:", None if got is None else np.asarray(got))
print("reference outputs/returns:", np.array([[1, 0, 1]], dtype=np.float32))
