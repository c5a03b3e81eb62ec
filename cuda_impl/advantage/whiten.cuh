// verl's masked_whiten(values, mask) of a whole batch, optionally times the mask (as
// most estimators apply it), in place over a token array the entry has just written:
// the statistics are masked.cuh's (masked mean and unbiased masked variance, raising
// ValueError for mask sums 0 and 1 as verl's masked_var does), then one transform.
#pragma once

#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform.h>
#include <thrust/tuple.h>

#include <cmath>
#include <cstdint>

#include "cuda_impl/torch_functional/masked.cuh"

namespace verlconf::cuda {

// (v - mean) * rsqrt(var + 1e-8), times the mask when asked (a plain product).
struct WhitenTimesMask {
  float mean, r;
  bool times_mask;
  __host__ __device__ float operator()(const thrust::tuple<float, float>& vm) const {
    const float w = (thrust::get<0>(vm) - mean) * r;
    return times_mask ? w * thrust::get<1>(vm) : w;
  }
};

// values[k] = masked_whiten(values, mask)[k] (* mask[k] when times_mask), k < n.
template <class Policy>
void WhitenInPlace(Policy&& policy, float* values, const float* mask, int64_t n, bool times_mask) {
  const MaskedVarParts p = MaskedVarStats(policy, values, mask, n, /*unbiased=*/true);
  const float r = 1.0f / std::sqrt(p.variance + kWhitenVarEpsF);
  auto vm = thrust::make_zip_iterator(thrust::make_tuple(values, mask));
  thrust::transform(policy, vm, vm + n, values, WhitenTimesMask{p.mean, r, times_mask});
}

}  // namespace verlconf::cuda
