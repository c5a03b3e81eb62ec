#include "tools/torch_api/verlconf_torch.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "oracle/core/errors.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"

namespace verlconf::torch_api {
namespace {

constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53: int64 codes held exactly as double

std::vector<int64_t> ShapeOf(const at::Tensor& t) {
  const auto sizes = t.sizes();
  return std::vector<int64_t>(sizes.begin(), sizes.end());
}

const FunctionSpec& SpecOrThrow(const std::string& function, const std::string& family) {
  const FunctionSpec* spec = nullptr;
  try {
    spec = FindSpec(function, family);
  } catch (const std::logic_error& e) {
    throw BadInput("function '" + function + "' is ambiguous: pass its family (" + e.what() + ")");
  }
  if (!spec)
    throw BadInput("unknown function '" + function + "'" + (family.empty() ? "" : " in family '" + family + "'") +
                   ": not in verlconf's registry (`conform list` shows every name, spelled as verl spells it)");
  return *spec;
}

std::string ParseKind(const std::string& raised) { return raised.substr(0, raised.find(':')); }

}  // namespace

at::Tensor ToTensor(const Array& a) {
  switch (a.dtype) {
    case DType::kFloat64: {
      at::Tensor t = at::empty(a.shape, at::TensorOptions().dtype(at::kDouble));
      if (!a.data.empty()) std::memcpy(t.data_ptr<double>(), a.data.data(), a.data.size() * sizeof(double));
      return t;
    }
    case DType::kFloat32: {
      at::Tensor t = at::empty(a.shape, at::TensorOptions().dtype(at::kFloat));
      float* p = t.data_ptr<float>();
      for (size_t k = 0; k < a.data.size(); ++k) p[k] = static_cast<float>(a.data[k]);
      return t;
    }
    case DType::kInt64: {
      at::Tensor t = at::empty(a.shape, at::TensorOptions().dtype(at::kLong));
      int64_t* p = t.data_ptr<int64_t>();
      for (size_t k = 0; k < a.data.size(); ++k) p[k] = static_cast<int64_t>(a.data[k]);
      return t;
    }
  }
  throw std::logic_error("ToTensor: unknown dtype");
}

Array FromTensor(const at::Tensor& tensor, const std::string& what) {
  if (!tensor.defined()) throw BadInput(what + ": undefined tensor");
  const at::Tensor t = tensor.detach().to(at::kCPU).contiguous();
  Array a;
  a.shape = ShapeOf(t);
  const size_t n = static_cast<size_t>(t.numel());
  a.data.resize(n);
  switch (t.scalar_type()) {
    case at::kDouble: {
      a.dtype = DType::kFloat64;
      if (n) std::memcpy(a.data.data(), t.data_ptr<double>(), n * sizeof(double));
      break;
    }
    case at::kFloat: {
      a.dtype = DType::kFloat32;
      const float* p = t.data_ptr<float>();
      for (size_t k = 0; k < n; ++k) a.data[k] = p[k];
      break;
    }
    case at::kLong: {
      a.dtype = DType::kInt64;
      const int64_t* p = t.data_ptr<int64_t>();
      for (size_t k = 0; k < n; ++k) {
        if (std::fabs(static_cast<double>(p[k])) > kMaxExactInt)
          throw BadInput(what + ": int64 value " + std::to_string(p[k]) + " at flat index " + std::to_string(k) +
                         " is beyond 2^53 (group codes must be held exactly)");
        a.data[k] = static_cast<double>(p[k]);
      }
      break;
    }
    default:
      throw BadInput(what + ": dtype " + std::string(c10::toString(t.scalar_type())) +
                     " is not supported: verlconf takes float32 or float64 tensors (masks too, as verl does) "
                     "and int64 for group indices");
  }
  return a;
}

TensorMap InputsAsTensors(const Case& c) {
  TensorMap m;
  for (const auto& [name, a] : c.inputs) m.emplace(name, ToTensor(a));
  return m;
}

Case CaseFromTensors(const std::string& function, const TensorMap& inputs,
                     const std::map<std::string, ConfigValue>& config, const std::string& family) {
  const FunctionSpec& spec = SpecOrThrow(function, family);
  Case c;
  c.family = spec.family;
  c.function = spec.name;
  c.name = "from_tensors";
  c.config.set_where(c.Where());
  // The case dtype is that of its float inputs, which must agree (verl runs a case in
  // one precision); int64 is for group indices only, which ValidateCase checks.
  std::optional<DType> dtype;
  std::string first_float;
  for (const auto& [name, t] : inputs) {
    const std::string field = c.Where() + ": inputs/" + name;
    Array a = FromTensor(t, field);
    if (a.dtype != DType::kInt64) {
      if (!dtype) {
        dtype = a.dtype;
        first_float = name;
      } else if (*dtype != a.dtype) {
        throw BadInput(field + ": dtype " + DTypeName(a.dtype) + " but inputs/" + first_float + " is " +
                       DTypeName(*dtype) + " (all float inputs of a case share one dtype)");
      }
    }
    c.inputs.emplace(name, std::move(a));
  }
  c.dtype = dtype.value_or(DType::kFloat64);
  for (const auto& [key, value] : config) c.config.Set(key, value);
  ValidateCase(spec, c);
  return c;
}

Result ResultFromTorch(const TorchResult& r, const std::string& where) {
  Result got;
  for (const auto& [name, t] : r.outputs) got.outputs.emplace(name, FromTensor(t, where + ": outputs/" + name));
  for (const auto& [name, t] : r.grads) got.grads.emplace(name, FromTensor(t, where + ": grads/" + name));
  got.metrics = r.metrics;
  return got;
}

CaseReport CheckAgainstOracle(const std::string& function, const TensorMap& inputs,
                              const std::map<std::string, ConfigValue>& config, const TorchResult& candidate,
                              const std::string& family) {
  const FunctionSpec& spec = SpecOrThrow(function, family);
  const Case c = CaseFromTensors(function, inputs, config, family);
  if (!spec.oracle)
    return CaseReport::NotCompared(c, Outcome::kUnsupported, "the oracle has no entry for " + spec.name);
  // The reference: the oracle's result on the same inputs, as if it were a golden.
  Case reference = c;
  try {
    Result want = spec.oracle(c);
    reference.outputs = std::move(want.outputs);
    reference.grads = std::move(want.grads);
    reference.metrics = std::move(want.metrics);
  } catch (const VerlError& e) {
    reference.expect_error = e.what();
  } catch (const Unsupported& e) {
    return CaseReport::NotCompared(c, Outcome::kUnsupported, std::string("the oracle: ") + e.what());
  }
  if (candidate.raised) return CompareResult(spec, reference, nullptr, candidate.raised);
  // Where decisions are rounding-dependent, CompareResult asks the oracle (the reference
  // side), never the candidate.
  const Result got = ResultFromTorch(candidate, c.Where());
  return CompareResult(spec, reference, &got, std::nullopt);
}

Config WithVerlDefaults(const std::string& function, const Config& config, const std::string& family) {
  const FunctionSpec* spec = FindSpec(function, family);
  if (!spec)
    throw BadInput("unknown function '" + function + "'" + (family.empty() ? "" : " in family '" + family + "'"));
  for (const auto& [key, value] : config.values())
    if (!spec->FindConfigKey(key))
      throw BadInput(spec->family + "/" + spec->name + ": config key '" + key + "' is not one it takes (conform spec " +
                     spec->name + ")");
  Config resolved = config;
  ResolveConfig(*spec, resolved);
  return resolved;
}

CaseReport CheckAgainstGolden(const Case& golden, const CandidateFn& candidate) {
  const FunctionSpec* spec = SpecFor(golden);
  if (!spec)
    throw BadInput(golden.Where() + ": no registry entry for '" + golden.function + "' in family '" + golden.family +
                   "'");
  ValidateCase(*spec, golden);
  TorchResult tr;
  std::optional<std::string> raised;
  try {
    Case storage;
    tr = candidate(InputsAsTensors(golden), Resolved(*spec, golden, storage).config);
  } catch (const VerlError& e) {
    raised = e.what();
  } catch (const Unsupported& e) {
    return CaseReport::NotCompared(golden, Outcome::kUnsupported, e.what());
  }
  if (!raised && tr.raised) {
    if (ParseKind(*tr.raised).empty())
      throw BadInput(golden.Where() + ": TorchResult::raised must read '<Kind>: <message>', got '" + *tr.raised + "'");
    raised = tr.raised;
  }
  CaseReport r;
  if (raised) {
    r = CompareResult(*spec, golden, nullptr, raised);
  } else {
    Result got = ResultFromTorch(tr, golden.Where());
    // The candidate's own autograd, as the capture took verl's (tools/python/verlconf/projections.py).
    for (const auto& [output, p] : golden.projections) {
      auto out = tr.outputs.find(output);
      if (out == tr.outputs.end()) continue;
      for (const auto& [input, leaf] : tr.vjp_leaves) {
        const std::string field = output + "/" + input;
        at::Tensor g;
        if (out->second.requires_grad()) {
          const at::Tensor obj = (ToTensor(p).to(out->second.scalar_type()) * out->second).sum();
          g = torch::autograd::grad({obj}, {leaf}, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                    /*allow_unused=*/true)[0];
        }
        got.vjps.emplace(field, g.defined() ? FromTensor(g, golden.Where() + ": vjps/" + field)
                                            : FromTensor(at::zeros_like(leaf), golden.Where() + ": vjps/" + field));
      }
    }
    r = CompareResult(*spec, golden, &got, std::nullopt);
  }
  return r;
}

std::vector<CaseReport> CheckAgainstGoldenSet(const fixtures::GoldenSet& set, const std::string& function,
                                              const CandidateFn& candidate, const std::string& family) {
  const FunctionSpec& spec = SpecOrThrow(function, family);
  std::vector<CaseReport> reports;
  for (const auto& [key, c] : set.index) {
    const auto& [fam, fn, name] = key;
    if (fam == spec.family && fn == spec.name) reports.push_back(CheckAgainstGolden(*c, candidate));
  }
  if (reports.empty())
    throw BadInput(set.dir + ": no golden cases for '" + spec.name + "' (family " + spec.family + ")");
  return reports;
}

std::string FormatReports(const std::vector<CaseReport>& reports) {
  std::ostringstream o;
  std::map<Outcome, int> counts;
  for (const CaseReport& r : reports) {
    ++counts[r.outcome];
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.3g", r.worst_rel);
    std::string label = r.function + "/" + r.case_name;
    o << OutcomeName(r.outcome)
      << std::string(std::max<int>(1, 12 - static_cast<int>(std::strlen(OutcomeName(r.outcome)))), ' ') << label
      << std::string(std::max<int>(1, 48 - static_cast<int>(label.size())), ' ') << "[" << DTypeName(r.dtype)
      << "]  worst rel " << worst;
    if (!r.detail.empty()) o << "  (" << r.detail << ")";
    o << "\n";
  }
  for (const CaseReport& r : reports)
    if (r.outcome != Outcome::kPassed) o << "\n" << r.Describe() << "\n";
  o << reports.size() << " cases:";
  const char* sep = " ";
  for (Outcome oc :
       {Outcome::kPassed, Outcome::kFailed, Outcome::kMistrusted, Outcome::kUnsupported, Outcome::kSkipped}) {
    o << sep << counts[oc] << " " << OutcomeName(oc);
    sep = ", ";
  }
  o << "\n";
  return o.str();
}

}  // namespace verlconf::torch_api
