// The kl family's CUDA entries as the registry sees them: every estimator verl computes
// and the two names verl accepts only to raise for ("full", "full+": the entry raises
// the oracle's error before touching any memory), Case in and Result out, in the cuda
// and cuda-host slots under the keys of oracle/kl/spec.cc.
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/kl/kl_penalty.cuh"
#include "oracle/kl/kl_penalty.h"

namespace verlconf::cuda {
namespace {

Result RunKlPenalty(System system, const Case& c) {
  // The name decides the estimator exactly as in the oracle (and raises as verl does).
  const oracle::KlEstimator e = oracle::ParseKlName(c.function);
  const Array& lp = c.Input("logprob");
  const Array& ref = c.Input("ref_logprob");
  const size_t n = lp.data.size();
  // Tokens are rows x cols (the first axis by the others; one row for a vector).
  const int64_t rows = lp.rank() >= 2 ? lp.shape[0] : 1;
  const int64_t cols = rows > 0 ? static_cast<int64_t>(n) / rows : 0;
  const SystemBuffer<float> d_lp(system, ToFloat(lp)), d_ref(system, ToFloat(ref));
  SystemBuffer<float> d_kl(system, n), d_grad(system, n);
  RunEntry(system, [&](auto&& policy) {
    kl_penalty(policy, d_lp.data(), d_ref.data(), d_kl.data(), d_grad.data(), rows, cols, static_cast<KlKind>(e.kind),
               e.straight_through);
  });
  Result r;
  r.outputs["kl"] = FromFloat(d_kl.ToHost(), lp.shape, c.dtype);
  r.grads["logprob"] = FromFloat(d_grad.ToHost(), lp.shape, c.dtype);
  return r;
}

const bool registered = [] {
  for (const std::string& name : oracle::kKlPenaltyNames) RegisterCudaEntry("kl", name, RunKlPenalty);
  for (const std::string& name : oracle::kKlPenaltyNotImplemented) RegisterCudaEntry("kl", name, RunKlPenalty);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
