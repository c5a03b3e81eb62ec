// compute_entropy_loss of verl's core_algos on CCCL (as oracle/policy_loss/
// spec_entropy_loss.cc states it): the entropy of every token's softmax over the
// vocabulary (verl.utils.torch_functional.entropy_from_logits), aggregated by agg_loss,
// and its gradient w.r.t. the logits. Float32, a template over the Thrust execution
// policy (cuda_impl/core/system.cuh).
//
// The vocabulary is the memory-heavy axis, so it is read twice only: one reduce_by_key
// over the V logits of each token with an online (streaming) logsumexp, whose partial
// states merge associatively and stay finite for any logit scale, and one transform
// writing the gradient.
#pragma once

#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/system.cuh"

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

struct TokenOf {
  int64_t vocab;
  __host__ __device__ int64_t operator()(int64_t k) const { return k / vocab; }
};

// H = logsumexp(z) - sum_v p_v z_v = log s - u / s.
struct EntropyOf {
  __host__ __device__ float operator()(float s, float u) const { return logf(s) - u / s; }
};

// dH/dz_v = -p_v (z_v - sum_u p_u z_u), p_v = exp(z_v - m) / s, times the token's
// aggregation weight.
struct EntropyGrad {
  const float* max;
  const float* sum;
  const float* centered;  // u
  const float* weight;
  int64_t vocab;
  __host__ __device__ float operator()(const thrust::tuple<float, int64_t>& zk) const {
    const int64_t token = thrust::get<1>(zk) / vocab;
    const float s = sum[token];
    const float d = thrust::get<0>(zk) - max[token];
    const float p = expf(d) / s;
    return -p * (d - centered[token] / s) * weight[token];
  }
};

// entropy_loss = agg_loss(H, mask, mode) of rows x cols tokens over `vocab` logits each
// (agg_loss's default global-batch arguments, as verl's compute_entropy_loss passes
// none); grad_logits[k] = d entropy_loss / d logits[k]. `system` is the policy's.
template <class Policy>
float compute_entropy_loss(Policy&& policy, [[maybe_unused]] System system, const float* logits, const float* mask,
                           int64_t rows, int64_t cols, int64_t vocab, AggMode mode, float* grad_logits) {
  const int64_t tokens = rows * cols, n = tokens * vocab;
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch max(policy, tokens), sum(policy, tokens), centered(policy, tokens), entropy(policy, tokens),
      weight(policy, tokens), row_sums(policy, rows);
  auto token_of = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), TokenOf{vocab});
  thrust::reduce_by_key(policy, token_of, token_of + n, thrust::make_transform_iterator(logits, SoftmaxLeaf{}),
                        thrust::make_discard_iterator(),
                        thrust::make_zip_iterator(thrust::make_tuple(max.get(), sum.get(), centered.get())),
                        thrust::equal_to<int64_t>(), SoftmaxMerge{});
  thrust::transform(policy, sum.get(), sum.get() + tokens, centered.get(), entropy.get(), EntropyOf{});

  const AggPlan plan = MakeAggPlan(policy, mask, rows, cols, mode, AggGlobal{});
  const float loss = agg_loss(policy, plan, entropy.get(), mask, row_sums.get(), rows, cols, mode);
  agg_loss_weights(policy, plan, mask, weight.get(), rows, cols, mode);

  auto zk = thrust::make_zip_iterator(thrust::make_tuple(logits, thrust::counting_iterator<int64_t>(0)));
  thrust::transform(policy, zk, zk + n, grad_logits,
                    EntropyGrad{max.get(), sum.get(), centered.get(), weight.get(), vocab});
  return loss;
}

}  // namespace verlconf::cuda
