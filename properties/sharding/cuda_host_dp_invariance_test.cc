// The CUDA implementation's data-parallel invariance, through Thrust's host system: the
// same property as dp_invariance_test.cc, on float32 cases, with every call, the full
// batch and verl's sharded semantics (ShardedReference) run by the cuda-host slot. The
// per-token float32 math is the same in a micro-batch and in the full batch; only the
// sums differ in order, so the registry's float32 tolerance (loosened where the
// registry loosens it) bounds the difference, the loss's scaled by the magnitude of
// the sums behind it.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>

#include "oracle/core/errors.h"
#include "oracle/core/tolerance.h"
#include "oracle/sharding/combine.h"
#include "oracle/sharding/invariance.h"
#include "properties/sharding/sharding_testing.h"

namespace verlconf {
namespace {

using sharding::DpKind;
using testing::Tol;

// The registry's float32 tolerance for one field: the default, or the loosest override
// the spec gives that field (or every field).
Tol Float32Tolerance(const FunctionSpec& spec, const std::string& field) {
  const Tolerance d = DefaultTolerance(DType::kFloat32);
  Tol t{d.rtol, d.atol};
  for (const ToleranceOverride& o : spec.tolerances)
    if (o.dtype == DType::kFloat32 && (o.field == field || o.field == "*")) {
      t.rtol = std::max(t.rtol, o.rtol);
      t.atol = std::max(t.atol, o.atol);
    }
  return t;
}

std::vector<const FunctionSpec*> WithCudaHost() {
  std::vector<const FunctionSpec*> v;
  for (const FunctionSpec* s : testing::AggregatingLosses())
    if (s->Implementation(Impl::kCudaHost)) v.push_back(s);
  return v;
}

class CudaHostDpInvariance : public ::testing::TestWithParam<const FunctionSpec*> {};

TEST_P(CudaHostDpInvariance, ShardedEqualsVerlSemantics) {
  const FunctionSpec& spec = *GetParam();
  const RunFn& impl = spec.cuda_host;
  const Tol loss_tol = Float32Tolerance(spec, "outputs/" + sharding::LossOutput(spec));
  const Tol grad_tol = Float32Tolerance(spec, "grads/" + spec.grads.front());
  const bool ok = rc::check(spec.family + "/" + spec.name, [&] {
    const testing::ShardedDraw d = *testing::ArbitrarySharding(spec, DType::kFloat32);
    Result full, oracle_full;
    try {
      oracle_full = sharding::FullBatchReference(spec, spec.oracle, d.full);
      full = sharding::FullBatchReference(spec, impl, d.full);
    } catch (const VerlError&) {
      RC_SUCCEED("verl raises");
    }
    const sharding::DpVerdict v = sharding::Classify(spec, d.full, d.plan);
    Result sharded;
    try {
      sharded = sharding::RunSharded(spec, impl, d.full, d.plan);
    } catch (const VerlError& e) {
      RC_ASSERT(sharding::MicroBatchMayRaise(spec));
      // The two refusals verl's helpers have: no valid token, or no IS weight left.
      RC_ASSERT(testing::HasEmptyCall(spec, d.full, d.plan) || e.kind() == "ZeroDivisionError");
      RC_SUCCEED("verl raises on a micro-batch");
    }
    RC_TAG(sharding::DpKindName(v.kind));
    if (v.kind == DpKind::kLocal) RC_SUCCEED("local statistic");
    // The oracle's magnitude: what the float32 sums round against.
    const double scale = oracle_full.magnitude.abs_sum;
    const Result want = sharding::ShardedReference(spec, impl, d.full, d.plan);
    RC_ASSERT(testing::CloseResults(spec, sharded, want, loss_tol, grad_tol, scale));
    if (v.kind == DpKind::kInvariant) RC_ASSERT(testing::CloseResults(spec, sharded, full, loss_tol, grad_tol, scale));
  });
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(AggregatingLosses, CudaHostDpInvariance, ::testing::ValuesIn(WithCudaHost()),
                         [](const auto& info) { return testing::TestName(*info.param); });

// Every aggregating loss has a cuda-host entry except those cuda_coverage excepts.
TEST(CudaHostDpInvariance, CoversTheAggregatingLosses) {
  EXPECT_EQ(WithCudaHost().size(), testing::AggregatingLosses().size());
}

}  // namespace
}  // namespace verlconf
