// The CUDA entries of oracle/advantage/spec_grpo.cc (grpo, grpo_vectorized), in the
// cuda and cuda-host slots, with its outputs: advantages and the same tensor as returns.
#include "cuda_impl/advantage/grpo.cuh"
#include "cuda_impl/advantage/spec_common.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "oracle/advantage/spec_common.h"

namespace verlconf::cuda {
namespace {

template <bool kVectorized>
Result RunGrpo(System system, const Case& c) {
  const float epsilon = static_cast<float>(c.config.Double("epsilon"));
  const bool norm = c.config.Bool("norm_adv_by_std_in_grpo");
  const Array& mask = c.Input("response_mask");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> rewards(system, ToFloat(c.Input("token_level_rewards"))), d_mask(system, ToFloat(mask));
  const SystemBuffer<int64_t> index(system, IndexCodes(c.Input("index")));
  SystemBuffer<float> adv(system, mask.data.size());
  RunEntry(system, [&](auto&& policy) {
    if (kVectorized)
      grpo_vectorized_outcome_advantage(policy, rewards.data(), d_mask.data(), index.data(), rows, cols, epsilon, norm,
                                        adv.data());
    else
      grpo_outcome_advantage(policy, rewards.data(), d_mask.data(), index.data(), rows, cols, epsilon, norm,
                             adv.data());
  });
  return oracle::Same(FromFloat(adv.ToHost(), mask.shape, c.dtype));
}

const bool registered = [] {
  RegisterAdvantageEntry("grpo", RunGrpo<false>);
  RegisterAdvantageEntry("grpo_vectorized", RunGrpo<true>);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
