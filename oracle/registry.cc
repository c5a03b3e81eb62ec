#include "oracle/registry.h"

#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "oracle/advantage/spec.h"
#include "oracle/aggregation/spec.h"
#include "oracle/core/errors.h"
#include "oracle/core/implementations.h"
#include "oracle/core/json.h"
#include "oracle/kl/spec.h"
#include "oracle/policy_loss/spec.h"
#include "oracle/reward_kl/spec.h"
#include "oracle/rollout_correction/spec.h"
#include "oracle/torch_functional/spec.h"

namespace verlconf {

namespace {

// A spec's VJP declaration must cover every tensor output: either verl passes no
// gradient through it (zero) or the spec computes it.
void CheckVjpDeclaration(const FunctionSpec& s) {
  const std::string key = s.family + "/" + s.name;
  if (s.vjp_inputs.empty()) {
    if (s.vjp || !s.vjp_zero_outputs.empty()) throw std::logic_error(key + ": VJP outputs without vjp_inputs");
    return;
  }
  for (const auto& in : s.vjp_inputs)
    if (!s.FindInput(in)) throw std::logic_error(key + ": vjp input '" + in + "' is not an input");
  for (const auto& z : s.vjp_zero_outputs) {
    const OutputSpec* o = s.FindOutput(z);
    if (!o || o->kind != OutputKind::kTensor)
      throw std::logic_error(key + ": zero-VJP '" + z + "' is not a tensor output");
  }
  bool any_tensor = false;
  for (const auto& o : s.outputs) {
    if (o.kind != OutputKind::kTensor) continue;
    any_tensor = true;
    if (!s.VjpIsZero(o.name) && !s.vjp) throw std::logic_error(key + ": no VJP for tensor output '" + o.name + "'");
  }
  if (!any_tensor) throw std::logic_error(key + ": vjp_inputs but no tensor output");
}

// The oracle with its VJPs: for every output the case has a projection of, the spec's
// analytic VJP, or zeros where verl detaches. Without projections (a property-test
// case, CheckAgainstOracle) the result carries no VJPs.
RunFn WithVjps(const FunctionSpec& s) {
  return [inner = s.oracle, vjp = s.vjp, spec_outputs = s.outputs, inputs = s.vjp_inputs,
          zero = s.vjp_zero_outputs](const Case& c) {
    Result r = inner(c);
    if (c.projections.empty()) return r;
    for (const auto& [name, p] : c.projections) {
      bool tensor = false;
      for (const auto& o : spec_outputs) tensor |= o.name == name && o.kind == OutputKind::kTensor;
      if (!tensor) throw BadInput(c.Where() + ": projections/" + name + ": not a tensor output of " + c.function);
      auto out = r.outputs.find(name);
      if (out != r.outputs.end() && out->second.shape != p.shape)
        throw BadInput(c.Where() + ": projections/" + name + ": shape " + p.ShapeString() +
                       " differs from the output's " + out->second.ShapeString());
    }
    if (vjp) r.vjps = vjp(c, r);
    for (const auto& z : zero) {
      if (!c.projections.count(z) || !r.outputs.count(z)) continue;
      for (const auto& in : inputs) {
        const Array& x = c.Input(in);
        r.vjps[z + "/" + in] = Array(x.shape, x.dtype);
      }
    }
    return r;
  };
}

// Rules about a spec's config keys: each declared once; a key verl ignores (fixed_config)
// is a declared key; absent_is_none only where verl's default is not None itself.
void CheckConfigDeclaration(const FunctionSpec& s) {
  const std::string key = s.family + "/" + s.name;
  std::set<std::string> names;
  for (const auto& k : s.config) {
    if (!names.insert(k.name).second) throw std::logic_error(key + ": config key '" + k.name + "' declared twice");
    if (k.absent_is_none && std::holds_alternative<std::monostate>(k.verl_default))
      throw std::logic_error(key + ": config key '" + k.name + "' is absent_is_none with a None default");
  }
  for (const auto& [k, v] : s.fixed_config)
    if (!names.count(k)) throw std::logic_error(key + ": fixed_config key '" + k + "' is not a config key");
}

// Every function of the spec that reads a case's config sees it resolved against the
// spec (ResolveConfig): verl's defaults come from the ConfigKeys alone, and golden,
// property-test and candidate cases reach every reader the same way. The caller's case
// is never altered (a candidate's stored config stays as it was written).
void ResolveBeforeReading(FunctionSpec& s) {
  auto key = std::make_shared<FunctionSpec>();
  key->name = s.name;
  key->family = s.family;
  key->config = s.config;
  auto with = [key](const Case& c, Case& storage) -> const Case& { return Resolved(*key, c, storage); };
  if (s.oracle)
    s.oracle = [inner = s.oracle, with](const Case& c) {
      Case storage;
      return inner(with(c, storage));
    };
  if (s.vjp)
    s.vjp = [inner = s.vjp, with](const Case& c, const Result& r) {
      Case storage;
      return inner(with(c, storage), r);
    };
  if (s.check_config)
    s.check_config = [inner = s.check_config, with](const Case& c) {
      Case storage;
      inner(with(c, storage));
    };
  if (s.variants)
    s.variants = [inner = s.variants, with](const Case& c) {
      Case storage;
      return inner(with(c, storage));
    };
  if (s.mistrust)
    s.mistrust = [inner = s.mistrust, with](const Case& c) {
      Case storage;
      return inner(with(c, storage));
    };
  if (s.float32_condition)
    s.float32_condition = [inner = s.float32_condition, with](const Case& c) {
      Case storage;
      return inner(with(c, storage));
    };
  if (s.case_tolerance)
    s.case_tolerance = [inner = s.case_tolerance, with](const Case& c, const std::string& field) {
      Case storage;
      return inner(with(c, storage), field);
    };
  if (s.stop_gradient_objective)
    s.stop_gradient_objective = [inner = s.stop_gradient_objective, with](const Case& base, const Case& at) {
      Case b, a;
      return inner(with(base, b), with(at, a));
    };
  // Generated cases carry their registry key, so they find their way back, and come
  // resolved: property tests read their config as the oracle does.
  if (s.generate)
    s.generate = [gen = s.generate, key](const GenParams& p) {
      Case c = gen(p);
      c.family = key->family;
      c.function = key->name;
      ResolveConfig(*key, c.config);
      return c;
    };
}

}  // namespace

static std::vector<FunctionSpec> Build() {
  std::vector<FunctionSpec> all;
  AddAdvantageSpecs(all);
  AddAdvantageEstimatorSpecs(all);
  AddPolicyLossSpecs(all);
  AddPolicyLossVariantSpecs(all);
  AddPolicyLossCovSpecs(all);
  AddValueLossSpecs(all);
  AddPolicyLossLegacySpecs(all);
  AddActorKlLossSpecs(all);
  AddEntropyLossSpecs(all);
  AddBypassModeSpecs(all);
  AddAggregationSpecs(all);
  AddKlSpecs(all);
  AddTorchFunctionalSpecs(all);
  AddRewardKlSpecs(all);
  AddRolloutCorrectionSpecs(all);
  AddRolloutPresetSpecs(all);
  std::set<std::pair<std::string, std::string>> seen;
  for (auto& s : all) {
    if (!seen.insert({s.family, s.name}).second)
      throw std::logic_error("duplicate registry key: " + s.family + "/" + s.name);
    ValidateTolerances(s);
    CheckVjpDeclaration(s);
    CheckConfigDeclaration(s);
    if (s.oracle && !s.vjp_inputs.empty()) s.oracle = WithVjps(s);
    ResolveBeforeReading(s);
  }
  for (const auto& s : all) {
    if (!s.straight_through) continue;
    for (const std::string* n : {&s.straight_through->value_of, &s.straight_through->gradient_of}) {
      bool found = false;
      for (const auto& t : all) found |= t.family == s.family && t.name == *n;
      if (!found)
        throw std::logic_error(s.family + "/" + s.name + ": straight_through names '" + *n +
                               "', not an entry of its family");
    }
  }
  FillImplementationSlots(all, TakeImplementationRegistrations());
  return all;
}

const std::vector<FunctionSpec>& Registry() {
  static const std::vector<FunctionSpec> registry = Build();
  return registry;
}

const FunctionSpec* FindSpec(const std::string& name, const std::string& family) {
  const FunctionSpec* found = nullptr;
  for (const auto& s : Registry()) {
    if (s.name != name || (!family.empty() && s.family != family)) continue;
    if (found) throw std::logic_error("registry name '" + name + "' is ambiguous without a family");
    found = &s;
  }
  return found;
}

const FunctionSpec* SpecFor(const Case& c) { return FindSpec(c.function, c.family); }

static void WriteConfigValue(JsonWriter& j, const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v))
    j.Null();
  else if (auto* i = std::get_if<int64_t>(&v))
    j.Int(*i);
  else if (auto* d = std::get_if<double>(&v))
    j.Number(*d);
  else
    j.String(std::get<std::string>(v));
}

std::string RegistryJson(const std::function<bool(const FunctionSpec&)>& pick) {
  JsonWriter j;
  j.BeginObject();
  j.Key("functions").BeginArray();
  for (const auto& s : Registry()) {
    if (pick && !pick(s)) continue;
    j.BeginObject();
    j.Key("name").String(s.name);
    j.Key("family").String(s.family);
    j.Key("verl_symbol").String(s.verl_symbol);
    j.Key("inputs").BeginArray();
    for (const auto& in : s.inputs) {
      j.BeginObject();
      j.Key("name").String(in.name);
      j.Key("role").String(RoleName(in.role));
      j.Key("dtype").String(in.role == Role::kGroupIndex ? "int64" : "case");
      j.Key("mask").Bool(in.is_mask);
      j.Key("optional").Bool(in.optional);
      if (!in.doc.empty()) j.Key("doc").String(in.doc);
      if (in.decides) j.Key("decides").Bool(true);
      j.EndObject();
    }
    j.EndArray();
    j.Key("config").BeginArray();
    for (const auto& c : s.config) {
      j.BeginObject();
      j.Key("name").String(c.name);
      j.Key("type").String(c.type);
      j.Key("verl_default");
      WriteConfigValue(j, c.verl_default);
      j.Key("doc").String(c.doc);
      if (!c.choices.empty()) {
        j.Key("choices").BeginArray();
        for (const auto& ch : c.choices) j.String(ch);
        j.EndArray();
      }
      if (c.absent_is_none) j.Key("absent_is_none").Bool(true);
      j.EndObject();
    }
    j.EndArray();
    j.Key("outputs").BeginArray();
    for (const auto& o : s.outputs) {
      j.BeginObject();
      j.Key("name").String(o.name);
      j.Key("kind").String(o.kind == OutputKind::kScalar ? "scalar" : "tensor");
      j.Key("discrete").Bool(o.discrete);
      j.EndObject();
    }
    j.EndArray();
    if (!s.dispatch_kwargs.empty()) {
      j.Key("verl_dispatch_kwargs").BeginArray();
      for (const auto& k : s.dispatch_kwargs) j.String(k);
      j.EndArray();
    }
    if (!s.required_variants.empty()) {
      j.Key("required_variants").BeginArray();
      for (const auto& v : s.required_variants) j.String(v);
      j.EndArray();
    }
    if (!s.preset_expansion.empty()) {
      j.Key("preset_expansion").BeginObject();
      for (const auto& [k, v] : s.preset_expansion) {
        j.Key(k);
        WriteConfigValue(j, v);
      }
      j.EndObject();
    }
    if (!s.fixed_config.empty()) {
      j.Key("fixed_config").BeginObject();
      for (const auto& [k, v] : s.fixed_config) {
        j.Key(k);
        WriteConfigValue(j, v);
      }
      j.EndObject();
    }
    if (s.straight_through) {
      j.Key("straight_through").BeginObject();
      j.Key("value_of").String(s.straight_through->value_of);
      j.Key("gradient_of").String(s.straight_through->gradient_of);
      j.EndObject();
    }
    j.Key("metrics").BeginArray();
    for (const auto& m : s.metrics) j.String(m);
    j.EndArray();
    j.Key("grads").BeginArray();
    for (const auto& g : s.grads) j.String(g);
    j.EndArray();
    j.Key("vjp_inputs").BeginArray();
    for (const auto& g : s.vjp_inputs) j.String(g);
    j.EndArray();
    // "<output>/<input>": the vjps/ fields a case of this function carries, and of
    // those the ones that are exactly zero (verl passes no gradient through the output).
    j.Key("vjps").BeginArray();
    for (const auto& f : s.VjpFields()) j.String(f);
    j.EndArray();
    j.Key("vjp_zero").BeginArray();
    for (const auto& f : s.VjpFields())
      if (s.VjpIsZero(f.substr(0, f.find('/')))) j.String(f);
    j.EndArray();
    j.Key("oracle").Bool(static_cast<bool>(s.oracle));
    // One CUDA source fills both CUDA slots; a build without nvcc has only cuda-host.
    j.Key("cuda").Bool(static_cast<bool>(s.cuda) || static_cast<bool>(s.cuda_host));
    j.Key("notes").String(s.notes);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str();
}

}  // namespace verlconf
