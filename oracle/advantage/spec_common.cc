#include "oracle/advantage/spec_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "oracle/advantage/groups.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"

namespace verlconf::oracle {

Result Pack(AdvantageReturns ar) {
  Result r;
  r.outputs["advantages"] = std::move(ar.advantages);
  r.outputs["returns"] = std::move(ar.returns);
  return r;
}

Case GenerateAdvantage(const GenParams& p0, unsigned want) {
  GenParams p = p0;
  if (want & kWhitened) p.tokens = std::max<int64_t>(p.tokens, 2);
  if (want & kNoSingletons) p.batch = std::max<int64_t>(p.batch, 2);
  InputGen g(p.seed);
  Case c = NewGeneratedCase(p);
  Array mask = g.ResponseMask(p.batch, p.tokens, p.dtype);
  if (want & kWhitened) {
    double total = 0;
    for (double m : mask.data) total += m;
    if (total < 2)
      for (int64_t t = 0; t < p.tokens; ++t) mask.at(0, t) = 1.0;
  }
  Array rewards = Array::Matrix(p.batch, p.tokens, p.dtype);
  const bool spread = g.Coin(0.33);
  for (int64_t i = 0; i < p.batch; ++i) {
    int64_t last = -1;
    for (int64_t t = 0; t < p.tokens; ++t)
      if (mask.at(i, t) != 0.0) last = t;
    if (spread) {
      for (int64_t t = 0; t < p.tokens; ++t)
        if (mask.at(i, t) != 0.0 && g.Coin(0.2)) rewards.at(i, t) = g.UniformScalar(-1, 1);
    } else if (last >= 0) {
      rewards.at(i, last) = g.Coin(0.5) ? 1.0 : g.UniformScalar(-2, 2);
    }
  }
  RoundToDType(rewards);
  c.inputs["token_level_rewards"] = rewards;
  c.inputs["response_mask"] = mask;
  if (!(want & kNoIndex)) {
    Array idx = g.GroupIndex(p.batch, g.Int(2, 6));
    if (want & kNoSingletons) {  // fold every singleton into another group
      std::vector<int64_t> count(static_cast<size_t>(p.batch) + 1, 0);
      for (double v : idx.data) ++count[static_cast<size_t>(v)];
      double host = -1;
      for (double v : idx.data)
        if (count[static_cast<size_t>(v)] > 1) host = v;
      if (host < 0) host = idx[0];
      for (double& v : idx.data)
        if (count[static_cast<size_t>(v)] == 1) v = host;
      // a batch of distinct singletons: pair everyone up with the first
      count.assign(count.size(), 0);
      for (double v : idx.data) ++count[static_cast<size_t>(v)];
      if (count[static_cast<size_t>(host)] < 2) idx[1] = idx[0];
    }
    c.inputs["index"] = idx;
  }
  if (want & kValues) c.inputs["values"] = g.Normal(p.batch, p.tokens, 0.0, 0.5, p.dtype);
  if (want & kBaselines) {
    Array b({p.batch}, p.dtype);
    for (double& v : b.data) v = g.UniformScalar(-1, 1);
    RoundToDType(b);
    c.inputs["reward_baselines"] = b;
  }
  if (want & kPolicyStats) {
    Array lp = g.Uniform(p.batch, p.tokens, -4.0, -1e-3, p.dtype);
    Array sq(lp.shape, p.dtype);
    for (int64_t k = 0; k < lp.size(); ++k) {  // pi^2 <= sum pi^2 <= pi^2 + (1 - pi)^2
      const double pi = std::exp(lp[k]);
      sq[k] = pi * pi + (1 - pi) * (1 - pi) * g.UniformScalar(0, 1);
    }
    RoundToDType(sq);
    c.inputs["old_log_probs"] = lp;
    c.inputs["sum_pi_squared"] = sq;
    if (g.Coin(0.5)) c.inputs["rollout_is_weights"] = g.Uniform(p.batch, p.tokens, 0.2, 2.0, p.dtype);
    c.config.Set("handle_zero_tail", int64_t{g.Coin(0.7) ? 1 : 0});
    c.config.Set("epsilon", 1e-8);
  }
  if (want & kGrpoConfig) {
    c.config.Set("epsilon", 1e-6);
    c.config.Set("norm_adv_by_std_in_grpo", int64_t{g.Coin(0.8) ? 1 : 0});
  }
  if (want & kGamma) {
    c.config.Set("gamma", g.Coin(0.3) ? 1.0 : g.UniformScalar(0.9, 1.0));
    if (want & kValues) c.config.Set("lam", g.Coin(0.3) ? 1.0 : g.UniformScalar(0.8, 1.0));
  }
  if (want & kFNorm) {
    c.config.Set("f_norm", g.Coin(0.5) ? 1.0 : g.UniformScalar(0.5, 4.0));
    c.config.Set("alpha", g.UniformScalar(0.5, 4.0));
  }
  if ((want & kComponents) && g.Coin(0.7)) {
    const int64_t k = g.Int(1, 3);
    Array comps = Array::Matrix(p.batch, k, p.dtype);
    // Multiples of 1/4 in [-2, 2]: float32 sums them exactly, as verl's float32 GRPO
    // step assumes for 1e-10 agreement in float64.
    for (double& v : comps.data) v = static_cast<double>(g.Int(-8, 8)) / 4.0;
    c.inputs["reward_components"] = comps;
    if (g.Coin(0.5)) {
      Array w({k}, p.dtype);
      for (double& v : w.data) v = g.UniformScalar(0.1, 2.0);
      RoundToDType(w);
      c.inputs["reward_weights"] = w;
    }
  }
  return c;
}

double GrpoFloat32Condition(const Case& c) {
  return GrpoFloat32ConditionWith(c, c.config.Bool("norm_adv_by_std_in_grpo"), c.config.Double("epsilon"));
}

double GrpoFloat32ConditionWith(const Case& c, bool normalize, double eps) {
  const Array& r = c.Input("token_level_rewards");
  const std::vector<double> s = RowSums(r);
  const Groups groups = GroupBy(c.Input("index"));
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

double ComponentGroupCondition(const Case& c) {
  const Array* comp = c.OptionalInput("reward_components");
  if (!comp || comp->rank() != 2) return 0.0;
  const Array* weights = c.OptionalInput("reward_weights");
  const bool normalize = c.config.Bool("norm_adv_by_std_in_grpo");
  const double eps = c.config.Double("epsilon");
  const Groups groups = GroupBy(c.Input("index"));
  double cond = 1.0;
  for (int64_t k = 0; k < comp->cols(); ++k) {
    const double w = weights && k < weights->size() ? std::fabs((*weights)[k]) : 1.0;
    for (const auto& members : groups.members) {
      double mean = 0, sq = 0, peak = 0;
      for (int64_t i : members) mean += comp->at(i, k) / static_cast<double>(members.size());
      for (int64_t i : members) {
        sq += (comp->at(i, k) - mean) * (comp->at(i, k) - mean);
        peak = std::max(peak, std::fabs(comp->at(i, k)));
      }
      const double sd = members.size() > 1 ? std::sqrt(sq / static_cast<double>(members.size() - 1)) : 1.0;
      const double scale = peak + std::fabs(mean);
      cond = std::max(cond, w * (normalize ? scale / (sd + eps) : scale));
    }
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

namespace {

double ScoreScale(const Case& c) {
  double scale = MaxRowL1(c.Input("token_level_rewards"));
  if (const Array* b = c.OptionalInput("reward_baselines"))
    for (double v : b->data) scale = std::max(scale, std::fabs(v));
  return scale;
}

}  // namespace

double ScoreScaleCondition(const Case& c) { return std::max(1.0, ScoreScale(c)); }

double GpgScoreScaleCondition(const Case& c) {
  int64_t nonzero = 0;
  for (double s : RowSums(c.Input("token_level_rewards"))) nonzero += s != 0.0;
  const double alpha =
      static_cast<double>(c.Input("token_level_rewards").rows()) / static_cast<double>(std::max<int64_t>(nonzero, 1));
  return std::max(1.0, ScoreScale(c) * alpha / std::fabs(c.config.Double("f_norm")));
}

double WhitenCondition(const Array& x, const Array& mask) {
  double n = 0, sum = 0, sq = 0, largest = 0;
  for (size_t k = 0; k < x.data.size(); ++k)
    if (mask.data[k] != 0.0) n += 1, sum += x.data[k], largest = std::max(largest, std::fabs(x.data[k]));
  const double mean = n > 0 ? sum / n : 0.0;
  for (size_t k = 0; k < x.data.size(); ++k)
    if (mask.data[k] != 0.0) sq += (x.data[k] - mean) * (x.data[k] - mean);
  const double sd = std::sqrt((n > 1 ? sq / (n - 1) : 0.0) + 1e-8);  // masked_whiten's rsqrt(var + 1e-8)
  return std::max(1.0, largest / sd);
}

std::optional<Tolerance> WhitenedTolerance(DType dtype, double cond) {
  if (cond <= 1.0) return std::nullopt;
  const Tolerance d = DefaultTolerance(dtype);
  char why[200];
  if (dtype == DType::kFloat32) {
    std::snprintf(why, sizeof why, "float32 bound times masked_whiten's condition number %.3g (max |x| / std(x))",
                  cond);
    return Tolerance{d.rtol * cond, d.atol * cond, why};
  }
  // float64: the same rounding (eps * max |x|, times rsqrt(var + 1e-8)) is absolute;
  // the relative bound's 2^18 ulps already cover what the scale inherits.
  std::snprintf(why, sizeof why, "float64 atol times masked_whiten's condition number %.3g (max |x| / std(x))", cond);
  return Tolerance{d.rtol, d.atol * cond, why};
}

double WhitenConditionAfter(const Array& x, const Array& mask, double upstream) {
  double n = 0, sum = 0, sq = 0, largest = 0;
  for (size_t k = 0; k < x.data.size(); ++k)
    if (mask.data[k] != 0.0) n += 1, sum += x.data[k], largest = std::max(largest, std::fabs(x.data[k]));
  const double mean = n > 0 ? sum / n : 0.0;
  double spread = 0;  // max |x - mean| over valid tokens
  for (size_t k = 0; k < x.data.size(); ++k)
    if (mask.data[k] != 0.0) {
      sq += (x.data[k] - mean) * (x.data[k] - mean);
      spread = std::max(spread, std::fabs(x.data[k] - mean));
    }
  const double r = 1.0 / std::sqrt((n > 1 ? sq / (n - 1) : 0.0) + 1e-8);  // masked_whiten's rsqrt(var + 1e-8)
  return std::max(1.0, r * (largest + std::max(upstream, 0.0)) * (1.0 + r * spread));
}

void SetWhitenedAdvantageTolerance(FunctionSpec& s, std::function<Array(const Case&)> whitened,
                                   std::vector<std::string> fields, std::function<double(const Case&)> upstream,
                                   std::function<DType(const Case&)> computed_in) {
  s.case_tolerance = [whitened = std::move(whitened), fields = std::move(fields), upstream = std::move(upstream),
                      computed_in = std::move(computed_in)](const Case& c,
                                                            const std::string& field) -> std::optional<Tolerance> {
    if (std::find(fields.begin(), fields.end(), field) == fields.end()) return std::nullopt;
    const Array& mask = c.Input("response_mask");
    const DType dtype = computed_in ? computed_in(c) : c.dtype;
    std::optional<Tolerance> t = WhitenedTolerance(
        dtype, upstream ? WhitenConditionAfter(whitened(c), mask, upstream(c)) : WhitenCondition(whitened(c), mask));
    if (dtype == c.dtype) return t;
    if (!t) t = DefaultTolerance(dtype);
    t->reason = std::string("verl computes this case in ") + DTypeName(dtype) + " whatever its dtype" +
                (t->reason.empty() ? "" : "; " + t->reason);
    return t;
  };
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
