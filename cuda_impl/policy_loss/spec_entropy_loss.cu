// The CUDA entry of compute_entropy_loss (family policy_loss), Case in and Result out
// with the output and grad of oracle/policy_loss/spec_entropy_loss.cc, in the cuda and
// cuda-host slots.
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/entropy_loss.cuh"
#include "oracle/aggregation/agg_loss.h"

namespace verlconf::cuda {
namespace {

Result RunEntropyLoss(System system, const Case& c) {
  const Array& z = c.Input("logits");
  const Array& mask = c.Input("response_mask");
  // verl passes no global_batch_info.
  const AggArgs agg = CheckedAggArgs(c.config.String("loss_agg_mode"), oracle::GlobalBatchInfo{});
  const int64_t rows = mask.rows(), cols = mask.cols(), vocab = z.shape.at(2);
  const SystemBuffer<float> d_z(system, ToFloat(z)), d_mask(system, ToFloat(mask));
  SystemBuffer<float> d_grad(system, z.data.size());
  float loss = 0.0f;
  RunEntry(system, [&](auto&& policy) {
    loss = compute_entropy_loss(policy, system, d_z.data(), d_mask.data(), rows, cols, vocab, agg.mode, d_grad.data());
  });
  Result r;
  r.outputs["entropy_loss"] = Array::Scalar(static_cast<double>(loss), c.dtype);
  r.grads["logits"] = FromFloat(d_grad.ToHost(), z.shape, c.dtype);
  return r;
}

const bool registered = RegisterCudaEntry("policy_loss", "compute_entropy_loss", RunEntropyLoss);

}  // namespace
}  // namespace verlconf::cuda
