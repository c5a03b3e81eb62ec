// What an implementation returns for each call of a sharded case is held to the call's
// micro-batch before it is combined: a loss that is not one number, a gradient of another
// shape, a gradient of no differentiable input are BadInput naming the call; a field some
// call left out is left out of the combination. Never a write outside the full batch
// (this test runs under AddressSanitizer in CI).
#include "oracle/sharding/combine.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/registry.h"
#include "oracle/sharding/invariance.h"
#include "oracle/sharding/plan.h"
#include "oracle/sharding/shard.h"

namespace verlconf {
namespace {

struct Sharded {
  const FunctionSpec& spec = *FindSpec("token-mean");
  Case full;
  sharding::ShardedCase sharded;
  std::vector<Result> results;
  explicit Sharded(uint64_t seed) {
    GenParams p;
    p.seed = seed;
    p.batch = 4;
    p.tokens = 5;
    full = sharding::JudgedFullBatch(spec, spec.generate(p));
    sharding::ShardPlan plan;
    plan.ranks = {sharding::Rank{{{{3, 0}}, {{1}}}}, sharding::Rank{{{{2}}}}};
    sharded = sharding::ShardCase(spec, full, plan);
    for (const sharding::ShardCall& call : sharded.calls) results.push_back(spec.oracle(call.input));
  }
  const std::string& loss() const { return sharding::LossOutput(spec); }
  const std::string& grad() const { return spec.grads.at(0); }
};

TEST(Combine, WellFormedResultsCombineToTheFullBatch) {
  Sharded s(1);
  const Result r = sharding::Combine(s.spec, s.full, s.sharded, s.results);
  ASSERT_EQ(r.outputs.at(s.loss()).size(), 1);
  EXPECT_EQ(r.grads.at(s.grad()).shape, s.full.Input(s.grad()).shape);
}

TEST(Combine, EachMalformedFieldIsBadInputNamingTheCall) {
  struct Bad {
    const char* what;
    void (*damage)(Sharded&);
  };
  const Bad bad[] = {
      {"a loss is one number", [](Sharded& s) { s.results[1].outputs[s.loss()] = Array({0}, DType::kFloat64); }},
      {"a loss is one number",
       [](Sharded& s) { s.results[0].outputs[s.loss()] = Array::Matrix(2, 2, DType::kFloat64); }},
      {"shape [3, 5] where the call's",
       [](Sharded& s) { s.results[1].grads[s.grad()] = Array::Matrix(3, 5, DType::kFloat64); }},
      {"shape [1, 50] where the call's",  // as many elements per row as a wider row holds
       [](Sharded& s) { s.results[1].grads[s.grad()] = Array::Matrix(1, 50, DType::kFloat64); }},
      {"shape [0] where the call's", [](Sharded& s) { s.results[2].grads[s.grad()] = Array({0}, DType::kFloat64); }},
      {"not a differentiable input", [](Sharded& s) { s.results[0].grads["response_mask"] = Array(); }},
  };
  for (const Bad& b : bad) {
    Sharded s(2);
    b.damage(s);
    try {
      (void)sharding::Combine(s.spec, s.full, s.sharded, s.results);
      ADD_FAILURE() << "no error for: " << b.what;
    } catch (const BadInput& ex) {
      const std::string m = ex.what();
      EXPECT_NE(m.find(b.what), std::string::npos) << m;
      EXPECT_NE(m.find("rank "), std::string::npos) << m;
      EXPECT_NE(m.find("micro-batch "), std::string::npos) << m;
    }
  }
}

TEST(Combine, AFieldOneCallLeftOutIsLeftOutOfTheCombination) {
  Sharded s(3);
  s.results[1].outputs.erase(s.loss());
  s.results[2].grads.clear();
  const Result r = sharding::Combine(s.spec, s.full, s.sharded, s.results);
  EXPECT_EQ(r.outputs.count(s.loss()), 0u);
  EXPECT_EQ(r.grads.count(s.grad()), 0u);
}

// Any shapes at all: an error or a full-batch result, never memory out of bounds.
RC_GTEST_PROP(Combine, AnyShapesGiveAnErrorOrAFullBatchResult, ()) {
  Sharded s(*rc::gen::inRange<uint64_t>(0, 1000));
  for (Result& r : s.results) {
    const int what = *rc::gen::inRange(0, 4);
    const std::vector<int64_t> shape =
        *rc::gen::container<std::vector<int64_t>>(*rc::gen::inRange<size_t>(0, 3), rc::gen::inRange<int64_t>(0, 7));
    Array a(shape, DType::kFloat64);
    if (what == 0) r.grads[s.grad()] = a;
    if (what == 1) r.outputs[s.loss()] = a;
    if (what == 2) r.grads.erase(s.grad());
    if (what == 3) r.outputs.erase(s.loss());
  }
  try {
    const Result out = sharding::Combine(s.spec, s.full, s.sharded, s.results);
    for (const auto& [name, g] : out.grads) RC_ASSERT(g.shape == s.full.Input(name).shape);
    for (const auto& [name, o] : out.outputs) RC_ASSERT(o.size() == 1);
  } catch (const BadInput&) {
  }
}

}  // namespace
}  // namespace verlconf
