// The off-policy diagnostics (verl: compute_offpolicy_metrics), the pipeline that runs IS,
// RS and the diagnostics on one batch (compute_rollout_correction_and_rejection_mask), on
// CCCL in float32 as oracle/rollout_correction/pipeline.cc states them. The pipeline is
// one row pass (reductions.cuh) that reads the two log-probs and the mask once: the
// log-ratio old - rollout is formed per token and never stored, the IS stage writes the
// token-level weights, the rejection stage the modified mask, and every stage's metrics
// come from the same rows' partials. What needs a row total or a batch statistic first
// (sequence-level weights, batch normalisation, rows a sequence option rejects) follows in
// a lighter pass.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/rollout_correction/is_weights.cuh"
#include "cuda_impl/rollout_correction/reductions.cuh"
#include "cuda_impl/rollout_correction/rejection.cuh"

namespace verlconf::cuda {

// ---- compute_offpolicy_metrics

// A token's masked sums: the training log-prob, the rollout log-prob, the log-ratio
// old - rollout (its row sum is chi2_seq's; negated, exactly, kl's rollout - old),
// unclamped k3 = exp(lr) - lr - 1 (through expm1) and the clamped ratio's square.
struct OffTerms {
  float old_lp, rollout_lp, lr, k3, rho2;

  __host__ __device__ static OffTerms Identity() { return {0, 0, 0, 0, 0}; }
  __host__ __device__ static OffTerms Merge(const OffTerms& a, const OffTerms& b, const MaskWeights&) {
    return {a.old_lp + b.old_lp, a.rollout_lp + b.rollout_lp, a.lr + b.lr, a.k3 + b.k3, a.rho2 + b.rho2};
  }
};

// Reads nothing of its own: the source (LogProbs) brings both log-probs.
struct OffpolicyStage {
  bool rollout;  // rollout log-probs given
  using Terms = OffTerms;
  __host__ __device__ OffTerms operator()(int64_t, int64_t, const TokenIn& x, float m) const {
    if (!rollout) return {MaskedTerm(x.old_lp, m), 0.0f, 0.0f, 0.0f, 0.0f};
    const float rho = SafeExp(x.lr);
    return {MaskedTerm(x.old_lp, m), MaskedTerm(x.rollout_lp, m), MaskedTerm(x.lr, m),
            MaskedTerm(expm1f(x.lr) - x.lr, m), MaskedTerm(rho * rho, m)};
  }
  void Declare(Footprint&, int64_t, int64_t) const {}
};

// compute_offpolicy_metrics from the rows' partials (parts[i].m, parts[i].off): a row's
// figures in float32 (exp(-train mean), -train mean, the same of the rollout, d =
// rollout mean - train mean, |d|, exp(d), exp(2 clamp(row lr sum))) averaged over every
// row in double, d's extrema, and the token means.
template <class Row>
std::map<std::string, double> OffpolicyMetricsOf(const std::vector<Row>& parts, bool rollout) {
  double ppl = 0, log_ppl = 0, r_ppl = 0, r_log_ppl = 0, d_sum = 0, abs_d = 0, ratio = 0, seq_rho2 = 0;
  double mask = 0, lr = 0, k3 = 0, rho2 = 0;
  float d_max = -PosInf(), d_min = PosInf();
  for (const Row& r : parts) {
    const OffTerms& s = r.off;
    const float train = MeanOf(s.old_lp, r.m), roll = MeanOf(s.rollout_lp, r.m);
    const float d = roll - train;
    const float e = TorchClamp(s.lr, -kRolloutSafetyBoundF, kRolloutSafetyBoundF);
    ppl += expf(-train);
    log_ppl += -train;
    r_ppl += expf(-roll);
    r_log_ppl += -roll;
    d_sum += d;
    abs_d += fabsf(d);
    ratio += expf(d);
    seq_rho2 += expf(2.0f * e);
    d_max = NanMax(d_max, d);
    d_min = NanMin(d_min, d);
    mask += r.m;
    lr += s.lr;
    k3 += s.k3;
    rho2 += s.rho2;
  }
  const double b = static_cast<double>(parts.size());
  std::map<std::string, double> m;
  m["training_ppl"] = ppl / b;
  m["training_log_ppl"] = log_ppl / b;
  if (!rollout) return m;
  m["kl"] = MeanOfSums(-lr, mask);
  m["k3_kl"] = MeanOfSums(k3, mask);
  m["rollout_ppl"] = r_ppl / b;
  m["rollout_log_ppl"] = r_log_ppl / b;
  m["log_ppl_diff"] = d_sum / b;
  m["log_ppl_abs_diff"] = abs_d / b;
  m["log_ppl_diff_max"] = d_max;
  m["log_ppl_diff_min"] = d_min;
  m["ppl_ratio"] = ratio / b;
  m["chi2_token"] = MeanOfSums(rho2, mask) - 1.0f;
  m["chi2_seq"] = seq_rho2 / b - 1.0;
  return m;
}

// verl: compute_offpolicy_metrics (keys without prefix); rollout_lp may be null. The
// caller has checked that the mask has a valid token.
template <class Policy>
std::map<std::string, double> compute_offpolicy_metrics(Policy&& policy, const float* old_lp, const float* rollout_lp,
                                                        const float* mask, int64_t rows, int64_t cols) {
  const auto parts = FusedRowPass(policy, rows, cols, LogProbs{old_lp, rollout_lp}, mask, NoStage{}, NoStage{},
                                  OffpolicyStage{rollout_lp != nullptr});
  return OffpolicyMetricsOf(parts, rollout_lp != nullptr);
}

// ---- compute_rollout_correction_and_rejection_mask

// The pipeline's stages as the host parsed them (oracle's parsers): IS when `is` is set,
// RS when `rs` is non-empty. A bad RS configuration is held in `rs_error` and raised
// where verl raises it, after the IS stage.
struct CorrectionPlan {
  std::optional<IsConfig> is;
  bool batch_normalize = false;
  std::vector<RsOption> rs;
  std::exception_ptr rs_error;
};

// As the pass finishes a row: its sequence-level IS weight exp(clamp(row lr sum, +-20)).
struct StoreRowWeight {
  float* row_weight;  // null: token-level or no IS
  template <class Row>
  __host__ __device__ void operator()(int64_t i, const Row& r) const {
    if (row_weight) row_weight[i] = SafeExp(r.off.lr);
  }
  void Declare(Footprint& f, int64_t rows) const {
    if (row_weight) f.Writes<float>(rows);
  }
};

// The stages' results from the pipeline's row pass, in verl's order: IS (its errors
// first), the held RS error, RS, the diagnostics.
template <class Policy, class Row>
std::map<std::string, double> FinishCorrection(Policy&& policy, const std::vector<Row>& parts, const float* mask,
                                               int64_t rows, int64_t cols, const CorrectionPlan& plan,
                                               const float* row_weight, const uint8_t* rejected, float* weights,
                                               float* modified_mask, IsScale* is_scale = nullptr) {
  std::map<std::string, double> metrics;
  if (plan.is) {
    // The pass has a token-level IS stage exactly when IS is on at token level.
    if constexpr (std::is_same_v<decltype(Row::is), IsTerms>) {
      metrics = TokenIsWeightsAfterPass(policy, parts, rows, cols, *plan.is, plan.batch_normalize, weights, is_scale);
    } else {
      std::vector<float> sums(parts.size());
      for (size_t i = 0; i < parts.size(); ++i) sums[i] = parts[i].off.lr;
      metrics = SequenceIsWeights(policy, sums, row_weight, mask, rows, cols, *plan.is, plan.batch_normalize, weights);
    }
  }
  if (plan.rs_error) std::rethrow_exception(plan.rs_error);
  if (!plan.rs.empty())
    for (const auto& [k, v] : RejectionAfterPass(policy, parts, plan.rs, rows, cols, rejected, modified_mask))
      metrics[k] = v;
  for (const auto& [k, v] : OffpolicyMetricsOf(parts, true)) metrics[k] = v;
  std::map<std::string, double> out;
  for (const auto& [k, v] : metrics) out["rollout_corr/" + k] = v;
  return out;
}

// verl: compute_rollout_correction_and_rejection_mask. Writes the IS weights (when IS is
// on and `weights` is set) and the modified response mask (the mask itself without RS;
// when `modified_mask` is set); returns the metrics, prefixed "rollout_corr/".
template <class Policy>
std::map<std::string, double> compute_rollout_correction_and_rejection_mask(Policy&& policy, const float* old_lp,
                                                                            const float* rollout_lp, const float* mask,
                                                                            int64_t rows, int64_t cols,
                                                                            const CorrectionPlan& plan, float* weights,
                                                                            float* modified_mask) {
  using P = std::remove_reference_t<Policy>;
  const bool token_is = plan.is && !plan.is->sequence, sequence_is = plan.is && plan.is->sequence;
  const RsChain chain = ChainOf(plan.rs);
  PolicyScratch<float, P> row_weight(policy, sequence_is ? rows : 0);
  PolicyScratch<uint8_t, P> rejected(policy, rows);
  std::map<std::string, double> metrics;
  WithChainShape(chain, [&](auto tok, auto seq) {
    constexpr int kTok = decltype(tok)::value;
    constexpr bool kSeq = decltype(seq)::value;
    auto run = [&](const auto& is_stage) {
      const auto parts =
          FusedRowPass(policy, rows, cols, LogProbs{old_lp, rollout_lp}, mask, is_stage,
                       MakeRejectionStage<kTok, kSeq>(chain, modified_mask), OffpolicyStage{true},
                       BothRowOuts<StoreRowWeight, FlagRejectedRows>{{sequence_is ? row_weight.get() : nullptr},
                                                                     MakeRowFlags(chain, rejected.get())});
      metrics = FinishCorrection(policy, parts, mask, rows, cols, plan, row_weight.get(), rejected.get(), weights,
                                 modified_mask);
    };
    if (token_is)
      run(IsTokenStage{plan.is->bounds, weights});
    else
      run(NoStage{});
  });
  return metrics;
}

}  // namespace verlconf::cuda
