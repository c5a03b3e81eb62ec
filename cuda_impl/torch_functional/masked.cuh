// verl.utils.torch_functional's masked statistics (masked_mean, masked_var,
// masked_whiten) on CCCL, float32, with their gradients w.r.t. values, as templates over
// the Thrust execution policy (cuda_impl/core/system.cuh). The conventions are the
// oracle's (oracle/torch_functional/masked.h): a term counts only where mask != 0, means
// divide by sum(mask) + 1e-8, masked_var(unbiased) raises for mask sums 0 and 1.
//
// Every sum is two-level (cuda_impl/core/sum.cuh): by row, or by fixed chunks for the
// scalar forms, then over the partials.
#pragma once

#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
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

inline auto MeanTermIterator(const float* values, const float* mask) {
  return thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(values, mask)), MeanTerms());
}

// d mean / d v_k = m_k / denom where the mask keeps the element.
struct MeanGrad {
  float denom;
  __host__ __device__ float operator()(float m) const { return m != 0.0f ? m / denom : 0.0f; }
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

struct RowMean {
  __host__ __device__ float operator()(float sum, float mask_total) const {
    return sum / (mask_total + kMaskedMeanEps);
  }
};

// masked_mean over all n elements; grad[k] = d mean / d values[k].
template <class Policy>
float masked_mean(Policy&& policy, const float* values, const float* mask, int64_t n, float* grad) {
  const auto s = ChunkedSum(policy, MeanTermIterator(values, mask), n, thrust::make_tuple(0.0f, 0.0f));
  const float denom = thrust::get<1>(s) + kMaskedMeanEps;
  thrust::transform(policy, mask, mask + n, grad, MeanGrad{denom});
  return thrust::get<0>(s) / denom;
}

// masked_mean along the last axis of a rows x cols array (verl's masked_mean(axis=-1)):
// out[i] for each row, grad[k] = d out[k / cols] / d values[k].
template <class Policy>
void masked_mean_rows(Policy&& policy, const float* values, const float* mask, int64_t rows, int64_t cols, float* out,
                      float* grad) {
  if (rows <= 0) return;
  PolicyScratch<float, std::remove_reference_t<Policy>> mask_total(policy, rows);
  if (cols <= 0) {
    thrust::fill(policy, out, out + rows, 0.0f);  // 0 / (0 + 1e-8)
    return;
  }
  const int64_t n = rows * cols;
  SegmentSums(policy, MeanTermIterator(values, mask), n, cols,
              thrust::make_zip_iterator(thrust::make_tuple(out, mask_total.get())));
  thrust::transform(policy, out, out + rows, mask_total.get(), out, RowMean());
  auto mk = thrust::make_zip_iterator(thrust::make_tuple(mask, thrust::counting_iterator<int64_t>(0)));
  thrust::transform(policy, mk, mk + n, grad, RowMeanGrad{mask_total.get(), cols});
}

// About a mean: (masked c^2, masked c, c) with c = v - mean. The first is the variance's
// sum, the second the mean's share of its gradient (zero up to rounding and the 1e-8
// bias, as verl's autograd sums it), the third over every element (whiten's gradient).
struct CenteredTerms {
  float mean;
  __host__ __device__ thrust::tuple<float, float, float> operator()(const thrust::tuple<float, float>& vm) const {
    const float m = thrust::get<1>(vm);
    const float c = thrust::get<0>(vm) - mean;
    return thrust::make_tuple(MaskedTerm(c * c, m), MaskedTerm(c, m), c);
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

// Two passes (the mean's sums, then the sums about it); raises like verl's masked_var.
template <class Policy>
MaskedVarParts MaskedVarStats(Policy&& policy, const float* values, const float* mask, int64_t n, bool unbiased) {
  MaskedVarParts p;
  const auto s = ChunkedSum(policy, MeanTermIterator(values, mask), n, thrust::make_tuple(0.0f, 0.0f));
  p.mask_total = thrust::get<1>(s);
  p.denom = p.mask_total + kMaskedMeanEps;
  p.mean = thrust::get<0>(s) / p.denom;
  if (unbiased) oracle::CheckBesselMaskSum(static_cast<double>(p.mask_total));
  auto centered = thrust::make_transform_iterator(thrust::make_zip_iterator(thrust::make_tuple(values, mask)),
                                                  CenteredTerms{p.mean});
  const auto c = ChunkedSum(policy, centered, n, thrust::make_tuple(0.0f, 0.0f, 0.0f));
  p.variance = thrust::get<0>(c) / p.denom;
  p.centered_masked = thrust::get<1>(c);
  p.centered_all = thrust::get<2>(c);
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

// masked_var over all n elements (raises VerlError(ValueError) where verl does when
// unbiased); grad[k] = d var / d values[k].
template <class Policy>
float masked_var(Policy&& policy, const float* values, const float* mask, int64_t n, bool unbiased, float* grad) {
  const MaskedVarParts p = MaskedVarStats(policy, values, mask, n, unbiased);
  auto vm = thrust::make_zip_iterator(thrust::make_tuple(values, mask));
  thrust::transform(policy, vm, vm + n, grad, VarGrad{p.mean, p.denom, p.bessel, p.centered_masked});
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

// masked_whiten of n elements (statistics from masked_mean and masked_var(unbiased),
// raising as it does): out and grad (of sum(out)) for every element, one fused pass
// after the two statistics passes.
template <class Policy>
void masked_whiten(Policy&& policy, const float* values, const float* mask, int64_t n, bool shift_mean, float* out,
                   float* grad) {
  const MaskedVarParts p = MaskedVarStats(policy, values, mask, n, /*unbiased=*/true);
  const float r = 1.0f / std::sqrt(p.variance + kWhitenVarEpsF);
  const float dr_dvar = -0.5f * r * r * r;
  auto vm = thrust::make_zip_iterator(thrust::make_tuple(values, mask));
  thrust::transform(policy, vm, vm + n, thrust::make_zip_iterator(thrust::make_tuple(out, grad)),
                    WhitenToken{p.mean, r, p.denom, p.bessel, p.centered_masked, static_cast<float>(n),
                                p.centered_all * dr_dvar, shift_mean});
}

}  // namespace verlconf::cuda
