#include "oracle/registry.h"

#include <set>
#include <sstream>
#include <stdexcept>

#include "oracle/check.h"
#include "oracle/json.h"

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

const InputSpec* FunctionSpec::FindInput(const std::string& n) const {
  for (const auto& i : inputs)
    if (i.name == n) return &i;
  return nullptr;
}

const OutputSpec* FunctionSpec::FindOutput(const std::string& n) const {
  for (const auto& o : outputs)
    if (o.name == n) return &o;
  return nullptr;
}

static std::vector<FunctionSpec> Build() {
  std::vector<FunctionSpec> all;
  AddAdvantageSpecs(all);
  AddAdvantageEstimatorSpecs(all);
  AddPolicyLossSpecs(all);
  AddPolicyLossFamilySpecs(all);
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
    if (!seen.insert({s.family, s.name}).second) throw std::logic_error("duplicate registry key: " + s.family + "/" + s.name);
    ValidateTolerances(s);
    // Generated cases carry their registry key, so they find their way back.
    if (s.generate)
      s.generate = [gen = s.generate, family = s.family, name = s.name](const GenParams& p) {
        Case c = gen(p);
        c.family = family;
        c.function = name;
        return c;
      };
  }
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
  if (std::holds_alternative<std::monostate>(v)) j.Null();
  else if (auto* i = std::get_if<int64_t>(&v)) j.Int(*i);
  else if (auto* d = std::get_if<double>(&v)) j.Number(*d);
  else j.String(std::get<std::string>(v));
}

std::string RegistryJson() {
  JsonWriter j;
  j.BeginObject();
  j.Key("functions").BeginArray();
  for (const auto& s : Registry()) {
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
    j.Key("metrics").BeginArray();
    for (const auto& m : s.metrics) j.String(m);
    j.EndArray();
    j.Key("grads").BeginArray();
    for (const auto& g : s.grads) j.String(g);
    j.EndArray();
    j.Key("oracle").Bool(static_cast<bool>(s.oracle));
    j.Key("cuda").Bool(s.cuda);
    j.Key("notes").String(s.notes);
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
  return j.str();
}

}  // namespace verlconf
