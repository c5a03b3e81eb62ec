// The C++ API for LibTorch frameworks: conversions, validation, the example
// implementation against every golden vanilla / k3 case, planted bugs, bad input.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "oracle/core/errors.h"
#include "oracle/registry.h"
#include "tools/cli/paths.h"
#include "tools/h5/golden_set.h"
#include "tools/torch_api/example_losses.h"
#include "tools/torch_api/verlconf_torch.h"

namespace verlconf::torch_api {
namespace {

using example::Bug;

const fixtures::GoldenSet& Goldens() {
  static const fixtures::GoldenSet g = fixtures::GoldenSet::Load(tools::BundledGoldenDir(nullptr));
  return g;
}

const Case& GoldenCase(const std::string& function, const std::string& name) {
  for (const auto& [key, c] : Goldens().index)
    if (std::get<1>(key) == function && std::get<2>(key) == name) return *c;
  throw std::runtime_error("no golden case " + function + "/" + name);
}

const FieldReport* Field(const CaseReport& r, const std::string& field) {
  for (const FieldReport& f : r.fields)
    if (f.field == field) return &f;
  return nullptr;
}

std::set<std::string> FailedFields(const CaseReport& r) {
  std::set<std::string> s;
  for (const FieldReport& f : r.fields)
    if (f.outcome == Outcome::kFailed) s.insert(f.field);
  return s;
}

// ---------------------------------------------------------------- conversions

TEST(Convert, RoundTripPreservesDtypeShapeAndValues) {
  Array f64({2, 3}, DType::kFloat64);
  Array f32({3, 2}, DType::kFloat32);
  Array i64({4}, DType::kInt64);
  for (int64_t k = 0; k < 6; ++k) {
    f64[k] = 0.1 * static_cast<double>(k) - 1.0 / 3.0;  // not representable in float32
    f32[k] = static_cast<float>(1.0 / (1.0 + k));       // exactly a float32
  }
  for (int64_t k = 0; k < 4; ++k) i64[k] = static_cast<double>((int64_t{1} << 52) + k);
  Array scalar = Array::Scalar(-2.5, DType::kFloat32);
  const struct {
    const Array* a;
    at::ScalarType type;
  } cases[] = {{&f64, at::kDouble}, {&f32, at::kFloat}, {&i64, at::kLong}, {&scalar, at::kFloat}};
  for (const auto& tc : cases) {
    const at::Tensor t = ToTensor(*tc.a);
    EXPECT_EQ(t.scalar_type(), tc.type);
    EXPECT_EQ(t.dim(), tc.a->rank());
    const Array back = FromTensor(t, "t");
    EXPECT_EQ(back.dtype, tc.a->dtype);
    EXPECT_EQ(back.shape, tc.a->shape);
    EXPECT_EQ(back.data, tc.a->data);  // bitwise: no rounding either way
  }
}

TEST(Convert, TensorsFromAnyLayoutAndAutograd) {
  // Non-contiguous (transposed) and requires_grad tensors are read as their values.
  const at::Tensor base = at::arange(6, at::kDouble).reshape({2, 3});
  const Array t = FromTensor(base.t(), "t");
  EXPECT_EQ(t.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(t.data, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  const at::Tensor g = at::ones({2}, at::kFloat).requires_grad_(true) * 3;
  const Array a = FromTensor(g, "g");
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.data, (std::vector<double>{3, 3}));
}

TEST(Convert, UnsupportedDtypeIsBadInputNamingTheTensor) {
  for (at::ScalarType type : {at::kBool, at::kInt, at::kHalf, at::kBFloat16}) {
    try {
      FromTensor(at::zeros({2}, type), "inputs/response_mask");
      ADD_FAILURE() << "no BadInput for " << c10::toString(type);
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("inputs/response_mask"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("float32 or float64"), std::string::npos) << e.what();
    }
  }
}

// ---------------------------------------------------------------- building cases

TensorMap VanillaInputs(at::ScalarType type, int64_t b = 4, int64_t t = 8) {
  at::manual_seed(1234);
  const at::Tensor old = at::rand({b, t}, at::kDouble) * -3;
  TensorMap in;
  in["old_log_prob"] = old.to(type);
  in["log_prob"] = (old + 0.3 * at::randn({b, t}, at::kDouble)).to(type);
  in["advantages"] = at::randn({b, t}, at::kDouble).to(type);
  in["response_mask"] = at::ones({b, t}, type);
  return in;
}

TEST(CaseFromTensors, BuildsAValidatedCase) {
  const Case c = CaseFromTensors("vanilla", VanillaInputs(at::kFloat), {{"clip_ratio", 0.25}});
  EXPECT_EQ(c.family, "policy_loss");
  EXPECT_EQ(c.dtype, DType::kFloat32);
  EXPECT_EQ(c.inputs.at("log_prob").shape, (std::vector<int64_t>{4, 8}));
  EXPECT_DOUBLE_EQ(c.config.Double("clip_ratio", 0), 0.25);
}

TEST(CaseFromTensors, GroupIndexIsInt64) {
  TensorMap in;
  in["token_level_rewards"] = at::rand({4, 3}, at::kDouble);
  in["response_mask"] = at::ones({4, 3}, at::kDouble);
  in["index"] = at::tensor(std::vector<int64_t>{0, 0, 1, 1}, at::kLong);
  EXPECT_EQ(CaseFromTensors("grpo", in).inputs.at("index").dtype, DType::kInt64);
  in["index"] = at::tensor(std::vector<double>{0, 0, 1, 1}, at::kDouble);
  EXPECT_THROW(CaseFromTensors("grpo", in), BadInput);
}

void ExpectBadInput(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no BadInput (wanted one mentioning '" << needle << "')";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CaseFromTensors, BadInputsNameTheField) {
  TensorMap mixed = VanillaInputs(at::kDouble);
  mixed["advantages"] = mixed["advantages"].to(at::kFloat);
  ExpectBadInput([&] { CaseFromTensors("vanilla", mixed); }, "inputs/advantages");

  TensorMap shape = VanillaInputs(at::kDouble);
  shape["advantages"] = at::zeros({4, 7}, at::kDouble);
  ExpectBadInput([&] { CaseFromTensors("vanilla", shape); }, "inputs/advantages");

  TensorMap missing = VanillaInputs(at::kDouble);
  missing.erase("log_prob");
  ExpectBadInput([&] { CaseFromTensors("vanilla", missing); }, "inputs/log_prob");

  TensorMap mask = VanillaInputs(at::kDouble);
  mask["response_mask"] = at::ones({4, 8}, at::kBool);
  ExpectBadInput([&] { CaseFromTensors("vanilla", mask); }, "inputs/response_mask");

  ExpectBadInput([&] { CaseFromTensors("vanilla", VanillaInputs(at::kDouble), {{"clip_eps", 0.2}}); }, "cfg.clip_eps");
}

TEST(CaseFromTensors, UnknownFunctionIsBadInput) {
  ExpectBadInput([&] { CaseFromTensors("vanila", VanillaInputs(at::kDouble)); }, "unknown function 'vanila'");
  ExpectBadInput([&] { CheckAgainstOracle("ppo_loss", VanillaInputs(at::kDouble), {}, TorchResult{}); },
                 "unknown function 'ppo_loss'");
  ExpectBadInput([&] { CheckAgainstGoldenSet(Goldens(), "k4", example::KlCandidate("k3")); }, "unknown function 'k4'");
  ExpectBadInput([&] { CaseFromTensors("vanilla", VanillaInputs(at::kDouble), {}, "kl"); },
                 "unknown function 'vanilla' in family 'kl'");
}

// ---------------------------------------------------------------- against the goldens

TEST(Golden, ExampleVanillaPassesEveryCase) {
  const std::vector<CaseReport> reports = CheckAgainstGoldenSet(Goldens(), "vanilla", example::VanillaCandidate());
  std::map<DType, int> passed;
  for (const CaseReport& r : reports) {
    EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
    passed[r.dtype] += r.outcome == Outcome::kPassed;
  }
  // One report per golden case of vanilla, in both dtypes, every one passed.
  std::map<DType, int> cases;
  for (const auto& [key, c] : Goldens().index)
    if (std::get<0>(key) == "policy_loss" && std::get<1>(key) == "vanilla") ++cases[c->dtype];
  EXPECT_GT(cases[DType::kFloat64], 0);
  EXPECT_GT(cases[DType::kFloat32], 0);
  EXPECT_EQ(reports.size(), static_cast<size_t>(cases[DType::kFloat64] + cases[DType::kFloat32]));
  EXPECT_EQ(passed[DType::kFloat64], cases[DType::kFloat64]);
  EXPECT_EQ(passed[DType::kFloat32], cases[DType::kFloat32]);
}

TEST(Golden, ExampleK3PassesEveryCase) {
  for (const char* name : {"k3", "low_var_kl", "k3+", "k1", "abs", "mse", "full"}) {
    const std::vector<CaseReport> reports = CheckAgainstGoldenSet(Goldens(), name, example::KlCandidate(name));
    EXPECT_FALSE(reports.empty()) << name;
    for (const CaseReport& r : reports) EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  }
}

TEST(Golden, ExampleAggregationPassesEveryCase) {
  for (const std::string mode :
       {"token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}) {
    for (const CaseReport& r : CheckAgainstGoldenSet(Goldens(), mode, example::AggCandidate(mode)))
      EXPECT_TRUE(r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted) << r.Describe();
  }
}

TEST(Golden, ExamplePolicyLossesPassEveryCase) {
  // Every other policy-loss-family function in ATen (verl's stop-gradients as
  // .detach()) against verl's goldens, both dtypes; dro's missing or non-positive
  // dro_beta cases raise ValueError on both sides, clip_cov's and kl_cov's dp_size > 1
  // cases (no recorded pick) agg_loss's ValueError.
  for (const std::string& name : example::PolicyLossNames()) {
    if (name == "vanilla") continue;  // ExampleVanillaPassesEveryCase
    const std::vector<CaseReport> reports =
        CheckAgainstGoldenSet(Goldens(), name, example::PolicyLossCandidate(name), "policy_loss");
    EXPECT_GE(reports.size(), 6u) << name;  // 3 cases or more (compute_entropy_loss has 3) in each dtype
    for (const CaseReport& r : reports)
      EXPECT_TRUE(r.outcome == Outcome::kPassed || r.outcome == Outcome::kMistrusted) << r.Describe();
  }
}

TEST(Golden, BoundaryGradientsFollowVerlsClamp) {
  // Ratios exactly on 1 +- eps get half the gradient (maximum's tie split, and clamp
  // passes nothing at its bound). LibTorch 1.13's own clamp does pass the gradient at its
  // bounds, so the example uses ClampLikeVerl (example_losses.cc). The only differences
  // left are two tokens on the dual-clip bound 3: there LibTorch 1.13's
  // exp(1.0986122886681098) is 3.0 where glibc's and verl's torch give
  // 3.0000000000000004, so min(-A c, -A r) ties instead of picking -A c. The comparator
  // reports both kinds as boundary flips (tokens exactly at a decision, where the value is
  // one the two decisions or their tie give), not failures.
  const Case& golden = GoldenCase("vanilla", "boundary_sym_8x16_f64");
  const CaseReport r = CheckAgainstGolden(golden, example::VanillaCandidate());
  ASSERT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  const FieldReport* g = Field(r, "grads/log_prob");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->mismatched, 0) << g->Describe();
  EXPECT_LE(g->flips, 2) << g->Describe();

  // With LibTorch's own clamp: 18 gradient elements differ from verl on this case (and 2
  // on logratio_past_clamp), all at exact clip bounds, so still PASSED with flips.
  const CaseReport native = CheckAgainstGolden(golden, example::VanillaCandidate(Bug::kNativeClamp));
  const FieldReport* gn = Field(native, "grads/log_prob");
  ASSERT_NE(gn, nullptr);
  EXPECT_EQ(native.outcome, Outcome::kPassed) << native.Describe();
  EXPECT_GT(gn->flips, g->flips + 10) << gn->Describe();
}

TEST(PlantedBug, NoLogRatioClampFailsWhereLogRatiosPass20) {
  const CaseReport r = CheckAgainstGolden(GoldenCase("vanilla", "logratio_past_clamp_8x16_f64"),
                                          example::VanillaCandidate(Bug::kNoLogRatioClamp));
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  const std::set<std::string> failed = FailedFields(r);
  EXPECT_TRUE(failed.count("metrics/actor/ppo_kl")) << r.Describe();
  EXPECT_TRUE(failed.count("outputs/pg_loss")) << r.Describe();
  EXPECT_NE(r.Describe().find("metrics/actor/ppo_kl: FAILED"), std::string::npos) << r.Describe();
  // Where no log-ratio leaves [-20, 20], the bug is invisible and the case passes.
  EXPECT_EQ(CheckAgainstGolden(GoldenCase("vanilla", "sym_4x8_f64"), example::VanillaCandidate(Bug::kNoLogRatioClamp))
                .outcome,
            Outcome::kPassed);
}

TEST(PlantedBug, WrongSignFailsEveryCase) {
  for (const CaseReport& r : CheckAgainstGoldenSet(Goldens(), "vanilla", example::VanillaCandidate(Bug::kWrongSign))) {
    if (r.case_name.rfind("clip_c_1_error", 0) == 0) continue;  // verl raises before any arithmetic
    EXPECT_EQ(r.outcome, Outcome::kFailed) << r.case_name;
    EXPECT_TRUE(FailedFields(r).count("outputs/pg_loss")) << r.Describe();
    EXPECT_TRUE(FailedFields(r).count("grads/log_prob")) << r.Describe();
  }
}

// A candidate reads every key the function takes, completed from the registry's
// defaults, so that no implementation restates one; a key it does not take is refused.
TEST(Config, CandidatesReceiveVerlsDefaultsFromTheRegistry) {
  const FunctionSpec* spec = FindSpec("vanilla", "policy_loss");
  ASSERT_NE(spec, nullptr);
  // The golden with every key verl ran at its default left out, as a caller may leave it.
  Case golden = GoldenCase("vanilla", "sym_4x8_f64");
  std::set<std::string> left_out;
  for (const ConfigKey& k : spec->config)
    if (const auto it = golden.config.values().find(k.name);
        it != golden.config.values().end() && it->second == k.verl_default)
      left_out.insert(k.name);
  for (const std::string& k : left_out) golden.config.Erase(k);
  ASSERT_TRUE(left_out.count("clip_ratio_c")) << "pick a golden that runs clip_ratio_c at verl's default";
  std::map<std::string, ConfigValue> seen;
  const CaseReport r = CheckAgainstGolden(golden, [&](const TensorMap& in, const Config& cfg) {
    seen = cfg.values();
    return example::VanillaPolicyLoss(in, cfg);
  });
  EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
  for (const ConfigKey& k : spec->config) {
    ASSERT_TRUE(seen.count(k.name)) << k.name;
    const auto given = golden.config.values().find(k.name);
    // An absent key verl receives as None stays None (clip_ratio_low: verl then uses clip_ratio).
    const ConfigValue absent = k.absent_is_none ? ConfigValue{} : k.verl_default;
    EXPECT_TRUE(seen.at(k.name) == (given != golden.config.values().end() ? given->second : absent)) << k.name;
  }
  Config odd;
  odd.Set("clip_ratio_x", 0.1);
  ExpectBadInput([&] { (void)WithVerlDefaults("vanilla", odd, "policy_loss"); }, "clip_ratio_x");
  ExpectBadInput([&] { (void)WithVerlDefaults("no_such_loss", Config()); }, "no_such_loss");
}

TEST(Errors, CandidateErrorsAreComparedByKind) {
  const Case& error_case = GoldenCase("vanilla", "clip_c_1_error_4x8_f64");
  // Returning a result where verl raises is a failure...
  const CaseReport returned = CheckAgainstGolden(error_case, [](const TensorMap& in, const Config&) {
    Config lenient;
    lenient.Set("clip_ratio_c", 3.0);
    return example::VanillaPolicyLoss(in, lenient);
  });
  EXPECT_EQ(returned.outcome, Outcome::kFailed);
  // ...so is raising the wrong kind; raising through TorchResult::raised counts like a throw.
  const CaseReport wrong_kind = CheckAgainstGolden(error_case, [](const TensorMap&, const Config&) {
    TorchResult r;
    r.raised = "ValueError: clip_ratio_c";
    return r;
  });
  EXPECT_EQ(wrong_kind.outcome, Outcome::kFailed);
  const CaseReport right_kind = CheckAgainstGolden(error_case, [](const TensorMap&, const Config&) {
    TorchResult r;
    r.raised = "AssertionError: clip_ratio_c must be > 1";
    return r;
  });
  EXPECT_EQ(right_kind.outcome, Outcome::kPassed) << right_kind.Describe();
  // Unsupported: the implementation does not provide it.
  const CaseReport unsupported = CheckAgainstGolden(
      GoldenCase("vanilla", "sym_4x8_f64"),
      [](const TensorMap&, const Config&) -> TorchResult { throw Unsupported("not implemented here"); });
  EXPECT_EQ(unsupported.outcome, Outcome::kUnsupported);
}

TEST(Errors, MissingFieldIsUnsupportedNotPassed) {
  const CaseReport r =
      CheckAgainstGolden(GoldenCase("vanilla", "sym_4x8_f64"), [](const TensorMap& in, const Config& cfg) {
        TorchResult res = example::VanillaPolicyLoss(in, cfg);
        res.grads.clear();
        return res;
      });
  // Judged on the loss and metrics it did compute; the gradient is UNSUPPORTED, and the
  // case says it is partial.
  EXPECT_TRUE(r.partial) << r.Describe();
  ASSERT_NE(Field(r, "grads/log_prob"), nullptr);
  EXPECT_EQ(Field(r, "grads/log_prob")->outcome, Outcome::kUnsupported);
}

// ---------------------------------------------------------------- against the oracle

TEST(Oracle, ExampleMatchesTheOracleInBothDtypes) {
  for (at::ScalarType type : {at::kDouble, at::kFloat}) {
    const TensorMap in = VanillaInputs(type, 16, 32);
    const std::map<std::string, ConfigValue> cfg = {{"clip_ratio_high", 0.28},
                                                    {"loss_agg_mode", std::string("seq-mean-token-mean")}};
    Config config;
    for (const auto& [k, v] : cfg) config.Set(k, v);
    const CaseReport r = CheckAgainstOracle("vanilla", in, cfg, example::VanillaPolicyLoss(in, config));
    EXPECT_EQ(r.outcome, Outcome::kPassed) << r.Describe();
    EXPECT_EQ(r.fields.size(), 5u);  // pg_loss, grads/log_prob, three metrics
  }
}

TEST(Oracle, PlantedBugIsFailedWithTheFieldNamed) {
  const TensorMap in = VanillaInputs(at::kDouble);
  const CaseReport r = CheckAgainstOracle("vanilla", in, {}, example::VanillaPolicyLoss(in, Config(), Bug::kWrongSign));
  EXPECT_EQ(r.outcome, Outcome::kFailed);
  EXPECT_TRUE(FailedFields(r).count("outputs/pg_loss")) << r.Describe();
  EXPECT_TRUE(FailedFields(r).count("grads/log_prob")) << r.Describe();
}

TEST(Oracle, VerlErrorsMustBeRaisedToo) {
  const TensorMap in = VanillaInputs(at::kDouble);
  const std::map<std::string, ConfigValue> cfg = {{"clip_ratio_c", 0.5}};
  TorchResult raised;
  raised.raised = "AssertionError: clip_ratio_c";
  EXPECT_EQ(CheckAgainstOracle("vanilla", in, cfg, raised).outcome, Outcome::kPassed);
  Config lenient;
  EXPECT_EQ(CheckAgainstOracle("vanilla", in, cfg, example::VanillaPolicyLoss(in, lenient)).outcome, Outcome::kFailed);
}

}  // namespace
}  // namespace verlconf::torch_api
