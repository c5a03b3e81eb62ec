// The off-policy diagnostics (verl: compute_offpolicy_metrics), the pipeline that runs IS,
// RS and the diagnostics on one batch (compute_rollout_correction_and_rejection_mask), on
// CCCL in float32 as oracle/rollout_correction/pipeline.cc states them. The pipeline never
// stores the log-ratio: IS and RS read old - rollout through a transform iterator.
#pragma once

#include <thrust/copy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/rollout_correction/is_weights.cuh"
#include "cuda_impl/rollout_correction/reductions.cuh"
#include "cuda_impl/rollout_correction/rejection.cuh"

namespace verlconf::cuda {

// ---- compute_offpolicy_metrics

// Per row: masked sums of the training log-prob, the rollout log-prob and the
// log-ratio old - rollout, and the mask.
struct OffpolicyRowTerms {
  const float* old_lp;
  const float* rollout_lp;  // null: only the training log-prob
  const float* mask;
  __host__ __device__ thrust::tuple<float, float, float, float> operator()(int64_t k) const {
    const float m = mask[k], o = old_lp[k];
    if (!rollout_lp) return thrust::make_tuple(MaskedTerm(o, m), 0.0f, 0.0f, m);
    const float r = rollout_lp[k];
    return thrust::make_tuple(MaskedTerm(o, m), MaskedTerm(r, m), MaskedTerm(o - r, m), m);
  }
};

// Per token: masked (rollout - old), unclamped k3 = exp(lr) - lr - 1 (through expm1), and
// the clamped ratio's square.
struct OffpolicyTokenTerms {
  const float* old_lp;
  const float* rollout_lp;
  const float* mask;
  __host__ __device__ thrust::tuple<float, float, float> operator()(int64_t k) const {
    const float m = mask[k];
    const float lr = old_lp[k] - rollout_lp[k];
    const float rho = SafeExp(lr);
    return thrust::make_tuple(MaskedTerm(rollout_lp[k] - old_lp[k], m), MaskedTerm(expm1f(lr) - lr, m),
                              MaskedTerm(rho * rho, m));
  }
};

// Over the rows, from a row's sums: exp(-train mean), -train mean, exp(-rollout mean),
// -rollout mean, d = rollout mean - train mean, |d|, exp(d), exp(2 clamp(row lr sum)),
// and d's extrema.
struct OffpolicyRows {
  float ppl, log_ppl, r_ppl, r_log_ppl, d, abs_d, ratio, seq_rho2, d_max, d_min;
};

struct OffpolicyRowsOp {
  __host__ __device__ OffpolicyRows operator()(const OffpolicyRows& a, const OffpolicyRows& b) const {
    return {a.ppl + b.ppl,
            a.log_ppl + b.log_ppl,
            a.r_ppl + b.r_ppl,
            a.r_log_ppl + b.r_log_ppl,
            a.d + b.d,
            a.abs_d + b.abs_d,
            a.ratio + b.ratio,
            a.seq_rho2 + b.seq_rho2,
            NanMax(a.d_max, b.d_max),
            NanMin(a.d_min, b.d_min)};
  }
};

struct OffpolicyRowOf {
  __host__ __device__ OffpolicyRows operator()(const thrust::tuple<float, float, float, float>& s) const {
    const float m = thrust::get<3>(s);
    const float train = MeanOf(thrust::get<0>(s), m), rollout = MeanOf(thrust::get<1>(s), m);
    const float d = rollout - train;
    const float e = TorchClamp(thrust::get<2>(s), -kRolloutSafetyBoundF, kRolloutSafetyBoundF);
    return {expf(-train), -train, expf(-rollout), -rollout, d, fabsf(d), expf(d), expf(2.0f * e), d, d};
  }
};

// verl: compute_offpolicy_metrics (keys without prefix); rollout_lp may be null. The
// caller has checked that the mask has a valid token.
template <class Policy>
std::map<std::string, double> compute_offpolicy_metrics(Policy&& policy, const float* old_lp, const float* rollout_lp,
                                                        const float* mask, int64_t rows, int64_t cols) {
  using Row = thrust::tuple<float, float, float, float>;
  PolicyScratch<Row, std::remove_reference_t<Policy>> row_sums(policy, rows);
  RowReduce(policy, IndexIterator(OffpolicyRowTerms{old_lp, rollout_lp, mask}), rows, cols, row_sums.get(),
            TuplePlus());
  const OffpolicyRows r =
      thrust::transform_reduce(policy, row_sums.get(), row_sums.get() + rows, OffpolicyRowOf(),
                               OffpolicyRows{0, 0, 0, 0, 0, 0, 0, 0, -PosInf(), PosInf()}, OffpolicyRowsOp());
  const float b = static_cast<float>(rows);
  std::map<std::string, double> m;
  m["training_ppl"] = r.ppl / b;
  m["training_log_ppl"] = r.log_ppl / b;
  if (!rollout_lp) return m;
  const thrust::tuple<float, float, float> t =
      ChunkedSum(policy, IndexIterator(OffpolicyTokenTerms{old_lp, rollout_lp, mask}), rows * cols,
                 thrust::make_tuple(0.0f, 0.0f, 0.0f));
  const float mask_total = thrust::get<3>(
      thrust::reduce(policy, row_sums.get(), row_sums.get() + rows, Row(0.0f, 0.0f, 0.0f, 0.0f), TuplePlus()));
  m["kl"] = MeanOf(thrust::get<0>(t), mask_total);
  m["k3_kl"] = MeanOf(thrust::get<1>(t), mask_total);
  m["rollout_ppl"] = r.r_ppl / b;
  m["rollout_log_ppl"] = r.r_log_ppl / b;
  m["log_ppl_diff"] = r.d / b;
  m["log_ppl_abs_diff"] = r.abs_d / b;
  m["log_ppl_diff_max"] = r.d_max;
  m["log_ppl_diff_min"] = r.d_min;
  m["ppl_ratio"] = r.ratio / b;
  m["chi2_token"] = MeanOf(thrust::get<2>(t), mask_total) - 1.0f;
  m["chi2_seq"] = r.seq_rho2 / b - 1.0f;
  return m;
}

// ---- compute_rollout_correction_and_rejection_mask

// old - rollout, per token.
struct LogRatioOf {
  __host__ __device__ float operator()(const thrust::tuple<float, float>& or_) const {
    return thrust::get<0>(or_) - thrust::get<1>(or_);
  }
};

inline auto LogRatioIterator(const float* old_lp, const float* rollout_lp) {
  return thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(old_lp, rollout_lp)),
                                         LogRatioOf());
}

// The pipeline's stages as the host parsed them (oracle's parsers): IS when `is` is set,
// RS when `rs` is non-empty. A bad RS configuration is held in `rs_error` and raised
// where verl raises it, after the IS stage.
struct CorrectionPlan {
  std::optional<IsConfig> is;
  bool batch_normalize = false;
  std::vector<RsOption> rs;
  std::exception_ptr rs_error;
};

// verl: compute_rollout_correction_and_rejection_mask. Writes the IS weights (when IS is
// on) and the modified response mask; returns the metrics, prefixed "rollout_corr/".
template <class Policy>
std::map<std::string, double> compute_rollout_correction_and_rejection_mask(Policy&& policy, const float* old_lp,
                                                                            const float* rollout_lp, const float* mask,
                                                                            int64_t rows, int64_t cols,
                                                                            const CorrectionPlan& plan, float* weights,
                                                                            float* modified_mask) {
  const auto lr = LogRatioIterator(old_lp, rollout_lp);
  std::map<std::string, double> metrics;
  if (plan.is)
    metrics = compute_rollout_correction_weights(policy, lr, mask, rows, cols, *plan.is, plan.batch_normalize, weights);
  if (plan.rs_error) std::rethrow_exception(plan.rs_error);
  if (!plan.rs.empty()) {
    for (const auto& [k, v] : compute_rollout_rejection_mask(policy, lr, mask, rows, cols, plan.rs, modified_mask))
      metrics[k] = v;
  } else {
    thrust::copy(policy, mask, mask + rows * cols, modified_mask);
  }
  for (const auto& [k, v] : compute_offpolicy_metrics(policy, old_lp, rollout_lp, mask, rows, cols)) metrics[k] = v;
  std::map<std::string, double> out;
  for (const auto& [k, v] : metrics) out["rollout_corr/" + k] = v;
  return out;
}

}  // namespace verlconf::cuda
