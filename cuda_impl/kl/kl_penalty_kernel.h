// The float4 kl_penalty kernel (kl_penalty_kernel.cu): the same values as the CCCL
// row map of kl_penalty.cuh, through 16-byte memory accesses.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace verlconf::cuda {

// kind: 0 = k1, 1 = abs, 2 = k2, 3 = k3 (oracle::KlEstimator::Kind order).
// straight_through: the "+" variants (gradient of k2). grad may be null.
void kl_penalty_float4(const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t n, int kind,
                       bool straight_through, cudaStream_t stream);

}  // namespace verlconf::cuda
