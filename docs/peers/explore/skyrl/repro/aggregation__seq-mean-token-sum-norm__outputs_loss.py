#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

aggregation/seq-mean-token-sum-norm, outputs/loss (value): 2 rows x 1 token, float64.
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
fn = adapter.FUNCTIONS.get("aggregation/seq-mean-token-sum-norm") or adapter.FUNCTIONS["seq-mean-token-sum-norm"]

inputs = {
    "loss_mask": np.array([[0], [1]], dtype=np.float64),
    "loss_mat": np.array([[0], [-1]], dtype=np.float64),
}
cfg = {
    "dp_size": 1,
    "batch_num_tokens": None,
    "global_batch_size": None,
    "loss_scale_factor": None,
}

try:
    result = fn(inputs, cfg, "float64")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
np.set_printoptions(precision=17, floatmode="unique")
if result is not None:
    got = (result.get("outputs") or {}).get("loss")
    print("adapter   outputs/loss:", None if got is None else np.asarray(got))
print("reference outputs/loss:", np.array(-1, dtype=np.float64))
