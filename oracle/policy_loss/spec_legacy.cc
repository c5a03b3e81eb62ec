// Registry entries for two policy losses of core_algos.py that POLICY_LOSS_REGISTRY
// does not list (family "policy_loss", named after verl's functions):
// compute_policy_loss_reinforce and the deprecated compute_policy_loss. Math:
// oracle/policy_loss/legacy.cc.
#include <iterator>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/policy_loss/legacy.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf {
namespace {

FunctionSpec Reinforce() {
  FunctionSpec s;
  s.name = "compute_policy_loss_reinforce";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss_reinforce";
  s.inputs = oracle::PolicyLossInputSpecs();
  s.inputs[0].doc = "verl's rollout_log_prob (first argument)";
  s.config = {{"loss_agg_mode", "str", std::string("seq-mean-token-sum"), "agg_loss mode (the function's default)",
               oracle::AggModeChoices()}};
  oracle::AddGlobalBatchKeys(s);
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.metrics = {"actor/ppo_kl"};
  s.grads = {"log_prob"};
  s.oracle = [](const Case& c) {
    return oracle::PackPolicyLoss(
        oracle::policy_loss_reinforce(oracle::ReadPolicyLossInputs(c), c.config.String("loss_agg_mode"),
                                      oracle::ReadGlobalBatchInfo(c.config)),
        c.dtype);
  };
  s.generate = [](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewPolicyLossCase(p, g);
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
  s.notes =
      "-A * log_prob * w aggregated (w: rollout IS weights, constants); no clip; only metric actor/ppo_kl "
      "(unclamped); needs an ActorConfig (global_batch_info). Not in POLICY_LOSS_REGISTRY: bypass_mode calls it.";
  return s;
}

FunctionSpec Deprecated() {
  FunctionSpec s;
  s.name = "compute_policy_loss";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss";
  s.inputs = oracle::PolicyLossInputSpecs(/*rollout_is_weights=*/false);
  s.config = {{"cliprange", "float", oracle::None(), "symmetric clip epsilon (required)"},
              {"cliprange_low", "float", oracle::None(), "lower epsilon; None = cliprange"},
              {"cliprange_high", "float", oracle::None(), "upper epsilon; None = cliprange"},
              {"clip_ratio_c", "float", 3.0, "dual-clip bound for negative advantages; must be > 1"},
              {"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode", oracle::AggModeChoices()}};
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.metrics = {"pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"};
  s.discrete_metrics = {"pg_clipfrac", "pg_clipfrac_lower"};
  s.grads = {"log_prob"};
  s.oracle = [](const Case& c) {
    // cliprange_low / cliprange_high: None = cliprange (verl's rule).
    const double clip = c.config.Double("cliprange");
    const double low = c.config.OptionalDouble("cliprange_low").value_or(clip);
    const double high = c.config.OptionalDouble("cliprange_high").value_or(clip);
    return oracle::PackPolicyLoss(
        oracle::policy_loss_deprecated(oracle::ReadPolicyLossInputs(c), low, high, c.config.Double("clip_ratio_c"),
                                       c.config.String("loss_agg_mode")),
        c.dtype);
  };
  s.generate = [](const GenParams& p) {
    oracle::InputGen g(p.seed);
    Case c = oracle::NewPolicyLossCase(p, g);
    c.inputs.erase("rollout_is_weights");
    c.config.Set("cliprange", 0.2);
    if (g.Coin(0.5)) c.config.Set("cliprange_high", 0.28);
    c.config.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 10.0);
    c.config.Set("loss_agg_mode", oracle::RandomAggMode(g));
    return c;
  };
  s.notes =
      "deprecated: vanilla's dual-clip PPO without IS weights or global_batch_info; returns the tuple "
      "(pg_loss, pg_clipfrac, ppo_kl, pg_clipfrac_lower), mapped to output pg_loss and metrics of those names.";
  return s;
}

}  // namespace

void AddPolicyLossLegacySpecs(std::vector<FunctionSpec>& out) {
  out.push_back(Reinforce());
  out.push_back(Deprecated());
}

}  // namespace verlconf
