#include "oracle/spec_util.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <tuple>

#include "oracle/groups.h"

namespace verlconf::oracle {

void AddGlobalBatchKeys(FunctionSpec& s) {
  s.config.push_back({"dp_size", "int", int64_t{1}, "data-parallel size; > 1 requires the global counts"});
  s.config.push_back({"batch_num_tokens", "int", None(), "valid tokens in the global batch (token-mean)"});
  s.config.push_back({"global_batch_size", "int", None(), "sequences in the global batch (seq-mean-*)"});
  s.config.push_back({"loss_scale_factor", "float", None(), "seq-mean-token-sum-norm divisor; None = T"});
}

std::vector<std::string> AggModeChoices() { return {std::begin(kAggModes), std::end(kAggModes)}; }

std::string RandomAggMode(InputGen& g) { return kAggModes[g.Int(0, 4)]; }

std::vector<InputSpec> PolicyLossInputSpecs(bool rollout_is_weights) {
  std::vector<InputSpec> in = {{"old_log_prob", Role::kTokens},
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
  const double clip = c.Double("clip_ratio", 0.2);
  return {c.Double("clip_ratio_low", clip), c.Double("clip_ratio_high", clip)};
}

Result PackPolicyLoss(PolicyLossResult pl, DType dtype) {
  Result r;
  r.outputs["pg_loss"] = Array::Scalar(pl.loss, dtype);
  r.grads["log_prob"] = std::move(pl.grad_log_prob);
  r.metrics = std::move(pl.metrics);
  r.boundary = std::move(pl.boundary);
  return r;
}

void AddVanillaKeys(FunctionSpec& s) {
  s.config.push_back({"clip_ratio", "float", 0.2, "symmetric clip epsilon"});
  s.config.push_back({"clip_ratio_low", "float", 0.2, "lower clip epsilon; None = clip_ratio"});
  s.config.push_back({"clip_ratio_high", "float", 0.2, "upper clip epsilon; None = clip_ratio"});
  s.config.push_back({"clip_ratio_c", "float", 3.0, "dual-clip bound for negative advantages; must be > 1"});
  s.config.push_back({"loss_agg_mode", "str", std::string("token-mean"), "agg_loss mode",
                      AggModeChoices()});
  AddGlobalBatchKeys(s);
}

VanillaConfig ReadVanillaConfig(const Config& c) {
  VanillaConfig v;
  std::tie(v.clip_ratio_low, v.clip_ratio_high) = ReadClipRatios(c);
  v.clip_ratio_c = c.Double("clip_ratio_c", 3.0);
  v.loss_agg_mode = c.String("loss_agg_mode", "token-mean");
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

Case NewGeneratedCase(const GenParams& p) {
  Case c;
  c.name = "generated";
  c.dtype = p.dtype;
  c.seed = static_cast<int64_t>(p.seed);
  return c;
}

GlobalBatchInfo ReadGlobalBatchInfo(const Config& c) {
  GlobalBatchInfo g;
  g.dp_size = c.Int("dp_size", 1);
  g.batch_num_tokens = c.OptionalDouble("batch_num_tokens");
  g.global_batch_size = c.OptionalDouble("global_batch_size");
  g.loss_scale_factor = c.OptionalDouble("loss_scale_factor");
  return g;
}

double GrpoFloat32Condition(const Case& c) {
  const Array& r = c.Input("token_level_rewards");
  const std::vector<double> s = RowSums(r);
  const Groups groups = GroupBy(c.Input("index"));
  const bool normalize = c.config.Bool("norm_adv_by_std_in_grpo", true);
  const double eps = c.config.Double("epsilon", 1e-6);
  double cond = 1.0;
  for (const auto& members : groups.members) {
    double mean = 0, sq = 0, l1max = 0;
    for (int64_t i : members) mean += s[static_cast<size_t>(i)] / static_cast<double>(members.size());
    for (int64_t i : members) {
      sq += (s[static_cast<size_t>(i)] - mean) * (s[static_cast<size_t>(i)] - mean);
      double l1 = 0;
      for (int64_t t = 0; t < r.cols(); ++t) l1 += std::fabs(r.at(i, t));
      l1max = std::max(l1max, l1);
    }
    const double sd = members.size() > 1 ? std::sqrt(sq / static_cast<double>(members.size() - 1)) : 1.0;
    const double scale = l1max + std::fabs(mean);
    cond = std::max(cond, normalize ? scale / (sd + eps) : scale);
  }
  return cond;
}

namespace {

double MaxRowL1(const Array& r) {
  double m = 0.0;
  for (int64_t i = 0; i < r.rows(); ++i) {
    double l1 = 0.0;
    for (int64_t t = 0; t < r.cols(); ++t) l1 += std::fabs(r.at(i, t));
    m = std::max(m, l1);
  }
  return m;
}

}  // namespace

double ScoreScaleCondition(const Case& c) {
  double scale = MaxRowL1(c.Input("token_level_rewards"));
  if (const Array* b = c.OptionalInput("reward_baselines"))
    for (double v : b->data) scale = std::max(scale, std::fabs(v));
  if (c.function == "gpg") {
    int64_t nonzero = 0;
    for (double s : RowSums(c.Input("token_level_rewards"))) nonzero += s != 0.0;
    const double alpha = static_cast<double>(c.Input("token_level_rewards").rows()) /
                         static_cast<double>(std::max<int64_t>(nonzero, 1));
    scale *= alpha / std::fabs(c.config.Double("f_norm", 1.0));
  }
  return std::max(1.0, scale);
}

double WhitenedScoreCondition(const Case& c) {
  const Array& r = c.Input("token_level_rewards");
  const Array& mask = c.Input("response_mask");
  const std::vector<double> s = RowSums(r);
  const Groups groups = GroupBy(c.Input("index"));
  std::vector<double> centered(s.size());
  for (const auto& members : groups.members) {
    const double mean = members.size() > 1 ? GroupMean(s, members) : 0.0;
    for (int64_t i : members) centered[static_cast<size_t>(i)] = s[static_cast<size_t>(i)] - mean;
  }
  double n = 0, sum = 0, sq = 0;
  for (int64_t i = 0; i < mask.rows(); ++i)
    for (int64_t t = 0; t < mask.cols(); ++t)
      if (mask.at(i, t) != 0.0) n += 1, sum += centered[static_cast<size_t>(i)];
  const double mean = n > 0 ? sum / n : 0.0;
  for (int64_t i = 0; i < mask.rows(); ++i) {
    const double d = centered[static_cast<size_t>(i)] - mean;
    for (int64_t t = 0; t < mask.cols(); ++t)
      if (mask.at(i, t) != 0.0) sq += d * d;
  }
  const double sd = std::sqrt((n > 1 ? sq / (n - 1) : 0.0) + 1e-8);  // masked_whiten's rsqrt(var + 1e-8)
  return std::max(1.0, MaxRowL1(r) / sd);
}

}  // namespace verlconf::oracle
