// What the policy losses' CUDA implementations share: torch's rules at the kinks in
// float32 (oracle/core/torch_rules.h), the masked sums their metrics are made of, the
// final scaling of d L / d x by agg_loss's W, the arguments and scalars the templates
// share, and (host side) the scalars' metrics by name.
#pragma once

#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "oracle/core/case.h"
#include "oracle/core/errors.h"
#include "oracle/policy_loss/vanilla.h"

namespace verlconf::cuda {

// The tensors a policy loss reads, rows x cols, in the policy's system memory;
// rollout_is_weights may be null (weight 1).
struct PolicyLossArgs {
  const float* old_log_prob;
  const float* log_prob;
  const float* advantages;
  const float* mask;
  const float* rollout_is_weights;
  int64_t rows, cols;
  int64_t size() const { return rows * cols; }
  // What a token pass over these inputs reads: every token input the call was given.
  Footprint TokenReads() const { return Footprint().Reads<float>(size(), rollout_is_weights ? 4 : 3); }
};

// What a token pass reads: `matrices` token inputs, plus the rollout IS weights where
// `WeightIt` is an array (not the constant 1 of a call without them).
template <class WeightIt>
Footprint TokenReadsWith(int64_t n, int matrices) {
  return Footprint().Reads<float>(n, matrices + (std::is_pointer_v<WeightIt> ? 1 : 0));
}

// The loss and the metric values a policy loss's template computes, each under verl's
// name (less the trainer's "actor/" prefix). Which of them a loss reports is its spec's
// metric list (PackLossMetrics); the others stay 0.
struct PolicyLossScalars {
  float loss = 0.0f;
  float pg_clipfrac = 0.0f;
  float ppo_kl = 0.0f;
  float pg_clipfrac_lower = 0.0f;
};

// A functor of the flat token index k as a row template's term or map of (i, t).
template <class F>
struct AtToken {
  F f;
  int64_t cols;
  __host__ __device__ auto operator()(int64_t i, int64_t t) const { return f(i * cols + t); }
};

// std::max / std::min exactly (the oracle's choice for torch.max / torch.min of two
// tensors): the first argument wins a comparison with NaN.
__host__ __device__ inline float StdMax(float a, float b) { return (a < b) ? b : a; }
__host__ __device__ inline float StdMin(float a, float b) { return (b < a) ? b : a; }
__host__ __device__ inline float StdClamp(float x, float lo, float hi) { return StdMin(StdMax(x, lo), hi); }
// torch.clamp with scalar bounds passes the gradient strictly inside them only.
__host__ __device__ inline float ClampPasses(float x, float lo, float hi) { return (x > lo && x < hi) ? 1.0f : 0.0f; }
// torch.maximum / torch.minimum split a tie's gradient equally.
__host__ __device__ inline float MaxShareA(float a, float b) { return a > b ? 1.0f : (a == b ? 0.5f : 0.0f); }
__host__ __device__ inline float MinShareA(float a, float b) { return a < b ? 1.0f : (a == b ? 0.5f : 0.0f); }

// verl's masked_mean from its two sums, in float32 as verl computes it.
inline float MaskedMeanOf(float masked_sum, float mask_sum) { return masked_sum / (mask_sum + kMaskedMeanEps); }

// ---- host side ----

// The metrics `names` (an entry's FunctionSpec::metrics: "actor/pg_clipfrac" or bare
// "pg_clipfrac") from the fields of `s`; a name with no field is a std::logic_error
// naming it, never a value of another metric.
inline std::map<std::string, double> PackLossMetrics(const std::vector<std::string>& names,
                                                     const PolicyLossScalars& s) {
  static const std::pair<const char*, float PolicyLossScalars::*> kFields[] = {
      {"pg_clipfrac", &PolicyLossScalars::pg_clipfrac},
      {"ppo_kl", &PolicyLossScalars::ppo_kl},
      {"pg_clipfrac_lower", &PolicyLossScalars::pg_clipfrac_lower}};
  std::map<std::string, double> out;
  for (const std::string& name : names) {
    const std::string field = name.rfind("actor/", 0) == 0 ? name.substr(6) : name;
    const auto* f =
        std::find_if(std::begin(kFields), std::end(kFields), [&](const auto& kf) { return field == kf.first; });
    if (f == std::end(kFields)) throw std::logic_error("policy loss metric with no CUDA field: " + name);
    out[name] = static_cast<double>(s.*(f->second));
  }
  return out;
}

}  // namespace verlconf::cuda
