// The CUDA entry of oracle/advantage/spec_multi_trajectory.cc
// (compute_advantage_for_multi_trajectories), in the cuda and cuda-host slots: the GRPO
// branch here (multi_trajectory.cuh); any other estimator is delegated, as verl hands
// it to compute_advantage, to this family's own CUDA entry for it.
#include <string>
#include <variant>
#include <vector>

#include "cuda_impl/advantage/multi_trajectory.cuh"
#include "cuda_impl/advantage/spec_common.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "oracle/advantage/spec_common.h"
#include "oracle/core/errors.h"
#include "oracle/core/function_spec.h"

namespace verlconf::cuda {
namespace {

Result RunGrpoSessions(System system, const Case& c) {
  // compute_grpo_outcome_advantage with its default epsilon: the dispatcher passes none.
  const float epsilon = static_cast<float>(oracle::GrpoDefaultEpsilon());
  const bool norm = c.config.Bool("norm_adv_by_std_in_grpo");
  const Array& mask = c.Input("response_mask");
  const int64_t rows = mask.rows(), cols = mask.cols();
  const SystemBuffer<float> rewards(system, ToFloat(c.Input("token_level_rewards"))), d_mask(system, ToFloat(mask)),
      turn(system, ToFloat(c.Input("turn")));
  const SystemBuffer<int64_t> index(system, IndexCodes(c.Input("index"))),
      session(system, IndexCodes(c.Input("session")));
  SystemBuffer<float> adv(system, mask.data.size());
  RunEntry(system, [&](auto&& policy) {
    multi_trajectory_grpo_advantage(policy, rewards.data(), d_mask.data(), index.data(), session.data(), turn.data(),
                                    rows, cols, epsilon, norm, adv.data());
  });
  return oracle::Same(FromFloat(adv.ToHost(), mask.shape, c.dtype));
}

Result RunMultiTrajectory(System system, const Case& c) {
  const std::string est = c.config.String("adv_estimator");
  if (est == "grpo") return RunGrpoSessions(system, c);
  const Case d = oracle::MultiTrajectoryDelegateCase(c);
  const SystemRunFn* run = FindAdvantageEntry(est);
  if (!run) throw Unsupported("delegating to '" + est + "': no CUDA entry");
  return (*run)(system, d);
}

const bool registered = RegisterAdvantageEntry("compute_advantage_for_multi_trajectories", RunMultiTrajectory);

}  // namespace
}  // namespace verlconf::cuda
