// The oracle's analytic gradients against LibTorch autograd (float64, CPU) of the same
// formulas written with ATen ops (tools/torch_api/example_losses.cc), on random inputs
// from the registry's generators: every entry of the policy_loss family (the value loss
// by vpreds, actor_kl_loss for every kl_loss_type, the entropy loss by the B x T x V
// logits), every loss_agg_mode and every kl_penalty name (straight-through "+" variants
// included; "full" has no values), as the registry lists them.
//
// The ATen versions follow verl's construction, .detach() for .detach(): GSPO's
// sequence ratio (log_prob - sg[log_prob] + sg[row mean]), CISPO's clipped ratio,
// DPPO's truncated ratio and trust-region mask, the straight-through KL estimators,
// bypass_mode's IS weights and rejection mask (computed from log_prob under no_grad:
// constants to the vanilla / reinforce loss built on them).
// Where verl's gradient is not the derivative of its loss's value, this is the check
// that the oracle placed the stop-gradients where verl does, on inputs beyond the
// golden cases.
//
// clip_cov and kl_cov pick tokens with torch.randperm / torch.topk; the pick is an input
// (cov_selected), a constant of the loss on both sides. The generators leave it out (the
// oracle then picks by its own rule, which no ATen version could be held to), so this
// test draws one: a random quarter of the valid tokens, many more than verl's
// 0.02 %, so that both branches of the loss carry gradient in nearly every case.
//
// Each function runs kDefaultCases = 200 random cases (VERLCONF_TORCH_GRAD_CASES
// overrides), with shapes from 1 x 1 to 12 x 24 and the generator's random config
// (clip bounds, dual-clip c, SAPO's temperatures, DRO's beta, agg mode, IS weights,
// masked rows). Every case compares the forward value, the metrics and the gradient
// with the float64 conformance tolerance (`CheckAgainstOracle`); a case only counts if
// its gradient field was compared and passed, or if verl raises for it and both sides
// raise its exception kind (bypass_mode: a batch without a valid token, an IcePop band
// that zeroes every weight). One test per function, so Bazel's test sharding splits
// them.
//
// Both sides follow verl's torch at the kinks (clamp passes no gradient at its bounds,
// maximum/minimum split ties); random inputs rarely sit on a kink, the golden cases
// (torch_api_test, golden_test) cover those.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/registry.h"
#include "tools/torch_api/example_losses.h"
#include "tools/torch_api/verlconf_torch.h"

namespace verlconf::torch_api {
namespace {

constexpr int kDefaultCases = 200;

int CaseCount() {
  const char* env = std::getenv("VERLCONF_TORCH_GRAD_CASES");
  return env && std::atoi(env) > 0 ? std::atoi(env) : kDefaultCases;
}

// "family/name": registry names alone may be ambiguous across families.
// Policy losses: the registry's entries that example_losses implements (the coverage
// test below fails if the registry gains one that it does not).
std::vector<std::string> Functions() {
  const std::vector<std::string>& implemented = example::PolicyLossNames();
  std::vector<std::string> keys;
  for (const FunctionSpec& s : Registry()) {
    const bool policy_loss =
        s.family == "policy_loss" && std::find(implemented.begin(), implemented.end(), s.name) != implemented.end();
    if (policy_loss || ((s.family == "aggregation" || s.family == "kl") && s.name.rfind("full", 0) != 0))
      keys.push_back(s.family + "/" + s.name);
  }
  return keys;
}

std::string FormatDouble(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Where the function takes verl's covariance pick (cov_selected) and the generator left
// it out: each valid token picked with probability 1/4, from the case's seed.
void AddRandomPick(const FunctionSpec& spec, Case& c) {
  if (!spec.FindInput("cov_selected") || c.inputs.count("cov_selected")) return;
  const Array& mask = c.Input("response_mask");
  std::mt19937_64 rng(static_cast<uint64_t>(c.seed) ^ 0x5bd1e995u);
  std::bernoulli_distribution pick(0.25);
  Array selected(mask.shape, mask.dtype);
  for (int64_t k = 0; k < mask.size(); ++k) selected[k] = mask[k] != 0.0 && pick(rng) ? 1.0 : 0.0;
  c.inputs["cov_selected"] = std::move(selected);
}

TorchResult RunLibTorch(const FunctionSpec& spec, const TensorMap& in, const Config& cfg) {
  if (spec.family == "policy_loss") {
    try {
      return example::PolicyLossCandidate(spec.name)(in, cfg);
    } catch (const VerlError& e) {  // compared with the oracle's error kind
      TorchResult r;
      r.raised = e.what();
      return r;
    }
  }
  if (spec.family == "aggregation") return example::AggLoss(in, cfg, spec.name);
  return example::KlPenalty(in, spec.name);
}

class GradientVsLibTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientVsLibTorch, RandomCases) {
  const std::string& key = GetParam();
  const FunctionSpec* spec = FindSpec(key.substr(key.find('/') + 1), key.substr(0, key.find('/')));
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(static_cast<bool>(spec->generate));
  ASSERT_EQ(spec->grads.size(), 1u);
  const std::string grad_field = "grads/" + spec->grads[0];
  const int n = CaseCount();
  int gradients_passed = 0, zero_gradients = 0, mistrusted = 0, raised = 0;
  // How close the two sides came, not only whether within tolerance (in the test XML).
  double worst_rel = 0.0, worst_grad_rel = 0.0, worst_grad_abs = 0.0;
  for (int k = 0; k < n; ++k) {
    GenParams p;
    p.seed = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(k + 1) + std::hash<std::string>()(spec->name);
    p.batch = 1 + k % 12;
    p.tokens = 1 + (k * 7) % 24;
    p.dtype = DType::kFloat64;
    Case c = spec->generate(p);
    AddRandomPick(*spec, c);
    const TensorMap in = InputsAsTensors(c);
    const TorchResult torch_result = RunLibTorch(*spec, in, c.config);
    // The comparison judges the metrics the oracle reports; the names must also be
    // exactly verl's (gpg returns none, dro only ppo_kl): ones the registry declares, and
    // exactly those the oracle reports for this case (bypass_mode's depend on its config).
    if (!torch_result.raised) {
      std::set<std::string> names;
      for (const auto& [name, value] : torch_result.metrics) names.insert(name);
      const std::set<std::string> declared(spec->metrics.begin(), spec->metrics.end());
      for (const std::string& name : names) ASSERT_EQ(declared.count(name), 1u) << name << ", seed " << p.seed;
      try {
        std::set<std::string> reported;
        for (const auto& [name, value] : spec->oracle(c).metrics) reported.insert(name);
        ASSERT_EQ(names, reported) << "seed " << p.seed;
      } catch (const VerlError&) {
        // verl raises here: the comparison below fails the case.
      }
    }
    const CaseReport r = CheckAgainstOracle(spec->name, in, c.config.values(), torch_result, spec->family);
    // MISTRUSTED: every mask empty (nothing to differentiate); never a pass.
    if (r.outcome == Outcome::kMistrusted) {
      ++mistrusted;
      continue;
    }
    ASSERT_EQ(r.outcome, Outcome::kPassed) << "seed " << p.seed << " (" << p.batch << " x " << p.tokens << ")\n"
                                           << r.Describe();
    // verl raises for these inputs and so did the ATen version (same exception kind).
    if (torch_result.raised) {
      ++raised;
      continue;
    }
    // The gradient field was compared: PASSED, or MISTRUSTED when both sides agree that
    // it is all zero (every token clipped); a mismatch would have FAILED the case.
    const FieldReport* g = nullptr;
    for (const FieldReport& f : r.fields)
      if (f.field == grad_field) g = &f;
    ASSERT_NE(g, nullptr) << "seed " << p.seed << ": " << grad_field << " not compared\n" << r.Describe();
    ASSERT_EQ(g->mismatched, 0) << g->Describe();
    worst_rel = std::max(worst_rel, r.worst_rel);
    worst_grad_rel = std::max(worst_grad_rel, g->worst_rel);
    worst_grad_abs = std::max(worst_grad_abs, g->worst_abs);
    if (g->outcome == Outcome::kPassed)
      ++gradients_passed;
    else
      ++zero_gradients;
  }
  // A few all-masked batches (B = 1 with a fully masked row) and all-zero gradients
  // are expected; the non-trivial gradients must be the vast majority. bypass_mode's
  // generator also draws rejection thresholds that reject every token (MISTRUSTED, about
  // 9 % of its cases) and IcePop bands that no ratio falls in (verl raises
  // ZeroDivisionError, about 4 %): a lower floor there.
  const int floor = spec->name == "bypass_mode" ? n * 8 / 10 : n * 9 / 10;
  EXPECT_EQ(gradients_passed + zero_gradients + mistrusted + raised, n);
  EXPECT_GE(gradients_passed, floor) << mistrusted << " MISTRUSTED cases, " << zero_gradients << " all-zero gradients, "
                                     << raised << " raised as verl does, of " << n;
  RecordProperty("nonzero_gradients_compared", gradients_passed);
  RecordProperty("raised_as_verl", raised);
  RecordProperty("worst_rel_any_field", FormatDouble(worst_rel));
  RecordProperty("worst_rel_gradient", FormatDouble(worst_grad_rel));
  RecordProperty("worst_abs_gradient", FormatDouble(worst_grad_abs));
}

INSTANTIATE_TEST_SUITE_P(Registry, GradientVsLibTorch, ::testing::ValuesIn(Functions()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param.substr(info.param.find('/') + 1);
                           for (char& ch : s)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           if (!s.empty() && s.back() == '_') s += "plus";
                           return s;
                         });

TEST(GradientVsLibTorch, CoversEveryFunction) {
  const std::vector<std::string> functions = Functions();
  const std::set<std::string> keys(functions.begin(), functions.end());
  EXPECT_EQ(keys.size(), functions.size()) << "a function listed twice";
  // Every policy loss the registry has (the stop-gradient ones above all), and any it
  // gains later: no exemptions, each needs an ATen version.
  for (const FunctionSpec& s : Registry()) {
    if (s.family == "policy_loss") {
      EXPECT_EQ(keys.count("policy_loss/" + s.name), 1u) << s.name << " has no LibTorch version in example_losses";
    }
  }
  // Every policy-loss-family function, every agg mode and every KL name the registry
  // has ("full" and "full+" aside: they have no values).
  size_t want = 0;
  for (const FunctionSpec& s : Registry())
    want +=
        s.family == "policy_loss" || ((s.family == "aggregation" || s.family == "kl") && s.name.rfind("full", 0) != 0);
  EXPECT_EQ(functions.size(), want);
}

}  // namespace
}  // namespace verlconf::torch_api
