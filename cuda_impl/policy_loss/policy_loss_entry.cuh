// What the variants' and cov losses' CUDA entries share (spec_variants.cu, spec_cov.cu):
// the case's tensors in the system's memory, one run through the system's policy, and
// the Result as policy_loss_common.cuh's PackPolicyLoss lays it (no boundary), with the
// loss's own metrics.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "cuda_impl/policy_loss/variants.cuh"
#include "oracle/core/case.h"
#include "oracle/policy_loss/spec_common.h"

namespace verlconf::cuda {

// The policy-loss inputs of a case (oracle::ReadPolicyLossInputs), as float32 in the
// system's memory (policy_loss_common.cuh's PolicyLossBuffers).
class PolicyLossTensors {
 public:
  PolicyLossTensors(System system, const Case& c) : mask_(c.Input("response_mask")), b_(system, Inputs(c)) {}

  PolicyLossArgs args() const {
    return {b_.old_log_prob.data(),
            b_.log_prob.data(),
            b_.advantages.data(),
            b_.mask.data(),
            b_.weights ? b_.weights->data() : nullptr,
            b_.rows,
            b_.cols};
  }
  const Array& mask() const { return mask_; }
  size_t size() const { return mask_.data.size(); }

 private:
  static oracle::PolicyLossInputs Inputs(const Case& c) { return oracle::ReadPolicyLossInputs(c); }
  const Array& mask_;
  PolicyLossBuffers b_;
};

// Runs `loss(policy, args, grad, scratch) -> PolicyLossScalars` on `system` and packs
// pg_loss, grads/log_prob and the `metrics` the oracle's entry reports. `scratch` holds a
// token matrix for the losses that aggregate (the loss matrix, then agg_loss's W).
template <class LossFn>
Result RunPolicyLoss(System system, const Case& c, const PolicyLossTensors& t, const std::vector<std::string>& metrics,
                     LossFn&& loss, bool aggregates = true) {
  SystemBuffer<float> grad(system, t.size()), scratch(system, aggregates ? t.size() : 0);
  Workspace ws(system);
  StreamScope stream(system);
  PolicyLossScalars s;
  WithPolicy(system, ws, stream.get(), [&](auto&& policy) { s = loss(policy, t.args(), grad.data(), scratch.data()); });
  Result r;
  r.outputs["pg_loss"] = Array::Scalar(static_cast<double>(s.loss), c.dtype);
  r.grads["log_prob"] = FromFloat(grad.ToHost(), t.mask().shape, c.dtype);
  for (const std::string& m : metrics) {
    const float v = m == "actor/pg_clipfrac" ? s.pg_clipfrac : m == "actor/ppo_kl" ? s.ppo_kl : s.pg_clipfrac_lower;
    r.metrics[m] = static_cast<double>(v);
  }
  return r;
}

}  // namespace verlconf::cuda
