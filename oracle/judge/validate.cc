#include "oracle/judge/validate.h"

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"

namespace verlconf {
namespace {

[[noreturn]] void Fail(const Case& c, const std::string& field, const std::string& what) {
  throw BadInput(c.Where() + ": " + field + ": " + what);
}

}  // namespace

void ValidateStructure(const FunctionSpec& spec, const Case& c) {
  for (const auto& [name, a] : c.inputs)
    if (!spec.FindInput(name)) Fail(c, "inputs/" + name, "not an input of '" + spec.name + "'");
  for (const auto& [key, v] : c.config.values()) {
    const ConfigKey* known = nullptr;
    for (const auto& k : spec.config)
      if (k.name == key) known = &k;
    if (!known) Fail(c, "cfg." + key, "not a config key of '" + spec.name + "'");
    const auto* s = std::get_if<std::string>(&v);
    if (s && !known->choices.empty() &&
        std::find(known->choices.begin(), known->choices.end(), *s) == known->choices.end()) {
      std::string all;
      for (const auto& ch : known->choices) all += (all.empty() ? "" : ", ") + ch;
      Fail(c, "cfg." + key, "'" + *s + "' is not one of verl's names (" + all + ")");
    }
  }
  int64_t batch = -1, tokens = -1, components = -1;
  auto expect = [&](int64_t& slot, int64_t got, const std::string& field, const char* what) {
    if (slot < 0)
      slot = got;
    else if (slot != got)
      Fail(c, field,
           std::string(what) + " is " + std::to_string(got) + " but other inputs have " + std::to_string(slot));
  };
  for (const InputSpec& in : spec.inputs) {
    const std::string field = "inputs/" + in.name;
    const Array* a = c.OptionalInput(in.name);
    if (!a) {
      if (in.optional) continue;
      Fail(c, field, "missing dataset");
    }
    switch (in.role) {
      case Role::kTokens:
        if (a->rank() != 2) Fail(c, field, "expected rank 2 (B, T), got shape " + a->ShapeString());
        expect(batch, a->shape[0], field, "B");
        expect(tokens, a->shape[1], field, "T");
        break;
      case Role::kSequences:
      case Role::kGroupIndex:
        if (a->rank() != 1) Fail(c, field, "expected rank 1 (B,), got shape " + a->ShapeString());
        expect(batch, a->shape[0], field, "B");
        break;
      case Role::kScalar:
        if (a->rank() != 0) Fail(c, field, "expected a scalar, got shape " + a->ShapeString());
        break;
      case Role::kComponents:
        if (a->rank() != 2) Fail(c, field, "expected rank 2 (B, K), got shape " + a->ShapeString());
        expect(batch, a->shape[0], field, "B");
        expect(components, a->shape[1], field, "K");
        if (a->shape[1] == 0) Fail(c, field, "no reward components (K = 0)");
        break;
      case Role::kVocabLogits:
        if (a->rank() != 3) Fail(c, field, "expected rank 3 (B, T, V), got shape " + a->ShapeString());
        expect(batch, a->shape[0], field, "B");
        expect(tokens, a->shape[1], field, "T");
        if (a->shape[2] == 0) Fail(c, field, "empty vocabulary (V = 0)");
        break;
      case Role::kComponentWeights:
        if (a->rank() != 1) Fail(c, field, "expected rank 1 (K,), got shape " + a->ShapeString());
        expect(components, a->shape[0], field, "K");
        break;
    }
    if (in.role == Role::kGroupIndex) {
      if (a->dtype != DType::kInt64)
        Fail(c, field, std::string("expected int64 group codes, got ") + DTypeName(a->dtype));
      for (int64_t k = 0; k < a->size(); ++k)
        if ((*a)[k] < 0) Fail(c, field, "negative group code at " + std::to_string(k));
      continue;
    }
    if (a->dtype != c.dtype)
      Fail(c, field, std::string("dtype ") + DTypeName(a->dtype) + " but the case dtype is " + DTypeName(c.dtype));
    for (int64_t k = 0; k < a->size(); ++k) {
      const double v = (*a)[k];
      if (!std::isfinite(v))
        Fail(c, field, "non-finite value " + std::to_string(v) + " at flat index " + std::to_string(k));
      if (in.is_mask && v != 0.0 && v != 1.0)
        Fail(c, field, "mask value " + std::to_string(v) + " at flat index " + std::to_string(k) + " is not 0 or 1");
    }
  }
  if (batch == 0) Fail(c, "inputs", "empty batch (B = 0)");
  if (tokens == 0) Fail(c, "inputs", "zero-length responses (T = 0)");
  // Stop-gradient fields: a projection per tensor output, a VJP per (output, input)
  // the spec declares, each shaped like what it projects or differentiates.
  const std::vector<std::string> vjp_fields = spec.VjpFields();
  for (const auto& [name, p] : c.projections) {
    const OutputSpec* o = spec.FindOutput(name);
    if (!o || o->kind != OutputKind::kTensor || spec.vjp_inputs.empty())
      Fail(c, "projections/" + name, "'" + spec.name + "' has no differentiable tensor output of that name");
    if (p.dtype != c.dtype)
      Fail(c, "projections/" + name,
           std::string("dtype ") + DTypeName(p.dtype) + " but the case dtype is " + DTypeName(c.dtype));
    for (int64_t k = 0; k < p.size(); ++k)
      if (!std::isfinite(p[k])) Fail(c, "projections/" + name, "non-finite value at flat index " + std::to_string(k));
  }
  for (const auto& [name, v] : c.vjps) {
    if (std::find(vjp_fields.begin(), vjp_fields.end(), name) == vjp_fields.end())
      Fail(c, "vjps/" + name, "not an <output>/<input> pair of '" + spec.name + "' (conform spec --json: vjps)");
    if (!c.projections.count(name.substr(0, name.find('/'))))
      Fail(c, "vjps/" + name, "no projections/" + name.substr(0, name.find('/')) + " it was taken of");
    const Array* in = c.OptionalInput(name.substr(name.find('/') + 1));
    if (in && in->shape != v.shape)
      Fail(c, "vjps/" + name, "shape " + v.ShapeString() + " but the input's is " + in->ShapeString());
  }
}

void ValidateCase(const FunctionSpec& spec, const Case& c) {
  ValidateStructure(spec, c);
  // After the structural checks, so that a config check may read the inputs safely.
  if (spec.check_config && !c.expect_error) spec.check_config(c);
}

void ValidateGolden(const FunctionSpec& spec, const Case& c, const std::string& verl_version) {
  if (verl_version == kOracleVerlVersion)
    ValidateCase(spec, c);
  else
    ValidateStructure(spec, c);
}

}  // namespace verlconf
