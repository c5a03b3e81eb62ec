#include "oracle/sharding/combine.h"

#include <algorithm>
#include <stdexcept>

namespace verlconf::sharding {

const std::string& LossOutput(const FunctionSpec& spec) {
  for (const OutputSpec& o : spec.outputs)
    if (o.kind == OutputKind::kScalar) return o.name;
  throw std::logic_error(spec.name + ": no scalar loss output");
}

Result Combine(const FunctionSpec& spec, const Case& full, const ShardedCase& sharded,
               const std::vector<Result>& results) {
  if (results.size() != sharded.calls.size()) throw std::logic_error("Combine: one result per call");
  const std::string& loss_name = LossOutput(spec);
  const double inv_k = 1.0 / static_cast<double>(sharded.dp_size);
  Result out;
  double loss = 0.0;
  for (const std::string& g : spec.grads) out.grads[g] = Array(full.Input(g).shape, full.Input(g).dtype);
  for (size_t c = 0; c < results.size(); ++c) {
    const ShardCall& call = sharded.calls[c];
    const Result& r = results[c];
    loss += r.outputs.at(loss_name)[0];
    for (const std::string& g : spec.grads) {
      const Array& part = r.grads.at(g);
      Array& whole = out.grads[g];
      // Elements per row: the call's row is a prefix of the full row (its horizon).
      const int64_t part_row = part.size() / std::max<int64_t>(1, part.shape.at(0));
      const int64_t whole_row = whole.size() / std::max<int64_t>(1, whole.shape.at(0));
      for (size_t i = 0; i < call.rows.size(); ++i)
        for (int64_t k = 0; k < part_row; ++k)
          whole[call.rows[i] * whole_row + k] += part[static_cast<int64_t>(i) * part_row + k] * inv_k;
    }
  }
  out.outputs[loss_name] = Array::Scalar(loss * inv_k, full.dtype);
  return out;
}

Result RunSharded(const FunctionSpec& spec, const RunFn& impl, const Case& full, const ShardPlan& plan) {
  const ShardedCase sharded = ShardCase(spec, full, plan);
  std::vector<Result> results;
  results.reserve(sharded.calls.size());
  for (const ShardCall& call : sharded.calls) results.push_back(impl(call.input));
  return Combine(spec, full, sharded, results);
}

}  // namespace verlconf::sharding
