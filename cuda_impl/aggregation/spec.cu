// The aggregation family's CUDA entries: agg_loss for every loss_agg_mode, the loss and
// its gradient W, in the cuda and cuda-host slots under the keys of
// oracle/aggregation/spec.cc.
#include <string>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"

namespace verlconf::cuda {

namespace {

// The mode verl names; CheckAggArguments has accepted it.
AggMode ToAggMode(const std::string& mode) {
  for (int k = 0; k < 5; ++k)
    if (mode == oracle::kAggModes[k]) return static_cast<AggMode>(k);
  throw std::logic_error("not an agg mode: " + mode);
}

AggGlobal ToAggGlobal(const oracle::GlobalBatchInfo& g) {
  return {g.dp_size, g.batch_num_tokens, g.global_batch_size, g.loss_scale_factor};
}

}  // namespace

AggArgs CheckedAggArgs(const std::string& mode, const oracle::GlobalBatchInfo& info) {
  oracle::CheckAggArguments(mode, info);
  return {ToAggMode(mode), ToAggGlobal(info)};
}

AggArgs ReadAggArgs(const Config& c) {
  const std::string mode = c.String("loss_agg_mode");
  return CheckedAggArgs(mode, oracle::ReadGlobalBatchInfo(c));
}

namespace {

Result RunAgg(System system, const Case& c) {
  const Array& loss_mat = c.Input("loss_mat");
  const Array& mask = c.Input("loss_mask");
  // The mode is the entry's name.
  const AggArgs agg = CheckedAggArgs(c.function, oracle::ReadGlobalBatchInfo(c.config));
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> d_loss(system, ToFloat(loss_mat)), d_mask(system, ToFloat(mask));
  SystemBuffer<float> d_w(system, mask.data.size());
  float loss = 0.0f;
  // The mask's row sums where the mode needs them, then one row pass: W written, the
  // rows' loss terms summed.
  RunEntry(system, [&](auto&& policy) {
    const AggPlan plan = MakeAggPlan(policy, d_mask.data(), rows, cols, agg.mode, agg.global);
    loss = FusedAggPass(policy, plan, d_mask.data(), d_w.data(), rows, cols, agg.mode, LossMatrixToken{d_loss.data()},
                        Footprint().Reads<float>(rows * cols))
               .loss;
  });
  Result r;
  r.outputs["loss"] = Array::Scalar(static_cast<double>(loss), c.dtype);
  r.grads["loss_mat"] = FromFloat(d_w.ToHost(), mask.shape, c.dtype);
  return r;
}

const bool registered = [] {
  for (const char* mode : oracle::kAggModes) RegisterCudaEntry("aggregation", mode, RunAgg);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
