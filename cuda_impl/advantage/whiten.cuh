// verl's masked_whiten(values, mask) of a whole batch, optionally times the mask (as
// most estimators apply it), in place over a token array the entry has just written.
//
// The estimators whiten values that are often constant over long stretches (a
// singleton's score on every token of its row, a discounted return with gamma = 1),
// where masked_whiten is ill-conditioned: the centred values are of the order of the
// masked mean's 1e-8 offset, mean * 1e-8 / sum(mask), and rsqrt(var + 1e-8) multiplies
// them by 1e4. A plain float32 mean is off by an ulp of the values there, a thousand
// times more than the offset, and float32 cannot add 1e-8 to sum(mask) at all. So the
// statistics are taken in float32 as a corrected two-pass mean (the residual of the
// first mean is summed and added back) with the offset kept apart:
//   mean = S / (M + 1e-8) = mean_plain - e,  e = mean_plain 1e-8 / (M + 1e-8)
//   v - mean = (v - mean_1) - (sum m (v - mean_1)) / M + e
//   sum m (v - mean)^2 = sum m (v - mean_1)^2 - (sum m (v - mean_1))^2 / M + e^2 M
// masked_var's ValueError for mask sums 0 and 1 is raised as verl raises it.
#pragma once

#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>

#include "cuda_impl/core/sum.cuh"
#include "cuda_impl/core/system.cuh"
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
// shift = residual mean - e.
struct WhitenTimesMask {
  float mean1, shift, r;
  bool times_mask;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& vm) const {
    const float w = ((thrust::get<0>(vm) - mean1) - shift) * r;
    return times_mask ? w * thrust::get<1>(vm) : w;
  }
};

// values[k] = masked_whiten(values, mask)[k] (* mask[k] when times_mask), k < n.
template <class Policy>
void WhitenInPlace(Policy&& policy, float* values, const float* mask, int64_t n, bool times_mask) {
  auto vm = thrust::make_zip_iterator(thrust::make_tuple(values, mask));
  const auto s = ChunkedSum(policy, MeanTermIterator(values, mask), n, thrust::make_tuple(0.0f, 0.0f));
  const float total = thrust::get<1>(s);
  oracle::CheckBesselMaskSum(static_cast<double>(total));
  const float mean1 = thrust::get<0>(s) / total;
  const auto res =
      ChunkedSum(policy, thrust::make_transform_iterator(vm, ResidualTerms{mean1}), n, thrust::make_tuple(0.0f, 0.0f));
  const float residual_mean = thrust::get<0>(res) / total;
  const float e = (mean1 + residual_mean) * (kMaskedMeanEps / total);
  const float squares = fmaxf(thrust::get<1>(res) - thrust::get<0>(res) * residual_mean, 0.0f) + e * e * total;
  const float variance = squares / total * (total / (total - 1.0f));
  const float r = 1.0f / std::sqrt(variance + kWhitenVarEpsF);
  thrust::transform(policy, vm, vm + n, values, WhitenTimesMask{mean1, residual_mean - e, r, times_mask});
}

}  // namespace verlconf::cuda
