// kl_penalty on the GPU: the same estimators as oracle/kl/kl_penalty.h, fp32 math, one fused
// pass producing the value and d/d logprob per token.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace verlconf::cuda {

// kind: 0 = k1, 1 = abs, 2 = k2, 3 = k3 (oracle::KlEstimator::Kind order).
// straight_through: the "+" variants (gradient of k2). grad may be null.
void kl_penalty(const float* logprob, const float* ref_logprob, float* kl, float* grad, int64_t n, int kind,
                bool straight_through, cudaStream_t stream);

}  // namespace verlconf::cuda
