#include "oracle/core/function_spec.h"

#include <stdexcept>

namespace verlconf {

const char* RoleName(Role r) {
  switch (r) {
    case Role::kTokens: return "tokens";
    case Role::kSequences: return "sequences";
    case Role::kGroupIndex: return "group_index";
    case Role::kScalar: return "scalar";
    case Role::kComponents: return "components";
    case Role::kComponentWeights: return "component_weights";
    case Role::kVocabLogits: return "vocab_logits";
  }
  return "?";
}

const char* ImplName(Impl impl) {
  switch (impl) {
    case Impl::kOracle: return "oracle";
    case Impl::kCuda: return "cuda";
    case Impl::kCudaHost: return "cuda-host";
  }
  return "?";
}

std::optional<DType> ImplDType(Impl impl) {
  if (impl == Impl::kOracle) return std::nullopt;
  return DType::kFloat32;
}

std::optional<Impl> ParseImpl(const std::string& text) {
  for (Impl impl : kImpls)
    if (text == ImplName(impl)) return impl;
  return std::nullopt;
}

const RunFn* FunctionSpec::Implementation(Impl impl) const {
  const RunFn* slot = nullptr;
  switch (impl) {
    case Impl::kOracle: slot = &oracle; break;
    case Impl::kCuda: slot = &cuda; break;
    case Impl::kCudaHost: slot = &cuda_host; break;
  }
  return slot && *slot ? slot : nullptr;
}

const InputSpec* FunctionSpec::FindInput(const std::string& n) const {
  for (const auto& i : inputs)
    if (i.name == n) return &i;
  return nullptr;
}

const ConfigKey* FunctionSpec::FindConfigKey(const std::string& n) const {
  for (const auto& k : config)
    if (k.name == n) return &k;
  return nullptr;
}

const ConfigValue* FunctionSpec::FixedConfig(const std::string& key) const {
  for (const auto& [k, v] : fixed_config)
    if (k == key) return &v;
  return nullptr;
}

const OutputSpec* FunctionSpec::FindOutput(const std::string& n) const {
  for (const auto& o : outputs)
    if (o.name == n) return &o;
  return nullptr;
}

std::vector<std::string> FunctionSpec::VjpFields() const {
  std::vector<std::string> out;
  for (const auto& o : outputs)
    if (o.kind == OutputKind::kTensor)
      for (const auto& in : vjp_inputs) out.push_back(o.name + "/" + in);
  return out;
}

bool FunctionSpec::VjpIsZero(const std::string& output) const {
  for (const auto& z : vjp_zero_outputs)
    if (z == output) return true;
  return false;
}

void ResolveConfig(const FunctionSpec& spec, Config& config) {
  for (const ConfigKey& k : spec.config) {
    const bool none = !config.Has(k.name);
    if (!none) continue;
    config.Set(k.name, k.absent_is_none ? ConfigValue{} : k.verl_default);
  }
  config.set_resolved_for(spec.family + "/" + spec.name);
}

const Case& Resolved(const FunctionSpec& spec, const Case& c, Case& storage) {
  if (c.config.resolved_for() == spec.family + "/" + spec.name) return c;
  storage = c;
  ResolveConfig(spec, storage.config);
  return storage;
}

void ValidateTolerances(const FunctionSpec& spec) {
  for (const auto& o : spec.tolerances) {
    const Tolerance d = DefaultTolerance(o.dtype);
    const std::string where =
        spec.family + "/" + spec.name + " tolerance for " + o.field + " [" + DTypeName(o.dtype) + "]";
    if (o.reason.empty()) throw std::logic_error(where + ": an override must say why");
    if (!(o.rtol >= d.rtol) || !(o.atol >= d.atol))
      throw std::logic_error(where + ": rtol=" + std::to_string(o.rtol) + " atol=" + std::to_string(o.atol) +
                             " is tighter than the default (rtol=" + std::to_string(d.rtol) +
                             " atol=" + std::to_string(d.atol) + "); overrides may only loosen");
    for (const auto& p : spec.tolerances)
      if (&p != &o && p.field == o.field && p.dtype == o.dtype) throw std::logic_error(where + ": given twice");
  }
}

}  // namespace verlconf
