// verl's masked_whiten(values, mask) of a whole batch, optionally times the mask (as
// most estimators apply it).
//
// The estimators whiten values that are often constant over long stretches (a
// singleton's score on every token of its row, a discounted return with gamma = 1),
// where masked_whiten is ill-conditioned: the centred values are of the order of the
// masked mean's 1e-8 offset, mean * 1e-8 / sum(mask), and rsqrt(var + 1e-8) multiplies
// them by 1e4. A plain float32 mean is off by an ulp of the values there, a thousand
// times more than the offset, and float32 cannot add 1e-8 to sum(mask) at all. So the
// mean is kept as a float32 mean_1 plus a small shift, with the offset kept apart:
//   mean = S / (M + 1e-8) = mean_plain - e,  e = mean_plain 1e-8 / (M + 1e-8)
//   v - mean = ((v - mean_1) - (mean_plain - mean_1 - e))
// and the write pass forms ((v - mean_1) - shift) r, whose first difference is exact
// where v is close to the mean. The statistics come from row partials combined on the
// host in double (RowPartials: no float atomics, a fixed order):
//  - token values (GAE's advantages, REINFORCE++'s returns): a corrected two-pass, a
//    sum pass for mean_1, then a pass for the residuals c = v - mean_1:
//      mean_plain = mean_1 + (sum m c) / M
//      sum m (v - mean)^2 = sum m c^2 - (sum m c)^2 / M + e^2 M
//  - values a_i m (an outcome estimator's row value times the mask) under a 0/1 mask:
//    no token pass at all, the sums are the rows' a_i times their counts of ones
//    (RowWhitenParams); any other mask value takes the two token passes.
// masked_var's ValueError for mask sums 0 and 1 is raised as verl raises it.
#pragma once

#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cuda_impl/advantage/groups.cuh"
#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "cuda_impl/torch_functional/masked.cuh"
#include "oracle/torch_functional/masked.h"

namespace verlconf::cuda {

// (masked c, masked c^2) with c = v - mean_1.
struct ResidualTerms {
  float mean1;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& vm) const {
    const float m = thrust::get<1>(vm);
    const float c = thrust::get<0>(vm) - mean1;
    return thrust::make_tuple(MaskedTerm(c, m), MaskedTerm(c * c, m));
  }
};

// ((v - mean_1) - shift) * r, times the mask when asked (a plain product);
// shift = mean_plain - mean_1 - e.
struct WhitenTimesMask {
  float mean1, shift, r;
  bool times_mask;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& vm) const {
    const float w = ((thrust::get<0>(vm) - mean1) - shift) * r;
    return times_mask ? w * thrust::get<1>(vm) : w;
  }
};

// What the write pass needs: WhitenTimesMask without its times_mask.
struct WhitenParams {
  float mean1 = 0.0f, shift = 0.0f, r = 1.0f;
  WhitenTimesMask Times(bool times_mask) const { return WhitenTimesMask{mean1, shift, r, times_mask}; }
};

// The write pass's numbers from the plain mean, the weighted sum of squared deviations
// about the offset mean, and the mask total (float32 steps as verl's rsqrt takes them).
inline WhitenParams WhitenFrom(double mean_plain, double e, double squares, double total) {
  WhitenParams p;
  p.mean1 = static_cast<float>(mean_plain);
  p.shift = static_cast<float>((mean_plain - static_cast<double>(p.mean1)) - e);
  const float variance = static_cast<float>(squares / total * (total / (total - 1.0)));
  p.r = 1.0f / std::sqrt(variance + kWhitenVarEpsF);
  return p;
}

// masked_mean's offset of the plain mean.
inline double MeanOffset(double mean_plain, double total) {
  return mean_plain * static_cast<double>(kMaskedMeanEps) / (total + static_cast<double>(kMaskedMeanEps));
}

// A token array's value at flat index k.
struct TokenValue {
  const float* values;
  __host__ __device__ float operator()(int64_t k) const { return values[k]; }
};

// f(v_{i,t}, m_{i,t}) of the values (a functor of the flat index) and the mask.
template <class V, class F>
struct ValueMaskAt {
  V value;
  const float* mask;
  int64_t cols;
  F f;
  __host__ __device__ auto operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return f(thrust::make_tuple(value(k), mask[k]));
  }
};

// masked_whiten's statistics of rows x cols values: two row passes over them and the
// mask (the sums, then the residuals about mean_1). `value_reads` is what `value`
// reads besides the mask.
template <class Policy, class V>
WhitenParams TokenWhitenParams(Policy& policy, V value, const float* mask, int64_t rows, int64_t cols,
                               const Footprint& value_reads) {
  using Pair = thrust::tuple<float, float>;
  Footprint reads = value_reads;
  reads.Reads<float>(rows * cols);
  double sum = 0.0, total = 0.0;
  for (const Pair& p : RowPartials(policy, rows, cols, Pair(0.0f, 0.0f), TuplePlus(),
                                   ValueMaskAt<V, MeanTerms>{value, mask, cols, MeanTerms()}, reads)) {
    sum += thrust::get<0>(p);
    total += thrust::get<1>(p);
  }
  oracle::CheckBesselMaskSum(total);
  const float mean1 = static_cast<float>(sum / total);
  double c1 = 0.0, c2 = 0.0;
  for (const Pair& p : RowPartials(policy, rows, cols, Pair(0.0f, 0.0f), TuplePlus(),
                                   ValueMaskAt<V, ResidualTerms>{value, mask, cols, ResidualTerms{mean1}}, reads)) {
    c1 += thrust::get<0>(p);
    c2 += thrust::get<1>(p);
  }
  const double residual_mean = c1 / total;
  const double mean_plain = static_cast<double>(mean1) + residual_mean;
  const double e = MeanOffset(mean_plain, total);
  const double squares = std::fmax(c2 - c1 * residual_mean, 0.0) + e * e * total;
  return WhitenFrom(mean_plain, e, squares, total);
}

// masked_whiten(v) at token k, times the mask when asked (only then is the mask read).
template <class V>
struct WhitenedToken {
  V value;
  const float* mask;
  WhitenTimesMask whiten;
  __host__ __device__ float operator()(int64_t k) const {
    return whiten(thrust::make_tuple(value(k), whiten.times_mask ? mask[k] : 1.0f));
  }
};

// out = masked_whiten(values, mask) (* mask when times_mask) of a token array: the sum
// pass, the residual pass, then one row map (out may be values).
template <class Policy>
void WhitenTokens(Policy& policy, const float* values, const float* mask, int64_t rows, int64_t cols, bool times_mask,
                  float* out) {
  const int64_t n = rows * cols;
  const WhitenParams w = TokenWhitenParams(policy, TokenValue{values}, mask, rows, cols, Footprint().Reads<float>(n));
  RowMap(policy, rows, cols,
         WriteToken<WhitenedToken<TokenValue>>{{TokenValue{values}, mask, w.Times(times_mask)}, out, cols},
         Footprint().Reads<float>(n, times_mask ? 2 : 1).Writes<float>(n));
}

// ---- values a_i m ---------------------------------------------------------------------

// A row's mask counts: (sum m over every token, the mean's denominator; the count of
// m != 0; the count of m other than 0 and 1). Where every mask value is 0 or 1, the
// whitening of v = a_i m needs no token pass: with n_i the row's count of ones and
// delta_i = a_i - mean,
//   sum m v = sum_i n_i a_i,  sum m (v - mean)^2 = sum_i n_i delta_i^2
// exactly, summed in double on the host. Any other mask value (a fractional weight)
// makes sum m (a m - mean)^2 depend on the token's m, and the whitening takes its two
// token passes.
using MaskCounts = thrust::tuple<float, float, float>;

__host__ __device__ inline MaskCounts MaskCountsOf(float m) {
  return MaskCounts(m, m != 0.0f ? 1.0f : 0.0f, m != 0.0f && m != 1.0f ? 1.0f : 0.0f);
}

// x_{i,t} (every token) and the mask counts of token (i, t).
using SumAndCounts = thrust::tuple<float, float, float, float>;

struct SumAndCountsAt {
  const float* x;
  const float* mask;
  int64_t cols;
  __host__ __device__ SumAndCounts operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const MaskCounts q = MaskCountsOf(mask[k]);
    return SumAndCounts(x[k], thrust::get<0>(q), thrust::get<1>(q), thrust::get<2>(q));
  }
};

struct MaskCountsAt {
  const float* mask;
  int64_t cols;
  __host__ __device__ MaskCounts operator()(int64_t i, int64_t t) const { return MaskCountsOf(mask[i * cols + t]); }
};

// Each row's mask counts and, when x is given, its sum of x over every token
// (oracle::RowSums): one row pass over the mask (and x), grouping `codes` into *g
// meanwhile (RowPartialsGrouping).
template <class Policy>
std::vector<MaskCounts> RowMaskCounts(Policy& policy, const float* x, const float* mask, int64_t rows, int64_t cols,
                                      std::vector<float>* x_sums, const int64_t* codes, HostGroups* g) {
  const int64_t n = rows * cols;
  if (!x)
    return RowPartialsGrouping(policy, rows, cols, MaskCounts(0.0f, 0.0f, 0.0f), TuplePlus(), MaskCountsAt{mask, cols},
                               Footprint().Reads<float>(n), codes, g);
  const std::vector<SumAndCounts> p =
      RowPartialsGrouping(policy, rows, cols, SumAndCounts(0.0f, 0.0f, 0.0f, 0.0f), TuplePlus(),
                          SumAndCountsAt{x, mask, cols}, Footprint().Reads<float>(n, 2), codes, g);
  std::vector<MaskCounts> counts(p.size());
  x_sums->resize(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    (*x_sums)[i] = thrust::get<0>(p[i]);
    counts[i] = MaskCounts(thrust::get<1>(p[i]), thrust::get<2>(p[i]), thrust::get<3>(p[i]));
  }
  return counts;
}

// masked_whiten's statistics of v_{i,t} = a_i m_{i,t} for a 0/1 mask, from the rows'
// values and counts, in double on the host. A row without a kept token adds nothing (a
// NaN a_i under a zero mask is dropped, as masked_sum drops it token by token).
inline WhitenParams RowWhitenParams(const std::vector<float>& a, const std::vector<MaskCounts>& counts) {
  double sum = 0.0, total = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    total += thrust::get<0>(counts[i]);
    const double ones = thrust::get<1>(counts[i]);
    if (ones > 0.0) sum += static_cast<double>(a[i]) * ones;
  }
  oracle::CheckBesselMaskSum(total);
  const double mean_plain = sum / total;
  const double e = MeanOffset(mean_plain, total);
  double squares = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double ones = thrust::get<1>(counts[i]);
    if (!(ones > 0.0)) continue;
    const double delta = (static_cast<double>(a[i]) - mean_plain) + e;
    squares += delta * delta * ones;
  }
  return WhitenFrom(mean_plain, e, squares, total);
}

// advantages = masked_whiten(a_i m) * m from the rows' values (host) and mask counts:
// one row map that reads the mask and writes out once, after the two statistics passes
// over the mask when it holds a value other than 0 and 1.
template <class Policy>
void WhitenRowsTimesMask(Policy& policy, const std::vector<float>& a, const std::vector<MaskCounts>& counts,
                         const float* mask, int64_t rows, int64_t cols, float* out) {
  PolicyScratch<float, std::remove_reference_t<Policy>> d_a(policy, rows);
  FromHostVector(policy, a, d_a.get());
  const RowTimesMask value{d_a.get(), mask, cols};
  bool binary = true;
  for (const MaskCounts& q : counts) binary = binary && thrust::get<2>(q) == 0.0f;
  const WhitenParams w = binary ? RowWhitenParams(a, counts)
                                : TokenWhitenParams(policy, value, mask, rows, cols, Footprint().Reads<float>(rows));
  RowMap(policy, rows, cols, WriteToken<WhitenedToken<RowTimesMask>>{{value, mask, w.Times(true)}, out, cols},
         Footprint().Reads<float>(rows * cols).Reads<float>(rows).Writes<float>(rows * cols));
}

}  // namespace verlconf::cuda
