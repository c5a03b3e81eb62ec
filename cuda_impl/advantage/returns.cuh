// The return-based estimators on CCCL, float32 (oracle/advantage/returns.h): the masked
// reward-to-go, GAE and REINFORCE++'s discounted returns, as templates over the Thrust
// execution policy (cuda_impl/core/system.cuh).
//
// Each backward recurrence over a row is affine in its carried state, so it runs as one
// reverse row scan (cuda_impl/core/rows.cuh: a CTA per row, tiles in order, bitwise
// reproducible) whose operator composes affine maps. The state starts at 0, so the
// composite's offset is the state itself.
#pragma once

#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cstdint>

#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

struct AddF {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};

// Writes a row scan's value at (i, t): the whole value, or one field of a tuple.
struct StoreFloat {
  float* out;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t, float v) const { out[i * cols + t] = v; }
};
template <int kField>
struct StoreField {
  float* out;
  int64_t cols;
  template <class Tuple>
  __host__ __device__ void operator()(int64_t i, int64_t t, const Tuple& v) const {
    out[i * cols + t] = thrust::get<kField>(v);
  }
};

// r_t * m_t, a plain product as verl's (rewards * mask).
struct MaskedRewardAt {
  const float* rewards;
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return rewards[k] * mask[k];
  }
};

// G_t = sum_{s >= t} r_s m_s per row (oracle::MaskedRewardToGo): a reverse row scan.
template <class Policy>
void MaskedRewardToGo(Policy&& policy, const float* rewards, const float* mask, int64_t rows, int64_t cols,
                      float* out) {
  RowScan(policy, rows, cols, /*reverse=*/true, 0.0f, AddF(), MaskedRewardAt{rewards, mask, cols},
          StoreFloat{out, cols}, Footprint().Reads<float>(rows * cols, 2).Writes<float>(rows * cols));
}

// ---- REINFORCE++: x' = a x + b ------------------------------------------------------

using Affine1 = thrust::tuple<float, float>;  // (a, b)

// f then g: x -> g(f(x)).
struct ComposeAffine1 {
  __host__ __device__ Affine1 operator()(const Affine1& f, const Affine1& g) const {
    const float a1 = thrust::get<0>(f), b1 = thrust::get<1>(f);
    const float a2 = thrust::get<0>(g), b2 = thrust::get<1>(g);
    return Affine1(a2 * a1, a2 * b1 + b2);
  }
};

// REINFORCE++'s running return: running' = fresh m + running (1 - m) with fresh =
// r + gamma running, i.e. a = m gamma + (1 - m), b = m r. At m = 0 the map is the
// identity: the return is carried unchanged across an observation token.
struct RppStepAt {
  const float* rewards;
  const float* mask;
  int64_t cols;
  float gamma;
  __host__ __device__ Affine1 operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float r = rewards[k], m = mask[k];
    return Affine1(m * gamma + (1.0f - m), m * r);
  }
};

// G_t = (r_t + gamma running_{t+1}) m_t, running_{t+1} the state after position t + 1
// (0 past the row's end).
struct RppReturn {
  const float* rewards;
  const float* mask;
  const float* running;
  int64_t cols;
  float gamma;
  __host__ __device__ float operator()(int64_t k) const {
    const float next = (k + 1) % cols != 0 ? running[k + 1] : 0.0f;
    return (rewards[k] + gamma * next) * mask[k];
  }
};

// verl: compute_reinforce_plus_plus_outcome_advantage. returns = G;
// advantages = masked_whiten(G) * mask.
template <class Policy>
void reinforce_plus_plus_advantage(Policy&& policy, const float* rewards, const float* mask, int64_t rows, int64_t cols,
                                   float gamma, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  // The running state goes to `advantages` first, which is rewritten below.
  RowScan(policy, rows, cols, /*reverse=*/true, Affine1(1.0f, 0.0f), ComposeAffine1(),
          RppStepAt{rewards, mask, cols, gamma}, StoreField<1>{advantages, cols},
          Footprint().Reads<float>(n, 2).Writes<float>(n));
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(n), returns,
                    RppReturn{rewards, mask, advantages, cols, gamma});
  thrust::copy(policy, returns, returns + n, advantages);
  WhitenInPlace(policy, advantages, mask, n, /*times_mask=*/true);
}

// ---- GAE: (next_value, lastgaelam)' = M (next_value, lastgaelam) + b ------------------

// M = [[p, 0], [q, s]], b = (b1, b2).
using Affine2 = thrust::tuple<float, float, float, float, float>;  // (p, q, s, b1, b2)

struct ComposeAffine2 {
  __host__ __device__ Affine2 operator()(const Affine2& f, const Affine2& g) const {
    const float p1 = thrust::get<0>(f), q1 = thrust::get<1>(f), s1 = thrust::get<2>(f);
    const float c1 = thrust::get<3>(f), d1 = thrust::get<4>(f);
    const float p2 = thrust::get<0>(g), q2 = thrust::get<1>(g), s2 = thrust::get<2>(g);
    const float c2 = thrust::get<3>(g), d2 = thrust::get<4>(g);
    return Affine2(p2 * p1, q2 * p1 + s2 * q1, s2 * s1, p2 * c1 + c2, q2 * c1 + s2 * d1 + d2);
  }
};

// One position of verl's GAE loop, walked backwards:
//   delta = r + gamma nv - v,  fresh = delta + gamma_lam last
//   nv' = v m + (1 - m) nv,    last' = fresh m + (1 - m) last
// so an observation token (m = 0) passes both the bootstrap value and the running
// advantage through unchanged.
struct GaeStepAt {
  const float* rewards;
  const float* values;
  const float* mask;
  int64_t cols;
  float gamma, gamma_lam;
  __host__ __device__ Affine2 operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float r = rewards[k], v = values[k], m = mask[k];
    return Affine2(1.0f - m, m * gamma, m * gamma_lam + (1.0f - m), v * m, (r - v) * m);
  }
};

// verl: compute_gae_advantage_return. returns = A + V (unmasked); advantages =
// masked_whiten(A, mask), not multiplied by the mask.
template <class Policy>
void gae_advantage_return(Policy&& policy, const float* rewards, const float* values, const float* mask, int64_t rows,
                          int64_t cols, float gamma, float gamma_lam, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  RowScan(policy, rows, cols, /*reverse=*/true, Affine2(1.0f, 0.0f, 1.0f, 0.0f, 0.0f), ComposeAffine2(),
          GaeStepAt{rewards, values, mask, cols, gamma, gamma_lam}, StoreField<4>{advantages, cols},
          Footprint().Reads<float>(n, 3).Writes<float>(n));
  thrust::transform(policy, advantages, advantages + n, values, returns, AddF());
  WhitenInPlace(policy, advantages, mask, n, /*times_mask=*/false);
}

}  // namespace verlconf::cuda
