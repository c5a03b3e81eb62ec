// The return-based estimators on CCCL, float32 (oracle/advantage/returns.h): the masked
// reward-to-go, GAE and REINFORCE++'s discounted returns, as templates over the Thrust
// execution policy (cuda_impl/core/system.cuh).
//
// Each backward recurrence over a row is affine in its carried state, so it runs as one
// reverse row scan (cuda_impl/core/rows.cuh: a CTA per row, tiles in order, bitwise
// reproducible) whose operator composes affine maps. The state starts at 0, so the
// composite's offset is the state itself. The scan's output writes every token output
// the recurrence gives; the whitening (whiten.cuh) then takes its sum pass, its
// residual pass and its write pass: four passes in all.
#pragma once

#include <thrust/tuple.h>

#include <cstdint>

#include "cuda_impl/advantage/whiten.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

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

// The running return's step f and the return's g, both affine in the running return
// after the position: (a_f, b_f, a_g, b_g).
using RppStep = thrust::tuple<float, float, float, float>;

// e1 then e2: the state goes through f1 then f2, and e2's return reads the state f1
// left, so the composite is (f2 f1, g2 f1). Associative (a left operand's g is never
// read), with (identity, anything) as its left identity, which is all a scan from
// `identity` needs; the f part is the plain composition of affine maps. The return
// comes out of the scan itself, at 4 floats a step: carrying the masked sums of the
// returns too (3 more) would save the whitening its sum pass, but the heavier scan
// holds fewer rows in flight per multiprocessor, and a row scan waits on memory.
struct ComposeRppStep {
  __host__ __device__ RppStep operator()(const RppStep& e1, const RppStep& e2) const {
    const float a1 = thrust::get<0>(e1), b1 = thrust::get<1>(e1);
    const float a2 = thrust::get<0>(e2), b2 = thrust::get<1>(e2);
    const float ag = thrust::get<2>(e2), bg = thrust::get<3>(e2);
    return RppStep(a2 * a1, a2 * b1 + b2, ag * a1, ag * b1 + bg);
  }
};

// REINFORCE++'s running return: running' = fresh m + running (1 - m) with fresh =
// r + gamma running, i.e. a = m gamma + (1 - m), b = m r; at m = 0 the map is the
// identity: the return is carried unchanged across an observation token. The return
// G_t = fresh m = (m gamma) running + m r.
struct RppStepAt {
  const float* rewards;
  const float* mask;
  int64_t cols;
  float gamma;
  __host__ __device__ RppStep operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const float r = rewards[k], m = mask[k];
    return RppStep(m * gamma + (1.0f - m), m * r, m * gamma, m * r);
  }
};

// verl: compute_reinforce_plus_plus_outcome_advantage. returns = G;
// advantages = masked_whiten(G) * mask: the scan, then the whitening's three passes.
template <class Policy>
void reinforce_plus_plus_advantage(Policy&& policy, const float* rewards, const float* mask, int64_t rows, int64_t cols,
                                   float gamma, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  RowScan(policy, rows, cols, /*reverse=*/true, RppStep(1.0f, 0.0f, 1.0f, 0.0f), ComposeRppStep(),
          RppStepAt{rewards, mask, cols, gamma}, StoreField<3>{returns, cols},
          Footprint().Reads<float>(n, 2).Writes<float>(n));
  WhitenTokens(policy, returns, mask, rows, cols, /*times_mask=*/true, advantages);
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

// The advantage A (the state's second field) and returns = A + V (unmasked).
struct GaeOut {
  float* advantages;
  float* returns;
  const float* values;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t, const Affine2& acc) const {
    const int64_t k = i * cols + t;
    const float a = thrust::get<4>(acc);
    advantages[k] = a;
    returns[k] = a + values[k];
  }
};

// verl: compute_gae_advantage_return. returns = A + V (unmasked); advantages =
// masked_whiten(A, mask), not multiplied by the mask: the scan writing both, then the
// whitening's three passes over A.
template <class Policy>
void gae_advantage_return(Policy&& policy, const float* rewards, const float* values, const float* mask, int64_t rows,
                          int64_t cols, float gamma, float gamma_lam, float* advantages, float* returns) {
  const int64_t n = rows * cols;
  if (n <= 0) return;
  RowScan(policy, rows, cols, /*reverse=*/true, Affine2(1.0f, 0.0f, 1.0f, 0.0f, 0.0f), ComposeAffine2(),
          GaeStepAt{rewards, values, mask, cols, gamma, gamma_lam}, GaeOut{advantages, returns, values, cols},
          Footprint().Reads<float>(n, 3).Writes<float>(n, 2));
  WhitenTokens(policy, advantages, mask, rows, cols, /*times_mask=*/false, advantages);
}

}  // namespace verlconf::cuda
