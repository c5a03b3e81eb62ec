// How every policy loss's CUDA entry runs (spec_*.cu of this folder and bypass_mode's):
// the case's tensors in the system's memory, one RunEntry pass of the loss's template,
// and the Result laid out as oracle::PackPolicyLoss lays it (no boundary: threshold
// decisions are the judge's, from the oracle alone), the metrics those of the spec.
#pragma once

#include <thrust/iterator/constant_iterator.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "cuda_impl/core/system.h"
#include "cuda_impl/policy_loss/policy_loss_common.cuh"
#include "oracle/core/case.h"
#include "oracle/policy_loss/spec_common.h"
#include "oracle/registry.h"

namespace verlconf::cuda {

// The policy-loss inputs of a case (oracle::ReadPolicyLossInputs) as float32 in the
// system's memory. Without `with_weights` the case's rollout_is_weights stay unread (the
// losses verl calls without them).
class PolicyLossTensors {
 public:
  PolicyLossTensors(System system, const Case& c, bool with_weights = true)
      : PolicyLossTensors(system, oracle::ReadPolicyLossInputs(c), with_weights) {}

  PolicyLossArgs args() const {
    return {old_log_prob_.data(),
            log_prob_.data(),
            advantages_.data(),
            mask_.data(),
            weights_ ? weights_->data() : nullptr,
            rows_,
            cols_};
  }
  const std::vector<int64_t>& shape() const { return shape_; }
  size_t size() const { return static_cast<size_t>(rows_ * cols_); }

 private:
  PolicyLossTensors(System system, const oracle::PolicyLossInputs& in, bool with_weights)
      : old_log_prob_(system, ToFloat(in.old_log_prob)),
        log_prob_(system, ToFloat(in.log_prob)),
        advantages_(system, ToFloat(in.advantages)),
        mask_(system, ToFloat(in.response_mask)),
        rows_(in.response_mask.rows()),
        cols_(in.response_mask.cols()),
        shape_(in.response_mask.shape) {
    if (with_weights && in.rollout_is_weights) weights_.emplace(system, ToFloat(*in.rollout_is_weights));
  }
  SystemBuffer<float> old_log_prob_, log_prob_, advantages_, mask_;
  std::optional<SystemBuffer<float>> weights_;
  int64_t rows_, cols_;
  std::vector<int64_t> shape_;
};

// f(weights) with the rollout IS weights of `in` as an iterator: the array, or a
// constant 1 where there are none (the templates of vanilla and REINFORCE take either).
template <class F>
decltype(auto) WithWeights(const PolicyLossArgs& in, F&& f) {
  if (in.rollout_is_weights) return f(in.rollout_is_weights);
  return f(thrust::make_constant_iterator(1.0f));
}

// pg_loss, grads/log_prob and `metrics` (names of PolicyLossScalars' fields) as a Result.
inline Result PackPolicyLoss(const PolicyLossScalars& s, const SystemBuffer<float>& grad,
                             const std::vector<int64_t>& shape, const std::vector<std::string>& metrics, DType dtype) {
  Result r;
  r.outputs["pg_loss"] = Array::Scalar(static_cast<double>(s.loss), dtype);
  r.grads["log_prob"] = FromFloat(grad.ToHost(), shape, dtype);
  r.metrics = PackLossMetrics(metrics, s);
  return r;
}

// The metric list of the policy loss `name` in the registry.
inline const std::vector<std::string>& PolicyLossMetricNames(const std::string& name) {
  const FunctionSpec* spec = FindSpec(name, "policy_loss");
  if (!spec) throw std::logic_error("no policy_loss entry named " + name);
  return spec->metrics;
}

// Runs `loss(policy, args, grad) -> PolicyLossScalars` on `system` and packs pg_loss,
// grads/log_prob and the metrics of the case's spec.
template <class LossFn>
Result RunPolicyLoss(System system, const Case& c, const PolicyLossTensors& t, LossFn&& loss) {
  SystemBuffer<float> grad(system, t.size());
  PolicyLossScalars s;
  RunEntry(system, [&](auto&& policy) { s = loss(policy, t.args(), grad.data()); });
  return PackPolicyLoss(s, grad, t.shape(), PolicyLossMetricNames(c.function), c.dtype);
}

}  // namespace verlconf::cuda
