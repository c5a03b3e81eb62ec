// Registry entries for the policy losses (family "policy_loss").
#include <iterator>
#include <tuple>

#include "oracle/generate.h"
#include "oracle/policy_loss.h"
#include "oracle/registry.h"
#include "oracle/spec_util.h"

namespace verlconf {
namespace {

using oracle::VanillaConfig;

VanillaConfig ReadVanilla(const Config& c) {
  VanillaConfig v;
  // verl: clip_ratio_low / _high fall back to clip_ratio when None.
  std::tie(v.clip_ratio_low, v.clip_ratio_high) = oracle::ReadClipRatios(c);
  v.clip_ratio_c = c.Double("clip_ratio_c", 3.0);
  v.loss_agg_mode = c.String("loss_agg_mode", "token-mean");
  v.global = oracle::ReadGlobalBatchInfo(c);
  return v;
}

Result RunVanilla(const Case& c) {
  return oracle::PackPolicyLoss(oracle::policy_loss_vanilla(oracle::ReadPolicyLossInputs(c), ReadVanilla(c.config)),
                                c.dtype);
}

Case GenerateVanilla(const GenParams& p) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewPolicyLossCase(p, g);
  c.config.Set("clip_ratio", 0.2);
  c.config.Set("clip_ratio_low", 0.2);
  c.config.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
  c.config.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 10.0);
  c.config.Set("loss_agg_mode", std::string(oracle::kAggModes[g.Int(0, 4)]));
  return c;
}

}  // namespace

void AddPolicyLossSpecs(std::vector<FunctionSpec>& out) {
  FunctionSpec s;
  s.name = "vanilla";
  s.family = "policy_loss";
  s.verl_symbol = "verl.trainer.ppo.core_algos.compute_policy_loss_vanilla";
  s.inputs = {{"old_log_prob", Role::kTokens},
              {"log_prob", Role::kTokens},
              {"advantages", Role::kTokens},
              {"response_mask", Role::kTokens, /*is_mask=*/true},
              {"rollout_is_weights", Role::kTokens, false, /*optional=*/true}};
  s.config = {{"clip_ratio", "float", 0.2, "symmetric clip epsilon"},
              {"clip_ratio_low", "float", 0.2, "lower clip epsilon; None = clip_ratio"},
              {"clip_ratio_high", "float", 0.2, "upper clip epsilon; None = clip_ratio"},
              {"clip_ratio_c", "float", 3.0, "dual-clip bound for negative advantages; must be > 1"},
              {"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode",
               std::vector<std::string>(std::begin(oracle::kAggModes), std::end(oracle::kAggModes))}};
  oracle::AddGlobalBatchKeys(s);
  s.outputs = {{"pg_loss", OutputKind::kScalar}};
  s.metrics = {"actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"};
  s.grads = {"log_prob"};
  s.discrete_metrics = {"actor/pg_clipfrac", "actor/pg_clipfrac_lower"};
  s.oracle = RunVanilla;
  s.generate = GenerateVanilla;
  s.notes = "log-ratio clamped to [-20, 20] before exp; metrics are masked means over response_mask.";
  out.push_back(std::move(s));
}

}  // namespace verlconf
