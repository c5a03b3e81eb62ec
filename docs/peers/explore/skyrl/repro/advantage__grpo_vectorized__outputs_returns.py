#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

advantage/grpo_vectorized, outputs/returns (value): 3 rows x 1 token, float64.
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
fn = adapter.FUNCTIONS.get("advantage/grpo_vectorized") or adapter.FUNCTIONS["grpo_vectorized"]

inputs = {
    "index": np.array([0, 0, 0], dtype=np.int64),
    "response_mask": np.array([[1], [1], [1]], dtype=np.float64),
    "token_level_rewards": np.array([[1], [1], [0.65]], dtype=np.float64),
}
cfg = {
    "epsilon": 1e-06,
    "norm_adv_by_std_in_grpo": 1,
}

try:
    result = fn(inputs, cfg, "float64")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
np.set_printoptions(precision=17, floatmode="unique")
if result is not None:
    got = (result.get("outputs") or {}).get("returns")
    print("adapter   outputs/returns:", None if got is None else np.asarray(got))
print("reference outputs/returns:", np.array([[0.5773471288473578], [0.5773471288473578], [-1.1546950246037697]], dtype=np.float64))
