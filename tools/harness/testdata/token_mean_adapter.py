"""A test adapter: token-mean as verl's agg_loss computes it, and two SHARD hooks that say
how a framework runs one micro-batch. `given_count` takes the batch's token count and
dp_size from verl's semantics and passes; `rank_count` divides by its rank's own tokens, as
a local mean does, and fails the sharded rows. Tests append the SHARD table that picks one:
`SHARD = {"aggregation/token-mean": given_count}`.
"""

import numpy as np

name = "token_mean"


def versions():
    return {}


def loss(loss_mat, mask, dp, n):
    w = mask * dp / n if n else np.zeros_like(mask)
    total = (np.where(mask != 0, loss_mat, 0) * w).sum() if n else np.nan
    return {"outputs": {"loss": np.asarray(total, dtype=loss_mat.dtype)}, "grads": {"loss_mat": w}}


def token_mean(inputs, cfg, dtype):
    n = cfg["batch_num_tokens"]
    n = inputs["loss_mask"].sum() if n is None else n
    return loss(inputs["loss_mat"], inputs["loss_mask"], cfg["dp_size"] or 1, n)


def given_count(inputs, cfg, dtype, shard):
    return loss(inputs["loss_mat"], inputs["loss_mask"], shard.dp_size, shard.batch_num_tokens)


def rank_count(inputs, cfg, dtype, shard):
    return loss(inputs["loss_mat"], inputs["loss_mask"], 1, shard.rank_inputs["loss_mask"].sum())


FUNCTIONS = {"token-mean": token_mean}
