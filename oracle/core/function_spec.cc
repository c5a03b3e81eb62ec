#include "oracle/core/function_spec.h"

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

}  // namespace verlconf
