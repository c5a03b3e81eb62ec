#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

aggregation/seq-mean-token-mean, error (exception vs result): 1 row x 1 token, float32.
Run it with the interpreter that has the framework; it calls the adapter's function on
these literal arrays and prints its result beside the reference's.
"""

import importlib.util
import os
import sys

import numpy as np

ADAPTER = "fixtures/adapters/peers/trl_adapter.py"
sys.path[:0] = [os.path.dirname(ADAPTER), "/work/wt-peer2-trl/fixtures/python"]
_spec = importlib.util.spec_from_file_location("adapter_under_test", ADAPTER)
adapter = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(adapter)
fn = adapter.FUNCTIONS.get("aggregation/seq-mean-token-mean") or adapter.FUNCTIONS["seq-mean-token-mean"]

inputs = {
    "loss_mask": np.array([[1]], dtype=np.float32),
    "loss_mat": np.array([[0]], dtype=np.float32),
}
cfg = {
    "dp_size": 2,
    "batch_num_tokens": None,
    "global_batch_size": None,
    "loss_scale_factor": None,
}

try:
    result = fn(inputs, cfg, "float32")
except Exception as ex:  # noqa: BLE001 - an error is a result here
    result = None
    print("adapter raised   ", type(ex).__name__ + ": " + str(ex))
print("reference        ", "ValueError: global_batch_size is required when dp_size > 1")
if result is not None:
    print("adapter returned ", result)
