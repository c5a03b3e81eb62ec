// compute_entropy_loss of verl's core_algos on CCCL (as oracle/policy_loss/
// spec_entropy_loss.cc states it): the entropy of every token's softmax over the
// vocabulary (verl.utils.torch_functional.entropy_from_logits), aggregated by agg_loss,
// and its gradient w.r.t. the logits. Float32, a template over the Thrust execution
// policy (cuda_impl/core/system.cuh).
//
// The vocabulary is the memory-heavy axis. After the mask's row sums (agg_loss's plan),
// one row pass (FusedAggPass over the rows x T tokens) takes each token's V logits in one
// thread: an online (streaming) logsumexp over them, whose state stays finite for any
// logit scale, then the gradient of the same V logits written, and the token's entropy
// summed into its row. The second walk over a token's logits re-reads what the first
// has just brought in: from the cache while V is small (kEntropyCachedVocab), from
// memory again beyond.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// A softmax partial over some logits z: (m, s, u) with m = max z, s = sum exp(z - m),
// u = sum exp(z - m) (z - m). One logit is (z, 1, 0).
using SoftmaxState = thrust::tuple<float, float, float>;

struct SoftmaxLeaf {
  __host__ __device__ SoftmaxState operator()(float z) const { return thrust::make_tuple(z, 1.0f, 0.0f); }
};

// Merging two partials about their common max: a partial about m_i moves to m by
// s -> a s, u -> a (u + (m_i - m) s), a = exp(m_i - m).
struct SoftmaxMerge {
  __host__ __device__ static void Shift(float m_i, float m, float& s, float& u) {
    if (m_i == m) return;  // also keeps a -inf max finite-free of inf - inf
    const float a = expf(m_i - m);
    u = a * (u + (m_i - m) * s);
    s = a * s;
  }
  __host__ __device__ SoftmaxState operator()(const SoftmaxState& x, const SoftmaxState& y) const {
    const float mx = thrust::get<0>(x), my = thrust::get<0>(y);
    const float m = mx > my ? mx : my;
    float sx = thrust::get<1>(x), ux = thrust::get<2>(x);
    float sy = thrust::get<1>(y), uy = thrust::get<2>(y);
    Shift(mx, m, sx, ux);
    Shift(my, m, sy, uy);
    return thrust::make_tuple(m, sx + sy, ux + uy);
  }
};

// H = logsumexp(z) - sum_v p_v z_v = log s - u / s.
struct EntropyOf {
  __host__ __device__ float operator()(float s, float u) const { return logf(s) - u / s; }
};

// dH/dz_v = -p_v (z_v - sum_u p_u z_u), p_v = exp(z_v - m) / s, times the token's
// aggregation weight w.
__host__ __device__ inline float EntropyGrad(float z, float max, float sum, float centered, float w) {
  const float d = z - max;
  const float p = expf(d) / sum;
  return -p * (d - centered / sum) * w;
}

// The vocabulary up to which a token's V logits are still cached when its gradient walk
// re-reads them (a few hundred bytes per thread of a resident CTA).
constexpr int64_t kEntropyCachedVocab = 32;

// The token at flat index k: its softmax state in one walk over its logits, then
// grad_logits = W dH/dz written in a second; its entropy is the fused pass's loss.
struct EntropyToken {
  const float* logits;
  float* grad_logits;
  int64_t vocab;
  AggWeight w;
  __host__ __device__ AggTokenValues operator()(int64_t k) const {
    const float* z = logits + k * vocab;
    SoftmaxState st = vocab > 0 ? SoftmaxLeaf()(z[0]) : thrust::make_tuple(-INFINITY, 0.0f, 0.0f);
    for (int64_t v = 1; v < vocab; ++v) st = SoftmaxMerge()(st, SoftmaxLeaf()(z[v]));
    const float max = thrust::get<0>(st), sum = thrust::get<1>(st), centered = thrust::get<2>(st);
    const float weight = w(k);
    float* g = grad_logits + k * vocab;
    for (int64_t v = 0; v < vocab; ++v) g[v] = EntropyGrad(z[v], max, sum, centered, weight);
    return {EntropyOf()(sum, centered), 0.0f, {0.0f, 0.0f, 0.0f}};
  }
};

// entropy_loss = agg_loss(H, mask, mode) of rows x cols tokens over `vocab` logits each
// (agg_loss's default global-batch arguments, as verl's compute_entropy_loss passes
// none); grad_logits[k] = d entropy_loss / d logits[k]. `system` is the policy's.
template <class Policy>
float compute_entropy_loss(Policy&& policy, [[maybe_unused]] System system, const float* logits, const float* mask,
                           int64_t rows, int64_t cols, int64_t vocab, AggMode mode, float* grad_logits) {
  const int64_t n = rows * cols * vocab;
  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, AggGlobal{});
  const EntropyToken tok{logits, grad_logits, vocab, AggWeightOf(plan, mask, cols, mode)};
  const Footprint logits_io = Footprint().Reads<float>(n, vocab <= kEntropyCachedVocab ? 1 : 2).Writes<float>(n);
  return FusedAggPass(policy, plan, mask, static_cast<float*>(nullptr), rows, cols, mode, tok, logits_io).loss;
}

}  // namespace verlconf::cuda
