// The return-based estimators on CCCL, float32 (oracle/advantage/returns.h): the masked
// reward-to-go, GAE and REINFORCE++'s discounted returns, as templates over the Thrust
// execution policy (cuda_impl/core/system.cuh).
//
// Each backward recurrence over a row is affine in its carried state, so it runs as one
// reverse inclusive_scan_by_key (row as key, positions walked from the last token) whose
// operator composes affine maps: every position in O(log T) depth, no loop over T. The
// state starts at 0, so the composite's offset is the state itself.
#pragma once

#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/reverse_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/scan.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cstdint>

#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// The row of every flat position, walked from the end: the scan's keys.
inline auto ReversedRowKeys(int64_t n, int64_t cols) {
  auto rows = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentOf{cols});
  return thrust::make_reverse_iterator(rows + n);
}

template <class It>
auto Reversed(It first, int64_t n) {
  return thrust::make_reverse_iterator(first + n);
}

// r_t * m_t, a plain product as verl's (rewards * mask).
struct MaskedReward {
  __host__ __device__ float operator()(const thrust::tuple<float, float>& rm) const {
    return thrust::get<0>(rm) * thrust::get<1>(rm);
  }
};

// G_t = sum_{s >= t} r_s m_s per row (oracle::MaskedRewardToGo): a reverse scan.
template <class Policy>
void MaskedRewardToGo(Policy&& policy, const float* rewards, const float* mask, int64_t rows, int64_t cols,
                      float* out) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  auto terms =
      thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(rewards, mask)), MaskedReward());
  auto keys = ReversedRowKeys(n, cols);
  thrust::inclusive_scan_by_key(policy, keys, keys + n, Reversed(terms, n), Reversed(out, n),
                                thrust::equal_to<int64_t>(), thrust::plus<float>());
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
struct RppStep {
  float gamma;
  __host__ __device__ Affine1 operator()(const thrust::tuple<float, float>& rm) const {
    const float r = thrust::get<0>(rm), m = thrust::get<1>(rm);
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
  auto steps =
      thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(rewards, mask)), RppStep{gamma});
  // The running state goes to `advantages` first, which is rewritten below.
  auto out = thrust::make_zip_iterator(thrust::make_tuple(thrust::make_discard_iterator(), advantages));
  auto keys = ReversedRowKeys(n, cols);
  thrust::inclusive_scan_by_key(policy, keys, keys + n, Reversed(steps, n), Reversed(out, n),
                                thrust::equal_to<int64_t>(), ComposeAffine1());
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
struct GaeStep {
  float gamma, gamma_lam;
  __host__ __device__ Affine2 operator()(const thrust::tuple<float, float, float>& rvm) const {
    const float r = thrust::get<0>(rvm), v = thrust::get<1>(rvm), m = thrust::get<2>(rvm);
    return Affine2(1.0f - m, m * gamma, m * gamma_lam + (1.0f - m), v * m, (r - v) * m);
  }
};

struct PlusF {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
};

// verl: compute_gae_advantage_return. returns = A + V (unmasked); advantages =
// masked_whiten(A, mask), not multiplied by the mask.
template <class Policy>
void gae_advantage_return(Policy&& policy, const float* rewards, const float* values, const float* mask, int64_t rows,
                          int64_t cols, float gamma, float gamma_lam, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  auto steps = thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(rewards, values, mask)),
                                               GaeStep{gamma, gamma_lam});
  auto d = thrust::make_discard_iterator();
  auto out = thrust::make_zip_iterator(thrust::make_tuple(d, d, d, d, advantages));
  auto keys = ReversedRowKeys(n, cols);
  thrust::inclusive_scan_by_key(policy, keys, keys + n, Reversed(steps, n), Reversed(out, n),
                                thrust::equal_to<int64_t>(), ComposeAffine2());
  thrust::transform(policy, advantages, advantages + n, values, returns, PlusF());
  WhitenInPlace(policy, advantages, mask, n, /*times_mask=*/false);
}

}  // namespace verlconf::cuda
