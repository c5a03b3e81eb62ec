// verl's defaults come from the registry alone: a case's config is completed from its
// spec's ConfigKeys before any reader runs, so that a key left out reads exactly as the
// key set to its verl_default. If a reader carried a default of its own that differs
// from the spec's, leaving the key out would change the result. A reader asking for a
// key its spec does not declare is a spec bug (std::logic_error), and a key whose None
// has a meaning of its own (absent_is_none) stays None when left out.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <typeinfo>

#include "oracle/core/errors.h"
#include "oracle/registry.h"

namespace verlconf {
namespace {

// What running a case gives: the result, or the kind and message of what it raised.
struct Outcome {
  Result result;
  std::string raised;
};

Outcome RunCase(const FunctionSpec& spec, const Case& c) {
  Outcome o;
  try {
    o.result = spec.oracle(c);
  } catch (const VerlError& e) {
    o.raised = std::string("VerlError: ") + e.what();
  } catch (const BadInput& e) {
    o.raised = std::string("BadInput: ") + e.what();
  } catch (const Unsupported& e) {
    o.raised = std::string("Unsupported: ") + e.what();
  }
  return o;
}

bool SameArray(const Array& a, const Array& b) {
  if (a.shape != b.shape || a.dtype != b.dtype) return false;
  for (int64_t k = 0; k < a.size(); ++k)
    if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) return false;
  return true;
}

bool SameArrays(const std::map<std::string, Array>& a, const std::map<std::string, Array>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, x] : a) {
    auto it = b.find(name);
    if (it == b.end() || !SameArray(x, it->second)) return false;
  }
  return true;
}

bool Same(const Outcome& a, const Outcome& b) {
  if (a.raised != b.raised) return false;
  if (!a.raised.empty()) return true;
  if (a.result.metrics.size() != b.result.metrics.size()) return false;
  for (const auto& [name, v] : a.result.metrics) {
    auto it = b.result.metrics.find(name);
    if (it == b.result.metrics.end() || !(v == it->second || (std::isnan(v) && std::isnan(it->second)))) return false;
  }
  return SameArrays(a.result.outputs, b.result.outputs) && SameArrays(a.result.grads, b.result.grads) &&
         SameArray(a.result.boundary, b.result.boundary);
}

TEST(RegistryDefaults, LeavingAKeyOutIsVerlsDefault) {
  int checked = 0;
  for (const FunctionSpec& spec : Registry()) {
    if (!spec.generate || !spec.oracle) continue;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      GenParams p;
      p.seed = seed;
      p.dtype = seed % 2 ? DType::kFloat64 : DType::kFloat32;
      const Case c = spec.generate(p);
      for (const ConfigKey& k : spec.config) {
        if (std::holds_alternative<std::monostate>(k.verl_default) || k.absent_is_none) continue;
        Case explicit_default = c, left_out = c;
        explicit_default.config.Set(k.name, k.verl_default);
        left_out.config.Erase(k.name);
        EXPECT_TRUE(Same(RunCase(spec, explicit_default), RunCase(spec, left_out)))
            << spec.family << "/" << spec.name << " seed " << seed << ": cfg." << k.name
            << " left out does not read as its verl_default";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// clip_ratio_low / clip_ratio_high: None = clip_ratio (verl's own rule), not the
// dataclass default 0.2.
TEST(RegistryDefaults, AbsentIsNoneKeysStayNone) {
  const FunctionSpec* vanilla = FindSpec("vanilla", "policy_loss");
  ASSERT_NE(vanilla, nullptr);
  ASSERT_TRUE(vanilla->FindConfigKey("clip_ratio_low")->absent_is_none);
  GenParams p;
  p.seed = 7;
  Case c = vanilla->generate(p);
  c.config.Set("clip_ratio", 0.3);
  Case none = c, explicit_clip = c;
  none.config.Erase("clip_ratio_low");
  none.config.Erase("clip_ratio_high");
  explicit_clip.config.Set("clip_ratio_low", 0.3);
  explicit_clip.config.Set("clip_ratio_high", 0.3);
  EXPECT_TRUE(Same(RunCase(*vanilla, none), RunCase(*vanilla, explicit_clip)));
}

TEST(RegistryDefaults, ReadingAnUndeclaredKeyIsASpecBug) {
  const FunctionSpec* vanilla = FindSpec("vanilla", "policy_loss");
  ASSERT_NE(vanilla, nullptr);
  GenParams p;
  const Case c = vanilla->generate(p);  // resolved against its spec
  ASSERT_EQ(c.config.resolved_for(), "policy_loss/vanilla");
  EXPECT_THROW(c.config.Double("not_a_key_of_vanilla"), std::logic_error);
  EXPECT_THROW(c.config.OptionalDouble("not_a_key_of_vanilla"), std::logic_error);
  EXPECT_THROW(c.config.Value("not_a_key_of_vanilla"), std::logic_error);
  EXPECT_DOUBLE_EQ(c.config.Double("clip_ratio_c"), c.config.Double("clip_ratio_c", -1.0));
  // Without resolution there is no default to read.
  Config raw("<memory>");
  EXPECT_THROW(raw.Double("clip_ratio"), std::logic_error);
  EXPECT_FALSE(raw.OptionalDouble("clip_ratio").has_value());
}

// A key verl has no default for (compute_value_loss's cliprange_value) left None is bad
// input, not a value the oracle invents.
TEST(RegistryDefaults, NoneWhereVerlHasNoDefaultIsBadInput) {
  const FunctionSpec* vl = FindSpec("compute_value_loss", "policy_loss");
  ASSERT_NE(vl, nullptr);
  ASSERT_TRUE(std::holds_alternative<std::monostate>(vl->FindConfigKey("cliprange_value")->verl_default));
  GenParams p;
  Case c = vl->generate(p);
  c.config.Erase("cliprange_value");
  EXPECT_THROW(vl->oracle(c), BadInput);
}

// Resolution works on a copy: the caller's case (a golden, a candidate's stored
// config) is left as it was.
TEST(RegistryDefaults, TheCallersCaseIsNotAltered) {
  const FunctionSpec* vanilla = FindSpec("vanilla", "policy_loss");
  GenParams p;
  Case c = vanilla->generate(p);
  c.config.Erase("clip_ratio_c");
  const auto before = c.config.values();
  vanilla->oracle(c);
  EXPECT_EQ(c.config.values(), before);
  EXPECT_EQ(c.config.resolved_for(), "");
}

}  // namespace
}  // namespace verlconf
