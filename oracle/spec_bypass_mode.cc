// Registry entry for the "bypass_mode" policy loss of POLICY_LOSS_REGISTRY (family
// "policy_loss"): core_algos.compute_policy_loss_bypass_mode, configured through
// ActorConfig.policy_loss.rollout_correction. Math: oracle/rollout_correction.cc.
#include <iterator>
#include <tuple>

#include "oracle/generate.h"
#include "oracle/registry.h"
#include "oracle/rollout_correction.h"
#include "oracle/spec_util.h"

namespace verlconf {
namespace {

using oracle::RawConfig;

const ConfigValue kNone = std::monostate{};

oracle::VanillaConfig ReadVanilla(const Config& c) {
  oracle::VanillaConfig v;
  std::tie(v.clip_ratio_low, v.clip_ratio_high) = oracle::ReadClipRatios(c);
  v.clip_ratio_c = c.Double("clip_ratio_c", 3.0);
  v.loss_agg_mode = c.String("loss_agg_mode", "token-mean");
  v.global = oracle::ReadGlobalBatchInfo(c);
  return v;
}

// The case's RolloutCorrectionConfig keys; an absent one was passed as None (the capture's
// convention), not as the dataclass default.
oracle::RolloutCorrectionSettings ReadSettings(const Config& c) {
  oracle::RolloutCorrectionSettings s;
  s.rollout_is = RawConfig(c, "rollout_is", kNone);
  s.rollout_is_threshold = RawConfig(c, "rollout_is_threshold", kNone);
  s.rollout_is_batch_normalize = c.Bool("rollout_is_batch_normalize", false);
  s.rollout_rs = RawConfig(c, "rollout_rs", kNone);
  s.rollout_rs_threshold = RawConfig(c, "rollout_rs_threshold", kNone);
  return s;
}

oracle::PolicyLossResult RunBypass(const Case& c, const oracle::CorrectionResult* frozen) {
  // in.rollout_is_weights stays null: verl ignores the argument.
  const oracle::PolicyLossInputs in{c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                                    c.Input("response_mask"), nullptr};
  // loss_type None (absent) is no valid choice either: verl raises "Invalid loss_type: None".
  return oracle::policy_loss_bypass_mode(in, ReadVanilla(c.config), c.config.String("loss_type", "None"),
                                         ReadSettings(c.config), frozen);
}

Case Generate(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewPolicyLossCase(p, g);
  // A few tokens where the policies agree exactly (ratio 1 sits on thresholds at 1).
  Array& lp = c.inputs["log_prob"];
  for (int64_t k = 0; k < lp.size(); ++k)
    if (g.Coin(0.1)) lp[k] = c.Input("old_log_prob")[k];
  c.config.Set("clip_ratio", 0.2);
  c.config.Set("clip_ratio_low", 0.2);
  c.config.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
  c.config.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 10.0);
  c.config.Set("loss_agg_mode", std::string(oracle::kAggModes[g.Int(0, 4)]));
  c.config.Set("loss_type", std::string(g.Coin(0.5) ? "ppo_clip" : "reinforce"));
  if (g.Coin(0.7)) c.config.Set("rollout_is", std::string(g.Coin(0.5) ? "token" : "sequence"));  // else None
  c.config.Set("rollout_is_threshold", oracle::RandomIsThreshold(g, g.Coin(0.3)));
  if (g.Coin(0.2)) c.config.Set("rollout_is_batch_normalize", int64_t{1});
  if (g.Coin(0.5)) {
    const std::string option = oracle::kRolloutRsOptions[g.Int(0, 10)];
    c.config.Set("rollout_rs", option);
    c.config.Set("rollout_rs_threshold", oracle::RandomRsThresholdEntry(g, option));
  }
  return c;
}

std::vector<std::string> Names(bool discrete) {
  std::vector<std::string> out = discrete ? std::vector<std::string>{"actor/pg_clipfrac", "actor/pg_clipfrac_lower"}
                                          : std::vector<std::string>{"actor/pg_clipfrac", "actor/ppo_kl",
                                                                     "actor/pg_clipfrac_lower"};
  for (const auto& m : discrete ? oracle::IsDiscreteMetricNames() : oracle::IsMetricNames())
    out.push_back("rollout_corr/" + m);
  for (const char* o : oracle::kRolloutRsOptions)
    for (const auto& m : discrete ? oracle::RsOptionDiscreteMetricNames(o) : oracle::RsOptionMetricNames(o))
      out.push_back("rollout_corr/" + m);
  for (const char* m : oracle::kRsOverallMetrics) out.push_back(std::string("rollout_corr/") + m);
  if (!discrete)
    for (const auto& m : oracle::OffpolicyMetricNames()) out.push_back("rollout_corr/" + m);
  return out;
}

}  // namespace

void AddBypassModeSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "bypass_mode";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss_bypass_mode";
  s.inputs = {{"old_log_prob", Role::kTokens, false, false, "the rollout log-probs (bypass: old = rollout)"},
              {"log_prob", Role::kTokens},
              {"advantages", Role::kTokens},
              {"response_mask", Role::kTokens, /*is_mask=*/true},
              {"rollout_is_weights", Role::kTokens, false, /*optional=*/true, "ignored by verl (recomputed)"}};
  s.config = {{"clip_ratio", "float", 0.2, "symmetric clip epsilon (ppo_clip)"},
              {"clip_ratio_low", "float", 0.2, "lower clip epsilon; None = clip_ratio"},
              {"clip_ratio_high", "float", 0.2, "upper clip epsilon; None = clip_ratio"},
              {"clip_ratio_c", "float", 3.0, "dual-clip bound for negative advantages; must be > 1"},
              {"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode",
               std::vector<std::string>(std::begin(oracle::kAggModes), std::end(oracle::kAggModes))}};
  oracle::AddGlobalBatchKeys(s);
  s.config.push_back({"loss_type", "str", std::string("ppo_clip"),
                      "rollout_correction.loss_type: ppo_clip or reinforce (anything else: ValueError)"});
  s.config.push_back({"rollout_is", "str", std::string("sequence"),
                      "rollout_correction.rollout_is (PolicyLossConfig's default RolloutCorrectionConfig)",
                      {"token", "sequence"}});
  s.config.push_back({"rollout_is_threshold", "float|str", 2.0, "TIS number or IcePop \"lower_upper\""});
  s.config.push_back({"rollout_is_batch_normalize", "bool", int64_t{0}, "normalise the IS weights to mean 1"});
  s.config.push_back({"rollout_rs", "str", kNone, "None (no RS) or RS options, comma separated"});
  s.config.push_back({"rollout_rs_threshold", "float|str", kNone, "required when rollout_rs is set"});
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.grads = {"log_prob"};
  s.metrics = Names(false);
  s.discrete_metrics = Names(true);
  // The std metrics' cancellation (see spec_rollout_correction.cc's AddStdTolerances).
  std::vector<std::string> stds = {"rollout_corr/rollout_is_std"};
  for (const char* o : oracle::kRolloutRsOptions) stds.push_back(std::string("rollout_corr/rollout_rs_") + o + "_std");
  for (const auto& m : stds) {
    s.tolerances.push_back({"metrics/" + m, DType::kFloat32, 3.1e-5, 2e-3,
                            "float32 sqrt(E[x^2] - E[x]^2) cancels for a small spread"});
    s.tolerances.push_back({"metrics/" + m, DType::kFloat64, 1e-5, 1e-9,
                            "sqrt(E[x^2] - E[x]^2) cancels for a small spread and amplifies torch's last-bit exp "
                            "differences from libm"});
  }
  s.oracle = [](const Case& c) { return oracle::PackPolicyLoss(RunBypass(c, nullptr), c.dtype); };
  // The pipeline runs under torch.no_grad(): IS weights and the rejection mask depend on
  // log_prob but are constants to autograd, so the gradient is the loss's derivative
  // with them held at the unperturbed point.
  s.stop_gradient_objective = [](const Case& base, const Case& at) {
    const oracle::CorrectionResult frozen = oracle::compute_rollout_correction_and_rejection_mask(
        base.Input("log_prob"), base.Input("old_log_prob"), base.Input("response_mask"), ReadSettings(base.config));
    return RunBypass(at, &frozen).loss;
  };
  s.check_config = [](const Case& c) {
    oracle::ThrowIfRefused(c, oracle::CheckPipelineConfig(ReadSettings(c.config)));
    const std::string loss_type = c.config.String("loss_type", "None");
    if (loss_type != "ppo_clip" && loss_type != "reinforce")
      oracle::ThrowIfRefused(c, {"loss_type", "ValueError: Invalid loss_type: " + loss_type +
                                                  ". Must be 'reinforce' or 'ppo_clip'."});
  };
  s.generate = Generate;
  s.variants = [](const Case& c) -> std::vector<std::string> {
    const ConfigValue t = RawConfig(c.config, "loss_type", kNone);
    if (const auto* s = std::get_if<std::string>(&t))
      if (*s == "ppo_clip" || *s == "reinforce") return {*s};
    return {};
  };
  s.required_variants = {"ppo_clip", "reinforce"};
  // The interface's mistrust rule for a loss without an output mask: the mask the loss
  // ran on (the pipeline's, recomputed from the case) rejects every valid token, so the
  // loss is a trivial zero that any implementation rejecting everything matches.
  s.mistrust = [](const Case& golden) -> std::string {
    try {
      const oracle::CorrectionResult r = oracle::compute_rollout_correction_and_rejection_mask(
          golden.Input("log_prob"), golden.Input("old_log_prob"), golden.Input("response_mask"),
          ReadSettings(golden.config));
      for (double v : r.modified_response_mask.data)
        if (v != 0.0) return "";
      return "every valid token was rejected: the loss ran on an all-zero mask, so agreeing on it proves little";
    } catch (const std::exception&) {
      return "";
    }
  };
  s.notes = "The pipeline (compute_rollout_correction_and_rejection_mask) runs under no_grad with log_prob as the "
            "current policy and old_log_prob as the rollout; ppo_clip: compute_policy_loss_vanilla on the rejected "
            "mask without IS weights; reinforce: compute_policy_loss_reinforce with the pipeline's IS weights on it. "
            "Metrics: the loss's actor/... plus rollout_corr/.... The rollout_is_weights argument is ignored. An "
            "absent rollout-correction key is None (as the capture passes it), not the dataclass default.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
