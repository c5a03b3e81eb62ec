"""Adapter for Liger-Kernel (PyPI `liger-kernel`, 0.8.5): its chunked, fused-linear GRPO loss held
to verl's goldens. Contract: docs/adapter-contract.md; environment and report: tools/peers/run.sh liger.

What is called: liger_kernel/chunked_loss/grpo_loss.py LigerFusedLinearGRPOLoss.forward, i.e.
LigerFusedLinearGRPOFunction (ppo_loss_fn for the per-token loss, its reduction and metrics) on the
base liger_kernel/chunked_loss/fused_linear_ppo.py LigerFusedLinearPPOBase.forward (chunking over
rows, chunk_forward / _ChunkedSelectiveLogProbFunction for the selected-token log-probs,
_compute_dapo_normalizer). It is built and called as trl 1.12.0's GRPOTrainer built and called it
(GRPOTrainer.__init__ and compute_liger_loss, trl/trainer/grpo_trainer.py; trl 1.16.0, the newest
TRL, no longer calls it: its use_liger_kernel only patches the model's layers): the constructor
gets beta, epsilon_low, epsilon_high, temperature, use_ref_model = beta != 0, loss_type,
max_completion_length, importance_sampling_level, delta, use_bias_correction_kl and the SAPO
temperatures, and the default chunk_size 1 (one row per chunk); forward gets the last hidden states,
the lm_head weight, the completion ids, the loss mask, one advantage per row, old and reference
log-probs, vllm_is_ratio and num_items_in_batch. compiled=False, where TRL kept the default True:
with True, LigerFusedLinearPPOBase.forward wraps the loss math (_compute_loss_from_logps) in
torch.compile, which runs here (inductor's CPU backend) and gave the same loss and gradient bit for
bit as compiled=False on a 2 x 3 probe, but its first call took 64 s on this machine and a shape or
dtype outside the compiled graph's guards compiles again, too slow for the thousands of cases
explore generates; compiled=False runs the same torch operations eagerly, in the same order.

The input construction. The loss takes hidden states, an lm_head weight and token ids, not
log-probs. The adapter uses a vocabulary of 2, hidden size 1, lm_head weight [[0], [1]] and the
selected token 0 at every position, so a hidden value c gives logits [0, c] and the selected
log-prob -softplus(c) = -log(1 + e^c); c = log(expm1(-lp)) for the case's log_prob lp, then the
float32 value of c among its nine nearest float32 neighbours whose log-prob, as Liger itself
computes it (fused_linear_ppo.py _selective_logprob_forward, called by the adapter on the
candidates), is closest to lp. Liger computes these log-probs in float32 (its logits are cast with
.float() and log_z is float32) whatever the input dtype, so the log-prob it sees is lp to about
one float32 unit in the last place of log(1 + e^c): about 6e-8 absolute for |lp| < 0.7, about
6e-8 relative beyond. lp = 0 (or above -1e-26) takes c = -60, which Liger's float32 log-softmax
returns as exactly 0 while keeping e^c in range for the gradient. A log-softmax is never positive:
verl's goldens and explore's cases put positive log_prob values anywhere, so for the losses whose
value depends on log-probs only through differences (vanilla, gspo, sapo, the KL term) the
adapter subtracts one constant s = max(0, max log_prob) from log_prob, old_log_prob and
ref_log_prob alike (the same loss exactly; only the float32 rounding of the shifted values
differs); CISPO's loss is linear in log_prob itself, so a CISPO case with a positive log_prob is
declined (no hidden state gives it). The gradient d loss / d log_prob is recovered by the chain
rule from the gradient Liger returns for the hidden states: Liger's backward
(_selective_logprob_backward) forms d/dc = -g * p1 with p1 = exp(c - log_z) in float32, and the
adapter divides by the same float32 p1 (recomputed from Liger's own log_z), which returns g to
about one float32 unit in the last place. Checked by passing verl's own compute_policy_loss_vanilla,
_gspo and _sapo (verl 0.9.1) the log-probs this construction gives Liger, shifted back, on every
float32 golden of the three: loss and gradient stay within 3e-4 of conform's float32 tolerance,
except in the cases built on a clip boundary (vanilla boundary_asym_8x16 and boundary_sym_8x16,
gspo gspo_boundary_16x8), where a one-unit move of a log-prob flips a clip decision (Liger's
one advantage per row declines both vanilla cases; gspo_boundary_16x8 passes with Liger, its
flips inside the judge's allowance for a decision within rounding of its boundary).

Config mapping: clip_ratio_low / clip_ratio_high -> epsilon_low / epsilon_high; clip_ratio_c ->
delta (Liger's clamp of the ratio from above, for every advantage sign, which bounds the loss of a
negative advantage as verl's dual clip does); loss_agg_mode token-mean -> loss_type "dapo" with
num_items_in_batch = verl's batch_num_tokens (else the call's token count, what TRL's trainer
gathers), seq-mean-token-mean -> "grpo", seq-mean-token-sum-norm -> "dr_grpo" (max_completion_length
= loss_scale_factor, else the call's width T), seq-mean-token-sum -> "luspo"; no loss_type reduces
by token-sum (declined). gspo -> importance_sampling_level "sequence". sapo -> loss_type "sapo"
(its own row mean; verl's SAPO also ignores loss_agg_mode), tau_pos / tau_neg ->
sapo_temperature_pos / neg. cispo -> loss_type "cispo" (its token normaliser only: other modes
declined), epsilon_high = 1 + clip_ratio_high (Liger clamps the weight from above only, at
epsilon_high itself). rollout_is_weights -> vllm_is_ratio. dp_size -> the world size Liger reads
from torch.distributed (stubbed, below). Liger's row reductions divide by the rows of the call:
global_batch_size is a setting with that one value, so a case whose global_batch_size is not
rows x dp_size is declined. actor_kl_loss: beta = kl_loss_coef with zero advantages and no old
log-probs (Liger then takes the ratio as 1, as TRL with num_iterations 1), ref_per_token_logps =
ref_log_prob, loss_type by loss_agg_mode as above; kl_loss_type k3 / low_var_kl ->
use_bias_correction_kl False, k3+ / low_var_kl+ -> True (the KL times the ratio exp(lp - sg(lp)):
the value of k3 with the gradient lp - ref, the gradient of verl's straight-through "+"); other
estimators declined (Liger's KL term is k3 only). The kl family's k3, low_var_kl, k3+ and
low_var_kl+ (element-wise) are the same KL term read one element at a time: a 1 x 1 call per
element, beta 1, advantage 0, loss_type "dapo", whose loss is that element's KL. Metrics:
actor/pg_clipfrac <- the clip ratio ppo_loss_fn returns (its last metric).

Advantages: Liger takes one advantage per row (advantages.unsqueeze(1) in ppo_loss_fn). A case
whose advantages vary along a row's valid tokens is declined; otherwise the row's value is passed
(0 for a fully masked row). verl's aggregation family is not provided: Liger applies its
reductions only inside ppo_loss_fn to its own per-token loss, which cannot be made an arbitrary
loss_mat (one advantage per row, a log-prob <= 0), so the reductions are held to verl through
the losses' loss_agg_mode instead. Output dtypes are Liger's: its loss is accumulated in a float32
tensor (LigerFusedLinearPPOBase.forward, loss_acc), so a float64 case's loss comes back float32;
the gradient comes back in the hidden states' dtype, which is the case's.

Sharded calls (SHARD hooks for vanilla, gspo, sapo, cispo and actor_kl_loss): one micro-batch of one
rank as trl 1.12.0's GRPOTrainer.compute_liger_loss runs it: num_items_in_batch = the whole batch's
valid tokens (shard.batch_num_tokens, what GRPOTrainer._generate_and_score_completions gathers), the
world size Liger divides it by (_compute_dapo_normalizer reads torch.distributed.get_world_size()) =
the number of ranks, and the loss divided as compute_liger_loss divides it: by
current_gradient_accumulation_steps / steps_per_generation for dapo and cispo (1 with TRL's default
steps_per_generation = gradient_accumulation_steps), by current_gradient_accumulation_steps (the
rank's micro-batch count) for the other loss types. That division is TRL's, written in the adapter
(TRL is not installed), and is the only arithmetic the adapter adds. tools/peers/sharding/liger.md.

Placeholders: the process group. torch.distributed is not initialised in one process; for a world
size above 1 the adapter makes torch.distributed.is_initialized() return True and get_world_size()
the number of ranks for the duration of the call (Liger calls no collective when
num_items_in_batch is given, which the adapter always gives).

Not callable here: liger_kernel/transformers/grpo_loss.py triton_grpo_loss (the Triton op of
liger_kernel/ops/grpo_loss.py GrpoLossFunction) fails on this machine, which has no GPU: launching
_grpo_loss_fwd_kernel from GrpoLossFunction.forward raises "RuntimeError: 0 active drivers ([]).
There should only be one." (triton/runtime/driver.py _create_driver).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from typing import Dict

import numpy as np
import torch
import torch.distributed as dist

from verlconf_harness import Decline

from liger_kernel.chunked_loss.fused_linear_ppo import _selective_logprob_forward  # noqa: E402
from liger_kernel.chunked_loss.grpo_loss import LigerFusedLinearGRPOLoss  # noqa: E402

name = "liger"
FRAMEWORK = ("liger_kernel",)

torch.set_num_threads(1)

_C_FLOOR = -60.0  # e^-60 keeps p1 a normal float32 while the float32 log-prob rounds to exactly 0
_VOCAB_CHUNK = 4096


def versions() -> Dict[str, str]:
    return {"liger_kernel_version": importlib.metadata.version("liger-kernel"), "torch_version": torch.__version__}


def _n(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def _t(arr, dtype: str) -> torch.Tensor:
    return torch.from_numpy(np.array(arr, dtype=np.dtype(dtype), copy=True))


_WEIGHT32 = torch.tensor([[0.0], [1.0]], dtype=torch.float32)


def _liger_logprob(c32: np.ndarray):
    """Liger's own float32 selected log-prob (and log_z) of hidden values c32 under the weight [[0], [1]]."""
    flat = torch.from_numpy(np.ascontiguousarray(c32.reshape(-1, 1), dtype=np.float32))
    targets = torch.zeros(flat.shape[0], dtype=torch.long)
    with torch.no_grad():
        lp, log_z = _selective_logprob_forward(flat, _WEIGHT32, targets, None, 1.0, _VOCAB_CHUNK)
    return lp.numpy().reshape(c32.shape), log_z.numpy().reshape(c32.shape)


def _hidden_for(lp: np.ndarray) -> np.ndarray:
    """float32 hidden values c whose Liger log-prob -softplus(c) is closest to lp (lp <= 0)."""
    lp = np.asarray(lp, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        c = np.where(lp < -1e-26, np.log(np.expm1(-lp)), _C_FLOOR)
    c = np.maximum(c, _C_FLOOR).astype(np.float32)
    cands = [c]
    up, down = c, c
    for _ in range(4):
        up = np.nextafter(up, np.float32(np.inf))
        down = np.nextafter(down, np.float32(-np.inf))
        cands += [up, down]
    stack = np.maximum(np.stack(cands), np.float32(_C_FLOOR))
    got, _ = _liger_logprob(stack)
    best = np.argmin(np.abs(got.astype(np.float64) - lp[None]), axis=0)
    return np.take_along_axis(stack, best[None], axis=0)[0]


def _per_row(adv: np.ndarray, mask: np.ndarray) -> np.ndarray:
    valid = mask != 0
    first = np.where(valid.any(-1), adv[np.arange(adv.shape[0]), valid.argmax(-1)], 0)
    if np.any(valid & (adv != first[:, None])):
        raise Decline(
            "Liger's GRPO loss takes one advantage per row (shape (B,)); this case's advantages vary within a row"
        )
    return first


@contextlib.contextmanager
def _world(size: int):
    """The world size Liger's _compute_dapo_normalizer reads; a stub of the process group only."""
    if size <= 1:
        yield
        return
    saved = dist.is_initialized, dist.get_world_size
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda group=None: size
    try:
        yield
    finally:
        dist.is_initialized, dist.get_world_size = saved


def _loss_type(cfg) -> str:
    mode = cfg.get("loss_agg_mode")
    table = {
        "token-mean": "dapo",
        "seq-mean-token-mean": "grpo",
        "seq-mean-token-sum-norm": "dr_grpo",
        "seq-mean-token-sum": "luspo",
    }
    if mode not in table:
        raise Decline(f"no Liger loss_type reduces by {mode}")
    return table[mode]


def _bound(cfg, key: str):
    return cfg["clip_ratio"] if cfg.get(key) is None else cfg[key]


def _check_rows(cfg, loss_type: str, rows: int):
    """Liger's row reductions divide by the call's own rows: global_batch_size has that one value."""
    gbs = cfg.get("global_batch_size")
    if loss_type in ("dapo", "cispo") or gbs is None:
        return
    dp = 1 if cfg.get("dp_size") is None else int(cfg["dp_size"])
    if int(gbs) != rows * dp:
        raise Decline(
            f"LigerFusedLinearGRPOFunction.ppo_loss_fn ({loss_type}) divides by the call's own {rows} rows; "
            f"no setting for global_batch_size={gbs} with dp_size={dp}"
        )


def _run(inputs, cfg, dtype, *, loss_type, beta=0.0, shift=True, shard=None, advantages=None, **kw):
    """LigerFusedLinearGRPOLoss on the case: returns (loss as Liger returns it, d loss / d log_prob, metrics)."""
    lp = np.asarray(inputs["log_prob"], dtype=np.float64)
    mask_np = np.asarray(inputs["response_mask"])
    b, t = lp.shape
    s = max(0.0, float(lp.max())) if lp.size else 0.0
    if s > 0 and not shift:
        raise Decline(
            "a log-softmax is never positive and CISPO's loss is linear in log_prob; no hidden state gives "
            f"this case's log_prob {s}"
        )
    c32 = _hidden_for(lp - s)
    _, log_z = _liger_logprob(c32)
    hidden = torch.from_numpy(c32.astype(np.dtype(dtype))).reshape(b, t, 1).requires_grad_(True)
    weight = _WEIGHT32.to(hidden.dtype)
    mask = torch.from_numpy(mask_np).to(torch.long)  # TRL's completion masks are integer tensors

    def shifted(key):
        v = inputs.get(key)
        return None if v is None else _t(np.asarray(v, dtype=np.float64) - s, dtype)

    if shard is None:
        world = 1 if cfg.get("dp_size") is None else int(cfg["dp_size"])
        items = cfg.get("batch_num_tokens")
        ga = 1
    else:
        world, items, ga = int(shard.dp_size), int(shard.batch_num_tokens), int(shard.micro_batches)
    if items is None:  # as _generate_and_score_completions forms it: the gathered sum of the loss mask
        items = int(mask_np.sum())
    if loss_type == "dr_grpo":
        lsf = cfg.get("loss_scale_factor")
        kw["max_completion_length"] = t if lsf is None else lsf
    module = LigerFusedLinearGRPOLoss(
        beta=beta, compiled=False, use_ref_model=beta != 0.0, loss_type=loss_type, temperature=1.0, **kw
    )
    isw = inputs.get("rollout_is_weights")
    adv = np.zeros(b) if advantages is None else advantages
    with _world(world):
        loss, metrics = module(
            _input=hidden,
            lin_weight=weight,
            selected_token_ids=torch.zeros(b, t, dtype=torch.long),
            attention_mask=mask,
            advantages=_t(adv, dtype),
            bias=None,
            old_per_token_logps=shifted("old_log_prob"),
            ref_per_token_logps=shifted("ref_log_prob"),
            vllm_is_ratio=None if isw is None else _t(isw, dtype),
            num_items_in_batch=items,
        )
    # trl 1.12.0 GRPOTrainer.compute_liger_loss: dapo / cispo over current_gradient_accumulation_steps /
    # steps_per_generation (equal by default), the other loss types over current_gradient_accumulation_steps.
    if loss_type not in ("dapo", "cispo") and ga != 1:
        loss = loss / ga
    loss.backward()
    p1 = torch.exp(torch.from_numpy(c32) - torch.from_numpy(log_z))  # float32, as _selective_logprob_backward
    grad = -hidden.grad[..., 0].to(torch.float64) / p1.to(torch.float64)
    return loss, grad.numpy().astype(np.dtype(dtype)), metrics


def _policy_loss(kind: str):
    def fn(inputs, cfg, dtype, shard=None):
        mask = np.asarray(inputs["response_mask"])
        adv = _per_row(np.asarray(inputs["advantages"]), mask)
        kw = {}
        shift = True
        if kind in ("vanilla", "gspo"):
            loss_type = _loss_type(cfg)
            kw = {"epsilon_low": _bound(cfg, "clip_ratio_low"), "epsilon_high": _bound(cfg, "clip_ratio_high")}
            if kind == "vanilla":
                kw["delta"] = cfg.get("clip_ratio_c")
            else:
                kw["importance_sampling_level"] = "sequence"
        elif kind == "sapo":
            loss_type = "sapo"
            kw = {"sapo_temperature_pos": cfg["tau_pos"], "sapo_temperature_neg": cfg["tau_neg"]}
        else:  # cispo
            if cfg.get("loss_agg_mode") != "token-mean":
                raise Decline(f"Liger's cispo reduces only by its token normaliser, not {cfg.get('loss_agg_mode')}")
            loss_type = "cispo"
            kw = {"epsilon_high": 1 + _bound(cfg, "clip_ratio_high")}
            shift = False
        if shard is None:
            _check_rows(cfg, loss_type, mask.shape[0])
        loss, grad, metrics = _run(
            inputs, cfg, dtype, loss_type=loss_type, shift=shift, shard=shard, advantages=adv, **kw
        )
        return {
            "outputs": {"pg_loss": _n(loss)},
            "grads": {"log_prob": grad},
            "metrics": {"actor/pg_clipfrac": float(metrics[-1])},
        }

    return fn


def _kl_bias(kl_type: str) -> bool:
    if kl_type in ("k3", "low_var_kl"):
        return False
    if kl_type in ("k3+", "low_var_kl+"):
        return True
    raise Decline(f"Liger's GRPO KL term is k3 only (grpo_loss.py k3_loss_fn); no setting for {kl_type}")


def actor_kl_loss(inputs, cfg, dtype, shard=None):
    bias = _kl_bias(cfg["kl_loss_type"])
    loss_type = _loss_type(cfg)
    if shard is None:
        _check_rows(cfg, loss_type, np.asarray(inputs["response_mask"]).shape[0])
    loss, grad, _ = _run(
        inputs,
        cfg,
        dtype,
        loss_type=loss_type,
        beta=float(cfg["kl_loss_coef"]),
        shard=shard,
        use_bias_correction_kl=bias,
    )
    return {"outputs": {"kl_term": _n(loss)}, "grads": {"log_prob": grad}}


def _kl(bias: bool):
    def fn(inputs, cfg, dtype, projections=None):
        lp = np.asarray(inputs["logprob"], dtype=np.float64)
        ref = np.asarray(inputs["ref_logprob"], dtype=np.float64)
        kl = np.empty(lp.shape, dtype=np.float32)
        grad = np.empty(lp.shape, dtype=np.dtype(dtype))
        for idx in np.ndindex(lp.shape):
            one = {
                "log_prob": lp[idx].reshape(1, 1),
                "ref_log_prob": ref[idx].reshape(1, 1),
                "response_mask": np.ones((1, 1), dtype=np.int64),
            }
            loss, g, _ = _run(one, {}, dtype, loss_type="dapo", beta=1.0, use_bias_correction_kl=bias)
            kl[idx] = float(loss.detach())
            grad[idx] = g[0, 0]
        out = {"outputs": {"kl": kl}, "grads": {"logprob": grad}}
        if projections and "kl" in projections:
            out["vjps"] = {"kl/logprob": (np.asarray(projections["kl"], dtype=np.float64) * grad).astype(grad.dtype)}
        return out

    return fn


FUNCTIONS = {
    "vanilla": _policy_loss("vanilla"),
    "gspo": _policy_loss("gspo"),
    "sapo": _policy_loss("sapo"),
    "cispo": _policy_loss("cispo"),
    "actor_kl_loss": actor_kl_loss,
    "k3": _kl(False),
    "low_var_kl": _kl(False),
    "k3+": _kl(True),
    "low_var_kl+": _kl(True),
}

# The sharded calls (docs/adapter-contract.md, "The SHARD hook"): the same functions, run as trl
# 1.12.0's GRPOTrainer.compute_liger_loss runs one micro-batch of one rank (_run says what is set).
SHARD = {key: FUNCTIONS[key] for key in ("vanilla", "gspo", "sapo", "cispo", "actor_kl_loss")}
