// What every masked sum shares: verl's masked term, masked_mean's offset, and the sum of
// floats or of tuples of floats that the row templates (rows.cuh) reduce with.
#pragma once

#include <thrust/tuple.h>

#include <cstddef>
#include <utility>

namespace verlconf::cuda {

// verl's masked_sum term (verl.utils.torch_functional): an element counts only where
// the mask is non-zero, so a NaN under a zero mask does not poison the sum.
__host__ __device__ inline float MaskedTerm(float v, float m) { return m != 0.0f ? v * m : 0.0f; }

// masked_mean's denominator offset, sum(mask) + 1e-8, in float32 as verl adds it.
constexpr float kMaskedMeanEps = 1e-8f;

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

}  // namespace verlconf::cuda
