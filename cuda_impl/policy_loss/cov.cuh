// The covariance-selected policy losses of oracle/policy_loss/cov.h on CCCL, float32:
// clip_cov and kl_cov, given the pick (the case's recorded verl pick, cov_selected) or
// making the oracle's deterministic default pick. Templates over the Thrust execution
// policy (cuda_impl/core/system.cuh); they end in the fused pass as the other policy
// losses do (variants.cuh).
//
// A default pick is a cut (core/select.cuh) made before the loss's pass and applied in
// it token by token, so no pick mask is written or read: clip_cov's first candidates in
// row-major order end at the flat index of the last one taken (NthMatchIndex), kl_cov's
// k largest covariances at the k-th in the order (covariance descending, flat index
// ascending) (SelectKthLargest): the order of a stable descending sort of the valid
// tokens taken in row-major order, so a tie at the cut goes to the lower index.
#pragma once

#include <thrust/tuple.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/select.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/policy_loss/variants.cuh"

namespace verlconf::cuda {
namespace plv {

// The pick as cov_selected records it: 1 on a picked token, 0 elsewhere.
struct RecordedPick {
  const float* selected;
  __host__ __device__ float operator()(int64_t k) const { return selected[k]; }
};

template <class Pick>
struct ClipCovToken {
  PolicyLossArgs in;
  Pick selected;
  float lo, hi;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float d = in.log_prob[k] - in.old_log_prob[k];
    const float r = expf(d);  // no +-20 clamp in clip_cov
    const float l1 = -A * r, l2 = -A * StdClamp(r, lo, hi);
    const float sel = selected(k);
    const float corr = 1.0f - sel;
    const float w = Weight(in, k);
    const float dc_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
    return {StdMax(l1, l2) * corr * w, w * corr * dc_dr * r, {sel, -d, 0.0f}};
  }
};

template <class Pick>
struct KlCovToken {
  PolicyLossArgs in;
  Pick selected;
  float coef;  // ppo_kl_coef
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float d = in.log_prob[k] - in.old_log_prob[k];
    const float r = expf(d);
    const float s = selected(k);
    const float w = Weight(in, k);
    // d|x|/dx = sign(x), 0 at 0 (torch.abs); the pick carries no gradient.
    return {
        (s != 0.0f ? -A * r + coef * fabsf(d) : -A * r) * w, w * (-A * r + s * coef * Sign(d)), {0.0f, fabsf(d), 0.0f}};
  }
};

// ---- the default picks (no recorded verl pick) ----------------------------------------

// masked_sum terms of (A, log_prob, mask): clip_cov's masked means, and the mask's
// row sums for agg_loss's plan.
struct MaskedMeanTerms {
  PolicyLossArgs in;
  __host__ __device__ thrust::tuple<float, float, float> operator()(int64_t k) const {
    const float m = in.mask[k];
    if (m == 0.0f) return thrust::make_tuple(0.0f, 0.0f, m);
    return thrust::make_tuple(in.advantages[k] * m, in.log_prob[k] * m, m);
  }
};

// Sums of (A, log_prob, 1) over the valid tokens (mask > 0): kl_cov's plain means; and
// the mask for agg_loss's plan.
struct ValidTerms {
  PolicyLossArgs in;
  __host__ __device__ thrust::tuple<float, float, float, float> operator()(int64_t k) const {
    const float m = in.mask[k];
    if (!(m > 0.0f)) return thrust::make_tuple(0.0f, 0.0f, 0.0f, m);
    return thrust::make_tuple(in.advantages[k], in.log_prob[k], 1.0f, m);
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

// The default pick of clip_cov: the candidates up to the flat index `last`.
struct ClipCovDefaultPick {
  ClipCovCandidate candidate;
  int64_t last;
  __host__ __device__ float operator()(int64_t k) const { return k <= last && candidate(k) ? 1.0f : 0.0f; }
};

// kl_cov's sort key: the covariance with plain means; + 0.0f makes -0 and +0 one key,
// so that they tie as a comparison sort ties them.
struct KlCovKey {
  PolicyLossArgs in;
  float mean_a, mean_lp;
  __host__ __device__ float operator()(int64_t k) const {
    return (in.advantages[k] - mean_a) * (in.log_prob[k] - mean_lp) + 0.0f;
  }
};

// The valid tokens' ordered keys; 0 (no part in the pick) elsewhere.
struct KlCovKeyAt {
  KlCovKey key;
  int64_t cols;
  __host__ __device__ uint32_t operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return key.in.mask[k] > 0.0f ? OrderedKey(key(k)) : 0u;
  }
};

// The default pick of kl_cov: the valid tokens at or before the cut.
struct KlCovDefaultPick {
  KlCovKey key;
  KeyCut cut;
  __host__ __device__ float operator()(int64_t k) const {
    return key.in.mask[k] > 0.0f && cut.Takes(OrderedKey(key(k)), k) ? 1.0f : 0.0f;
  }
};

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

// verl: compute_policy_loss_clip_cov, given the pick; clip_cov_ratio > 0 is the
// caller's check (verl's AssertionError).
template <class Policy>
PolicyLossScalars policy_loss_clip_cov(Policy&& policy, System system, const PolicyLossArgs& in, const float* selected,
                                       float clip_low, float clip_high, AggMode mode, const AggGlobal& info,
                                       float* grad) {
  const plv::ClipCovToken<plv::RecordedPick> tok{in, {selected}, 1.0f - clip_low, 1.0f + clip_high};
  PolicyLossScalars s =
      plv::AggregatedLoss(policy, system, in, tok, mode, info, grad, in.TokenReads().Reads<float>(in.size()));
  s.pg_clipfrac_lower = 0.0f;
  return s;
}

// compute_policy_loss_clip_cov with oracle::clip_cov_default_selection's pick: the first
// candidates in row-major order, as many as clip_cov_pick_count. Three passes: the masked
// means (and the mask's row sums), the candidates' count up to the last one taken, the
// loss.
template <class Policy>
PolicyLossScalars policy_loss_clip_cov_default(Policy&& policy, [[maybe_unused]] System system,
                                               const PolicyLossArgs& in, float clip_low, float clip_high, float lb,
                                               float ub, double clip_cov_ratio, AggMode mode, const AggGlobal& info,
                                               float* grad) {
  using Sums = thrust::tuple<float, float, float>;
  const std::vector<Sums> row_sums =
      RowPartials(policy, in.rows, in.cols, Sums(0.0f, 0.0f, 0.0f), TuplePlus(),
                  AtToken<plv::MaskedMeanTerms>{{in}, in.cols}, Footprint().Reads<float>(in.size(), 3));
  double sum_a = 0.0, sum_lp = 0.0, sum_mask = 0.0;
  std::vector<float> row_mask(row_sums.size());
  for (size_t i = 0; i < row_sums.size(); ++i) {
    sum_a += thrust::get<0>(row_sums[i]);
    sum_lp += thrust::get<1>(row_sums[i]);
    sum_mask += thrust::get<2>(row_sums[i]);
    row_mask[i] = thrust::get<2>(row_sums[i]);
  }
  const float mask_total = static_cast<float>(sum_mask);
  const float mean_a = static_cast<float>(sum_a) / (mask_total + kMaskedMeanEps);
  const float mean_lp = static_cast<float>(sum_lp) / (mask_total + kMaskedMeanEps);
  const float lo = 1.0f - clip_low, hi = 1.0f + clip_high;
  const plv::ClipCovCandidate candidate{in, lo, hi, mean_a, mean_lp, lb, ub};
  const int64_t last = NthMatchIndex(policy, in.rows, in.cols, AtToken<plv::ClipCovCandidate>{candidate, in.cols},
                                     clip_cov_pick_count(clip_cov_ratio, mask_total), Footprint().Reads<float>(1, 4));
  const AggPlan plan = AggPlanFromRowMasks(policy, row_mask, nullptr, in.cols, mode, info);
  const plv::ClipCovToken<plv::ClipCovDefaultPick> tok{in, {candidate, last}, lo, hi};
  PolicyLossScalars s = plv::AggregatedLossWith(policy, plan, in, tok, mode, grad, in.TokenReads());
  s.pg_clipfrac_lower = 0.0f;
  return s;
}

// verl: compute_policy_loss_kl_cov, given the pick; kl_cov_ratio > 0 is the caller's
// check (verl's AssertionError).
template <class Policy>
PolicyLossScalars policy_loss_kl_cov(Policy&& policy, System system, const PolicyLossArgs& in, const float* selected,
                                     float ppo_kl_coef, AggMode mode, const AggGlobal& info, float* grad) {
  const plv::KlCovToken<plv::RecordedPick> tok{in, {selected}, ppo_kl_coef};
  PolicyLossScalars s =
      plv::AggregatedLoss(policy, system, in, tok, mode, info, grad, in.TokenReads().Reads<float>(in.size()));
  s.pg_clipfrac = s.pg_clipfrac_lower = 0.0f;
  return s;
}

// compute_policy_loss_kl_cov with oracle::kl_cov_default_selection's pick: the
// kl_cov_pick_count largest covariances of the valid tokens, ties towards the lower
// row-major index. The plain means (and the mask's row sums), the radix select of the
// cut, the loss.
template <class Policy>
PolicyLossScalars policy_loss_kl_cov_default(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                             double kl_cov_ratio, float ppo_kl_coef, AggMode mode,
                                             const AggGlobal& info, float* grad) {
  using Sums = thrust::tuple<float, float, float, float>;
  const std::vector<Sums> row_sums =
      RowPartials(policy, in.rows, in.cols, Sums(0.0f, 0.0f, 0.0f, 0.0f), TuplePlus(),
                  AtToken<plv::ValidTerms>{{in}, in.cols}, Footprint().Reads<float>(in.size(), 3));
  double sum_a = 0.0, sum_lp = 0.0, valid_sum = 0.0;
  std::vector<float> row_mask(row_sums.size());
  for (size_t i = 0; i < row_sums.size(); ++i) {
    sum_a += thrust::get<0>(row_sums[i]);
    sum_lp += thrust::get<1>(row_sums[i]);
    valid_sum += thrust::get<2>(row_sums[i]);  // whole counts: exact
    row_mask[i] = thrust::get<3>(row_sums[i]);
  }
  const int64_t valid = static_cast<int64_t>(valid_sum);
  const int64_t k = kl_cov_pick_count(kl_cov_ratio, valid);
  const float nv = static_cast<float>(valid);
  const plv::KlCovKey key{in, static_cast<float>(sum_a) / nv, static_cast<float>(sum_lp) / nv};
  KeyCut cut = KeyCut::None();
  if (k >= valid)
    cut = valid > 0 ? KeyCut::All() : KeyCut::None();
  else
    cut = SelectKthLargest(policy, in.rows, in.cols, plv::KlCovKeyAt{key, in.cols}, k, Footprint().Reads<float>(1, 3));
  const AggPlan plan = AggPlanFromRowMasks(policy, row_mask, nullptr, in.cols, mode, info);
  const plv::KlCovToken<plv::KlCovDefaultPick> tok{in, {key, cut}, ppo_kl_coef};
  PolicyLossScalars s = plv::AggregatedLossWith(policy, plan, in, tok, mode, grad, in.TokenReads());
  s.pg_clipfrac = s.pg_clipfrac_lower = 0.0f;
  return s;
}

}  // namespace verlconf::cuda
