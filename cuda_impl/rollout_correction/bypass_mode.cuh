// verl's compute_policy_loss_bypass_mode on CCCL in float32, as oracle/rollout_correction/
// rollout_correction.h states it: the correction pipeline (pipeline.cuh) with the current
// policy as "old" and the rollout as "rollout", then the loss it selects: "ppo_clip" is
// vanilla.cuh's PPO without IS weights on the modified mask, "reinforce" legacy.cuh's
// REINFORCE with the pipeline's IS weights on it. The pipeline's weights and mask are
// constants to the gradient (verl runs it under no_grad), which is how the losses treat
// their weight and mask arguments.
//
// Neither the weights nor the modified mask is stored: the pipeline's row pass carries a
// loss stage that derives a token's modified mask and IS weight where it reads the token
// (the stages' own Keeps / Weight), writes mask' * d L / d log_prob and sums the loss's
// row partials beside the pipeline's. Once the host knows agg_loss's divisor (from the
// rows' mask' sums) and the rows a sequence option rejects, one in-place pass scales the
// gradient by each row's W / mask': the four inputs read once, the gradient written
// twice and read once. A sequence-level IS weight is its row's, known only from the
// row's log-ratio sum: where the mask is 0 / 1 a row's valid tokens share it, so it
// scales the row after the pass like W; a fractional mask value makes the weight a
// token's: once the fused pass has seen one, a pass over the log-probs and the mask for
// the rows' sums and a loss pass follow (such a mask, unlike verl's 0 / 1 response mask,
// pays for all three).
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/policy_loss/legacy.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "cuda_impl/rollout_correction/pipeline.cuh"
#include "oracle/policy_loss/vanilla.h"
#include "oracle/rollout_correction/rollout_correction.h"

namespace verlconf::cuda {

struct BypassOutputs {
  PolicyLossScalars loss;                    // the selected loss and its metrics' fields
  std::map<std::string, double> correction;  // the pipeline's rollout_corr/... metrics
};

// Two stages in one slot of the row pass.
template <class A, class B>
struct PairTerms {
  A a;
  B b;
  __host__ __device__ static PairTerms Identity() { return {A::Identity(), B::Identity()}; }
  __host__ __device__ static PairTerms Merge(const PairTerms& x, const PairTerms& y, const MaskWeights& w) {
    return {A::Merge(x.a, y.a, w), B::Merge(x.b, y.b, w)};
  }
};
template <class SA, class SB>
struct StagePair {
  SA a;
  SB b;
  using Terms = PairTerms<typename SA::Terms, typename SB::Terms>;
  __host__ __device__ Terms operator()(int64_t i, int64_t k, const TokenIn& x, float m) const {
    return {a(i, k, x, m), b(i, k, x, m)};
  }
  void Declare(Footprint& f, int64_t rows, int64_t n) const {
    a.Declare(f, rows, n);
    b.Declare(f, rows, n);
  }
};

// The loss's row partials (agg_loss.cuh's RowPartial) as a stage's terms, and the row's
// mask values other than 0 and 1.
struct BypassLossTerms {
  RowPartial p;
  float fractional;
  __host__ __device__ static BypassLossTerms Identity() { return {RowPartial(0.0f, 0.0f, 0.0f, 0.0f, 0.0f), 0.0f}; }
  __host__ __device__ static BypassLossTerms Merge(const BypassLossTerms& a, const BypassLossTerms& b,
                                                   const MaskWeights&) {
    return {TuplePlus()(a.p, b.p), a.fractional + b.fractional};
  }
};

// A token's IS weight from the pipeline's IS stage; 1 without one.
__host__ __device__ inline float BypassWeight(const NoStage&, int64_t, const TokenIn&, float) { return 1.0f; }
template <class IsStage>
__host__ __device__ float BypassWeight(const IsStage& s, int64_t i, const TokenIn& x, float m) {
  return s.Weight(i, x, m);
}

// The loss's token (the source's old_lp is the current log-prob, rollout_lp the rollout's):
// the modified mask mask' (the token options' decision, and the row's where a sequence
// option's is known before the pass), the IS weight (read by "reinforce"), grad = W(mask')
// d L / d log_prob and the row's terms on mask'.
template <class IsStage, class Keep>
struct BypassLossStage {
  IsStage is;
  Keep keep;
  const uint8_t* rejected;  // rows a sequence option rejected, or null
  bool weighted;            // the loss reads the IS weights
  bool reinforce;
  VanillaParams p;
  const float* advantages;
  float* grad;
  AggWeight w;
  bool seq;
  using Terms = BypassLossTerms;
  __host__ __device__ BypassLossTerms operator()(int64_t i, int64_t k, const TokenIn& x, float m) const {
    const float mm = keep.Keeps(x) && !(rejected && rejected[i]) ? m : 0.0f;
    const float A = advantages[k];
    const AggTokenValues v =
        reinforce ? ReinforceTokenValues(x.rollout_lp, x.old_lp, A, weighted ? BypassWeight(is, i, x, m) : 1.0f)
                  : VanillaTokenValues(p, x.rollout_lp, x.old_lp, A, 1.0f);
    grad[k] = w.Of(mm, i) * v.dloss;
    return {AggTokenPartial(v, mm, seq), (m != 0.0f && m != 1.0f) ? 1.0f : 0.0f};
  }
  // The advantages and the gradient; the rows' values W and the IS weight may read.
  void Declare(Footprint& f, int64_t rows, int64_t n) const {
    f.Reads<float>(n).Writes<float>(n).Reads<float>(rows, 2).Reads<uint8_t>(rejected ? rows : 0);
  }
};

inline PolicyLossScalars BypassLossScalars(const FusedAggScalars& f, bool reinforce) {
  PolicyLossScalars o;
  o.loss = f.loss;
  o.ppo_kl = MaskedMeanOf(f.metric_sum[1], f.mask_sum);
  if (!reinforce) {
    o.pg_clipfrac = MaskedMeanOf(f.metric_sum[0], f.mask_sum);
    o.pg_clipfrac_lower = MaskedMeanOf(f.metric_sum[2], f.mask_sum);
  }
  return o;
}

// After a loss pass that wrote mask' * d L / d log_prob (UnitAggWeight), with the rows'
// partials `partials` (a rejected row's zeroed): agg_loss's plan from the rows' mask'
// sums, the gradient scaled by each row's W / mask' times `row_factor` (0 on a rejected
// row, the row's IS weight where the pass left it out) over `norm` (the IS weights' batch
// normalisation, 1 without), the loss's scalars. A non-finite row scale (a zero divisor)
// cannot scale a zero: `rerun(w)` writes the gradient again with W itself, or returns
// false (then nothing is finished: nullopt).
template <class Policy, class Rerun>
std::optional<FusedAggScalars> FinishBypassLoss(Policy&& policy, const std::vector<RowPartial>& partials,
                                                const std::vector<float>& row_factor, float* grad, int64_t rows,
                                                int64_t cols, const AggArgs& agg, float norm, Rerun&& rerun) {
  std::vector<float> row_mask(partials.size());
  for (size_t i = 0; i < partials.size(); ++i) row_mask[i] = thrust::get<1>(partials[i]);
  const AggPlan plan = AggPlanFromRowMasks(policy, row_mask, nullptr, cols, agg.mode, agg.global);
  std::vector<float> scale = AggRowScales(plan, row_mask, agg.mode);
  bool finite = true;
  for (size_t i = 0; i < scale.size(); ++i) {
    scale[i] = scale[i] * row_factor[i] / norm;
    finite = finite && std::isfinite(scale[i]);
  }
  if (finite) {
    ScaleRows(policy, grad, scale, rows, cols);
  } else {
    if (!rerun(AggWeightOf(plan, nullptr, cols, agg.mode))) return std::nullopt;
    if (norm != 1.0f) ScaleRows(policy, grad, std::vector<float>(row_mask.size(), 1.0f / norm), rows, cols);
  }
  return AggScalarsOf(plan, agg.mode, partials, 1.0 / static_cast<double>(norm));
}

// The loss's row partials of the pass's rows, a rejected row's zeroed.
template <class Row>
std::vector<RowPartial> LossPartialsOf(const std::vector<Row>& parts, const std::vector<uint8_t>& rejected) {
  std::vector<RowPartial> out(parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    out[i] = rejected[i] ? RowPartial(0.0f, 0.0f, 0.0f, 0.0f, 0.0f) : parts[i].off.b.p;
  return out;
}

// What the fused bypass pass works with.
struct BypassArgs {
  const float* rollout_lp;
  const float* log_prob;
  const float* advantages;
  const float* mask;
  float* grad;
  int64_t rows, cols;
  bool reinforce;
  VanillaParams p;
  AggArgs agg;
};

// The pipeline's metrics once the IS stage's are known, in verl's order (IS, RS, the
// diagnostics), from the rows of a pass with the rejection and diagnostics stages.
template <class Policy, class Row>
std::map<std::string, double> BypassCorrectionMetrics(Policy&& policy, std::map<std::string, double> metrics,
                                                      const std::vector<Row>& pipe, const CorrectionPlan& plan,
                                                      int64_t rows, int64_t cols, const uint8_t* rejected) {
  if (!plan.rs.empty())
    for (const auto& [k, v] : RejectionAfterPass(policy, pipe, plan.rs, rows, cols, rejected, nullptr)) metrics[k] = v;
  for (const auto& [k, v] : OffpolicyMetricsOf(pipe, true)) metrics[k] = v;
  std::map<std::string, double> out;
  for (const auto& [k, v] : metrics) out["rollout_corr/" + k] = v;
  return out;
}

// The sequence-level IS stage's terms of a row whose n valid tokens all have mask 1:
// n tokens of weight TruncateWeight(row weight), as IsTermsOf gives each (the sums in
// double, the n equal values' spread about their mean 0).
inline IsTerms UniformRowIsTerms(float n, float row_weight, const IsBounds& b) {
  IsTerms t = IsTerms::Identity();
  if (n == 0.0f) return t;
  const float w = TruncateWeight(b, row_weight);
  const float c = TorchClamp(w, 0.0f, b.upper);
  const double dn = n;
  t.w = static_cast<float>(dn * w);
  t.raw = static_cast<float>(dn * row_weight);
  t.high = row_weight > b.upper ? n : 0.0f;
  t.low = row_weight < b.metric_lower ? n : 0.0f;
  t.clamped = static_cast<float>(dn * c);
  t.oob = (row_weight < b.lower || row_weight > b.upper) ? n : 0.0f;
  t.max = w;
  t.min = w;
  t.spread = {c, 0.0f};
  return t;
}

template <int kTok, bool kSeq, class Policy>
BypassOutputs BypassAfterRowStats(Policy&& policy, const BypassArgs& a, const CorrectionPlan& plan,
                                  const RsChain& chain);

// One pass (the pipeline's stages and the loss's), then the gradient scaled, unless
// agg_loss's W needs nothing the pass gathers (token-sum, or a given batch_num_tokens),
// no sequence option rejects rows and nothing scales it after: then the pass writes it.
// A sequence-level IS weight is the row's: where every mask value is 0 or 1 a row's
// valid tokens share it, so the pass runs with weight 1 and the weight scales the row's
// gradient and loss after (and its metrics' terms are the row's n equal tokens'); a
// fractional mask value, or a zero divisor, takes BypassAfterRowStats instead.
template <int kTok, bool kSeq, class Policy, class IsStage>
BypassOutputs BypassOnePass(Policy&& policy, const BypassArgs& a, const CorrectionPlan& plan, const RsChain& chain,
                            const IsStage& is_stage) {
  using P = std::remove_reference_t<Policy>;
  const bool sequence_is = plan.is && plan.is->sequence;
  const bool weighted = a.reinforce && plan.is.has_value();
  const bool direct =
      !kSeq && !AggReadsRowMasks(a.agg.mode, a.agg.global) && !(weighted && (plan.batch_normalize || sequence_is));
  const AggPlan direct_plan =
      direct ? AggPlanFromRowMasks(policy, std::vector<float>(), nullptr, a.cols, a.agg.mode, a.agg.global) : AggPlan();
  PolicyScratch<uint8_t, P> rejected(policy, a.rows);
  using Loss = BypassLossStage<IsStage, RejectionStage<kTok, kSeq>>;
  const RejectionStage<kTok, kSeq> rs = MakeRejectionStage<kTok, kSeq>(chain, nullptr);
  auto pass = [&](const AggWeight& w, const uint8_t* rows_rejected, uint8_t* flags) {
    return FusedRowPass(
        policy, a.rows, a.cols, LogProbs{a.log_prob, a.rollout_lp}, a.mask, is_stage, rs,
        StagePair<OffpolicyStage, Loss>{OffpolicyStage{true},
                                        Loss{is_stage, rs, rows_rejected, weighted && !sequence_is, a.reinforce, a.p,
                                             a.advantages, a.grad, w, IsSeqMode(a.agg.mode)}},
        MakeRowFlags(chain, flags));
  };
  const auto parts = pass(direct ? AggWeightOf(direct_plan, nullptr, a.cols, a.agg.mode) : UnitAggWeight(a.cols),
                          nullptr, rejected.get());
  using Row = std::decay_t<decltype(parts[0])>;
  std::vector<FusedRow<decltype(Row::is), decltype(Row::rs), OffTerms>> pipe(parts.size());
  bool uniform = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    pipe[i] = {parts[i].m, parts[i].is, parts[i].rs, parts[i].off.a};
    uniform = uniform && parts[i].off.b.fractional == 0.0f;
  }
  if (sequence_is && !uniform) return BypassAfterRowStats<kTok, kSeq>(policy, a, plan, chain);

  BypassOutputs out;
  IsScale is_scale;
  std::vector<float> row_factor(parts.size(), 1.0f);
  if (sequence_is) {
    const IsConfig& cfg = *plan.is;
    std::vector<FusedRow<IsTerms, None, None>> is_rows(parts.size());
    std::vector<float> sums(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      sums[i] = parts[i].off.a.lr;
      const float row_weight = SafeExp(sums[i]);
      is_rows[i] = {parts[i].m, UniformRowIsTerms(parts[i].m, row_weight, cfg.bounds), {}, {}};
      if (weighted) row_factor[i] = TruncateWeight(cfg.bounds, row_weight);
    }
    IsMetricsOut is_metrics = IsMetricsOf(is_rows, cfg.bounds, true, sums, cfg.upper_py, cfg.metric_lower_py);
    is_scale = FinishIsMetrics(is_metrics, cfg, plan.batch_normalize);
    out.correction =
        BypassCorrectionMetrics(policy, std::move(is_metrics.metrics), pipe, plan, a.rows, a.cols, rejected.get());
  } else {
    out.correction = FinishCorrection(policy, pipe, a.mask, a.rows, a.cols, plan, nullptr, rejected.get(), nullptr,
                                      nullptr, &is_scale);
  }
  const std::vector<uint8_t> flags = kSeq ? ToHostVector(policy, static_cast<const uint8_t*>(rejected.get()), a.rows)
                                          : std::vector<uint8_t>(parts.size(), 0);
  std::vector<RowPartial> partials = LossPartialsOf(parts, flags);
  if (direct) {
    out.loss = BypassLossScalars(AggScalarsOf(direct_plan, a.agg.mode, partials), a.reinforce);
    return out;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (flags[i]) row_factor[i] = 0.0f;
    // The row's loss sum times its weight, as d L / d log_prob's is after the pass.
    if (row_factor[i] != 1.0f && flags[i] == 0)
      thrust::get<0>(partials[i]) =
          static_cast<float>(static_cast<double>(thrust::get<0>(partials[i])) * row_factor[i]);
  }
  const float norm = weighted && is_scale.divide ? is_scale.mean : 1.0f;
  const std::optional<FusedAggScalars> f =
      FinishBypassLoss(policy, partials, row_factor, a.grad, a.rows, a.cols, a.agg, norm, [&](const AggWeight& w) {
        if (sequence_is) return false;
        pass(w, kSeq ? rejected.get() : nullptr, nullptr);
        return true;
      });
  if (!f) return BypassAfterRowStats<kTok, kSeq>(policy, a, plan, chain);
  out.loss = BypassLossScalars(*f, a.reinforce);
  return out;
}

// Sequence-level IS where a row's valid tokens may differ in weight (a fractional mask
// value): a pass for the rows' log-ratio sums (their weights), the rejection (rows
// flagged) and the diagnostics; then the loss's pass, which also gathers the weights'
// terms, writes the gradient with W when the rows' mask' sums are known (no token
// option: the row's mask sum, 0 on a rejected row) and no normalisation follows, else
// mask' * d L / d log_prob, scaled after.
template <int kTok, bool kSeq, class Policy>
BypassOutputs BypassAfterRowStats(Policy&& policy, const BypassArgs& a, const CorrectionPlan& plan,
                                  const RsChain& chain) {
  using P = std::remove_reference_t<Policy>;
  const IsConfig& cfg = *plan.is;
  const bool weighted = a.reinforce;
  PolicyScratch<float, P> row_weight(policy, a.rows);
  PolicyScratch<uint8_t, P> rejected(policy, a.rows);
  const RejectionStage<kTok, kSeq> rs = MakeRejectionStage<kTok, kSeq>(chain, nullptr);
  const auto pre = FusedRowPass(
      policy, a.rows, a.cols, LogProbs{a.log_prob, a.rollout_lp}, a.mask, NoStage{}, rs, OffpolicyStage{true},
      BothRowOuts<StoreRowWeight, FlagRejectedRows>{{row_weight.get()}, MakeRowFlags(chain, rejected.get())});
  const std::vector<uint8_t> flags = kSeq ? ToHostVector(policy, static_cast<const uint8_t*>(rejected.get()), a.rows)
                                          : std::vector<uint8_t>(pre.size(), 0);
  const bool direct = kTok == 0 && !(weighted && plan.batch_normalize);
  AggPlan direct_plan;
  if (direct) {
    std::vector<float> row_mask(pre.size());
    for (size_t i = 0; i < pre.size(); ++i) row_mask[i] = flags[i] ? 0.0f : pre[i].m;
    direct_plan = AggPlanFromRowMasks(policy, row_mask, nullptr, a.cols, a.agg.mode, a.agg.global);
  }
  const IsSequenceStage is_stage{cfg.bounds, row_weight.get(), nullptr};
  using Loss = BypassLossStage<IsSequenceStage, RejectionStage<kTok, kSeq>>;
  const uint8_t* rows_rejected = kSeq ? rejected.get() : nullptr;
  auto pass = [&](const AggWeight& w) {
    return FusedRowPass(policy, a.rows, a.cols, LogProbs{a.log_prob, a.rollout_lp}, a.mask, is_stage, NoStage{},
                        StagePair<NoStage, Loss>{NoStage{}, Loss{is_stage, rs, rows_rejected, weighted, a.reinforce,
                                                                 a.p, a.advantages, a.grad, w, IsSeqMode(a.agg.mode)}});
  };
  const auto parts = pass(direct ? AggWeightOf(direct_plan, nullptr, a.cols, a.agg.mode) : UnitAggWeight(a.cols));

  std::vector<float> sums(pre.size());
  for (size_t i = 0; i < pre.size(); ++i) sums[i] = pre[i].off.lr;
  IsMetricsOut is_metrics = IsMetricsOf(parts, cfg.bounds, true, sums, cfg.upper_py, cfg.metric_lower_py);
  const IsScale is_scale = FinishIsMetrics(is_metrics, cfg, plan.batch_normalize);
  BypassOutputs out;
  out.correction =
      BypassCorrectionMetrics(policy, std::move(is_metrics.metrics), pre, plan, a.rows, a.cols, rejected.get());

  // The loss stage zeroed the rejected rows itself.
  const std::vector<RowPartial> partials = LossPartialsOf(parts, std::vector<uint8_t>(parts.size(), 0));
  if (direct) {
    out.loss = BypassLossScalars(AggScalarsOf(direct_plan, a.agg.mode, partials), a.reinforce);
    return out;
  }
  const float norm = weighted && is_scale.divide ? is_scale.mean : 1.0f;
  out.loss = BypassLossScalars(*FinishBypassLoss(policy, partials, std::vector<float>(partials.size(), 1.0f), a.grad,
                                                 a.rows, a.cols, a.agg, norm,
                                                 [&](const AggWeight& w) {
                                                   pass(w);
                                                   return true;
                                                 }),
                               a.reinforce);
  return out;
}

// The bypass_mode loss of `rollout_lp` (the batch's old log-probs, which bypass mode sets
// to the rollout's) and `log_prob` (current): d loss / d log_prob into grad. Raises as
// verl does, in verl's order: the pipeline's errors, then an unknown loss_type, then the
// loss's own checks (the fused pass needs the loss's arguments, so where they or the RS
// configuration are bad the pipeline runs alone first, to raise what it raises).
template <class Policy>
BypassOutputs policy_loss_bypass_mode(Policy&& policy, [[maybe_unused]] System system, const float* rollout_lp,
                                      const float* log_prob, const float* advantages, const float* mask, int64_t rows,
                                      int64_t cols, const oracle::VanillaConfig& cfg, const std::string& loss_type,
                                      const CorrectionPlan& plan, float* grad) {
  BypassArgs a{rollout_lp, log_prob, advantages, mask, grad, rows, cols, loss_type == "reinforce", {}, {}};
  std::exception_ptr loss_error;
  try {
    oracle::CheckBypassLossType(loss_type);
    if (!a.reinforce) oracle::CheckDualClip(cfg.clip_ratio_c);
    a.agg = CheckedAggArgs(cfg.loss_agg_mode, cfg.global);
    if (!a.reinforce) a.p = MakeVanillaParams(cfg.clip_ratio_low, cfg.clip_ratio_high, cfg.clip_ratio_c);
  } catch (...) {
    loss_error = std::current_exception();
  }
  if (loss_error || plan.rs_error) {
    compute_rollout_correction_and_rejection_mask(policy, log_prob, rollout_lp, mask, rows, cols, plan, nullptr,
                                                  nullptr);
    std::rethrow_exception(loss_error ? loss_error : plan.rs_error);
  }
  const RsChain chain = ChainOf(plan.rs);
  BypassOutputs out;
  WithChainShape(chain, [&](auto tok, auto seq) {
    constexpr int kTok = decltype(tok)::value;
    constexpr bool kSeq = decltype(seq)::value;
    if (plan.is && !plan.is->sequence)
      out = BypassOnePass<kTok, kSeq>(policy, a, plan, chain, IsTokenStage{plan.is->bounds, nullptr});
    else
      out = BypassOnePass<kTok, kSeq>(policy, a, plan, chain, NoStage{});
  });
  return out;
}

}  // namespace verlconf::cuda
