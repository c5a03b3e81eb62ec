// The actor-side KL loss on CCCL (as oracle/policy_loss/spec_actor_kl_loss.cc states
// verl's workers/utils/losses.ppo_loss with use_kl_loss): kl_penalty per token, agg_loss,
// times kl_loss_coef, with the gradient w.r.t. log_prob. Float32, a template over the
// Thrust execution policy (cuda_impl/core/system.cuh).
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cstdint>
#include <type_traits>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/kl/kl_penalty.cuh"

namespace verlconf::cuda {

// d term / d log_prob = W * d kl / d log_prob * coef.
struct ScaledProduct {
  float coef;
  __host__ __device__ float operator()(float w, float g) const { return w * g * coef; }
};

// What the entry reports: the term (kl_loss * coef) and verl's kl_loss metric.
struct ActorKlLoss {
  float term = 0.0f;
  float kl_loss = 0.0f;
};

// rows x cols tokens; grad_log_prob[k] = d term / d log_prob[k]. The kl type and the
// aggregation arguments must have passed the oracle's checks (oracle::ParseKlName,
// oracle::CheckAggArguments). `system` is the policy's.
template <class Policy>
ActorKlLoss actor_kl_loss(Policy&& policy, [[maybe_unused]] System system, const float* log_prob,
                          const float* ref_log_prob, const float* mask, int64_t rows, int64_t cols, KlKind kind,
                          bool straight_through, float coef, AggMode mode, const AggGlobal& global,
                          float* grad_log_prob) {
  const int64_t n = rows * cols;
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch kl(policy, n), weight(policy, n), row_sums(policy, rows);
  // The kl value per token, and its gradient straight into grad_log_prob (scaled below).
  kl_penalty(policy, log_prob, ref_log_prob, kl.get(), grad_log_prob, n, kind, straight_through);
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  ActorKlLoss r;
  r.kl_loss = agg_loss(policy, plan, kl.get(), mask, row_sums.get(), rows, cols, mode);
  r.term = r.kl_loss * coef;
  agg_loss_weights(policy, plan, mask, weight.get(), rows, cols, mode);
  thrust::transform(policy, weight.get(), weight.get() + n, grad_log_prob, grad_log_prob, ScaledProduct{coef});
  return r;
}

}  // namespace verlconf::cuda
