// agg_loss on CCCL (mirrors verl's core_algos.agg_loss, as oracle/aggregation/agg_loss.h
// states it): every mode is loss = sum_{i,t} W_{i,t} L_{i,t} with W a function of the
// mask and the global-batch arguments, and W is the gradient d loss / d L. Float32,
// templates over the Thrust execution policy (cuda_impl/core/system.cuh). The policy
// losses end in these two calls.
#pragma once

#include <thrust/count.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/transform_reduce.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

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

struct RowOf {
  int64_t cols;
  __host__ __device__ int64_t operator()(int64_t k) const { return k / cols; }
};

// masked_sum's term: an entry under a zero mask is dropped, NaN or not.
struct MaskedProduct {
  __host__ __device__ float operator()(const thrust::tuple<float, float>& lm) const {
    return MaskedTerm(thrust::get<0>(lm), thrust::get<1>(lm));
  }
};

// The seq modes' row term: loss * mask summed directly (a NaN under a zero mask stays).
struct Product {
  __host__ __device__ float operator()(const thrust::tuple<float, float>& lm) const {
    return thrust::get<0>(lm) * thrust::get<1>(lm);
  }
};

struct Positive {
  __host__ __device__ bool operator()(float x) const { return x > 0.0f; }
};

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
  __host__ __device__ float operator()(int64_t k) const {
    const float m = mask[k];
    if (m == 0.0f) return 0.0f;
    if (!row_mask) return m * scale;
    const float r = row_mask[k / cols];
    if (!(r > 0.0f)) return 0.0f;
    return (token_mean ? m / (r + kMaskedMeanEps) : m) * scale;
  }
};

// What one agg_loss call derives from the mask: the per-row mask sums (seq modes), the
// divisor and the scale of W. Arguments verl refuses are checked by the caller
// (oracle::CheckAggArguments) before this runs.
struct AggPlan {
  // rows floats from the policy's workspace (seq modes), returned to it with the plan.
  std::shared_ptr<float> row_mask;
  bool seq = false;
  double divisor = 1.0;
  double norm = 1.0;
  double dp = 1.0;
};

template <class Policy>
AggPlan MakeAggPlan(Policy&& policy, const float* mask, int64_t rows, int64_t cols, AggMode mode,
                    const AggGlobal& info) {
  AggPlan p;
  p.dp = static_cast<double>(info.dp_size);
  const int64_t n = rows * cols;
  if (mode == AggMode::kTokenMean) {
    p.divisor = info.batch_num_tokens ? *info.batch_num_tokens : static_cast<double>(ChunkedSum(policy, mask, n, 0.0f));
  } else if (IsSeqMode(mode)) {
    const std::ptrdiff_t size = rows > 0 ? rows : 1;
    auto buffer = thrust::get_temporary_buffer<float>(policy, size);
    auto* held = &policy;
    p.row_mask = std::shared_ptr<float>(thrust::raw_pointer_cast(buffer.first), [held, buffer](float*) {
      thrust::return_temporary_buffer(*held, buffer.first, buffer.second);
    });
    p.seq = true;
    auto rows_of = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowOf{cols});
    thrust::reduce_by_key(policy, rows_of, rows_of + n, mask, thrust::make_discard_iterator(), p.row_mask.get());
    p.divisor =
        info.global_batch_size
            ? *info.global_batch_size
            : static_cast<double>(thrust::count_if(policy, p.row_mask.get(), p.row_mask.get() + rows, Positive{}));
    if (mode == AggMode::kSeqMeanTokenSumNorm)
      p.norm = info.loss_scale_factor ? *info.loss_scale_factor : static_cast<double>(cols);
  }
  return p;
}

// The aggregated loss of a rows x cols loss matrix. `row_sums` is scratch of `rows`
// floats in the policy's system (seq modes only).
template <class Policy>
float agg_loss(Policy&& policy, const AggPlan& plan, const float* loss, const float* mask, float* row_sums,
               int64_t rows, int64_t cols, AggMode mode) {
  const int64_t n = rows * cols;
  auto lm = thrust::make_zip_iterator(thrust::make_tuple(loss, mask));
  float total;
  if (!plan.seq) {
    total = ChunkedTransformSum(policy, lm, n, MaskedProduct{}, 0.0f);
  } else {
    auto rows_of = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowOf{cols});
    auto products = thrust::make_transform_iterator(lm, Product{});
    thrust::reduce_by_key(policy, rows_of, rows_of + n, products, thrust::make_discard_iterator(), row_sums);
    auto sm = thrust::make_zip_iterator(thrust::make_tuple(static_cast<const float*>(row_sums), plan.row_mask.get()));
    total = ChunkedTransformSum(policy, sm, rows, RowTerm{mode == AggMode::kSeqMeanTokenMean}, 0.0f);
  }
  // verl: the sum over the divisor, times dp_size, over the norm, in float32.
  return static_cast<float>(total / static_cast<float>(plan.divisor) * static_cast<float>(plan.dp) /
                            static_cast<float>(plan.norm));
}

// The functor giving W_{i,t} at flat index k: for a loss that fuses W into its own pass
// (the policy losses scale d L / d log_prob by it in place).
inline AggWeight AggWeightOf(const AggPlan& plan, const float* mask, int64_t cols, AggMode mode) {
  const float scale = static_cast<float>(plan.dp / plan.divisor / plan.norm);
  return AggWeight{mask, plan.seq ? plan.row_mask.get() : nullptr, cols, mode == AggMode::kSeqMeanTokenMean, scale};
}

// W = d agg_loss / d loss, every token.
template <class Policy>
void agg_loss_weights(Policy&& policy, const AggPlan& plan, const float* mask, float* weights, int64_t rows,
                      int64_t cols, AggMode mode) {
  thrust::transform(policy, thrust::counting_iterator<int64_t>(0), thrust::counting_iterator<int64_t>(rows * cols),
                    weights, AggWeightOf(plan, mask, cols, mode));
}

}  // namespace verlconf::cuda
