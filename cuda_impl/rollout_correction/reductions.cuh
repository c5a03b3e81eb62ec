// The reductions rollout correction's statistics are made of, on CCCL in float32
// (oracle/rollout_correction/reductions.cc states them in float64): torch's NaN rules for
// max / min / clamp, per-row reductions of a B x T array with any associative operator
// (reduce_by_key over a row-index key), and verl's sqrt(E[x^2] - E[x]^2) evaluated
// without float32's cancellation.
#pragma once

#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// rollout_corr_helper.SAFETY_BOUND: log-ratios and their row sums are clamped to it
// before exp.
constexpr float kRolloutSafetyBoundF = 20.0f;

__host__ __device__ inline float PosInf() { return std::numeric_limits<float>::infinity(); }

// torch.max / torch.min of a tensor: a NaN anywhere wins.
__host__ __device__ inline float NanMax(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}
__host__ __device__ inline float NanMin(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return b < a ? b : a;
}

// torch.clamp(x, lo, hi) / torch.clamp(x, max=hi) with scalar bounds: NaN stays NaN, and
// lo > hi gives hi.
__host__ __device__ inline float TorchClamp(float x, float lo, float hi) {
  if (x != x) return x;
  const float y = x < lo ? lo : x;
  return hi < y ? hi : y;
}
__host__ __device__ inline float TorchClampMax(float x, float hi) {
  if (x != x) return x;
  return hi < x ? hi : x;
}

// exp(clamp(x, +-20)): the ratio of a log-ratio (or of a row's log-ratio sum).
__host__ __device__ inline float SafeExp(float x) {
  return expf(TorchClamp(x, -kRolloutSafetyBoundF, kRolloutSafetyBoundF));
}

// masked_mean from its two sums, in float32 (the 1e-8 vanishes once the mask sum is >= 1).
__host__ __device__ inline float MeanOf(float masked_sum, float mask_sum) {
  return masked_sum / (mask_sum + kMaskedMeanEps);
}

// verl's sqrt(clamp(E[x^2] - E[x]^2, min=0)) with both means masked_mean's (denominator
// M + 1e-8), from the sum of squares about mu = E[x]: the two forms are equal,
// E[x^2] - mu^2 = sum m (x - mu)^2 / (M + e) + mu^2 e / (M + e), but the first cancels in
// float32 when the values hardly spread and the second does not.
inline float MaskedStdOf(float centered_sq_sum, float mean, float mask_sum) {
  const float denom = mask_sum + kMaskedMeanEps;
  const float var = centered_sq_sum / denom + mean * mean * (kMaskedMeanEps / denom);
  if (var != var) return var;
  return std::sqrt(var < 0.0f ? 0.0f : var);
}

// `bool_tensor.float().mean()`: a count over n, rounded to float32 as torch reduces it.
inline double Float32Fraction(double count, double n) { return static_cast<double>(static_cast<float>(count / n)); }

// Tokens per first-level segment of a row reduction.
constexpr int64_t kRowChunk = 64;

// The segment of token k: its row's chunk of kRowChunk consecutive tokens.
struct RowChunkOf {
  int64_t cols, chunks_per_row;
  __host__ __device__ int64_t operator()(int64_t k) const {
    return (k / cols) * chunks_per_row + (k % cols) / kRowChunk;
  }
};

// out[i] = op-reduction of terms[k] over row i (k in [i * cols, (i + 1) * cols)), for each
// of `rows` rows: the first level of every token-sized reduction here (the rows'
// partials are then reduced over the batch). Two-level within the row as well (chunks
// of kRowChunk, then the chunks): the host system reduces a segment sequentially, and
// a float32 row of 4096 terms of one sign (a sequence statistic broadcast along its row)
// drifts past the float32 tolerance that way.
template <class Policy, class TermIt, class T, class Op>
void RowReduce(Policy&& policy, TermIt terms, int64_t rows, int64_t cols, T* out, Op op) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t chunks_per_row = (cols + kRowChunk - 1) / kRowChunk;
  auto chunk_keys =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowChunkOf{cols, chunks_per_row});
  if (chunks_per_row == 1) {
    thrust::reduce_by_key(policy, chunk_keys, chunk_keys + rows * cols, terms, thrust::make_discard_iterator(), out,
                          thrust::equal_to<int64_t>(), op);
    return;
  }
  PolicyScratch<T, std::remove_reference_t<Policy>> partial(policy, rows * chunks_per_row);
  thrust::reduce_by_key(policy, chunk_keys, chunk_keys + rows * cols, terms, thrust::make_discard_iterator(),
                        partial.get(), thrust::equal_to<int64_t>(), op);
  auto row_keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentOf{chunks_per_row});
  thrust::reduce_by_key(policy, row_keys, row_keys + rows * chunks_per_row, partial.get(),
                        thrust::make_discard_iterator(), out, thrust::equal_to<int64_t>(), op);
}

// f(k) for k = 0, 1, ...: a token (or row) functor as an iterator.
template <class F>
auto IndexIterator(F f) {
  return thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), f);
}

// The row of a flat token index yields a per-row value: a row's statistic on each of its
// tokens.
struct RowBroadcast {
  const float* value;
  int64_t cols;
  __host__ __device__ float operator()(int64_t k) const { return value[k / cols]; }
};

// The mask's row sums: rows with a valid token are those with a positive total.
template <class Policy>
void RowMaskTotals(Policy&& policy, const float* mask, int64_t rows, int64_t cols, float* totals) {
  RowReduce(policy, mask, rows, cols, totals, thrust::plus<float>());
}

}  // namespace verlconf::cuda
