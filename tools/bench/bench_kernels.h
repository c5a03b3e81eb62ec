// Device helpers for cuda_bench: the copy kernel that measures bandwidth, and input
// generation on the device (filling 2 x 134 MB from the host would dominate the run).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace verlconf::bench {

// dst[k] = src[k] for k < n; float4 when both are 16-byte aligned. `blocks` = 0 picks
// the grid from the SM count.
void CopyFloats(const float* src, float* dst, int64_t n, int blocks, cudaStream_t stream);

// Log-probabilities as a policy and its reference produce them: logprob in [-12, 0),
// ref_logprob = logprob + a difference in [-spread, spread), from a counter hash of
// (seed, index) so the data do not depend on the launch configuration.
void FillLogProbs(float* logprob, float* ref_logprob, int64_t n, uint64_t seed, float spread, cudaStream_t stream);

}  // namespace verlconf::bench
