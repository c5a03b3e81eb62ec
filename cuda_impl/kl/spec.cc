// The CUDA kl_penalty as the registry sees it: the kl family's entries that the kernel
// covers, Case in and Result out, in the cuda slot (the same keys as oracle/kl/spec.cc).
#include <cuda_runtime.h>

#include "cuda_impl/core/buffer.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/kl/kl_penalty.h"
#include "oracle/core/implementations.h"
#include "oracle/kl/kl_penalty.h"

namespace verlconf::cuda {
namespace {

Result RunKlPenalty(const Case& c) {
  // The name decides the estimator exactly as in the oracle (and raises as verl does).
  const oracle::KlEstimator e = oracle::ParseKlName(c.function);
  const Array& lp = c.Input("logprob");
  const Array& ref = c.Input("ref_logprob");
  const DeviceBuffer<float> d_lp(ToFloat(lp)), d_ref(ToFloat(ref));
  DeviceBuffer<float> d_kl(lp.data.size()), d_grad(lp.data.size());
  kl_penalty(d_lp.get(), d_ref.get(), d_kl.get(), d_grad.get(), lp.size(), static_cast<int>(e.kind),
             e.straight_through, nullptr);
  Check(cudaGetLastError(), "kl_penalty launch");
  Check(cudaDeviceSynchronize(), "kl_penalty");
  Result r;
  r.outputs["kl"] = FromFloat(d_kl.ToHost(), lp.shape, c.dtype);
  r.grads["logprob"] = FromFloat(d_grad.ToHost(), lp.shape, c.dtype);
  return r;
}

// Every estimator verl computes ("full", which verl only raises for, has no kernel).
const bool registered = [] {
  for (const std::string& name : oracle::kKlPenaltyNames) RegisterImplementation(Impl::kCuda, "kl", name, RunKlPenalty);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
