// Sums that are as accurate through Thrust's host system as on the device. CUB reduces
// on the device as a tree, but the host system reduces in one sequential loop, whose
// float32 error grows with the count (2M terms of one sign drift past the float32
// tolerance). Every token-sized sum is therefore two-level: reduce_by_key over segments
// of consecutive terms (rows, or chunks of kSumChunk), then a reduce of the partials. On
// the device that costs one small extra pass; on both systems the order of additions is
// fixed, so results are bitwise reproducible.
#pragma once

#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/tuple.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cuda_impl/core/system.cuh"

namespace verlconf::cuda {

// verl's masked_sum term (verl.utils.torch_functional): an element counts only where
// the mask is non-zero, so a NaN under a zero mask does not poison the sum.
__host__ __device__ inline float MaskedTerm(float v, float m) { return m != 0.0f ? v * m : 0.0f; }

// masked_mean's denominator offset, sum(mask) + 1e-8, in float32 as verl adds it.
constexpr float kMaskedMeanEps = 1e-8f;

// Segment length of the first level of a whole-array sum.
constexpr int64_t kSumChunk = 1024;

// Sum of two floats, or elementwise of two tuples of floats.
struct TuplePlus {
  __host__ __device__ float operator()(float a, float b) const { return a + b; }
  template <class... T>
  __host__ __device__ thrust::tuple<T...> operator()(const thrust::tuple<T...>& a, const thrust::tuple<T...>& b) const {
    return Add(a, b, std::index_sequence_for<T...>{});
  }

 private:
  template <class Tuple, size_t... I>
  __host__ __device__ static Tuple Add(const Tuple& a, const Tuple& b, std::index_sequence<I...>) {
    return Tuple((thrust::get<I>(a) + thrust::get<I>(b))...);
  }
};

// The segment of flat index k.
struct SegmentOf {
  int64_t length;
  __host__ __device__ int64_t operator()(int64_t k) const { return k / length; }
};

// out[s] = sum of terms[k] over the segment s = k / length, for every segment of the
// n terms (the last may be short). `terms` yields floats or tuples; `out` takes them.
template <class Policy, class TermIt, class OutIt>
void SegmentSums(Policy&& policy, TermIt terms, int64_t n, int64_t length, OutIt out) {
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), SegmentOf{length});
  thrust::reduce_by_key(policy, keys, keys + n, terms, thrust::make_discard_iterator(), out,
                        thrust::equal_to<int64_t>(), TuplePlus());
}

// The sum of n terms (zero: 0.0f or the tuple of zeros), chunked as above; on the host.
template <class T, class Policy, class TermIt>
T ChunkedSum(Policy&& policy, TermIt terms, int64_t n, T zero) {
  if (n <= 0) return zero;
  const int64_t chunks = (n + kSumChunk - 1) / kSumChunk;
  PolicyScratch<T, std::remove_reference_t<Policy>> partial(policy, chunks);
  SegmentSums(policy, terms, n, kSumChunk, partial.get());
  return thrust::reduce(policy, partial.get(), partial.get() + chunks, zero, TuplePlus());
}

// ChunkedSum of f(first[k]).
template <class T, class Policy, class It, class F>
T ChunkedTransformSum(Policy&& policy, It first, int64_t n, F f, T zero) {
  return ChunkedSum(policy, thrust::make_transform_iterator(first, f), n, zero);
}

}  // namespace verlconf::cuda
