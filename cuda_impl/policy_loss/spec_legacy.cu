// CUDA entries (cuda and cuda-host slots) for compute_policy_loss_reinforce and the
// deprecated compute_policy_loss, with the outputs, gradient and metrics of
// oracle/policy_loss/spec_legacy.cc.
#include <thrust/iterator/constant_iterator.h>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "cuda_impl/aggregation/agg_loss_entry.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/legacy.cuh"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/vanilla.cuh"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/aggregation/spec_common.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf::cuda {
namespace {

Result RunReinforce(System system, const Case& c) {
  const oracle::PolicyLossInputs in = oracle::ReadPolicyLossInputs(c);
  const std::string mode_name = c.config.String("loss_agg_mode");
  const oracle::GlobalBatchInfo info = oracle::ReadGlobalBatchInfo(c.config);
  oracle::CheckAggArguments(mode_name, info);
  const AggMode mode = ToAggMode(mode_name);
  const AggGlobal global = ToAggGlobal(info);
  PolicyLossBuffers b(system, in);
  SystemBuffer<float> grad(system, static_cast<size_t>(b.rows * b.cols));
  Workspace ws(system);
  StreamScope stream(system);
  ReinforceOutputs o{};
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) {
    if (b.weights)
      o = policy_loss_reinforce(policy, system, b.old_log_prob.data(), b.log_prob.data(), b.advantages.data(),
                                static_cast<const float*>(b.weights->data()), b.mask.data(), grad.data(), b.rows,
                                b.cols, mode, global);
    else
      o = policy_loss_reinforce(policy, system, b.old_log_prob.data(), b.log_prob.data(), b.advantages.data(),
                                thrust::make_constant_iterator(1.0f), b.mask.data(), grad.data(), b.rows, b.cols, mode,
                                global);
  });
  return PackPolicyLoss(o.loss, grad, in.response_mask.shape, {{"actor/ppo_kl", o.ppo_kl}}, c.dtype);
}

// verl's compute_policy_loss: vanilla's dual-clip PPO without IS weights and with
// agg_loss's default global-batch arguments; the tuple's metrics under bare names.
Result RunDeprecated(System system, const Case& c) {
  oracle::PolicyLossInputs in = oracle::ReadPolicyLossInputs(c);
  in.rollout_is_weights = nullptr;
  // cliprange_low / cliprange_high: None = cliprange (verl's rule).
  const double clip = c.config.Double("cliprange");
  const double low = c.config.OptionalDouble("cliprange_low").value_or(clip);
  const double high = c.config.OptionalDouble("cliprange_high").value_or(clip);
  const double clip_ratio_c = c.config.Double("clip_ratio_c");
  const std::string mode_name = c.config.String("loss_agg_mode");
  const oracle::GlobalBatchInfo info;  // agg_loss's keyword defaults
  CheckDualClip(clip_ratio_c);
  oracle::CheckAggArguments(mode_name, info);
  const AggMode mode = ToAggMode(mode_name);
  const AggGlobal global = ToAggGlobal(info);
  const VanillaParams p = MakeVanillaParams(low, high, clip_ratio_c);
  PolicyLossBuffers b(system, in);
  SystemBuffer<float> grad(system, static_cast<size_t>(b.rows * b.cols));
  Workspace ws(system);
  StreamScope stream(system);
  VanillaOutputs o{};
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) {
    o = policy_loss_vanilla(policy, system, b.old_log_prob.data(), b.log_prob.data(), b.advantages.data(),
                            thrust::make_constant_iterator(1.0f), b.mask.data(), grad.data(), b.rows, b.cols, p, mode,
                            global);
  });
  return PackPolicyLoss(
      o.loss, grad, in.response_mask.shape,
      {{"pg_clipfrac", o.pg_clipfrac}, {"ppo_kl", o.ppo_kl}, {"pg_clipfrac_lower", o.pg_clipfrac_lower}}, c.dtype);
}

const bool registered = [] {
  RegisterCudaEntry("policy_loss", "compute_policy_loss_reinforce", RunReinforce);
  RegisterCudaEntry("policy_loss", "compute_policy_loss", RunDeprecated);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
