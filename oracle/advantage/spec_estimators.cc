// Registry entries for the estimators of verl's ADV_ESTIMATOR_REGISTRY beyond GRPO
// (family "advantage"). Each lists the inputs verl's compute_advantage dispatcher can
// hand it; config keys are the function's own parameters, with the defaults verl
// applies when the dispatcher does not pass them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "oracle/advantage/baselines.h"
#include "oracle/advantage/grpo_variants.h"
#include "oracle/advantage/optimal_token_baseline.h"
#include "oracle/advantage/returns.h"
#include "oracle/advantage/spec.h"
#include "oracle/advantage/spec_common.h"
#include "oracle/core/spec_util.h"

namespace verlconf {
namespace {

using oracle::GenerateAdvantage;
using oracle::kIndex;
using oracle::kMask;
using oracle::kRewards;
using oracle::Pack;
using oracle::Same;
// The generator's flags (spec_common.h).
using oracle::kBaselines;
using oracle::kComponents;
using oracle::kFNorm;
using oracle::kGamma;
using oracle::kGrpoConfig;
using oracle::kNoIndex;
using oracle::kNoSingletons;
using oracle::kOutcome;
using oracle::kPolicyStats;
using oracle::kValues;
using oracle::kWhitened;

// What verl's compute_advantage passes every estimator it fetches from the registry
// when the batch holds uid and reward_baselines (it checks for both), plus the extras it
// adds for gdpo and the OTB keys. gae is called by name with its own arguments.
std::vector<std::string> GenericDispatch(std::vector<std::string> extra = {}) {
  std::vector<std::string> k = {"config", "index", "response_mask", "reward_baselines", "token_level_rewards"};
  k.insert(k.end(), extra.begin(), extra.end());
  std::sort(k.begin(), k.end());
  return k;
}

// An estimator as compute_advantage fetches it from the registry (GenericDispatch);
// entries that verl calls otherwise declare their own dispatch_kwargs.
FunctionSpec Base(const std::string& name, const std::string& symbol, std::vector<InputSpec> inputs, unsigned want,
                  RunFn run, const std::string& notes) {
  FunctionSpec s;
  s.name = name;
  s.family = "advantage";
  s.verl_symbol = "verl.trainer.ppo.core_algos." + symbol;
  s.inputs = std::move(inputs);
  s.outputs = {{"advantages"}, {"returns"}};
  s.oracle = std::move(run);
  s.generate = [want](const GenParams& p) { return GenerateAdvantage(p, want); };
  s.notes = notes;
  s.dispatch_kwargs = GenericDispatch();
  // float32: the baselines cancel scores of the size of the rewards (see spec_util.h).
  s.float32_condition = oracle::ScoreScaleCondition;
  return s;
}

// A discount or a GAE lambda: a weight in [0, 1].
constexpr std::pair<double, double> kUnitRange{0.0, 1.0};
const ConfigKey kGammaKey{
    "gamma", "float", 1.0,       "discount; the dispatcher passes algorithm.gamma (AlgoConfig default 1.0)",
    {},      false,   kUnitRange};

oracle::OtbConfig ReadOtb(const Case& c) {
  oracle::OtbConfig o;
  o.handle_zero_tail = c.config.Bool("handle_zero_tail");
  o.epsilon = c.config.Double("epsilon");
  return o;
}

std::vector<InputSpec> OtbInputs() {
  return {
      kRewards,
      kMask,
      kIndex,
      {"old_log_probs", Role::kTokens, false, false, "data.batch['old_log_probs']"},
      {"sum_pi_squared", Role::kTokens, false, false, "data.batch['sum_pi_squared'] (actor.calculate_sum_pi_squared)"},
      {"rollout_is_weights", Role::kTokens, false, true, "data.batch.get('rollout_is_weights'); None when absent"}};
}

std::vector<ConfigKey> OtbConfigKeys() {
  return {{"handle_zero_tail", "bool", int64_t{1},
           "zero the unique longest trajectory's baseline past the second-longest; "
           "the dispatcher never passes it"},
          {"epsilon", "float", 1e-8, "added to sum(W); the dispatcher never passes it"}};
}

using OtbFn = oracle::AdvantageReturns (*)(const Array&, const Array&, const Array&, const Array&, const Array&,
                                           const Array*, const oracle::OtbConfig&, double*);

// The baselines' cancellation (w = 1 - 2 pi + sum pi^2 near pi = 1, the oracle's bound
// in eps) as an absolute allowance on the advantages beside the dtype's default: a
// float32 W of 5e-5 whose terms are of order 1 carries a relative error of 1e-3.
void SetOtbTolerance(FunctionSpec& s, OtbFn run) {
  s.float32_condition = nullptr;
  s.case_tolerance = [run](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    if (field != "outputs/advantages") return std::nullopt;
    double cancellation = 0.0;
    run(c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index"), c.Input("old_log_probs"),
        c.Input("sum_pi_squared"), c.OptionalInput("rollout_is_weights"), ReadOtb(c), &cancellation);
    const Tolerance d = DefaultTolerance(c.dtype);
    const double extra = 4.0 * (c.dtype == DType::kFloat32 ? kEps32 : kEps64) * cancellation;
    if (!std::isfinite(extra) || extra <= d.atol) return std::nullopt;
    char why[160];
    std::snprintf(why, sizeof why, "+ 4 eps times the baselines' cancellation %.3g (sum_i W near 0)", cancellation);
    return Tolerance{d.rtol, d.atol + extra, why};
  };
}

// A float32 reward-to-go summed in another order than verl's sequential cumsum (a
// parallel scan) rounds by up to a few sqrt(n) half-ulps of the magnitudes summed: where
// rewards of both signs cancel (8e-4 left of 250 terms of order 0.5) that is beyond the
// dtype's tolerance of the small result, for verl's own float32 cumsum as for a
// candidate's. Each element of `fields` gets 8 sqrt(n_t) (eps / 2) S_t more atol, S_t
// = sum_{s >= t} |r_s m_s| over its n_t terms: Higham's probabilistic bound on a sum's
// rounding with lambda = 8 (exceeded with probability about 1e-14). A field the spec
// already bounds keeps its bound and adds this one.
void AllowForRewardToGoRounding(FunctionSpec& s, const std::vector<std::string>& fields) {
  auto extra = [](const Case& c) {
    const Array& r = c.Input("token_level_rewards");
    const Array& m = c.Input("response_mask");
    std::vector<double> e(static_cast<size_t>(r.size()), 0.0);
    for (int64_t i = 0; i < r.rows(); ++i) {
      double sum = 0.0, n = 0.0;
      for (int64_t t = r.cols() - 1; t >= 0; --t) {
        sum += std::fabs(r.at(i, t) * m.at(i, t));
        n += 1.0;
        e[static_cast<size_t>(i * r.cols() + t)] = 8.0 * std::sqrt(n) * 0.5 * kEps32 * sum;
      }
    }
    return e;
  };
  // What both hooks below need of a field, worked out in one place: the tolerance the
  // spec had, each element's allowance and the largest (empty where none applies).
  struct Allowance {
    std::optional<Tolerance> before;
    std::vector<double> each;
    double most = 0.0;
  };
  auto allowance = [fields, extra, before = s.case_tolerance](const Case& c, const std::string& field) {
    Allowance a;
    a.before = before ? before(c, field) : std::nullopt;
    const bool applies = c.dtype == DType::kFloat32 && std::find(fields.begin(), fields.end(), field) != fields.end() &&
                         c.OptionalInput("token_level_rewards") && c.OptionalInput("response_mask");
    if (!applies) return a;
    a.each = extra(c);
    a.most = a.each.empty() ? 0.0 : *std::max_element(a.each.begin(), a.each.end());
    if (!(a.most > 0.0)) a.each.clear();
    return a;
  };
  s.case_tolerance = [allowance](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    const Allowance a = allowance(c, field);
    if (a.each.empty()) return a.before;
    Tolerance out = a.before ? *a.before : DefaultTolerance(c.dtype);
    out.atol += a.most;
    out.reason = (out.reason.empty() ? "" : out.reason + "; ") +
                 "+ the float32 rounding of each reward-to-go's sum (8 sqrt(n) eps/2 times its summed magnitudes)";
    return out;
  };
  // The largest element's allowance above, narrowed element by element to its own.
  s.atol_scale = [allowance, scale_before = s.atol_scale](
                     const Case& c, const std::string& field) -> std::optional<std::vector<double>> {
    std::optional<std::vector<double>> own = scale_before ? scale_before(c, field) : std::nullopt;
    const Allowance a = allowance(c, field);
    if (a.each.empty()) return own;
    const double base = std::max(a.before ? a.before->atol : 0.0, DefaultTolerance(c.dtype).atol);
    std::vector<double> scale(a.each.size());
    for (size_t k = 0; k < a.each.size(); ++k)
      scale[k] = (base + a.each[k]) / (base + a.most) * (own && k < own->size() ? (*own)[k] : 1.0);
    return scale;
  };
}

}  // namespace

void AddAdvantageEstimatorSpecs(std::vector<FunctionSpec>& out) {
  {
    FunctionSpec s = Base(
        "gae", "compute_gae_advantage_return",
        {kRewards, {"values", Role::kTokens, false, false, "data.batch['values'] (critic)"}, kMask},
        kNoIndex | kValues | kWhitened | kGamma,
        [](const Case& c) {
          return Pack(oracle::gae_advantage_return(c.Input("token_level_rewards"), c.Input("values"),
                                                   c.Input("response_mask"), c.config.Double("gamma"),
                                                   c.config.Double("lam")));
        },
        "returns before whitening; advantages whitened over valid tokens and not re-masked");
    // The advantages are the whitened raw advantages (returns - values).
    oracle::SetWhitenedAdvantageTolerance(s, [](const Case& c) {
      Array raw =
          oracle::gae_advantage_return(c.Input("token_level_rewards"), c.Input("values"), c.Input("response_mask"),
                                       c.config.Double("gamma"), c.config.Double("lam"))
              .returns;
      for (size_t k = 0; k < raw.data.size(); ++k) raw.data[k] -= c.Input("values").data[k];
      return raw;
    });
    s.config = {
        kGammaKey,
        {"lam", "float", 1.0, "GAE lambda; the dispatcher passes algorithm.lam (default 1.0)", {}, false, kUnitRange}};
    // compute_advantage calls gae by name with its own arguments.
    s.dispatch_kwargs = {"gamma", "lam", "response_mask", "token_level_rewards", "values"};
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s = Base(
        "reinforce_plus_plus", "compute_reinforce_plus_plus_outcome_advantage", {kRewards, kMask},
        kNoIndex | kWhitened | kGamma,
        [](const Case& c) {
          return Pack(oracle::reinforce_plus_plus_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                            c.config.Double("gamma")));
        },
        "discounted returns carried across observation tokens; whitened and masked");
    // The advantages are the whitened returns: nearly constant returns (gamma close to
    // 1, one row) cancel in the whitening.
    oracle::SetWhitenedAdvantageTolerance(s, [](const Case& c) {
      return oracle::reinforce_plus_plus_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                   c.config.Double("gamma"))
          .returns;
    });
    s.config = {{"gamma", "float", 1.0, "read from config.gamma (AlgoConfig default 1.0)", {}, false, kUnitRange}};
    out.push_back(std::move(s));
  }
  out.push_back(Base(
      "reinforce_plus_plus_baseline", "compute_reinforce_plus_plus_baseline_outcome_advantage",
      {kRewards, kMask, kIndex}, kWhitened,
      [](const Case& c) {
        return Same(oracle::reinforce_plus_plus_baseline_advantage(c.Input("token_level_rewards"),
                                                                   c.Input("response_mask"), c.Input("index")));
      },
      "group mean baseline (0 for singletons), then batch whitening; epsilon is unused"));
  out.back().float32_condition = oracle::WhitenedScoreCondition;
  // float64: the whitening's absolute bound (float32 is scaled by float32_condition).
  out.back().case_tolerance = [](const Case& c, const std::string& field) -> std::optional<Tolerance> {
    if (c.dtype != DType::kFloat64 || (field != "outputs/advantages" && field != "outputs/returns"))
      return std::nullopt;
    return oracle::WhitenedTolerance(DType::kFloat64, oracle::WhitenedScoreCondition(c));
  };
  out.push_back(Base(
      "rloo", "compute_rloo_outcome_advantage", {kRewards, kMask, kIndex}, kOutcome,
      [](const Case& c) {
        return Same(
            oracle::rloo_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index")));
      },
      "leave-one-out baseline; a singleton keeps its raw score"));
  out.push_back(Base(
      "rloo_vectorized", "compute_rloo_vectorized_outcome_advantage", {kRewards, kMask, kIndex}, kOutcome,
      [](const Case& c) {
        return Same(oracle::rloo_vectorized_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                              c.Input("index")));
      },
      "leave-one-out baseline; a singleton gets 0 (unlike rloo)"));
  out.push_back(Base(
      "opo", "compute_opo_outcome_advantage", {kRewards, kMask, kIndex}, kOutcome,
      [](const Case& c) {
        return Same(
            oracle::opo_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index")));
      },
      "length-weighted group baseline; NaN for a group of empty rows"));
  out.push_back(Base(
      "remax", "compute_remax_outcome_advantage",
      {kRewards,
       {"reward_baselines", Role::kSequences, false, false,
        "data.batch['reward_baselines'] (reward of the greedy rollout)"},
       kMask},
      kNoIndex | kBaselines,
      [](const Case& c) {
        return Pack(oracle::remax_outcome_advantage(c.Input("token_level_rewards"), c.Input("reward_baselines"),
                                                    c.Input("response_mask")));
      },
      "masked reward-to-go minus the greedy baseline on valid tokens"));
  {
    FunctionSpec s = Base(
        "gpg", "compute_gpg_outcome_advantage", {kRewards, kMask, kIndex}, kFNorm,
        [](const Case& c) {
          return Same(oracle::gpg_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                    c.Input("index"), c.config.Double("f_norm")));
        },
        "alpha = float32(B / #nonzero scores) replaces the alpha argument; no std division");
    s.float32_condition = oracle::GpgScoreScaleCondition;
    s.config = {{"f_norm", "float", 1.0, "divides the advantage; the dispatcher never passes it"},
                {"alpha", "float", 1.0, "ignored: verl overwrites it with B / count_nonzero(scores)"}};
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s = Base(
        "grpo_passk", "compute_grpo_passk_outcome_advantage", {kRewards, kMask, kIndex}, kNoSingletons | kGrpoConfig,
        [](const Case& c) {
          return Same(oracle::grpo_passk_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                           c.Input("index"), c.config.Double("epsilon"),
                                                           c.config.Bool("norm_adv_by_std_in_grpo")));
        },
        "only each group's best response gets r_max - r_2nd (over std + eps); groups of one raise");
    s.float32_condition = oracle::GrpoFloat32Condition;
    s.config = {{"epsilon", "float", 1e-6, "added to the group std"},
                {"norm_adv_by_std_in_grpo", "bool", int64_t{1},
                 "read from config.norm_adv_by_std_in_grpo; the function's own argument is ignored"}};
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s = Base(
        "gdpo", "compute_gdpo_outcome_advantage",
        {kRewards,
         kMask,
         kIndex,
         {"reward_components", Role::kComponents, false, true,
          "non_tensor_batch[key] for key in algorithm.gdpo_reward_keys (one column per key)"},
         {"reward_weights", Role::kComponentWeights, false, true, "algorithm.gdpo_reward_weights; None = all 1"}},
        kWhitened | kComponents | kGrpoConfig,
        [](const Case& c) {
          oracle::GrpoConfig g;
          g.epsilon = c.config.Double("epsilon");
          g.norm_adv_by_std_in_grpo = c.config.Bool("norm_adv_by_std_in_grpo");
          return Same(oracle::gdpo_outcome_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                     c.Input("index"), c.OptionalInput("reward_components"),
                                                     c.OptionalInput("reward_weights"), g));
        },
        "per-component GRPO (float32 when components are given), weighted sum, batch whitening, masked");
    // GRPO per component, then whitening: one bound for both (float32_condition would
    // multiply it again). The whitening amplifies the weighted sum's rounding by
    // rsqrt(var + 1e-8): a batch whose sum is constant (one singleton group: every token
    // -1 / (1 + eps)) whitens float32 noise by 1e4 (verl's float32 mean is an ulp off),
    // and a near-constant GRPO group's float64 noise (its last bit over std + 1e-6) is
    // whitened by 1e4 again.
    s.float32_condition = nullptr;
    oracle::SetWhitenedAdvantageTolerance(
        s,
        [](const Case& c) {
          oracle::GrpoConfig g;
          g.epsilon = c.config.Double("epsilon");
          g.norm_adv_by_std_in_grpo = c.config.Bool("norm_adv_by_std_in_grpo");
          return oracle::gdpo_weighted_sum(c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index"),
                                           c.OptionalInput("reward_components"), c.OptionalInput("reward_weights"), g);
        },
        {"outputs/advantages", "outputs/returns"},
        // With components the oracle replays verl's float32 GRPO step; another correct
        // float32 order (torch's own for a longer group, a GPU's, the CUDA host twin's)
        // rounds each component's group sums differently, amplified by that group's
        // condition number. Without them it is float64 GRPO of token_level_rewards, with
        // GRPO's.
        [](const Case& c) {
          return c.OptionalInput("reward_components") ? oracle::ComponentGroupCondition(c)
                                                      : oracle::GrpoFloat32Condition(c);
        },
        // verl casts the components to float32, so the GRPO step whose rounding the
        // whitening amplifies is float32 arithmetic in a float64 case too.
        [](const Case& c) { return c.OptionalInput("reward_components") ? DType::kFloat32 : c.dtype; });
    s.dispatch_kwargs = GenericDispatch({"batch", "non_tensor_batch"});
    s.config = {{"epsilon", "float", 1e-6, "added to each component's group std"},
                {"norm_adv_by_std_in_grpo", "bool", int64_t{1},
                 "the function's argument; the dispatcher never passes it (so True)"}};
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s = Base(
        "optimal_token_baseline", "compute_optimal_token_baseline_advantage", OtbInputs(), kPolicyStats,
        [](const Case& c) {
          return Pack(oracle::optimal_token_baseline_advantage(
              c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index"), c.Input("old_log_probs"),
              c.Input("sum_pi_squared"), c.OptionalInput("rollout_is_weights"), ReadOtb(c)));
        },
        "per-position W-weighted group baseline of the reward-to-go");
    s.config = OtbConfigKeys();
    s.dispatch_kwargs = GenericDispatch({"old_log_probs", "rollout_is_weights", "sum_pi_squared"});
    SetOtbTolerance(s, oracle::optimal_token_baseline_advantage);
    AllowForRewardToGoRounding(s, {"outputs/advantages", "outputs/returns"});
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s = Base(
        "tir_optimal_token_baseline", "compute_multi_turn_optimal_token_baseline_advantage", OtbInputs(), kPolicyStats,
        [](const Case& c) {
          return Pack(oracle::tir_optimal_token_baseline_advantage(
              c.Input("token_level_rewards"), c.Input("response_mask"), c.Input("index"), c.Input("old_log_probs"),
              c.Input("sum_pi_squared"), c.OptionalInput("rollout_is_weights"), ReadOtb(c)));
        },
        "as optimal_token_baseline, on each row's valid tokens packed to the left");
    s.config = OtbConfigKeys();
    s.dispatch_kwargs = GenericDispatch({"old_log_probs", "rollout_is_weights", "sum_pi_squared"});
    SetOtbTolerance(s, oracle::tir_optimal_token_baseline_advantage);
    AllowForRewardToGoRounding(s, {"outputs/advantages", "outputs/returns"});
    out.push_back(std::move(s));
  }
  oracle::AddMultiTrajectorySpec(out);
}

}  // namespace verlconf
