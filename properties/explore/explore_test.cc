// Exploration's own parts, below the command line: the wire format is bit-exact, generated
// cases are deterministic, valid and reach every regime they claim, and the shrinker finds
// the smallest case a predicate still fails on, the same one every time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "oracle/core/errors.h"
#include "oracle/explore/elements.h"
#include "oracle/explore/golden.h"
#include "oracle/explore/regimes.h"
#include "oracle/explore/shrink.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/explore/engine.h"
#include "tools/explore/wire.h"
#include "tools/h5/h5names.h"

namespace verlconf::explore {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A minimal case is written as a fixture that check must read back: every name explore can
// give is a valid case name, whatever the field, kind, grade and cause hold (capitals,
// comparisons, punctuation).
TEST(MinimalCaseNames, AreCaseNamesCheckReads) {
  const std::vector<explore::Failure> failures = {
      {"grads/log_prob", "value", "material", "valid token, ratio > 1, A > 0"},
      {"outputs/pg_loss", "dtype", "rounding", "row with valid tokens"},
      {"metrics/actor/pg_clipfrac", "non-finite", "small", "A < 0, at a decision boundary"},
      {"error", "exception vs result", "material", ""},
      {"vjps/kl/logprob", "value", "small", "masked token, reference 0"},
  };
  for (const auto& f : failures) {
    const std::string name = explore::MinimalCaseName(f);
    EXPECT_TRUE(fixtures::IsValidName(fixtures::NameKind::kCase, name)) << name;
  }
  EXPECT_EQ(explore::MinimalCaseName(failures[0]), "min_grads_log_prob__valid_token__ratio_gt_1__a_gt_0");
  EXPECT_EQ(explore::MinimalCaseName(failures[1]), "min_outputs_pg_loss_dtype_rounding__row_with_valid_tokens");
}

TEST(Wire, Base64RoundTripsEveryLength) {
  std::mt19937 rng(3);
  for (size_t n = 0; n < 40; ++n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    EXPECT_EQ(Base64Decode(Base64Encode(bytes), "test"), bytes) << n;
  }
  EXPECT_EQ(Base64Encode("Man"), "TWFu");
  EXPECT_EQ(Base64Encode("Ma"), "TWE=");
  EXPECT_THROW(Base64Decode("TWF", "test"), BadInput);
  EXPECT_THROW(Base64Decode("T*Fu", "test"), BadInput);
}

TEST(Wire, ArraysCrossBitForBit) {
  const double specials[] = {0.0,
                             -0.0,
                             1.0 / 3.0,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::denorm_min(),
                             1e308};
  for (DType d : {DType::kFloat64, DType::kFloat32}) {
    Array a({2, 4}, d);
    for (int64_t k = 0; k < 8; ++k)
      a[k] = d == DType::kFloat32 ? static_cast<double>(static_cast<float>(specials[k])) : specials[k];
    std::string text;
    AppendArray(text, a);
    const Array b = ReadArray(ParseJson(text, "test"), "test");
    ASSERT_EQ(b.shape, a.shape);
    ASSERT_EQ(b.dtype, a.dtype);
    for (int64_t k = 0; k < 8; ++k) EXPECT_TRUE(SameBits(a[k], b[k]) || (std::isnan(a[k]) && std::isnan(b[k]))) << k;
  }
  Array idx({3}, DType::kInt64);
  idx.data = {0, 7, 123456789};
  std::string text;
  AppendArray(text, idx);
  EXPECT_EQ(ReadArray(ParseJson(text, "t"), "t").data, idx.data);
}

TEST(Wire, MalformedAnswersAreBadInput) {
  for (const char* bad : {"{", "{\"a\":}", "[1,]", "nul", "{\"a\":1} x", "\"open"})
    EXPECT_THROW(ParseJson(bad, "answer"), BadInput) << bad;
  EXPECT_THROW(ReadArray(ParseJson(R"({"dtype":"float16","shape":[1],"b64":"AAA="})", "t"), "t"), BadInput);
  EXPECT_THROW(ReadArray(ParseJson(R"({"dtype":"float64","shape":[2],"b64":"AAAAAAAAAAA="})", "t"), "t"), BadInput);
  const Json j = ParseJson(R"({"a":[NaN,-Infinity,3,3.0,"\u00e9\n"]})", "t");
  const Json& a = *j.Find("a");
  EXPECT_TRUE(std::isnan(a.items[0].number));
  EXPECT_TRUE(std::isinf(a.items[1].number));
  EXPECT_TRUE(a.items[2].integral);
  EXPECT_FALSE(a.items[3].integral);
  EXPECT_EQ(a.items[4].text, "\xc3\xa9\n");
}

TEST(Wire, ConfigFloatsStayFloats) {
  std::string s;
  AppendConfigValue(s, 3.0);
  EXPECT_EQ(s, "3.0");
  s.clear();
  AppendConfigValue(s, int64_t{3});
  EXPECT_EQ(s, "3");
  s.clear();
  AppendConfigValue(s, 1e-6);
  EXPECT_EQ(ParseJson(s, "t").number, 1e-6);
}

std::string Fingerprint(const Case& c) {
  std::string s = DTypeName(c.dtype);
  for (const auto& [n, a] : c.inputs) {
    s += n + a.ShapeString();
    for (double v : a.data) s += std::to_string(v) + ",";
  }
  for (const auto& [k, v] : c.config.values()) s += k + std::to_string(v.index());
  return s;
}

TEST(Regimes, DeterministicValidAndCoveringEveryRegime) {
  std::set<std::string> tags;
  int64_t refused = 0, total = 0;
  for (const FunctionSpec& spec : Registry()) {
    if (!spec.generate || !spec.oracle) continue;
    for (int64_t i = 0; i < 40; ++i) {
      const Explored a = GenerateExplored(spec, 11, i, std::nullopt);
      const Explored b = GenerateExplored(spec, 11, i, std::nullopt);
      ASSERT_EQ(Fingerprint(a.c), Fingerprint(b.c)) << spec.name << " " << i;
      ASSERT_NO_THROW(ValidateStructure(spec, a.c)) << spec.name << " " << i << " " << a.regime;
      std::string why;
      ++total;
      if (!OracleGolden(spec, a.c, &why)) ++refused;
      size_t start = 0;
      for (size_t sp; (sp = a.regime.find(' ', start)) != std::string::npos || start < a.regime.size();) {
        if (sp == std::string::npos) sp = a.regime.size();
        tags.insert(a.regime.substr(start, sp - start));
        start = sp + 1;
      }
    }
  }
  for (const char* t : {"all-masked", "unmasked", "right-padded", "one-token", "singleton", "constant", "beyond", "on",
                        "quantised", "config", "float32", "float64"})
    EXPECT_TRUE(tags.count(t)) << "no generated case was " << t;
  // The oracle refuses few generated cases: the generator explores, it does not fuzz.
  EXPECT_LT(refused * 20, total) << refused << " of " << total;
}

TEST(Regimes, ConfigDrawsStayInTheKeysRange) {
  const FunctionSpec* gae = FindSpec("gae");
  ASSERT_NE(gae, nullptr);
  for (int64_t i = 0; i < 400; ++i) {
    const Explored e = GenerateExplored(*gae, 5, i, std::nullopt);
    for (const char* k : {"gamma", "lam"}) {
      const double v = e.c.config.Double(k);
      EXPECT_GE(v, 0.0) << e.regime;
      EXPECT_LE(v, 1.0) << e.regime;
    }
  }
}

// A case that "fails" wherever a valid token has a reward above 0.5: the minimal one is a
// single row of a single valid token with reward 1, whatever the start.
TEST(Shrink, FindsTheSmallestFailingCaseDeterministically) {
  const FunctionSpec* grpo = FindSpec("grpo");
  ASSERT_NE(grpo, nullptr);
  const auto fails = [](const Case& c) {
    const Array* r = c.OptionalInput("token_level_rewards");
    const Array* m = c.OptionalInput("response_mask");
    if (!r || !m || r->shape != m->shape) return false;
    for (int64_t k = 0; k < r->size(); ++k)
      if ((*m)[k] != 0 && (*r)[k] > 0.5) return true;
    return false;
  };
  int shrunk = 0;
  for (int64_t i = 0; i < 30; ++i) {
    const Explored e = GenerateExplored(*grpo, 2, i, DType::kFloat64);
    if (!fails(e.c)) continue;
    const Shrunk a = Shrink(*grpo, e.c, fails);
    const Shrunk b = Shrink(*grpo, e.c, fails);
    EXPECT_EQ(Fingerprint(a.c), Fingerprint(b.c));
    EXPECT_FALSE(a.exhausted);
    EXPECT_EQ(BatchRows(*grpo, a.c), 1) << e.regime;
    EXPECT_EQ(TokenColumns(*grpo, a.c), 1) << e.regime;
    EXPECT_EQ(a.c.inputs.at("token_level_rewards")[0], 1.0);
    EXPECT_EQ(a.c.inputs.at("response_mask")[0], 1.0);
    EXPECT_TRUE(fails(a.c));
    ++shrunk;
  }
  EXPECT_GT(shrunk, 5);
}

TEST(Shrink, StopsAtItsBudget) {
  const FunctionSpec* grpo = FindSpec("grpo");
  const Explored e = GenerateExplored(*grpo, 2, 0, DType::kFloat64);
  ShrinkBudget budget;
  budget.max_trials = 3;
  const Shrunk s = Shrink(
      *grpo, e.c, [](const Case&) { return true; }, budget);
  EXPECT_EQ(s.trials, 3);
  EXPECT_TRUE(s.exhausted);
}

TEST(Golden, TheOraclesErrorIsTheReferenceAndItsRefusalIsNoCase) {
  const FunctionSpec* vanilla = FindSpec("vanilla");
  Explored e = GenerateExplored(*vanilla, 1, 0, DType::kFloat64);
  e.c.config.Set("clip_ratio_c", 1.0);  // verl asserts clip_ratio_c > 1
  ResolveConfig(*vanilla, e.c.config);
  std::string why;
  const auto g = OracleGolden(*vanilla, e.c, &why);
  ASSERT_TRUE(g.has_value()) << why;
  ASSERT_TRUE(g->expect_error.has_value());
  EXPECT_NE(g->expect_error->find("AssertionError"), std::string::npos);
  Case bad = e.c;
  bad.inputs.at("response_mask")[0] = 0.5;  // not a mask: nothing verl could be handed
  EXPECT_FALSE(OracleGolden(*vanilla, bad, &why).has_value());
  EXPECT_FALSE(why.empty());
}

// A ratio is the newer policy over the older whichever input decides the thresholds: the
// policy losses' old_log_prob decides, yet their ratio is exp(log_prob - old_log_prob).
TEST(Elements, RatioIsNewerPolicyOverOlder) {
  {  // A rollout correction: the IS weight is the training policy over the rollout policy.
    const FunctionSpec* is = FindSpec("decoupled_token_is");
    std::optional<Case> g;
    for (uint64_t seed = 2; seed < 40 && !(g && g->outputs.count("rollout_is_weights")); ++seed) {
      Explored e = GenerateExplored(*is, seed, 0, DType::kFloat64);
      std::string why;
      g = OracleGolden(*is, e.c, &why);
    }
    ASSERT_TRUE(g && g->outputs.count("rollout_is_weights"));
    Case got = *g;
    for (double& x : got.outputs.at("rollout_is_weights").data) x += 1.0;
    const auto els = DifferingElements(*is, *g, got, "outputs/rollout_is_weights", Tolerance{1e-12, 1e-12, ""});
    ASSERT_FALSE(els.empty());
    const int64_t i = els[0].index;
    const std::string want =
        "ratio " + ShortNumber(std::exp(g->inputs.at("old_log_prob")[i] - g->inputs.at("rollout_log_prob")[i]));
    EXPECT_NE(els[0].status.find(want), std::string::npos) << els[0].status << " / " << want;
  }
  // A policy loss: old_log_prob decides its clip decisions, its ratio is still log_prob over old.
  const FunctionSpec* vanilla = FindSpec("vanilla");
  Explored e = GenerateExplored(*vanilla, 3, 0, DType::kFloat64);
  std::string why;
  const auto g = OracleGolden(*vanilla, e.c, &why);
  ASSERT_TRUE(g.has_value()) << why;
  Case got = *g;
  for (double& x : got.grads.at("log_prob").data) x += 1.0;
  const auto els = DifferingElements(*vanilla, *g, got, "grads/log_prob", Tolerance{1e-12, 1e-12, ""});
  ASSERT_FALSE(els.empty());
  const Array& lp = g->inputs.at("log_prob");
  const Array& old = g->inputs.at("old_log_prob");
  const int64_t i = els[0].index;
  const std::string want = "ratio " + ShortNumber(std::exp(lp[i] - old[i]));
  EXPECT_NE(els[0].status.find(want), std::string::npos) << els[0].status << " / " << want;
}

}  // namespace
}  // namespace verlconf::explore
