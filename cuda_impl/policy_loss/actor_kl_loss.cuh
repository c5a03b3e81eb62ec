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

// The token at flat index k as the fused pass takes it: kl_penalty's value and its
// d / d log_prob.
struct KlFusedToken {
  KlKind kind;
  bool straight_through;
  const float* log_prob;
  const float* ref_log_prob;
  __host__ __device__ AggTokenValues operator()(int64_t k) const {
    AggTokenValues v{0.0f, 0.0f, {0.0f, 0.0f, 0.0f}};
    KlToken(kind, straight_through, log_prob[k], ref_log_prob[k], v.loss, v.dloss);
    return v;
  }
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
  // The mask's row sums where the mode needs them, then one fused row pass: the kl
  // aggregated and d term / d log_prob = coef W d kl / d log_prob written.
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, global);
  const FusedAggScalars f = FusedAggPass(policy, plan, mask, grad_log_prob, rows, cols, mode,
                                         KlFusedToken{kind, straight_through, log_prob, ref_log_prob},
                                         Footprint().Reads<float>(rows * cols, 2), coef);
  ActorKlLoss r;
  r.kl_loss = f.loss;
  r.term = r.kl_loss * coef;
  return r;
}

}  // namespace verlconf::cuda
