#include "oracle/policy_loss/spec_common.h"

#include <tuple>

#include "oracle/aggregation/spec_common.h"
#include "oracle/core/spec_util.h"

namespace verlconf::oracle {

std::vector<InputSpec> PolicyLossInputSpecs(bool rollout_is_weights) {
  std::vector<InputSpec> in = {{"old_log_prob", Role::kTokens, false, false, "", /*decides=*/true},
                               {"log_prob", Role::kTokens},
                               {"advantages", Role::kTokens},
                               {"response_mask", Role::kTokens, /*is_mask=*/true}};
  if (rollout_is_weights) in.push_back({"rollout_is_weights", Role::kTokens, false, /*optional=*/true});
  return in;
}

PolicyLossInputs ReadPolicyLossInputs(const Case& c) {
  return {c.Input("old_log_prob"), c.Input("log_prob"), c.Input("advantages"), c.Input("response_mask"),
          c.OptionalInput("rollout_is_weights")};
}

std::pair<double, double> ReadClipRatios(const Config& c) {
  // verl: clip_ratio_low / clip_ratio_high, each falling back to clip_ratio when None.
  const double clip = c.Double("clip_ratio");
  return {c.OptionalDouble("clip_ratio_low").value_or(clip), c.OptionalDouble("clip_ratio_high").value_or(clip)};
}

Result PackPolicyLoss(PolicyLossResult pl, DType dtype) {
  Result r;
  r.outputs["pg_loss"] = Array::Scalar(pl.loss, dtype);
  r.grads["log_prob"] = std::move(pl.grad_log_prob);
  r.metrics = std::move(pl.metrics);
  r.boundary = std::move(pl.boundary);
  r.fraction_masks = std::move(pl.fraction_masks);
  r.magnitude = pl.magnitude;
  return r;
}

void AddClipRatioKeys(FunctionSpec& s, const std::string& clip_ratio_doc) {
  s.config.push_back({"clip_ratio", "float", 0.2, clip_ratio_doc});
  s.config.push_back(
      {"clip_ratio_low", "float", 0.2, "lower clip epsilon; None = clip_ratio", {}, /*absent_is_none=*/true});
  s.config.push_back(
      {"clip_ratio_high", "float", 0.2, "upper clip epsilon; None = clip_ratio", {}, /*absent_is_none=*/true});
}

ConfigKey ActorClipRatioCKey(const std::string& doc) { return {"clip_ratio_c", "float", 3.0, doc}; }

ConfigKey ActorLossAggModeKey(const std::string& doc) {
  return {"loss_agg_mode", "str", std::string("token-mean"), doc, AggModeChoices()};
}

void AddVanillaKeys(FunctionSpec& s) {
  AddClipRatioKeys(s);
  s.config.push_back(ActorClipRatioCKey("dual-clip bound for negative advantages; must be > 1"));
  s.config.push_back(ActorLossAggModeKey());
  AddGlobalBatchKeys(s);
}

VanillaConfig ReadVanillaConfig(const Config& c) {
  VanillaConfig v;
  std::tie(v.clip_ratio_low, v.clip_ratio_high) = ReadClipRatios(c);
  v.clip_ratio_c = c.Double("clip_ratio_c");
  v.loss_agg_mode = c.String("loss_agg_mode");
  v.global = ReadGlobalBatchInfo(c);
  return v;
}

void SetRandomVanillaConfig(InputGen& g, Config& cfg) {
  cfg.Set("clip_ratio", 0.2);
  cfg.Set("clip_ratio_low", 0.2);
  cfg.Set("clip_ratio_high", g.Coin(0.5) ? 0.2 : 0.28);
  cfg.Set("clip_ratio_c", g.Coin(0.5) ? 3.0 : 10.0);
  cfg.Set("loss_agg_mode", RandomAggMode(g));
}

Case NewPolicyLossCase(const GenParams& p, InputGen& g) {
  Case c = NewGeneratedCase(p);
  Array old_lp = g.LogProbs(p.batch, p.tokens, p.dtype);
  c.inputs["old_log_prob"] = old_lp;
  c.inputs["log_prob"] = g.Perturb(old_lp, g.Coin(0.5) ? 0.05 : 0.5);
  c.inputs["advantages"] = g.Normal(p.batch, p.tokens, 0.0, 1.0, p.dtype);
  c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  if (g.Coin(0.3)) c.inputs["rollout_is_weights"] = g.Uniform(p.batch, p.tokens, 0.05, 2.0, p.dtype);
  return c;
}

}  // namespace verlconf::oracle
