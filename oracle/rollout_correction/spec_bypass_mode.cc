// Registry entry for the "bypass_mode" policy loss of POLICY_LOSS_REGISTRY (family
// "policy_loss"): core_algos.compute_policy_loss_bypass_mode, configured through
// ActorConfig.policy_loss.rollout_correction. Math: oracle/rollout_correction/rollout_correction.h.
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/rollout_correction/rollout_correction.h"
#include "oracle/rollout_correction/spec.h"
#include "oracle/rollout_correction/spec_common.h"

namespace verlconf {
namespace {

// rollout_correction.loss_type as verl prints it ("None" when the case leaves it None).
std::string LossType(const Config& c) { return c.OptionalString("loss_type").value_or("None"); }

oracle::PolicyLossResult RunBypass(const Case& c, const oracle::CorrectionResult* frozen) {
  // in.rollout_is_weights stays null: verl ignores the argument.
  const oracle::PolicyLossInputs in{c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"),
                                    c.Input("response_mask"), nullptr};
  // loss_type None (absent) is no valid choice either: verl raises "Invalid loss_type: None".
  return oracle::policy_loss_bypass_mode(in, oracle::ReadVanillaConfig(c.config), LossType(c.config),
                                         oracle::ReadRolloutSettings(c.config), frozen);
}

Case Generate(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewPolicyLossCase(p, g);
  // A few tokens where the policies agree exactly (ratio 1 sits on thresholds at 1).
  Array& lp = c.inputs["log_prob"];
  for (int64_t k = 0; k < lp.size(); ++k)
    if (g.Coin(0.1)) lp[k] = c.Input("old_log_prob")[k];
  oracle::SetRandomVanillaConfig(g, c.config);
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

}  // namespace

void AddBypassModeSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "bypass_mode";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss_bypass_mode";
  s.inputs = oracle::PolicyLossInputSpecs();
  s.inputs[0].doc = "the rollout log-probs (bypass: old = rollout)";
  s.inputs[4].doc = "ignored by verl (recomputed)";
  oracle::AddVanillaKeys(s);
  s.config.push_back({"loss_type",
                      "str",
                      std::string("ppo_clip"),
                      "rollout_correction.loss_type: ppo_clip or reinforce (anything else: ValueError)",
                      {},
                      /*absent_is_none=*/true});
  oracle::AddRolloutSettingsKeys(s, std::string("sequence"),
                                 "rollout_correction.rollout_is (PolicyLossConfig's default RolloutCorrectionConfig)");
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.grads = {"log_prob"};
  s.metrics = {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"};
  s.discrete_metrics = {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"};
  oracle::AddCorrectionMetrics(s, "rollout_corr/", /*is=*/true, oracle::AllRsOptions(), /*offpolicy=*/true);
  s.oracle = [](const Case& c) { return oracle::PackPolicyLoss(RunBypass(c, nullptr), c.dtype); };
  // The pipeline runs under torch.no_grad(): IS weights and the rejection mask depend on
  // log_prob but are constants to autograd, so the gradient is the loss's derivative
  // with them held at the unperturbed point.
  s.stop_gradient_objective = [](const Case& base, const Case& at) {
    const oracle::CorrectionResult frozen =
        oracle::RunPipelineOnLossCase(base, "old_log_prob", oracle::ReadRolloutSettings(base.config));
    return RunBypass(at, &frozen).loss;
  };
  s.check_config = [](const Case& c) {
    oracle::ThrowIfRefused(c, oracle::CheckPipelineConfig(oracle::ReadRolloutSettings(c.config)));
    const std::string loss_type = LossType(c.config);
    if (loss_type != "ppo_clip" && loss_type != "reinforce")
      oracle::ThrowIfRefused(
          c, {"loss_type", "ValueError: Invalid loss_type: " + loss_type + ". Must be 'reinforce' or 'ppo_clip'."});
  };
  s.generate = Generate;
  s.variants = [](const Case& c) -> std::vector<std::string> {
    const ConfigValue t = c.config.Value("loss_type");
    if (const auto* s = std::get_if<std::string>(&t))
      if (*s == "ppo_clip" || *s == "reinforce") return {*s};
    return {};
  };
  s.required_variants = {"ppo_clip", "reinforce"};
  // The interface's mistrust rule for a loss without an output mask: the mask the loss
  // ran on (the pipeline's, recomputed from the case) rejects every valid token, so the
  // loss is a trivial zero that any implementation rejecting everything matches.
  s.mistrust = oracle::LossMaskAllRejected("old_log_prob", oracle::ReadRolloutSettings);
  s.notes =
      "The pipeline (compute_rollout_correction_and_rejection_mask) runs under no_grad with log_prob as the "
      "current policy and old_log_prob as the rollout; ppo_clip: compute_policy_loss_vanilla on the rejected "
      "mask without IS weights; reinforce: compute_policy_loss_reinforce with the pipeline's IS weights on it. "
      "Metrics: the loss's actor/... plus rollout_corr/.... The rollout_is_weights argument is ignored. An "
      "absent rollout-correction key is None (as the capture passes it), not the dataclass default.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
