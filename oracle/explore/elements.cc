#include "oracle/explore/elements.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "oracle/judge/compare.h"

namespace verlconf::explore {
namespace {

const Array* Groups(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (in.role == Role::kGroupIndex)
      if (const Array* a = c.OptionalInput(in.name)) return a;
  return nullptr;
}

std::string Status(const FunctionSpec& spec, const Case& golden, const Array& want, int64_t flat,
                   const Array* boundary) {
  std::string s;
  const auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  const Array* mask = TokenMask(spec, golden);
  const Array* groups = Groups(spec, golden);
  int64_t row = -1;
  if (want.rank() >= 1 && mask && mask->rank() == 2 && want.shape[0] == mask->rows())
    row = flat / (want.size() / want.shape[0]);
  if (row >= 0) add("row " + std::to_string(row));
  if (row >= 0 && groups && row < groups->size()) add("group " + std::to_string(static_cast<int64_t>((*groups)[row])));
  if (mask && want.shape == mask->shape) {
    add((*mask)[flat] != 0 ? "valid token" : "masked token");
    if (auto lr = LogRatio(spec, golden, flat)) add("ratio " + ShortNumber(std::exp(*lr)));
  } else if (mask && want.rank() == 1 && row >= 0) {
    double live = 0;
    for (int64_t j = 0; j < mask->cols(); ++j) live += mask->at(row, j);
    add(live > 0 ? std::to_string(static_cast<int64_t>(live)) + " valid tokens in the row" : "a fully masked row");
  }
  if (boundary && boundary->shape == want.shape && (*boundary)[flat] != 0) add("at a decision boundary");
  return s;
}

// How recent a policy's log-probabilities are, by the input's name: a ratio is always the
// newer policy over the older (verl's ratio is exp(log_prob - old_log_prob), its IS weight
// exp(old_log_prob - rollout_log_prob)), whichever of the two decides the thresholds.
int Recency(const std::string& name) {
  if (name.rfind("ref", 0) == 0) return 0;
  if (name.find("rollout") != std::string::npos) return 1;
  if (name.rfind("old", 0) == 0) return 2;
  return 3;
}

}  // namespace

const Array* TokenMask(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (in.is_mask && in.role == Role::kTokens)
      if (const Array* a = c.OptionalInput(in.name)) return a;
  return nullptr;
}

std::optional<double> LogRatio(const FunctionSpec& spec, const Case& c, int64_t flat) {
  const InputSpec* d = nullptr;
  for (const auto& in : spec.inputs)
    if (in.decides && c.OptionalInput(in.name)) {
      d = &in;
      break;
    }
  if (!d) return std::nullopt;
  const Array& x = c.inputs.at(d->name);
  if (flat >= x.size()) return std::nullopt;
  if (d->name == "log_ratio") return x[flat];
  for (const auto& in : spec.inputs) {
    if (in.name == d->name || in.role != Role::kTokens) continue;
    if (in.name.find("log_prob") == std::string::npos && in.name.find("logprob") == std::string::npos) continue;
    const Array* p = c.OptionalInput(in.name);
    if (p && p->shape == x.shape) {
      const double diff = x[flat] - (*p)[flat];
      return Recency(d->name) >= Recency(in.name) ? diff : -diff;
    }
  }
  return std::nullopt;
}

const Array* FieldArray(const Case& c, const std::string& field, Array& metric_storage) {
  const size_t slash = field.find('/');
  if (slash == std::string::npos) return nullptr;
  const std::string group = field.substr(0, slash), name = field.substr(slash + 1);
  const std::map<std::string, Array>* m = group == "outputs" ? &c.outputs
                                          : group == "grads" ? &c.grads
                                          : group == "vjps"  ? &c.vjps
                                                             : nullptr;
  if (m) {
    auto it = m->find(name);
    return it == m->end() ? nullptr : &it->second;
  }
  if (group != "metrics") return nullptr;
  auto it = c.metrics.find(name);
  if (it == c.metrics.end()) return nullptr;
  metric_storage = Array::Scalar(it->second);
  return &metric_storage;
}

std::vector<ElementDiff> DifferingElements(const FunctionSpec& spec, const Case& golden, const Case& got,
                                           const std::string& field, const Tolerance& tol, size_t limit,
                                           const Array* boundary) {
  std::vector<ElementDiff> out;
  Array ws, gs;
  const Array* want = FieldArray(golden, field, ws);
  const Array* have = FieldArray(got, field, gs);
  if (!want || !have || want->shape != have->shape) return out;
  Array computed;
  if (!boundary) {
    try {
      computed = spec.oracle(golden).boundary;
    } catch (const std::exception&) {
      computed = Array();
    }
    boundary = &computed;
  }
  for (int64_t k = 0; k < want->size() && out.size() < limit; ++k) {
    const double e = ErrorRatio((*have)[k], (*want)[k], tol, k);
    if (e <= 1.0) continue;
    ElementDiff d;
    d.index = k;
    d.at = want->rank() == 0 ? "()" : FormatIndex(k, want->shape);
    d.got = (*have)[k];
    d.want = (*want)[k];
    d.err_tol = e;
    d.status = Status(spec, golden, *want, k, boundary->size() ? boundary : nullptr);
    out.push_back(d);
  }
  return out;
}

}  // namespace verlconf::explore
