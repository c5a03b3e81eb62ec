#include "oracle/sharding/combine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "oracle/core/errors.h"

namespace verlconf::sharding {

const std::string& LossOutput(const FunctionSpec& spec) {
  for (const OutputSpec& o : spec.outputs)
    if (o.kind == OutputKind::kScalar) return o.name;
  throw std::logic_error(spec.name + ": no scalar loss output");
}

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

void RequireCallResult(const FunctionSpec& spec, const ShardCall& call, const Result& r) {
  const std::string at =
      "rank " + std::to_string(call.rank) + ", micro-batch " + std::to_string(call.micro_batch) + ": ";
  const std::string& loss = LossOutput(spec);
  if (auto it = r.outputs.find(loss); it != r.outputs.end() && it->second.size() != 1)
    throw BadInput(at + "outputs/" + loss + ": " + std::to_string(it->second.size()) + " elements (shape " +
                   ShapeText(it->second.shape) + "); a loss is one number");
  for (const auto& [name, a] : r.grads) {
    const Array* in = std::find(spec.grads.begin(), spec.grads.end(), name) == spec.grads.end()
                          ? nullptr
                          : call.input.OptionalInput(name);
    if (!in) throw BadInput(at + "grads/" + name + ": not a differentiable input of " + spec.name);
    if (a.shape != in->shape || a.size() != in->size())
      throw BadInput(at + "grads/" + name + ": shape " + ShapeText(a.shape) + " where the call's " + name + " is " +
                     ShapeText(in->shape));
  }
}

Result Combine(const FunctionSpec& spec, const Case& full, const ShardedCase& sharded,
               const std::vector<Result>& results) {
  if (results.size() != sharded.calls.size()) throw std::logic_error("Combine: one result per call");
  for (size_t c = 0; c < results.size(); ++c) RequireCallResult(spec, sharded.calls[c], results[c]);
  const std::string& loss_name = LossOutput(spec);
  auto everywhere = [&](bool grads, const std::string& name) {
    for (const Result& r : results)
      if (!(grads ? r.grads : r.outputs).count(name)) return false;
    return true;
  };
  const double inv_k = 1.0 / static_cast<double>(sharded.dp_size);
  Result out;
  double loss = 0.0;
  std::vector<std::string> grads;
  for (const std::string& g : spec.grads)
    if (everywhere(true, g)) {
      grads.push_back(g);
      out.grads[g] = Array(full.Input(g).shape, full.Input(g).dtype);
    }
  for (size_t c = 0; c < results.size(); ++c) {
    const ShardCall& call = sharded.calls[c];
    const Result& r = results[c];
    if (auto it = r.outputs.find(loss_name); it != r.outputs.end()) loss += it->second[0];
    for (const std::string& g : grads) {
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
  if (everywhere(false, loss_name)) out.outputs[loss_name] = Array::Scalar(loss * inv_k, full.dtype);
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
