#!/usr/bin/env python3
"""A minimal reproduction found by `conform explore` (verlconf unknown).

policy_loss/vanilla, grads/log_prob (value): 1 row x 1 token, float64.
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
fn = adapter.FUNCTIONS.get("policy_loss/vanilla") or adapter.FUNCTIONS["vanilla"]

inputs = {
    "advantages": np.array([[1]], dtype=np.float64),
    "log_prob": np.array([[-3]], dtype=np.float64),
    "old_log_prob": np.array([[17.4]], dtype=np.float64),
    "response_mask": np.array([[1]], dtype=np.float64),
}
cfg = {
    "clip_ratio": 0.2,
    "clip_ratio_low": 0.2,
    "clip_ratio_high": 0.2,
    "clip_ratio_c": 3,
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
    got = (result.get("grads") or {}).get("log_prob")
    print("adapter   grads/log_prob:", None if got is None else np.asarray(got))
print("reference grads/log_prob:", np.array([[-0]], dtype=np.float64))
