// verl.utils.torch_functional's masked statistics (masked_mean, masked_var,
// masked_whiten) on CCCL, float32, with their gradients w.r.t. values, as templates over
// the Thrust execution policy (cuda_impl/core/system.cuh), over rows x cols arrays (the
// whole-array forms take any split of their elements into rows). The conventions are
// the oracle's (oracle/torch_functional/masked.h): a term counts only where mask != 0,
// means divide by sum(mask) + 1e-8, masked_var(unbiased) raises for mask sums 0 and 1.
//
// A statistic is one row pass whose rows' partials are combined on the host, in double
// and in row order; then one pass writes the outputs and gradients. The variance about
// the mean is not a second statistics pass: the sums of m (v - K) and m (v - K)^2 about a
// kept value K of the data, accumulated in double and moved to a common K as partials
// merge, give it as accurately as a two-pass variance while reading the values once.
#pragma once

#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuda_impl/core/rows.cuh"
#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/traffic.h"
#include "oracle/torch_functional/masked.h"

namespace verlconf::cuda {

// verl's float32 offset of masked_whiten's rsqrt (masked_mean's is kMaskedMeanEps).
constexpr float kWhitenVarEpsF = 1e-8f;

// (masked term of v, m): the two sums of every masked mean.
struct MeanTerms {
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& vm) const {
    const float v = thrust::get<0>(vm), m = thrust::get<1>(vm);
    return thrust::make_tuple(MaskedTerm(v, m), m);
  }
};

// The same at (i, t) of a rows x cols array.
struct MeanTermsAt {
  const float* values;
  const float* mask;
  int64_t cols;
  __host__ __device__ thrust::tuple<float, float> operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    return MeanTerms()(thrust::make_tuple(values[k], mask[k]));
  }
};

// d mean / d v_k = m_k / denom where the mask keeps the element.
struct MeanGrad {
  float denom;
  __host__ __device__ float operator()(float m) const { return m != 0.0f ? m / denom : 0.0f; }
};

struct MeanGradAt {
  MeanGrad g;
  const float* mask;
  float* grad;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    grad[k] = g(mask[k]);
  }
};

// The same with the denominator of the element's row.
struct RowMeanGrad {
  const float* row_mask_total;
  int64_t cols;
  __host__ __device__ float operator()(const thrust::tuple<float, int64_t>& mk) const {
    const float m = thrust::get<0>(mk);
    return m != 0.0f ? m / (row_mask_total[thrust::get<1>(mk) / cols] + kMaskedMeanEps) : 0.0f;
  }
};

struct RowMeanGradAt {
  RowMeanGrad g;
  const float* mask;
  float* grad;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * g.cols + t;
    grad[k] = g(thrust::make_tuple(mask[k], k));
  }
};

struct RowMean {
  __host__ __device__ float operator()(float sum, float mask_total) const {
    return sum / (mask_total + kMaskedMeanEps);
  }
};

// Writes a row's mean and keeps its mask total for the gradient.
struct StoreRowMean {
  float* out;
  float* mask_total;
  __host__ __device__ void operator()(int64_t i, const thrust::tuple<float, float>& s) const {
    out[i] = RowMean()(thrust::get<0>(s), thrust::get<1>(s));
    mask_total[i] = thrust::get<1>(s);
  }
};

// masked_mean over all rows x cols elements; grad[k] = d mean / d values[k]. The sums,
// then the gradient from the mask alone.
template <class Policy>
float masked_mean(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols, float* grad) {
  const int64_t n = rows * cols;
  double sum = 0.0, mask_total = 0.0;
  for (const auto& r : RowPartials(policy, rows, cols, thrust::make_tuple(0.0f, 0.0f), TuplePlus(),
                                   MeanTermsAt{values, mask, cols}, Footprint().Reads<float>(n, 2))) {
    sum += thrust::get<0>(r);
    mask_total += thrust::get<1>(r);
  }
  const float denom = static_cast<float>(mask_total) + kMaskedMeanEps;
  RowMap(policy, rows, cols, MeanGradAt{MeanGrad{denom}, mask, grad, cols},
         Footprint().Reads<float>(n).Writes<float>(n));
  return static_cast<float>(sum) / denom;
}

// masked_mean along the last axis of a rows x cols array (verl's masked_mean(axis=-1)):
// out[i] for each row, grad[k] = d out[k / cols] / d values[k]. The rows' means as
// their pass ends, then the gradient.
template <class Policy>
void masked_mean_rows(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols, float* out,
                      float* grad) {
  const int64_t n = rows * cols;
  PolicyScratch<float, std::remove_reference_t<Policy>> mask_total(policy, rows);
  // cols = 0 leaves each row's sums at 0: out = 0 / (0 + 1e-8).
  RowReduce(policy, rows, cols, thrust::make_tuple(0.0f, 0.0f), TuplePlus(), MeanTermsAt{values, mask, cols},
            StoreRowMean{out, mask_total.get()}, Footprint().Reads<float>(n, 2).Writes<float>(rows, 2));
  RowMap(policy, rows, cols, RowMeanGradAt{RowMeanGrad{mask_total.get(), cols}, mask, grad},
         Footprint().Reads<float>(n).Reads<float>(rows).Writes<float>(n));
}

// Moments of some elements about a shift K of their own (one of their kept values):
// (w, K, s1, s2, all) with w = sum m over the kept elements, s1 = sum m (v - K), s2 =
// sum m (v - K)^2, and all = the plain sum of every element, masked or not (whiten's
// gradient sums over every element). In double: the sums about a value of the data
// lose nothing to the mean's size, and two partials merge exactly as the sums they are.
using Moments = thrust::tuple<double, double, double, double, double>;

// The sums of two partials, b moved to a's shift; an empty side (w = 0) takes the
// other's.
struct MergeMoments {
  __host__ __device__ Moments operator()(const Moments& a, const Moments& b) const {
    const double wa = thrust::get<0>(a), wb = thrust::get<0>(b);
    const double all = thrust::get<4>(a) + thrust::get<4>(b);
    if (wb == 0.0) return Moments(wa, thrust::get<1>(a), thrust::get<2>(a), thrust::get<3>(a), all);
    if (wa == 0.0) return Moments(wb, thrust::get<1>(b), thrust::get<2>(b), thrust::get<3>(b), all);
    const double d = thrust::get<1>(b) - thrust::get<1>(a);
    const double s1b = thrust::get<2>(b);
    return Moments(wa + wb, thrust::get<1>(a), thrust::get<2>(a) + s1b + wb * d,
                   thrust::get<3>(a) + thrust::get<3>(b) + d * (2.0 * s1b + wb * d), all);
  }
};

// One element's moments, about itself: dropped from the masked ones under a zero mask,
// NaN or not.
struct MomentsAt {
  const float* values;
  const float* mask;
  int64_t cols;
  __host__ __device__ Moments operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const double v = values[k], m = mask[k];
    if (m == 0.0) return Moments(0.0, 0.0, 0.0, 0.0, v);
    return Moments(m, v, 0.0, 0.0, v);
  }
};

// The statistics of masked_var, float32 as verl forms them.
struct MaskedVarParts {
  float mean = 0.0f;
  float variance = 0.0f;
  float mask_total = 0.0f;
  float denom = 0.0f;            // mask_total + 1e-8
  float bessel = 1.0f;           // M / (M - 1) when unbiased
  float centered_masked = 0.0f;  // sum_k m_k (v_k - mean)
  float centered_all = 0.0f;     // sum_k (v_k - mean)
};

// One pass (the rows' moments, merged on the host in row order); raises like verl's
// masked_var. From the plain weighted mean mu = K + s1 / w and q = sum m (v - mu)^2 =
// s2 - s1^2 / w: verl's mean S / (M + 1e-8), rounded to the float the tokens use; about
// that float mean (what a second pass would sum), sum m (v - mean)^2 = q + M (mu -
// mean)^2 and sum m (v - mean) = M (mu - mean), exactly, without its rounding.
template <class Policy>
MaskedVarParts MaskedVarStats(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols,
                              bool unbiased) {
  const int64_t n = rows * cols;
  Moments total(0.0, 0.0, 0.0, 0.0, 0.0);
  for (const Moments& r : RowPartials(policy, rows, cols, Moments(0.0, 0.0, 0.0, 0.0, 0.0), MergeMoments(),
                                      MomentsAt{values, mask, cols}, Footprint().Reads<float>(n, 2)))
    total = MergeMoments()(total, r);
  const double w = thrust::get<0>(total), s1 = thrust::get<2>(total);
  const double mu = w != 0.0 ? thrust::get<1>(total) + s1 / w : 0.0;
  const double q = w != 0.0 ? std::fmax(thrust::get<3>(total) - s1 * (s1 / w), 0.0) : 0.0;
  MaskedVarParts p;
  p.mask_total = static_cast<float>(w);
  p.denom = p.mask_total + kMaskedMeanEps;
  if (unbiased) oracle::CheckBesselMaskSum(static_cast<double>(p.mask_total));
  const double denom = w + static_cast<double>(kMaskedMeanEps);
  p.mean = static_cast<float>(w * mu / denom);
  const double off = mu - static_cast<double>(p.mean);
  p.variance = static_cast<float>((q + w * off * off) / denom);
  p.centered_masked = static_cast<float>(w * off);
  p.centered_all = static_cast<float>(thrust::get<4>(total) - static_cast<double>(n) * static_cast<double>(p.mean));
  if (unbiased) {
    p.bessel = p.mask_total / (p.mask_total - 1.0f);
    p.variance *= p.bessel;
  }
  return p;
}

// d var / d v_k: bessel * (2 m_k (v_k - mean) / M' - 2 sum_j m_j (v_j - mean) / M' * m_k / M'),
// the second term through the mean (M' = sum(mask) + 1e-8).
__host__ __device__ inline float VarGradToken(float v, float m, float mean, float denom, float bessel,
                                              float centered_masked) {
  if (m == 0.0f) return 0.0f;
  const float direct = 2.0f * m * (v - mean) / denom;
  const float via_mean = 2.0f * centered_masked / denom * (m / denom);
  return bessel * (direct - via_mean);
}

struct VarGrad {
  float mean, denom, bessel, centered_masked;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& vm) const {
    return VarGradToken(thrust::get<0>(vm), thrust::get<1>(vm), mean, denom, bessel, centered_masked);
  }
};

struct VarGradAt {
  VarGrad g;
  const float* values;
  const float* mask;
  float* grad;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    grad[k] = g(thrust::make_tuple(values[k], mask[k]));
  }
};

// masked_var over all rows x cols elements (raises VerlError(ValueError) where verl does
// when unbiased); grad[k] = d var / d values[k].
template <class Policy>
float masked_var(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols, bool unbiased,
                 float* grad) {
  const MaskedVarParts p = MaskedVarStats(policy, values, mask, rows, cols, unbiased);
  const int64_t n = rows * cols;
  RowMap(policy, rows, cols, VarGradAt{VarGrad{p.mean, p.denom, p.bessel, p.centered_masked}, values, mask, grad, cols},
         Footprint().Reads<float>(n, 2).Writes<float>(n));
  return p.variance;
}

// out_k = (v_k - mean) r (+ mean unless shift_mean), r = rsqrt(var + 1e-8), and
// d sum_j out_j / d v_k = r (1 - P dmean_k) + S dr/dvar dvar_k (+ P dmean_k), where
// P = n (the all-ones cotangent's sum) and S = sum_j (v_j - mean) over every element.
struct WhitenToken {
  float mean, r, denom, bessel, centered_masked, count, s_dr_dvar;
  bool shift_mean;
  __host__ __device__ thrust::tuple<float, float> operator()(const thrust::tuple<float, float>& vm) const {
    const float v = thrust::get<0>(vm), m = thrust::get<1>(vm);
    float out = (v - mean) * r;
    if (!shift_mean) out += mean;
    const float dmean = m != 0.0f ? m / denom : 0.0f;
    const float dvar = VarGradToken(v, m, mean, denom, bessel, centered_masked);
    float g = r * (1.0f - count * dmean) + s_dr_dvar * dvar;
    if (!shift_mean) g += count * dmean;
    return thrust::make_tuple(out, g);
  }
};

struct WhitenAt {
  WhitenToken tok;
  const float* values;
  const float* mask;
  float* out;
  float* grad;
  int64_t cols;
  __host__ __device__ void operator()(int64_t i, int64_t t) const {
    const int64_t k = i * cols + t;
    const thrust::tuple<float, float> r = tok(thrust::make_tuple(values[k], mask[k]));
    out[k] = thrust::get<0>(r);
    grad[k] = thrust::get<1>(r);
  }
};

// masked_whiten of rows x cols elements (statistics from masked_mean and
// masked_var(unbiased), raising as it does): out and grad (of sum(out)) for every
// element, one pass after the statistics' pass.
template <class Policy>
void masked_whiten(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols, bool shift_mean,
                   float* out, float* grad) {
  const MaskedVarParts p = MaskedVarStats(policy, values, mask, rows, cols, /*unbiased=*/true);
  const float r = 1.0f / std::sqrt(p.variance + kWhitenVarEpsF);
  const float dr_dvar = -0.5f * r * r * r;
  const int64_t n = rows * cols;
  const WhitenToken tok{
      p.mean, r, p.denom, p.bessel, p.centered_masked, static_cast<float>(n), p.centered_all * dr_dvar, shift_mean};
  RowMap(policy, rows, cols, WhitenAt{tok, values, mask, out, grad, cols},
         Footprint().Reads<float>(n, 2).Writes<float>(n, 2));
}

}  // namespace verlconf::cuda
