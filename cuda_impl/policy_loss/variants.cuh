// The policy losses of oracle/policy_loss/variants.h on CCCL, float32: gspo, sapo, gpg,
// cispo, dro, geo_mean, dppo_tv, dppo_kl. Each is a template over the Thrust execution
// policy (cuda_impl/core/system.cuh) returning the loss and verl's metric values and
// writing d loss / d log_prob, with the oracle's (verl's) detach semantics: a detached
// factor is a constant weight of the gradient.
//
// The losses that end in agg_loss share one shape (AggregatedLoss): the mask's row sums
// where the mode needs them, then one row pass (agg_loss.cuh FusedAggPass) that reads
// each token's inputs once, writes d loss / d log_prob = W times the token's derivative,
// and sums each row's loss and metric terms; the rows are combined in a fixed order.
#pragma once

#include <thrust/copy.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"

namespace verlconf::cuda {

namespace plv {

constexpr float kLogRatioClamp = 20.0f;     // kPolicyLogRatioClamp
constexpr float kGspoLogRatioMax = 10.0f;   // gspo's one-sided clamp
constexpr float kGeoMeanIsLogEps = 1e-10f;  // geo_mean: log(w + 1e-10)
constexpr float kDppoKlEps = 1e-8f;         // dppo_kl's offsets

// torch's kink rules are policy_loss_common.cuh's (StdMax, StdClamp, ClampPasses, ...).
__host__ __device__ inline float Sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : 0.0f); }
__host__ __device__ inline float Weight(const PolicyLossArgs& in, int64_t k) {
  return in.rollout_is_weights ? in.rollout_is_weights[k] : 1.0f;
}

// One token's loss, its derivative w.r.t. log_prob and its three metric terms.
using TokenValues = AggTokenValues;

// The mask total and the three metrics' masked sums (masked_sum: a term under a zero
// mask is dropped, NaN or not).
using MetricSums = thrust::tuple<float, float, float, float>;

template <class Token>
struct MetricTerms {
  Token tok;
  const float* mask;
  __host__ __device__ MetricSums operator()(int64_t k) const {
    const float m = mask[k];
    if (m == 0.0f) return thrust::make_tuple(m, 0.0f, 0.0f, 0.0f);
    const TokenValues v = tok(k);
    return thrust::make_tuple(m, v.metric[0] * m, v.metric[1] * m, v.metric[2] * m);
  }
};

// The metric sums, two-level (cuda_impl/core/sum.cuh) so the host system's sum is as
// accurate as the device's.
template <class Policy, class Token>
MetricSums TokenMetrics(Policy&& policy, const PolicyLossArgs& in, const Token& tok) {
  return ChunkedTransformSum(policy, thrust::counting_iterator<int64_t>(0), in.size(), MetricTerms<Token>{tok, in.mask},
                             thrust::make_tuple(0.0f, 0.0f, 0.0f, 0.0f));
}

// verl's ending of a loss that aggregates (the oracle's Aggregate): loss = agg_loss(L),
// grad = W * dL/dlog_prob, and the metrics' masked means, in one row pass over the tokens.
// No temporary of the token matrix's size.
template <class Policy, class Token>
PolicyLossScalars AggregatedLoss(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                 const Token& tok, AggMode mode, const AggGlobal& info, float* grad,
                                 bool metrics = true) {
  const AggPlan plan = MakeAggPlan(policy, in.mask, in.rows, in.cols, mode, info);
  const FusedAggScalars f = FusedAggPass(policy, plan, in.mask, grad, in.rows, in.cols, mode, tok, in.TokenReads());
  PolicyLossScalars s;
  s.loss = f.loss;
  if (metrics) {
    s.pg_clipfrac = MaskedMeanOf(f.metric_sum[0], f.mask_sum);
    s.ppo_kl = MaskedMeanOf(f.metric_sum[1], f.mask_sum);
    s.pg_clipfrac_lower = MaskedMeanOf(f.metric_sum[2], f.mask_sum);
  }
  return s;
}

struct RowOfToken {
  int64_t cols;
  __host__ __device__ int64_t operator()(int64_t k) const { return k / cols; }
};

// Per-row sums of `terms` (a transform of the token index) into `out` (a zip of row
// buffers): reduce_by_key over the row keys k / cols.
template <class Policy, class TermFn, class Out>
void RowSums(Policy&& policy, const PolicyLossArgs& in, const TermFn& terms, Out out) {
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowOfToken{in.cols});
  auto values = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), terms);
  thrust::reduce_by_key(policy, keys, keys + in.size(), values, thrust::make_discard_iterator(), out,
                        thrust::equal_to<int64_t>{}, TuplePlus{});
}

// ---- gspo -----------------------------------------------------------------------------

// The row's (log-ratio * mask, mask) terms.
struct GspoRowTerms {
  PolicyLossArgs in;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t k) const {
    const float m = in.mask[k];
    return thrust::make_tuple((in.log_prob[k] - in.old_log_prob[k]) * m, m);
  }
};

struct GspoToken {
  PolicyLossArgs in;
  const float* row_log_ratio;  // sum_t (log_prob - old_log_prob) * mask
  const float* row_mask;       // sum_t mask
  float lo, hi;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const int64_t i = k / in.cols;
    const float A = in.advantages[k];
    const float nak = in.log_prob[k] - in.old_log_prob[k];
    // log s = log_prob - sg[log_prob] + sg[row mean]: the first difference is 0 in the
    // forward pass; the row length is clamped at 1.
    const float x = row_log_ratio[i] / StdMax(row_mask[i], 1.0f);
    const float r = expf(StdMin(x, kGspoLogRatioMax));
    const float l1 = -A * r, l2 = -A * StdClamp(r, lo, hi);
    const float w = Weight(in, k);
    const float dc_dr = MaxShareA(l1, l2) * -A + MaxShareA(l2, l1) * -A * ClampPasses(r, lo, hi);
    // d s / d log_prob = s on the token itself, through the one-sided clamp.
    return {
        StdMax(l1, l2) * w, w * dc_dr * r * (x < kGspoLogRatioMax ? 1.0f : 0.0f), {l2 > l1 ? 1.0f : 0.0f, -nak, 0.0f}};
  }
};

// verl: compute_policy_loss_gspo. `lo`, `hi`: 1 - clip_ratio_low, 1 + clip_ratio_high.
template <class Policy>
PolicyLossScalars policy_loss_gspo(Policy&& policy, System system, const PolicyLossArgs& in, float clip_low,
                                   float clip_high, AggMode mode, const AggGlobal& info, float* grad) {
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch row_lr(policy, in.rows), row_mask(policy, in.rows);
  RowSums(policy, in, GspoRowTerms{in}, thrust::make_zip_iterator(thrust::make_tuple(row_lr.get(), row_mask.get())));
  const GspoToken tok{in, row_lr.get(), row_mask.get(), 1.0f - clip_low, 1.0f + clip_high};
  PolicyLossScalars s = AggregatedLoss(policy, system, in, tok, mode, info, grad);
  s.pg_clipfrac_lower = 0.0f;
  return s;
}

// ---- sapo -----------------------------------------------------------------------------

struct SapoToken {
  PolicyLossArgs in;
  float tau_pos, tau_neg;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float raw = in.log_prob[k] - in.old_log_prob[k];
    const float d = StdClamp(raw, -kLogRatioClamp, kLogRatioClamp);
    const float r = expf(d);
    const float tau = A > 0.0f ? tau_pos : tau_neg;
    const float sig = 1.0f / (1.0f + expf(-(tau * (r - 1.0f))));
    const float gate = sig * (4.0f / tau);
    const float w = Weight(in, k);
    // Back through the gate: (4 / tau) * sigmoid' * tau, then exp and the +-20 clamp.
    const float dloss =
        -A * w * (4.0f / tau) * (sig * (1.0f - sig)) * tau * r * ClampPasses(raw, -kLogRatioClamp, kLogRatioClamp);
    return {-gate * A * w, dloss, {0.0f, -d, 0.0f}};
  }
};

// verl: compute_policy_loss_sapo; the aggregation is seq-mean-token-mean whatever
// loss_agg_mode says (verl hard-codes it).
template <class Policy>
PolicyLossScalars policy_loss_sapo(Policy&& policy, System system, const PolicyLossArgs& in, float tau_pos,
                                   float tau_neg, const AggGlobal& info, float* grad) {
  PolicyLossScalars s =
      AggregatedLoss(policy, system, in, SapoToken{in, tau_pos, tau_neg}, AggMode::kSeqMeanTokenMean, info, grad);
  s.pg_clipfrac = s.pg_clipfrac_lower = 0.0f;
  return s;
}

// ---- gpg ------------------------------------------------------------------------------

struct GpgToken {
  PolicyLossArgs in;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float w = Weight(in, k);
    return {-in.log_prob[k] * in.advantages[k] * w, -in.advantages[k] * w, {0.0f, 0.0f, 0.0f}};
  }
};

// verl: compute_policy_loss_gpg (no metrics).
template <class Policy>
PolicyLossScalars policy_loss_gpg(Policy&& policy, System system, const PolicyLossArgs& in, AggMode mode,
                                  const AggGlobal& info, float* grad) {
  return AggregatedLoss(policy, system, in, GpgToken{in}, mode, info, grad, /*metrics=*/false);
}

// ---- cispo ----------------------------------------------------------------------------

struct CispoToken {
  PolicyLossArgs in;
  float lo, hi;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float d = StdClamp(in.log_prob[k] - in.old_log_prob[k], -kLogRatioClamp, kLogRatioClamp);
    const float r = expf(d);
    const float cr = StdClamp(r, lo, hi);  // detached: a constant weight of the gradient
    const float w = Weight(in, k);
    return {-cr * A * in.log_prob[k] * w, -cr * A * w, {r != cr ? 1.0f : 0.0f, -d, 0.0f}};
  }
};

// verl: compute_policy_loss_cispo.
template <class Policy>
PolicyLossScalars policy_loss_cispo(Policy&& policy, System system, const PolicyLossArgs& in, float clip_low,
                                    float clip_high, AggMode mode, const AggGlobal& info, float* grad) {
  PolicyLossScalars s =
      AggregatedLoss(policy, system, in, CispoToken{in, 1.0f - clip_low, 1.0f + clip_high}, mode, info, grad);
  s.pg_clipfrac_lower = 0.0f;
  return s;
}

// ---- dro ------------------------------------------------------------------------------

struct DroToken {
  PolicyLossArgs in;
  float beta;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float lr = in.log_prob[k] - in.old_log_prob[k];
    const float w = Weight(in, k);
    return {
        -(in.log_prob[k] * A - 0.5f * beta * (lr * lr)) * w, -(A - 0.5f * beta * (2.0f * lr)) * w, {0.0f, -lr, 0.0f}};
  }
};

// verl: compute_policy_loss_dro; beta > 0 is the caller's check (verl's ValueError).
template <class Policy>
PolicyLossScalars policy_loss_dro(Policy&& policy, System system, const PolicyLossArgs& in, float beta, AggMode mode,
                                  const AggGlobal& info, float* grad) {
  PolicyLossScalars s = AggregatedLoss(policy, system, in, DroToken{in, beta}, mode, info, grad);
  s.pg_clipfrac = s.pg_clipfrac_lower = 0.0f;
  return s;
}

// ---- geo_mean -------------------------------------------------------------------------

// The sign-clipped log-ratio and d(it)/d log_prob of one token.
struct GeoMeanClip {
  float lo, hi;  // -clip_ratio_low, clip_ratio_high
  __host__ __device__ void operator()(float nak, float A, float& clipped_lr, float& dm, bool& clipped) const {
    const float nc = StdClamp(nak, lo, hi);
    const float sg = Sign(A);
    const float a = sg * nak, b = sg * nc;
    clipped_lr = sg * StdMin(a, b);
    // The outer sign times the share torch.min routes to each argument, each carrying
    // the sign again (and the clamp's pass-through).
    dm = sg * (MinShareA(a, b) * sg + MinShareA(b, a) * sg * ClampPasses(nak, lo, hi));
    clipped = nak != nc;
  }
};

// The row's (clipped log-ratio * mask, A * mask, log(w + 1e-10) * mask, mask) terms.
struct GeoMeanRowTerms {
  PolicyLossArgs in;
  GeoMeanClip clip;
  __host__ __device__ thrust::tuple<float, float, float, float> operator()(int64_t k) const {
    const float m = in.mask[k], A = in.advantages[k];
    float clr, dm;
    bool clipped;
    clip(in.log_prob[k] - in.old_log_prob[k], A, clr, dm, clipped);
    const float lw = in.rollout_is_weights ? logf(in.rollout_is_weights[k] + kGeoMeanIsLogEps) * m : 0.0f;
    return thrust::make_tuple(clr * m, A * m, lw, m);
  }
};

// Per row: the loss term -adv * ratio * seq_w, and d loss / d (row exponent sum).
struct GeoMeanRow {
  bool weighted;
  float inv_rows;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float, float, float>& s) const {
    const float denom = thrust::get<3>(s) + kMaskedMeanEps;
    const float ratio = expf(thrust::get<0>(s) / denom);
    const float adv = thrust::get<1>(s) / denom;
    const float seq_w = weighted ? expf(thrust::get<2>(s) / denom) : 1.0f;
    return thrust::make_tuple(-adv * ratio * seq_w, inv_rows * seq_w * -adv * ratio / denom);
  }
};

struct GeoMeanToken {
  PolicyLossArgs in;
  GeoMeanClip clip;
  const float* row_factor;  // null for the metric pass
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float nak = in.log_prob[k] - in.old_log_prob[k];  // no +-20 clamp here
    float clr, dm;
    bool clipped;
    clip(nak, A, clr, dm, clipped);
    const float g = row_factor ? row_factor[k / in.cols] * in.mask[k] * dm : 0.0f;
    return {0.0f, g, {clipped && A > 0.0f ? 1.0f : 0.0f, -nak, clipped && A < 0.0f ? 1.0f : 0.0f}};
  }
};

struct GradOnly {
  GeoMeanToken tok;
  __host__ __device__ float operator()(int64_t k) const { return tok(k).dloss; }
};

// verl: compute_policy_loss_geo_mean (GMPO): the plain mean over all rows of the
// per-row terms; agg_loss plays no part.
template <class Policy>
PolicyLossScalars policy_loss_geo_mean(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                       float clip_low, float clip_high, float* grad) {
  const GeoMeanClip clip{-clip_low, clip_high};
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch s_clr(policy, in.rows), s_adv(policy, in.rows), s_lw(policy, in.rows), s_mask(policy, in.rows),
      row_factor(policy, in.rows), row_term(policy, in.rows);
  RowSums(policy, in, GeoMeanRowTerms{in, clip},
          thrust::make_zip_iterator(thrust::make_tuple(s_clr.get(), s_adv.get(), s_lw.get(), s_mask.get())));
  auto sums = thrust::make_zip_iterator(
      thrust::make_tuple(static_cast<const float*>(s_clr.get()), static_cast<const float*>(s_adv.get()),
                         static_cast<const float*>(s_lw.get()), static_cast<const float*>(s_mask.get())));
  const float inv_rows = 1.0f / static_cast<float>(in.rows);
  thrust::transform(policy, sums, sums + in.rows,
                    thrust::make_zip_iterator(thrust::make_tuple(row_term.get(), row_factor.get())),
                    GeoMeanRow{in.rollout_is_weights != nullptr, inv_rows});
  PolicyLossScalars s;
  s.loss = thrust::reduce(policy, row_term.get(), row_term.get() + in.rows, 0.0f) / static_cast<float>(in.rows);
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(in.size()), grad,
                    GradOnly{GeoMeanToken{in, clip, row_factor.get()}});
  const MetricSums m = TokenMetrics(policy, in, GeoMeanToken{in, clip, nullptr});
  s.pg_clipfrac = MaskedMeanOf(thrust::get<1>(m), thrust::get<0>(m));
  s.ppo_kl = MaskedMeanOf(thrust::get<2>(m), thrust::get<0>(m));
  s.pg_clipfrac_lower = MaskedMeanOf(thrust::get<3>(m), thrust::get<0>(m));
  return s;
}

// ---- dppo_tv, dppo_kl -----------------------------------------------------------------

enum class DppoDivergence : int { kTv, kKl };

struct DppoToken {
  PolicyLossArgs in;
  DppoDivergence div;
  float lo, hi, c;  // clip_ratio_low, clip_ratio_high (the divergence thresholds), clip_ratio_c
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float lp = in.log_prob[k], olp = in.old_log_prob[k];
    const float raw = lp - olp;
    const float d = StdClamp(raw, -kLogRatioClamp, kLogRatioClamp);
    const float r = expf(d);
    const float tr = StdMin(r, c);  // detached
    const float po = expf(olp);
    bool pos, neg;
    if (div == DppoDivergence::kTv) {
      // p - p_old without the cancellation of two rounded exponentials.
      const float dp = po * expm1f(raw);
      pos = dp <= hi;
      neg = dp >= -lo;
    } else {
      // 1 - p as -expm1(log p): exact where p is near 1, where the binary KL's log
      // argument is decided. A probability above 1 makes it NaN, which fails every
      // comparison, as in torch.
      const float q = -expm1f(lp), qo = -expm1f(olp);
      const float bkl = po * (olp - lp) + qo * logf((qo + kDppoKlEps) / (q + kDppoKlEps));
      pos = bkl <= hi || lp <= olp;  // p <= p_old, decided on the exact log-probs
      neg = bkl <= lo || lp >= olp;
    }
    const float valid = (A > 0.0f ? pos : neg) ? 1.0f : 0.0f;  // detached
    const float w = Weight(in, k);
    return {-A * tr * lp * valid * w, -A * tr * valid * w, {1.0f - valid, -d, (r > c ? 1.0f : 0.0f) * valid}};
  }
};

// verl: compute_policy_loss_dppo_tv / compute_policy_loss_dppo_kl.
template <class Policy>
PolicyLossScalars policy_loss_dppo(Policy&& policy, System system, const PolicyLossArgs& in, DppoDivergence div,
                                   float clip_low, float clip_high, float clip_c, AggMode mode, const AggGlobal& info,
                                   float* grad) {
  return AggregatedLoss(policy, system, in, DppoToken{in, div, clip_low, clip_high, clip_c}, mode, info, grad);
}

}  // namespace plv

using plv::DppoDivergence;
using plv::policy_loss_cispo;
using plv::policy_loss_dppo;
using plv::policy_loss_dro;
using plv::policy_loss_geo_mean;
using plv::policy_loss_gpg;
using plv::policy_loss_gspo;
using plv::policy_loss_sapo;

template <class Policy>
PolicyLossScalars policy_loss_dppo_tv(Policy&& policy, System system, const PolicyLossArgs& in, float clip_low,
                                      float clip_high, float clip_c, AggMode mode, const AggGlobal& info, float* grad) {
  return plv::policy_loss_dppo(policy, system, in, DppoDivergence::kTv, clip_low, clip_high, clip_c, mode, info, grad);
}

template <class Policy>
PolicyLossScalars policy_loss_dppo_kl(Policy&& policy, System system, const PolicyLossArgs& in, float clip_low,
                                      float clip_high, float clip_c, AggMode mode, const AggGlobal& info, float* grad) {
  return plv::policy_loss_dppo(policy, system, in, DppoDivergence::kKl, clip_low, clip_high, clip_c, mode, info, grad);
}

}  // namespace verlconf::cuda
