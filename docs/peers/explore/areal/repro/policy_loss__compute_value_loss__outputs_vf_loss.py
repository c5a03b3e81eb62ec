#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

policy_loss/compute_value_loss, outputs/vf_loss (value): 1 row x 1 token, float64.
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
fn = adapter.FUNCTIONS.get("policy_loss/compute_value_loss") or adapter.FUNCTIONS["compute_value_loss"]

inputs = {
    "response_mask": np.array([[1]], dtype=np.float64),
    "returns": np.array([[0]], dtype=np.float64),
    "values": np.array([[1.04]], dtype=np.float64),
    "vpreds": np.array([[0]], dtype=np.float64),
}
cfg = {
    "cliprange_value": 0.5,
    "loss_agg_mode": "token-mean",
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
    got = (result.get("outputs") or {}).get("vf_loss")
    print("adapter   outputs/vf_loss:", None if got is None else np.asarray(got))
print("reference outputs/vf_loss:", np.array(0.1458, dtype=np.float64))
