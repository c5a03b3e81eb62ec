"""Adapter for TorchRL (PyPI `torchrl`, 0.14.x, with tensordict 0.14.3): its LLM losses, value
estimators, KL pieces and KL controllers held to verl's goldens.
Contract: docs/adapter-contract.md; environment and report: tools/peers/run.sh torchrl.

Environment: the torchrl 0.14.1 wheel runs on the shared torch 2.10.0. Its compiled extension
torchrl/_torchrl.*.so does not load there (ImportError: an undefined torch symbol, the wheel
being built against another torch); torchrl/_extension.py only checks that the file exists, so
`import torchrl` gives no warning, and the one module that imports the extension,
torchrl/data/replay_buffers/samplers/prioritized.py (segment trees of prioritised replay
buffers), falls back to None. Nothing called below uses it: every module named here imports
and runs (the [llm] extra, transformers and vllm, is not installed and not needed by them).

What is called, all from the installed package:
- torchrl/objectives/llm/grpo.py: GRPOLoss.forward (policy_loss/vanilla; the KL-to-reference
  term, kl_to_ref_coeff, for actor_kl_loss; the entropy term, entropy_bonus, for
  compute_entropy_loss), CISPOLoss.forward (policy_loss/cispo), GRPOLoss._aggregate_loss_value
  (the aggregation modes on their own) and MCAdvantage (advantage/grpo, trajectory_return "sum");
- torchrl/objectives/value/advantages.py: GAE (value_network None, the values given in the
  tensordict; vectorized=True, which its docstring gives as the default, so
  torchrl/objectives/value/functional.py vec_generalized_advantage_estimate and _fast_vec_gae
  run the recursion: the constructor's default vectorized=None is falsy in GAE.forward and
  selects the loop, generalized_advantage_estimate, instead) and
  GAE._normalize_advantage, the masked standardisation that average_gae applies
  (advantage/gae's whitening and torch_functional/masked_whiten);
- torchrl/objectives/value/functional.py: reward2go (advantage/reinforce_plus_plus's returns);
- torchrl/_utils.py: _standardize (reinforce_plus_plus's whitening of the returns over the valid
  tokens; the helper torchrl/objectives/ppo.py PPOLoss._standardize_advantage normalises
  advantages with);
- torchrl/objectives/common.py: LossModule._reduce_loss with a mask, reduction "mean"
  (torch_functional/masked_mean, the token_mean reduction every TorchRL loss uses);
- torchrl/envs/llm/transforms/kl.py: KLComputation (kl/kl, kl/k1: log p - log q per token,
  add_to_reward False);
- torchrl/data/llm/utils.py: ConstantKLController and AdaptiveKLController (reward_kl/fixed,
  reward_kl/adaptive).

The policy and entropy losses run GRPOLoss.forward whole: its actor network is a stand-in whose
get_dist returns, for the policy losses, a distribution whose log_prob is the case's log_prob
(differentiable) with the response mask as its mask, and for the entropy loss TorchRL's own
torchrl/modules/distributions/discrete.py LLMMaskedCategorical built from the case's logits
(its entropy is the one called). The tensordict holds ("tokens", "full") (placeholder token ids),
("log_probs", "full") = old_log_prob, "advantage" = advantages[..., None] and
("next", "ref_log_probs", "full") = ref_log_prob. Every TorchRL module is built with the case
dtype as torch's default dtype, as a float64 user would build it: its float settings become
buffers of the default dtype (clip_epsilon_low/high, GAE's gamma and lmbda), which would
otherwise hold float32 roundings of a float64 case's settings; AdaptiveKLController.update is
run the same way (it averages its list with torch.as_tensor and keeps the coefficient as the
resulting tensor). GRPOLoss's prompt_mean keeps a
trailing dimension of one; that [1] tensor is returned as the scalar it holds.

Config mapping: clip_ratio_low/high (clip_ratio where None) -> clip_epsilon=(low, high);
loss_agg_mode token-mean -> aggregation "token_mean", seq-mean-token-mean -> "prompt_mean"; the
other modes have no aggregation and are declined. verl's dual-clip bound clip_ratio_c has no
TorchRL setting (no dual clip: a fixed bound of infinity): verl's default 3 runs, another value
is declined. kl_loss_coef -> kl_to_ref_coeff; the KL term is fixed to k3 (exp(ref - cur) - 1 -
(ref - cur), unclamped) averaged over every element of the padded batch: kl_loss_type
low_var_kl / k3 and loss_agg_mode token-mean run, the rest is declined. compute_entropy_loss:
entropy_coeff -1 (loss_entropy is -entropy_coeff times the aggregated entropy). gae: gamma ->
gamma, lam -> lmbda; reinforce_plus_plus: gamma -> gamma. grpo: epsilon is fixed at 1e-6 (a
clamp_min of the std) and the std division always on: norm_adv_by_std_in_grpo False is
declined. KL controllers: kl_coef -> kl_coef / init_kl_coef, target_kl -> target, horizon ->
horizon; TorchRL's update takes the list of the KL rewards its rollout recorded
(RolloutFromModel.create_rollout_td appends -kl_coef * KL per batch and update() divides by
the coefficient again), and its n_steps is that list's length: verl's (current_kl, n_steps) is
given as n_steps entries of -kl_coef * current_kl (n_steps None has no list and is declined).
No knob, so declined: rollout_is_weights (GRPOLoss takes no precomputed IS weights), the
loss_agg_modes above, and, on an unsharded call, a global token or sequence count (dp_size > 1,
batch_num_tokens, global_batch_size: each call normalises over the batch it is given; the
sharded calls below are how TorchRL meets them); masked_mean's axis -1 and masked_whiten's
shift_mean False (one fixed behaviour each).

How masks become TorchRL's time layout (gae, reinforce_plus_plus): a row's valid tokens, in
order, are one trajectory; the trajectories of all rows are concatenated on one time axis
([1, N] for N valid tokens) with ("next", "done") = ("next", "terminated") True at each row's
last valid token, so a masked token inside a response is skipped as verl skips it.
next_state_value is the value of the row's next valid token (0 at the last; terminated zeroes
it anyway). The results are written back at the valid tokens. At a masked token verl reports
the advantage it carries from the next valid token of the row (0 after the last), and returns
= advantages + values there; gae writes those before TorchRL's masked standardisation of the
whole [B, T] layout, reinforce_plus_plus writes 0 (verl's masked layout). grpo: each row is one
trajectory of T steps (every column: verl's score sums every column) with done at the last
step, grouped by its uid (MCAdvantage's prompt_key, tensor ids grouped by value), grpo_size =
the group size (a batch whose groups differ in size cannot be told and is declined); the
advantage MCAdvantage broadcasts to every step is written as verl's layout, times the mask.

Sharded calls (SHARD, for vanilla, cispo, actor_kl_loss and the two aggregation modes): each call
is one micro-batch of one rank, as torchrl/trainers/trainers.py
MixedPrecisionOptimizationStepper.step (the stepper GRPOTrainer builds,
torchrl/trainers/algorithms/grpo.py) runs it: the loss module on the micro-batch alone (its own
token or prompt mean), every loss_* key summed and divided by gradient_accumulation_steps (the
rank's micro-batches, shard.micro_batches), then backward; DDP (torchrl/trainers/_distributed.py)
averages the ranks' gradients. tools/peers/sharding/torchrl.md has the details.

Every module is called through its forward (not nn.Module.__call__, which has no hooks to run
here), so that an exception TorchRL raises is reported as TorchRL's.

Placeholders: none (nothing of TorchRL is stubbed; the actor network is the stand-in above).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import math
import warnings
from typing import Dict

import numpy as np
import torch

from verlconf_harness import Decline, fixed_setting

warnings.filterwarnings("ignore", category=DeprecationWarning)
# KLComputation builds torch.nested tensors, whose prototype warning says nothing about the math.
warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
from tensordict import TensorDict  # noqa: E402
from torchrl._utils import _standardize  # noqa: E402
from torchrl.data.llm.utils import AdaptiveKLController, ConstantKLController  # noqa: E402
from torchrl.envs.llm.transforms.kl import KLComputation  # noqa: E402
from torchrl.modules.distributions.discrete import LLMMaskedCategorical  # noqa: E402
from torchrl.objectives.llm.grpo import CISPOLoss, GRPOLoss, MCAdvantage  # noqa: E402
from torchrl.objectives.value.advantages import GAE  # noqa: E402
from torchrl.objectives.value.functional import reward2go  # noqa: E402

name = "torchrl"
FRAMEWORK = ("torchrl", "tensordict")

torch.set_num_threads(1)


def versions() -> Dict[str, str]:
    return {
        "torchrl_version": importlib.metadata.version("torchrl"),
        "tensordict_version": importlib.metadata.version("tensordict"),
        "torch_version": torch.__version__,
    }


def _t(arr, dtype: str, grad: bool = False) -> torch.Tensor:
    t = torch.from_numpy(np.array(arr, dtype=np.dtype(dtype), copy=True))
    return t.requires_grad_(grad)


def _n(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


def _tdtype(dtype: str) -> torch.dtype:
    return torch.float64 if dtype == "float64" else torch.float32


_AGGREGATION = {"token-mean": "token_mean", "seq-mean-token-mean": "prompt_mean"}


def _aggregation(cfg, sharded: bool) -> str:
    mode = cfg.get("loss_agg_mode")
    if mode not in _AGGREGATION:
        raise Decline(f"GRPOLoss has no aggregation for loss_agg_mode={mode} (token_mean, prompt_mean, none)")
    _local_only(cfg, sharded)
    return _AGGREGATION[mode]


def _local_only(cfg, sharded: bool) -> None:
    if not sharded and (
        cfg.get("dp_size") not in (None, 1)
        or cfg.get("batch_num_tokens") is not None
        or cfg.get("global_batch_size") is not None
    ):
        raise Decline("GRPOLoss normalises over the batch it is given; no global token/sequence count setting")


def _bound(cfg, key: str) -> float:
    return float(cfg["clip_ratio"] if cfg.get(key) is None else cfg[key])


class _GivenLogProbs:
    """The actor network's place in GRPOLoss: get_dist returns the case's log-probs and mask."""

    def __init__(self, log_prob: torch.Tensor, mask: torch.Tensor):
        self._log_prob, self._mask = log_prob, mask

    def get_dist(self, tensordict, logits_key=None):
        outer = self

        class _Dist:
            mask = outer._mask

            def log_prob(self, action):
                return outer._log_prob

        return _Dist()


class _FromLogits:
    """The actor network's place in GRPOLoss for the entropy: TorchRL's LLMMaskedCategorical."""

    def __init__(self, logits: torch.Tensor, mask: torch.Tensor):
        self._dist = LLMMaskedCategorical(logits=logits, mask=mask)

    def get_dist(self, tensordict, logits_key=None):
        return self._dist


def _grpo_td(old_log_prob, advantages, ref_log_prob=None) -> TensorDict:
    B, T = old_log_prob.shape
    data = {
        ("tokens", "full"): torch.zeros((B, T), dtype=torch.long),
        ("log_probs", "full"): old_log_prob,
        "advantage": advantages.unsqueeze(-1),
    }
    if ref_log_prob is not None:
        data[("next", "ref_log_probs", "full")] = ref_log_prob
    return TensorDict(data, batch_size=[B])


@contextlib.contextmanager
def _built_in(dtype: str):
    """TorchRL turns its float settings (clip_epsilon, gamma, lmbda) into buffers of the default
    dtype when a module is built: built with the case dtype as the default, as a float64 user
    would, so that a float64 case's settings are not float32 numbers."""
    prev = torch.get_default_dtype()
    torch.set_default_dtype(_tdtype(dtype))
    try:
        yield
    finally:
        torch.set_default_dtype(prev)


def _scalar(loss: torch.Tensor) -> torch.Tensor:
    # GRPOLoss's prompt_mean keeps a trailing dimension of one (a [1] tensor): the same number.
    return loss.reshape(())


def _accumulate(loss: torch.Tensor, shard) -> torch.Tensor:
    # MixedPrecisionOptimizationStepper.step: the micro-batch's loss / gradient_accumulation_steps.
    return loss if shard is None else loss / shard.micro_batches


def _policy_loss(cls):
    def fn(inputs, cfg, dtype, shard=None):
        if inputs.get("rollout_is_weights") is not None:
            raise Decline("GRPOLoss takes no precomputed rollout IS weights")
        aggregation = _aggregation(cfg, shard is not None)
        if cls is GRPOLoss:
            fixed_setting(cfg, "clip_ratio_c", 3.0, math.inf, "torchrl/objectives/llm/grpo.py GRPOLoss (no dual clip)")
        mask = torch.from_numpy(np.asarray(inputs["response_mask"]) != 0)
        log_prob = _t(inputs["log_prob"], dtype, grad=True)
        with _built_in(dtype):
            loss_mod = cls(
                _GivenLogProbs(log_prob, mask),
                clip_epsilon=(_bound(cfg, "clip_ratio_low"), _bound(cfg, "clip_ratio_high")),
                aggregation=aggregation,
                entropy_bonus=False,
            )
        out = loss_mod.forward(_grpo_td(_t(inputs["old_log_prob"], dtype), _t(inputs["advantages"], dtype)))
        loss = _accumulate(_scalar(out.loss_objective), shard)
        (g,) = torch.autograd.grad(loss, log_prob, allow_unused=True)
        return {
            "outputs": {"pg_loss": _n(loss)},
            "grads": {"log_prob": _n(g) if g is not None else np.zeros(log_prob.shape, dtype=dtype)},
            "metrics": {"actor/pg_clipfrac": float(out.clip_fraction), "actor/ppo_kl": float(out.kl_approx)},
        }

    return fn


def actor_kl_loss(inputs, cfg, dtype, shard=None):
    if cfg.get("kl_loss_type") not in ("low_var_kl", "k3"):
        raise Decline(f"GRPOLoss._kl_to_ref is k3 only; no setting for kl_loss_type={cfg.get('kl_loss_type')}")
    fixed_setting(
        cfg,
        "loss_agg_mode",
        "token-mean",
        "mean over every element",
        "torchrl/objectives/llm/grpo.py GRPOLoss._kl_to_ref",
    )
    _local_only(cfg, shard is not None)
    coef = float(cfg["kl_loss_coef"])
    if not coef > 0:
        # GRPOLoss.forward adds the term only for kl_to_ref_coeff > 0.
        raise Decline(f"GRPOLoss adds its KL term only for kl_to_ref_coeff > 0; no setting for {coef}")
    mask = torch.from_numpy(np.asarray(inputs["response_mask"]) != 0)
    log_prob = _t(inputs["log_prob"], dtype, grad=True)
    zeros = torch.zeros(log_prob.shape, dtype=log_prob.dtype)
    with _built_in(dtype):
        loss_mod = GRPOLoss(_GivenLogProbs(log_prob, mask), entropy_bonus=False, kl_to_ref_coeff=coef)
    out = loss_mod.forward(_grpo_td(log_prob.detach().clone(), zeros, _t(inputs["ref_log_prob"], dtype)))
    loss = _accumulate(out.loss_kl_to_ref, shard)
    (g,) = torch.autograd.grad(loss, log_prob, allow_unused=True)
    return {
        "outputs": {"kl_term": _n(loss)},
        "grads": {"log_prob": _n(g) if g is not None else np.zeros(log_prob.shape, dtype=dtype)},
        "metrics": {"kl_loss": float(out.kl_to_ref)},
    }


def entropy_loss(inputs, cfg, dtype):
    aggregation = _aggregation(cfg, False)
    logits = _t(inputs["logits"], dtype, grad=True)
    mask = torch.from_numpy(np.asarray(inputs["response_mask"]) != 0)
    B, T = mask.shape
    with _built_in(dtype):
        loss_mod = GRPOLoss(_FromLogits(logits, mask), entropy_bonus=True, entropy_coeff=-1.0, aggregation=aggregation)
    td = TensorDict(
        {
            ("tokens", "full"): torch.zeros((B, T), dtype=torch.long),
            ("log_probs", "full"): torch.zeros((B, T), dtype=logits.dtype),
            "advantage": torch.zeros((B, T, 1), dtype=logits.dtype),
        },
        batch_size=[B],
    )
    # The tokens' log-probs under the same logits, so that the policy part is inert.
    with torch.no_grad():
        td[("log_probs", "full")] = LLMMaskedCategorical(logits=logits.detach(), mask=mask).log_prob(
            td[("tokens", "full")]
        )
    out = loss_mod.forward(td)
    (g,) = torch.autograd.grad(out.loss_entropy, logits, allow_unused=True)
    return {
        "outputs": {"entropy_loss": _n(_scalar(out.loss_entropy))},
        "grads": {"logits": _n(g) if g is not None else np.zeros(logits.shape, dtype=dtype)},
    }


def _aggregation_fn(mode: str):
    """verl's agg_loss modes as GRPOLoss reduces a per-token loss (_aggregate_loss_value)."""

    def fn(inputs, cfg, dtype, shard=None):
        aggregation = _aggregation(dict(cfg, loss_agg_mode=mode), shard is not None)
        loss_mat = _t(inputs["loss_mat"], dtype, grad=True)
        mask = torch.from_numpy(np.asarray(inputs["loss_mask"]) != 0)
        with _built_in(dtype):
            loss_mod = GRPOLoss(None, aggregation=aggregation)
        loss = _accumulate(_scalar(loss_mod._aggregate_loss_value(loss_mat.unsqueeze(-1), mask)), shard)
        (g,) = torch.autograd.grad(loss, loss_mat, allow_unused=True)
        return {
            "outputs": {"loss": _n(loss)},
            "grads": {"loss_mat": _n(g) if g is not None else np.zeros(loss_mat.shape, dtype=dtype)},
        }

    return fn


def _trajectories(mask: np.ndarray):
    """The valid tokens of every row, row after row: (rows, cols) and the done flag of each."""
    rows, cols = np.nonzero(mask)
    done = np.zeros(rows.shape, dtype=bool)
    if rows.size:
        done[-1] = True
        done[:-1] = rows[1:] != rows[:-1]
    return rows, cols, done


def _carry_back(flat: np.ndarray, rows, cols, shape) -> np.ndarray:
    """verl's layout of a per-token result: the valid tokens' values, and at a masked token the
    value of the row's next valid token (0 after the last)."""
    full = np.zeros(shape, dtype=flat.dtype)
    full[rows, cols] = flat
    valid = np.zeros(shape, dtype=bool)
    valid[rows, cols] = True
    for b in range(shape[0]):
        nxt = 0.0
        for t in reversed(range(shape[1])):
            if valid[b, t]:
                nxt = full[b, t]
            else:
                full[b, t] = nxt
    return full


def gae(inputs, cfg, dtype):
    mask = np.asarray(inputs["response_mask"]) != 0
    rewards = np.asarray(inputs["token_level_rewards"])
    values = np.asarray(inputs["values"])
    rows, cols, done = _trajectories(mask)
    n = rows.size
    v = values[rows, cols]
    next_v = np.zeros_like(v)
    if n > 1:
        next_v[:-1] = np.where(done[:-1], 0.0, v[1:])
    col = lambda a: _t(a, dtype).reshape(1, n, 1)  # noqa: E731
    flags = torch.from_numpy(done).reshape(1, n, 1)
    td = TensorDict(
        {
            "state_value": col(v),
            ("next", "state_value"): col(next_v),
            ("next", "reward"): col(rewards[rows, cols]),
            ("next", "done"): flags,
            ("next", "terminated"): flags.clone(),
        },
        batch_size=[1, n],
    )
    with _built_in(dtype):
        est = GAE(
            gamma=float(cfg["gamma"]),
            lmbda=float(cfg["lam"]),
            value_network=None,
            differentiable=False,
            vectorized=True,
        )
    est.forward(td)
    adv = _carry_back(_n(td["advantage"]).reshape(-1), rows, cols, mask.shape)
    returns = adv + values.astype(adv.dtype)
    returns[rows, cols] = _n(td["value_target"]).reshape(-1)
    whitened = est._normalize_advantage(torch.from_numpy(adv), valid=torch.from_numpy(mask))
    return {"outputs": {"advantages": _n(whitened), "returns": returns}}


def reinforce_plus_plus(inputs, cfg, dtype):
    mask = np.asarray(inputs["response_mask"]) != 0
    rewards = np.asarray(inputs["token_level_rewards"])
    rows, cols, done = _trajectories(mask)
    n = rows.size
    r2g = reward2go(
        _t(rewards[rows, cols], dtype).reshape(1, n),
        torch.from_numpy(done).reshape(1, n),
        float(cfg["gamma"]),
        time_dim=-1,
    )
    flat = r2g.reshape(-1)
    returns = torch.zeros(mask.shape, dtype=flat.dtype)
    returns[rows, cols] = flat
    advantages = torch.zeros(mask.shape, dtype=flat.dtype)
    advantages[rows, cols] = _standardize(flat)
    return {"outputs": {"advantages": _n(advantages), "returns": _n(returns)}}


def grpo(inputs, cfg, dtype):
    fixed_setting(cfg, "epsilon", 1e-6, 1e-6, "torchrl/objectives/llm/grpo.py MCAdvantage (std.clamp_min)")
    if not cfg.get("norm_adv_by_std_in_grpo", True):
        raise Decline("MCAdvantage always divides by the group std; no setting for norm_adv_by_std_in_grpo=False")
    mask = np.asarray(inputs["response_mask"]) != 0
    rewards = _t(inputs["token_level_rewards"], dtype)
    index = np.asarray(inputs["index"]).reshape(-1)
    _, counts = np.unique(index, return_counts=True)
    if len(set(counts.tolist())) != 1:
        raise Decline("MCAdvantage's grpo_size is one number; a batch whose groups differ in size cannot be told")
    B, T = rewards.shape
    transform = MCAdvantage(
        grpo_size=int(counts[0]),
        prompt_key="uid",
        rewards_key=("next", "reward"),
        done_key=("next", "done"),
        trajectory_return="sum",
    )
    adv = torch.zeros((B, T), dtype=rewards.dtype)
    for b in range(B):
        done = torch.zeros((T, 1), dtype=torch.bool)
        done[-1] = True
        traj = TensorDict(
            {
                "uid": torch.full((T,), int(index[b]), dtype=torch.long),
                "row": torch.full((T,), b, dtype=torch.long),
                ("next", "reward"): rewards[b].reshape(T, 1),
                ("next", "done"): done,
            },
            batch_size=[T],
        )
        written = transform.inv(traj)
        if written is None:
            continue
        written = written.reshape(-1)
        for r in written["row"].unique().tolist():
            sel = written["row"] == r
            adv[r] = written["advantage"][sel].reshape(-1)
    adv = adv * torch.from_numpy(mask).to(adv.dtype)
    return {"outputs": {"advantages": _n(adv), "returns": _n(adv)}}


def _kl_k1(inputs, cfg, dtype, projections=None):
    logprob = _t(inputs["logprob"], dtype, grad=True)
    ref = _t(inputs["ref_logprob"], dtype)
    B = logprob.shape[0]
    td = TensorDict({("next", "log_probs", "full"): logprob, ("next", "ref_log_probs", "full"): ref}, batch_size=[B])
    KLComputation(add_to_reward=False).forward(td)
    # One row per sequence (a nested tensor of equal-length rows): stacked back into [B, T].
    kl = torch.stack(list(td.get(("next", "kl_penalty")).unbind()))
    out = {"outputs": {"kl": _n(kl)}}
    if projections and "kl" in projections:
        p = torch.from_numpy(np.array(projections["kl"], copy=True)).to(kl.dtype)
        (g,) = torch.autograd.grad((p * kl).sum(), logprob, retain_graph=True, allow_unused=True)
        out["vjps"] = {"kl/logprob": _n(g) if g is not None else np.zeros(logprob.shape, dtype=dtype)}
    (g,) = torch.autograd.grad(kl.sum(), logprob, allow_unused=True)
    out["grads"] = {"logprob": _n(g) if g is not None else np.zeros(logprob.shape, dtype=dtype)}
    return out


def masked_whiten(inputs, cfg, dtype, projections=None):
    fixed_setting(cfg, "shift_mean", True, True, "torchrl/objectives/value/advantages.py GAE._normalize_advantage")
    values = _t(inputs["values"], dtype, grad=True)
    with _built_in(dtype):
        est = GAE(gamma=1.0, lmbda=1.0, value_network=None)
    out = est._normalize_advantage(values, valid=torch.from_numpy(np.asarray(inputs["mask"]) != 0))
    res = {"outputs": {"output": _n(out)}}
    if projections and "output" in projections:
        p = torch.from_numpy(np.array(projections["output"], copy=True)).to(out.dtype)
        (g,) = torch.autograd.grad((p * out).sum(), values, retain_graph=True)
        res["vjps"] = {"output/values": _n(g)}
    (g,) = torch.autograd.grad(out.sum(), values)
    res["grads"] = {"values": _n(g)}
    return res


def masked_mean(inputs, cfg, dtype, projections=None):
    fixed_setting(cfg, "axis", None, None, "torchrl/objectives/common.py LossModule._reduce_loss")
    values = _t(inputs["values"], dtype, grad=True)
    mask = torch.from_numpy(np.asarray(inputs["mask"]) != 0)
    with _built_in(dtype):
        loss_mod = GRPOLoss(None)
    out = loss_mod._reduce_loss(values, mask=mask, reduction="mean")
    res = {"outputs": {"output": _n(out)}}
    if projections and "output" in projections:
        p = torch.from_numpy(np.array(projections["output"], copy=True)).to(out.dtype)
        (g,) = torch.autograd.grad((p * out).sum(), values, retain_graph=True)
        res["vjps"] = {"output/values": _n(g)}
    (g,) = torch.autograd.grad(out.sum(), values)
    res["grads"] = {"values": _n(g)}
    return res


def kl_fixed(inputs, cfg, dtype):
    ctl = ConstantKLController(kl_coef=cfg["kl_coef"])
    return {"outputs": {"value": float(ctl.update([]))}}


def kl_adaptive(inputs, cfg, dtype):
    if cfg.get("n_steps") is None:
        raise Decline("AdaptiveKLController's n_steps is the length of its list of KL values; None gives no list")
    coef = float(cfg["kl_coef"])
    ctl = AdaptiveKLController(init_kl_coef=coef, target=cfg["target_kl"], horizon=cfg["horizon"])
    kl = float(np.asarray(inputs["current_kl"]))
    with _built_in(dtype):  # update() averages the list with torch.as_tensor, in the default dtype
        ctl.update([-coef * kl] * int(cfg["n_steps"]))
    return {"outputs": {"value": float(ctl.coef)}}


FUNCTIONS = {
    "vanilla": _policy_loss(GRPOLoss),
    "cispo": _policy_loss(CISPOLoss),
    "actor_kl_loss": actor_kl_loss,
    "compute_entropy_loss": entropy_loss,
    "token-mean": _aggregation_fn("token-mean"),
    "seq-mean-token-mean": _aggregation_fn("seq-mean-token-mean"),
    "gae": gae,
    "reinforce_plus_plus": reinforce_plus_plus,
    "grpo": grpo,
    "kl": _kl_k1,
    "k1": _kl_k1,
    "masked_whiten": masked_whiten,
    "masked_mean": masked_mean,
    "fixed": kl_fixed,
    "adaptive": kl_adaptive,
}


def _shard_hook(fn):
    def hook(inputs, cfg, dtype, shard):
        return fn(inputs, cfg, dtype, shard=shard)

    return hook


# The sharded calls, as TorchRL's trainer runs its losses (module docstring, "Sharded calls").
SHARD = {
    k: _shard_hook(FUNCTIONS[k]) for k in ("vanilla", "cispo", "actor_kl_loss", "token-mean", "seq-mean-token-mean")
}
