// agg_loss on CCCL (mirrors verl's core_algos.agg_loss, as oracle/aggregation/agg_loss.h
// states it): every mode is loss = sum_{i,t} W_{i,t} L_{i,t} with W a function of the
// mask and the global-batch arguments, and W is the gradient d loss / d L. Float32,
// templates over the Thrust execution policy (cuda_impl/core/system.cuh). Every loss
// that aggregates ends in FusedAggPass: its tokens, agg_loss and W in one row pass.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"

namespace verlconf::cuda {

// oracle::kAggModes order.
enum class AggMode : int { kTokenMean, kTokenSum, kSeqMeanTokenSum, kSeqMeanTokenMean, kSeqMeanTokenSumNorm };

// verl's global_batch_info (oracle::GlobalBatchInfo): nullopt = derive from the batch.
struct AggGlobal {
  int64_t dp_size = 1;
  std::optional<double> batch_num_tokens;
  std::optional<double> global_batch_size;
  std::optional<double> loss_scale_factor;
};

inline bool IsSeqMode(AggMode m) { return m != AggMode::kTokenMean && m != AggMode::kTokenSum; }

// A live row's contribution: its sum, or its token-mean for seq-mean-token-mean.
struct RowTerm {
  bool token_mean;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& sum_mask) const {
    const float row_mask = thrust::get<1>(sum_mask);
    if (!(row_mask > 0.0f)) return 0.0f;  // masked_sum over rows drops dead rows
    const float s = thrust::get<0>(sum_mask);
    return token_mean ? s / (row_mask + kMaskedMeanEps) : s;
  }
};

// W_{i,t}: the mask (over the row's mask sum for seq-mean-token-mean) times the mode's
// scale on live tokens of live rows, 0 elsewhere: autograd routes nothing through a
// zero mask or a dead row, so a zero divisor gives zero gradient, not 0 * inf.
struct AggWeight {
  const float* mask;
  const float* row_mask;  // null for the token modes
  int64_t cols;
  bool token_mean;
  float scale;
  __host__ __device__ float operator()(int64_t k) const { return Of(mask[k], k / cols); }
  // W of a token of row i whose mask value `m` the caller holds (a loss that derives
  // its mask on the fly).
  __host__ __device__ float Of(float m, int64_t i) const {
    if (m == 0.0f) return 0.0f;
    if (!row_mask) return m * scale;
    const float r = row_mask[i];
    if (!(r > 0.0f)) return 0.0f;
    return (token_mean ? m / (r + kMaskedMeanEps) : m) * scale;
  }
};

// W with every row factor 1: W_{i,t} = mask, for a pass that writes mask * d L / d x
// before the divisor is known (AggRowScales and ScaleRows finish it).
inline AggWeight UnitAggWeight(int64_t cols) { return AggWeight{nullptr, nullptr, cols, false, 1.0f}; }

// What one agg_loss call derives from the mask: the per-row mask sums (seq modes), the
// divisor and the scale of W. Arguments verl refuses are checked by the caller
// (oracle::CheckAggArguments) before this runs.
struct AggPlan {
  // rows floats (seq modes): from the policy's workspace, returned to it with the plan,
  // or the loss's own (AggPlanFromRowMasks).
  std::shared_ptr<float> row_mask;
  bool seq = false;
  double divisor = 1.0;
  double norm = 1.0;
  double dp = 1.0;
};

struct MaskAt {
  const float* mask;
  int64_t cols;
  __host__ __device__ float operator()(int64_t i, int64_t t) const { return mask[i * cols + t]; }
};

// The rows' mask sums (a row pass: bitwise reproducible), in `row_mask` when given, and
// on the host.
template <class Policy>
std::vector<float> RowMaskSums(Policy&& policy, const float* mask, int64_t rows, int64_t cols, float* row_mask) {
  PolicyScratch<float, std::remove_reference_t<Policy>> own(policy, row_mask ? 0 : rows);
  float* out = row_mask ? row_mask : own.get();
  RowReduce(policy, rows, cols, 0.0f, TuplePlus(), MaskAt{mask, cols}, StoreRow<float>{out},
            Footprint().Reads<float>(rows * cols).Writes<float>(rows));
  return ToHostVector(policy, static_cast<const float*>(out), rows);
}

namespace agg_detail {

// rows floats from the policy's workspace, returned to it with the last plan holding them.
template <class Policy>
std::shared_ptr<float> RowMaskBuffer(Policy& policy, int64_t rows) {
  const std::ptrdiff_t size = rows > 0 ? rows : 1;
  auto buffer = thrust::get_temporary_buffer<float>(policy, size);
  auto* held = &policy;
  return std::shared_ptr<float>(thrust::raw_pointer_cast(buffer.first), [held, buffer](float*) {
    thrust::return_temporary_buffer(*held, buffer.first, buffer.second);
  });
}

// The divisor and the norm, given the rows' mask sums where the mode reads them.
inline void SetDivisor(AggPlan& p, const std::vector<float>& row_mask, int64_t cols, AggMode mode,
                       const AggGlobal& info) {
  if (mode == AggMode::kTokenMean) {
    if (info.batch_num_tokens) {
      p.divisor = *info.batch_num_tokens;
    } else {
      double total = 0.0;  // whole counts: exact in any order
      for (float r : row_mask) total += r;
      p.divisor = static_cast<double>(static_cast<float>(total));
    }
  } else if (IsSeqMode(mode)) {
    if (info.global_batch_size) {
      p.divisor = *info.global_batch_size;
    } else {
      int64_t live = 0;
      for (float r : row_mask) live += r > 0.0f ? 1 : 0;
      p.divisor = static_cast<double>(live);
    }
    if (mode == AggMode::kSeqMeanTokenSumNorm)
      p.norm = info.loss_scale_factor ? *info.loss_scale_factor : static_cast<double>(cols);
  }
}

}  // namespace agg_detail

// Whether the plan of `mode` reads the mask's row sums.
inline bool AggReadsRowMasks(AggMode mode, const AggGlobal& info) {
  return IsSeqMode(mode) || (mode == AggMode::kTokenMean && !info.batch_num_tokens);
}

template <class Policy>
AggPlan MakeAggPlan(Policy&& policy, const float* mask, int64_t rows, int64_t cols, AggMode mode,
                    const AggGlobal& info) {
  AggPlan p;
  p.dp = static_cast<double>(info.dp_size);
  p.seq = IsSeqMode(mode);
  if (p.seq) p.row_mask = agg_detail::RowMaskBuffer(policy, rows);
  std::vector<float> row_mask;
  if (AggReadsRowMasks(mode, info))
    row_mask = RowMaskSums(policy, mask, rows, cols, p.seq ? p.row_mask.get() : nullptr);
  agg_detail::SetDivisor(p, row_mask, cols, mode, info);
  return p;
}

// The plan of a loss whose own first pass has summed the mask's rows (each row's sum of
// mask[i, t] over t, grouped as RowReduce groups it, so the same floats RowMaskSums
// gives): `row_mask` on the host and, where not null, `device_row_mask` (rows floats of
// the policy's memory that outlive the plan); the seq modes copy the host's otherwise.
template <class Policy>
AggPlan AggPlanFromRowMasks(Policy&& policy, const std::vector<float>& row_mask, const float* device_row_mask,
                            int64_t cols, AggMode mode, const AggGlobal& info) {
  AggPlan p;
  p.dp = static_cast<double>(info.dp_size);
  p.seq = IsSeqMode(mode);
  if (p.seq) {
    if (device_row_mask) {
      p.row_mask = std::shared_ptr<float>(const_cast<float*>(device_row_mask), [](float*) {});
    } else {
      p.row_mask = agg_detail::RowMaskBuffer(policy, static_cast<int64_t>(row_mask.size()));
      FromHostVector(policy, row_mask, p.row_mask.get());
    }
  }
  agg_detail::SetDivisor(p, row_mask, cols, mode, info);
  return p;
}

// The functor giving W_{i,t} at flat index k: for a loss that fuses W into its own pass
// (the policy losses scale d L / d log_prob by it in place).
inline AggWeight AggWeightOf(const AggPlan& plan, const float* mask, int64_t cols, AggMode mode) {
  const float scale = static_cast<float>(plan.dp / plan.divisor / plan.norm);
  return AggWeight{mask, plan.seq ? plan.row_mask.get() : nullptr, cols, mode == AggMode::kSeqMeanTokenMean, scale};
}

// What W_{i,t} / mask_{i,t} is on row i, given the rows' mask sums `row_mask` (host):
// the scale, over the row's mask sum for seq-mean-token-mean, 0 on a dead row of a seq
// mode. A pass that wrote mask * d L / d x (UnitAggWeight) is finished by ScaleRows
// with these; a non-finite scale (a zero divisor) is not, since 0 * inf is no zero W:
// such a caller writes its gradient again with AggWeightOf.
inline std::vector<float> AggRowScales(const AggPlan& plan, const std::vector<float>& row_mask, AggMode mode) {
  const float scale = static_cast<float>(plan.dp / plan.divisor / plan.norm);
  std::vector<float> out(row_mask.size(), scale);
  if (!plan.seq) return out;
  for (size_t i = 0; i < row_mask.size(); ++i) {
    const float r = row_mask[i];
    if (!(r > 0.0f))
      out[i] = 0.0f;
    else if (mode == AggMode::kSeqMeanTokenMean)
      out[i] = 1.0f / (r + kMaskedMeanEps) * scale;
  }
  return out;
}

struct ScaleRowAt {
  float* grad;
  const float* row_scale;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    grad[k] = row_scale[i] * grad[k];
  }
};

// grad[i, t] *= row_scale[i] in place (row_scale on the host): one read and one write
// of the gradient.
template <class Policy>
void ScaleRows(Policy&& policy, float* grad, const std::vector<float>& row_scale, int64_t rows, int64_t cols) {
  PolicyScratch<float, std::remove_reference_t<Policy>> scale(policy, rows);
  FromHostVector(policy, row_scale, scale.get());
  RowMap(policy, rows, cols, ScaleRowAt{grad, scale.get(), cols},
         Footprint().Reads<float>(rows * cols).Reads<float>(rows).Writes<float>(rows * cols));
}

// ---- the fused pass: a loss's tokens, agg_loss and its gradient in one row pass ----

// One token's loss, its derivative and up to three metric terms (0 where unused).
struct AggTokenValues {
  float loss, dloss;
  float metric[3];
};

// What a row contributes: its agg_loss term (masked_sum's for the token modes, loss *
// mask summed for the seq modes), its mask total, and three masked metric sums (a
// masked token's metric terms are dropped, NaN or not).
using RowPartial = thrust::tuple<float, float, float, float, float>;

// A token's terms of its row, `m` its mask value.
__host__ __device__ inline RowPartial AggTokenPartial(const AggTokenValues& v, float m, bool seq) {
  const float term = seq ? v.loss * m : MaskedTerm(v.loss, m);
  if (m == 0.0f) return thrust::make_tuple(term, 0.0f, 0.0f, 0.0f, 0.0f);
  return thrust::make_tuple(term, m, v.metric[0] * m, v.metric[1] * m, v.metric[2] * m);
}

// The token at (i, t): writes grad = factor W d L / d x (unless grad is null: a token
// with a gradient of its own writes it) and returns the row's terms.
template <class TokenFn>
struct FusedAggToken {
  TokenFn tok;
  const float* mask;
  float* grad;
  AggWeight w;
  float factor;
  bool seq;
  int64_t cols;
  __host__ __device__ RowPartial operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const AggTokenValues v = tok(k);
    const float m = mask[k];
    if (grad) grad[k] = factor * w(k) * v.dloss;
    return AggTokenPartial(v, m, seq);
  }
};

// agg_loss's own tokens: the loss matrix, d loss / d L = W.
struct LossMatrixToken {
  const float* loss;
  __host__ __device__ AggTokenValues operator()(int64_t k) const { return {loss[k], 1.0f, {0.0f, 0.0f, 0.0f}}; }
};

// The scalars of a fused pass: the aggregated loss and the masked means' sums.
struct FusedAggScalars {
  float loss = 0.0f;
  float mask_sum = 0.0f;
  float metric_sum[3] = {0.0f, 0.0f, 0.0f};
};

// The scalars from the rows' partials (FusedAggToken's), summed on the host in row order
// in double (the oracle's float32 tolerance for the loss is of a sum whose order it does
// not fix); `loss_factor` multiplies the loss's sum (a weight normalisation applied
// after the pass).
inline FusedAggScalars AggScalarsOf(const AggPlan& plan, AggMode mode, const std::vector<RowPartial>& host,
                                    double loss_factor = 1.0) {
  double total = 0.0, mask_sum = 0.0, metric[3] = {0.0, 0.0, 0.0};
  const RowTerm row_term{mode == AggMode::kSeqMeanTokenMean};
  for (const RowPartial& r : host) {
    const float row_loss = thrust::get<0>(r), row_mask = thrust::get<1>(r);
    total += plan.seq ? row_term(thrust::make_tuple(row_loss, row_mask)) : row_loss;
    mask_sum += row_mask;
    metric[0] += thrust::get<2>(r);
    metric[1] += thrust::get<3>(r);
    metric[2] += thrust::get<4>(r);
  }
  FusedAggScalars out;
  // verl: the sum over the divisor, times dp_size, over the norm, in float32.
  if (loss_factor != 1.0) total *= loss_factor;
  out.loss = static_cast<float>(static_cast<float>(total) / static_cast<float>(plan.divisor) *
                                static_cast<float>(plan.dp) / static_cast<float>(plan.norm));
  out.mask_sum = static_cast<float>(mask_sum);
  for (int j = 0; j < 3; ++j) out.metric_sum[j] = static_cast<float>(metric[j]);
  return out;
}

// One row pass over the tokens of `tok` (a functor of the flat index giving
// AggTokenValues): grad = factor W d L / d x everywhere (grad null: none written, for a
// token that writes a gradient of its own), each row's partials to a rows-long buffer,
// then AggScalarsOf. Reads the token
// inputs once and writes grad once; `plan` has read the mask before. `tok_reads` is what
// `tok` reads and writes (its token inputs); the pass adds the mask, the row mask sums,
// grad and the partials.
template <class Policy, class TokenFn>
FusedAggScalars FusedAggPass(Policy&& policy, const AggPlan& plan, const float* mask, float* grad, int64_t rows,
                             int64_t cols, AggMode mode, const TokenFn& tok, const Footprint& tok_reads,
                             float factor = 1.0f) {
  PolicyScratch<RowPartial, std::remove_reference_t<Policy>> partials(policy, rows);
  Footprint footprint = tok_reads;
  footprint.Reads<float>(rows * cols).Reads<float>(plan.seq ? rows : 0);
  footprint.Writes<float>(grad ? rows * cols : 0).Writes<RowPartial>(rows);
  RowReduce(policy, rows, cols, RowPartial(0.0f, 0.0f, 0.0f, 0.0f, 0.0f), TuplePlus(),
            FusedAggToken<TokenFn>{tok, mask, grad, AggWeightOf(plan, mask, cols, mode), factor, plan.seq, cols},
            StoreRow<RowPartial>{partials.get()}, footprint);
  return AggScalarsOf(plan, mode, ToHostVector(policy, static_cast<const RowPartial*>(partials.get()), rows));
}

}  // namespace verlconf::cuda