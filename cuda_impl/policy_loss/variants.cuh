// The policy losses of oracle/policy_loss/variants.h on CCCL, float32: gspo, sapo, gpg,
// cispo, dro, geo_mean, dppo_tv, dppo_kl. Each is a template over the Thrust execution
// policy (cuda_impl/core/system.cuh) returning the loss and verl's metric values and
// writing d loss / d log_prob, with the oracle's (verl's) detach semantics: a detached
// factor is a constant weight of the gradient.
//
// The losses that end in agg_loss share one shape (AggregatedLoss): the mask's row sums
// where the mode needs them, then one row pass (agg_loss.cuh FusedAggPass) that reads
// each token's inputs once, writes d loss / d log_prob = W times the token's derivative,
// and sums each row's loss and metric terms; the rows are combined in a fixed order. A
// loss that needs a statistic of each row first (gspo, geo_mean) makes it in one row pass
// before, which also gives the mask's row sums where the plan needs them.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
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

// verl's ending of a loss that aggregates (the oracle's Aggregate): loss = agg_loss(L),
// grad = W * dL/dlog_prob, and the metrics' masked means, in one row pass over the tokens
// given the plan. No temporary of the token matrix's size. `tok_reads` is what the token
// functor reads (PolicyLossArgs::TokenReads, and any token input of its own).
template <class Policy, class Token>
PolicyLossScalars AggregatedLossWith(Policy&& policy, const AggPlan& plan, const PolicyLossArgs& in, const Token& tok,
                                     AggMode mode, float* grad, const Footprint& tok_reads, bool metrics = true) {
  const FusedAggScalars f = FusedAggPass(policy, plan, in.mask, grad, in.rows, in.cols, mode, tok, tok_reads);
  PolicyLossScalars s;
  s.loss = f.loss;
  if (metrics) {
    s.pg_clipfrac = MaskedMeanOf(f.metric_sum[0], f.mask_sum);
    s.ppo_kl = MaskedMeanOf(f.metric_sum[1], f.mask_sum);
    s.pg_clipfrac_lower = MaskedMeanOf(f.metric_sum[2], f.mask_sum);
  }
  return s;
}

// The same after the plan's own pass over the mask (MakeAggPlan).
template <class Policy, class Token>
PolicyLossScalars AggregatedLoss(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                 const Token& tok, AggMode mode, const AggGlobal& info, float* grad,
                                 const Footprint& tok_reads, bool metrics = true) {
  const AggPlan plan = MakeAggPlan(policy, in.mask, in.rows, in.cols, mode, info);
  return AggregatedLossWith(policy, plan, in, tok, mode, grad, tok_reads, metrics);
}
template <class Policy, class Token>
PolicyLossScalars AggregatedLoss(Policy&& policy, System system, const PolicyLossArgs& in, const Token& tok,
                                 AggMode mode, const AggGlobal& info, float* grad, bool metrics = true) {
  return AggregatedLoss(policy, system, in, tok, mode, info, grad, in.TokenReads(), metrics);
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

struct StoreGspoRow {
  float* row_log_ratio;
  float* row_mask;
  __host__ __device__ void operator()(int64_t i, const thrust::tuple<float, float>& s) const {
    row_log_ratio[i] = thrust::get<0>(s);
    row_mask[i] = thrust::get<1>(s);
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
// Two row passes: each row's log-ratio and mask sums (the plan's row sums too), then the
// fused pass.
template <class Policy>
PolicyLossScalars policy_loss_gspo(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                   float clip_low, float clip_high, AggMode mode, const AggGlobal& info, float* grad) {
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch row_lr(policy, in.rows), row_mask(policy, in.rows);
  RowReduce(policy, in.rows, in.cols, thrust::make_tuple(0.0f, 0.0f), TuplePlus(), AtToken<GspoRowTerms>{{in}, in.cols},
            StoreGspoRow{row_lr.get(), row_mask.get()},
            Footprint().Reads<float>(in.size(), 3).Writes<float>(in.rows, 2));
  std::vector<float> host_row_mask;
  if (AggReadsRowMasks(mode, info))
    host_row_mask = ToHostVector(policy, static_cast<const float*>(row_mask.get()), in.rows);
  const AggPlan plan = AggPlanFromRowMasks(policy, host_row_mask, row_mask.get(), in.cols, mode, info);
  const GspoToken tok{in, row_lr.get(), row_mask.get(), 1.0f - clip_low, 1.0f + clip_high};
  PolicyLossScalars s = AggregatedLossWith(policy, plan, in, tok, mode, grad, in.TokenReads().Reads<float>(in.rows, 2));
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
  const float* row_factor;
  __host__ __device__ TokenValues operator()(int64_t k) const {
    const float A = in.advantages[k];
    const float nak = in.log_prob[k] - in.old_log_prob[k];  // no +-20 clamp here
    float clr, dm;
    bool clipped;
    clip(nak, A, clr, dm, clipped);
    const float g = row_factor[k / in.cols] * in.mask[k] * dm;
    return {0.0f, g, {clipped && A > 0.0f ? 1.0f : 0.0f, -nak, clipped && A < 0.0f ? 1.0f : 0.0f}};
  }
};

// Writes a row's loss term and gradient factor (GeoMeanRow of its sums).
struct StoreGeoMeanRow {
  GeoMeanRow row;
  float* term;
  float* factor;
  __host__ __device__ void operator()(int64_t i, const thrust::tuple<float, float, float, float>& sums) const {
    const thrust::tuple<float, float> r = row(sums);
    term[i] = thrust::get<0>(r);
    factor[i] = thrust::get<1>(r);
  }
};

// The token's gradient written, its mask and metric terms returned.
struct GeoMeanGradMetrics {
  GeoMeanToken tok;
  float* grad;
  __host__ __device__ MetricSums operator()(int64_t i, int64_t t) const {
    const int64_t k = i * tok.in.cols + t;
    const TokenValues v = tok(k);
    grad[k] = v.dloss;
    const float m = tok.in.mask[k];
    if (m == 0.0f) return thrust::make_tuple(m, 0.0f, 0.0f, 0.0f);
    return thrust::make_tuple(m, v.metric[0] * m, v.metric[1] * m, v.metric[2] * m);
  }
};

// verl: compute_policy_loss_geo_mean (GMPO): the plain mean over all rows of the
// per-row terms; agg_loss plays no part. Two row passes: each row's sums, turned into its
// loss term and gradient factor as the row ends; then the gradient written and the
// metrics' sums.
template <class Policy>
PolicyLossScalars policy_loss_geo_mean(Policy&& policy, [[maybe_unused]] System system, const PolicyLossArgs& in,
                                       float clip_low, float clip_high, float* grad) {
  const GeoMeanClip clip{-clip_low, clip_high};
  using Scratch = PolicyScratch<float, std::remove_reference_t<Policy>>;
  Scratch row_factor(policy, in.rows), row_term(policy, in.rows);
  const int64_t n = in.size();
  const float inv_rows = 1.0f / static_cast<float>(in.rows);
  RowReduce(policy, in.rows, in.cols, thrust::make_tuple(0.0f, 0.0f, 0.0f, 0.0f), TuplePlus(),
            AtToken<GeoMeanRowTerms>{{in, clip}, in.cols},
            StoreGeoMeanRow{{in.rollout_is_weights != nullptr, inv_rows}, row_term.get(), row_factor.get()},
            in.TokenReads().Reads<float>(n).Writes<float>(in.rows, 2));
  double total = 0.0;
  for (float t : ToHostVector(policy, static_cast<const float*>(row_term.get()), in.rows)) total += t;
  PolicyLossScalars s;
  s.loss = static_cast<float>(total) / static_cast<float>(in.rows);
  const std::vector<MetricSums> rows =
      RowPartials(policy, in.rows, in.cols, MetricSums(0.0f, 0.0f, 0.0f, 0.0f), TuplePlus(),
                  GeoMeanGradMetrics{GeoMeanToken{in, clip, row_factor.get()}, grad},
                  Footprint().Reads<float>(n, 4).Reads<float>(in.rows).Writes<float>(n));
  double m[4] = {0.0, 0.0, 0.0, 0.0};
  for (const MetricSums& r : rows) {
    m[0] += thrust::get<0>(r);
    m[1] += thrust::get<1>(r);
    m[2] += thrust::get<2>(r);
    m[3] += thrust::get<3>(r);
  }
  const float mask_sum = static_cast<float>(m[0]);
  s.pg_clipfrac = MaskedMeanOf(static_cast<float>(m[1]), mask_sum);
  s.ppo_kl = MaskedMeanOf(static_cast<float>(m[2]), mask_sum);
  s.pg_clipfrac_lower = MaskedMeanOf(static_cast<float>(m[3]), mask_sum);
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
