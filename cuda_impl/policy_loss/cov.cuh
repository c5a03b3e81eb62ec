// The covariance-selected policy losses of oracle/policy_loss/cov.h on CCCL, float32:
// clip_cov and kl_cov, given the pick (`selected`, 0/1 per token: the case's recorded
// verl pick, or the oracle's deterministic default pick computed here on the device).
// Templates over the Thrust execution policy (cuda_impl/core/system.cuh); they end in
// agg_loss as the other policy losses do (variants.cuh).
#pragma once

#include <thrust/copy.h>
#include <thrust/count.h>
#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/iterator/constant_iterator.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/permutation_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/scatter.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "cuda_impl/policy_loss/variants.cuh"

namespace verlconf::cuda {
namespace plv {

using Index = int32_t;  // token indices of the pick (a batch has fewer than 2^31 tokens)

struct ClipCovToken {
  PolicyLossArgs in;
  const float* selected;
  float lo, hi;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float d = in.log_prob[k] - in.old_log_prob[k];
    const float r = expf(d);  // no +-20 clamp in clip_cov
    const float l1 = -A * r, l2 = -A * StdClamp(r, lo, hi);
    const float corr = 1.0f - selected[k];
    const float w = Weight(in, k);
    const float dc_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
    return {StdMax(l1, l2) * corr * w, w * corr * dc_dr * r, {selected[k], -d, 0.0f}};
  }
};

struct KlCovToken {
  PolicyLossArgs in;
  const float* selected;
  float coef;  // ppo_kl_coef
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float d = in.log_prob[k] - in.old_log_prob[k];
    const float r = expf(d);
    const float s = selected[k];
    const float w = Weight(in, k);
    // d|x|/dx = sign(x), 0 at 0 (torch.abs); the pick carries no gradient.
    return {
        (s != 0.0f ? -A * r + coef * fabsf(d) : -A * r) * w, w * (-A * r + s * coef * Sign(d)), {0.0f, fabsf(d), 0.0f}};
  }
};

// ---- the default picks (no recorded verl pick) ----------------------------------------

// masked_sum terms of (A, log_prob, mask): clip_cov's masked means.
struct MaskedMeanTerms {
  PolicyLossArgs in;
  __host__ __device__ thrust::tuple<float, float, float> operator()(int64_t k) const {
    const float m = in.mask[k];
    if (m == 0.0f) return thrust::make_tuple(0.0f, 0.0f, m);
    return thrust::make_tuple(in.advantages[k] * m, in.log_prob[k] * m, m);
  }
};

// Sums of (A, log_prob, 1) over the valid tokens (mask > 0): kl_cov's plain means.
struct ValidTerms {
  PolicyLossArgs in;
  __host__ __device__ thrust::tuple<float, float, float> operator()(int64_t k) const {
    if (!(in.mask[k] > 0.0f)) return thrust::make_tuple(0.0f, 0.0f, 0.0f);
    return thrust::make_tuple(in.advantages[k], in.log_prob[k], 1.0f);
  }
};

// clip_cov's candidates: valid tokens PPO's clip left alone, with the centred
// covariance strictly inside (lb, ub).
struct ClipCovCandidate {
  PolicyLossArgs in;
  float lo, hi, mean_a, mean_lp, lb, ub;
  __host__ __device__ bool operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float r = expf(in.log_prob[k] - in.old_log_prob[k]);
    const bool clipped = -A * StdClamp(r, lo, hi) > -A * r;
    const float cov = (A - mean_a) * (in.log_prob[k] - mean_lp);
    return in.mask[k] > 0.0f && !clipped && cov > lb && cov < ub;
  }
};

struct IsTrue {
  __host__ __device__ bool operator()(bool b) const { return b; }
};

struct Valid {
  __host__ __device__ bool operator()(float m) const { return m > 0.0f; }
};

// kl_cov's sort key: the covariance with plain means; + 0.0f makes -0 and +0 one key,
// so that a radix sort ties them as a comparison sort does.
struct KlCovKey {
  PolicyLossArgs in;
  float mean_a, mean_lp;
  __host__ __device__ float operator()(Index k) const {
    return (in.advantages[k] - mean_a) * (in.log_prob[k] - mean_lp) + 0.0f;
  }
};

// sel = 1 at the first `count` of the `n` indices in `idx`, 0 elsewhere.
template <class Policy>
void MarkFirst(Policy&& policy, const Index* idx, int64_t n, int64_t count, float* sel, int64_t size) {
  thrust::fill(policy, sel, sel + size, 0.0f);
  const int64_t take = std::min(count, n);
  if (take > 0)
    thrust::scatter(policy, thrust::constant_iterator<float>(1.0f), thrust::constant_iterator<float>(1.0f) + take, idx,
                    sel);
}

inline void CheckIndexRange(int64_t size) {
  if (size > static_cast<int64_t>(INT32_MAX)) throw std::length_error("cov pick: more than 2^31 tokens");
}

}  // namespace plv

// oracle::clip_cov_pick_count: max(int(clip_cov_ratio * sum(mask)), 1).
inline int64_t clip_cov_pick_count(double clip_cov_ratio, float mask_total) {
  return std::max<int64_t>(static_cast<int64_t>(clip_cov_ratio * static_cast<double>(mask_total)), 1);
}

// oracle::kl_cov_pick_count: max(1, int(n * kl_cov_ratio)) over the n valid tokens, none
// when n = 0.
inline int64_t kl_cov_pick_count(double kl_cov_ratio, int64_t valid) {
  if (valid == 0) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(valid) * kl_cov_ratio));
}

// oracle::clip_cov_default_selection: the first candidates in row-major order (copy_if
// keeps their order), as many as clip_cov_pick_count.
template <class Policy>
void clip_cov_default_selection(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                float clip_low, float clip_high, float lb, float ub, double clip_cov_ratio,
                                float* sel) {
  const int64_t n = in.size();
  plv::CheckIndexRange(n);
  const thrust::tuple<float, float, float> s = ChunkedTransformSum(
      policy, thrust::counting_iterator<int64_t>(0), n, plv::MaskedMeanTerms{in}, thrust::make_tuple(0.0f, 0.0f, 0.0f));
  const float mask_total = thrust::get<2>(s);
  const float mean_a = thrust::get<0>(s) / (mask_total + kMaskedMeanEps);
  const float mean_lp = thrust::get<1>(s) / (mask_total + kMaskedMeanEps);
  const plv::ClipCovCandidate cand{in, 1.0f - clip_low, 1.0f + clip_high, mean_a, mean_lp, lb, ub};
  PolicyScratch<plv::Index, std::remove_reference_t<Policy>> idx(policy, n);
  auto stencil = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), cand);
  const plv::Index* end = thrust::copy_if(policy, thrust::counting_iterator<plv::Index>(0),
                                          thrust::counting_iterator<plv::Index>(static_cast<plv::Index>(n)), stencil,
                                          idx.get(), plv::IsTrue{});
  plv::MarkFirst(policy, idx.get(), end - idx.get(), clip_cov_pick_count(clip_cov_ratio, mask_total), sel, n);
}

// oracle::kl_cov_default_selection: the valid tokens (copy_if, row-major) sorted by
// covariance, largest first, with a stable sort (ties keep the lower index first), and
// the first kl_cov_pick_count of them.
template <class Policy>
void kl_cov_default_selection(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                              double kl_cov_ratio, float* sel) {
  const int64_t n = in.size();
  plv::CheckIndexRange(n);
  const thrust::tuple<float, float, float> s = ChunkedTransformSum(
      policy, thrust::counting_iterator<int64_t>(0), n, plv::ValidTerms{in}, thrust::make_tuple(0.0f, 0.0f, 0.0f));
  PolicyScratch<plv::Index, std::remove_reference_t<Policy>> idx(policy, n);
  const plv::Index* end = thrust::copy_if(policy, thrust::counting_iterator<plv::Index>(0),
                                          thrust::counting_iterator<plv::Index>(static_cast<plv::Index>(n)), in.mask,
                                          idx.get(), plv::Valid{});
  const int64_t valid = end - idx.get();
  const int64_t k = kl_cov_pick_count(kl_cov_ratio, valid);
  if (valid > 0 && k > 0) {
    const float nv = static_cast<float>(valid);
    PolicyScratch<float, std::remove_reference_t<Policy>> keys(policy, valid);
    thrust::transform(policy, idx.get(), idx.get() + valid, keys.get(),
                      plv::KlCovKey{in, thrust::get<0>(s) / nv, thrust::get<1>(s) / nv});
    thrust::stable_sort_by_key(policy, keys.get(), keys.get() + valid, idx.get(), thrust::greater<float>{});
  }
  plv::MarkFirst(policy, idx.get(), valid, k, sel, n);
}

// verl: compute_policy_loss_clip_cov, given the pick; clip_cov_ratio > 0 is the
// caller's check (verl's AssertionError).
template <class Policy>
PolicyLossScalars policy_loss_clip_cov(Policy&& policy, System system, const PolicyLossArgs& in, const float* selected,
                                       float clip_low, float clip_high, AggMode mode, const AggGlobal& info,
                                       float* grad) {
  const plv::ClipCovToken tok{in, selected, 1.0f - clip_low, 1.0f + clip_high};
  PolicyLossScalars s = plv::AggregatedLoss(policy, system, in, tok, mode, info, grad);
  s.pg_clipfrac_lower = 0.0f;
  return s;
}

// verl: compute_policy_loss_kl_cov, given the pick; kl_cov_ratio > 0 is the caller's
// check (verl's AssertionError).
template <class Policy>
PolicyLossScalars policy_loss_kl_cov(Policy&& policy, System system, const PolicyLossArgs& in, const float* selected,
                                     float ppo_kl_coef, AggMode mode, const AggGlobal& info, float* grad) {
  PolicyLossScalars s =
      plv::AggregatedLoss(policy, system, in, plv::KlCovToken{in, selected, ppo_kl_coef}, mode, info, grad);
  s.pg_clipfrac = s.pg_clipfrac_lower = 0.0f;
  return s;
}

}  // namespace verlconf::cuda
