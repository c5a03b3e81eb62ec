// What the data-parallel property suites share: the registry entries that aggregate a
// loss, a random case with a random sharding of it, and the comparison of a combined
// sharded result with a reference.
#pragma once

#include <rapidcheck.h>

#include <ostream>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/sharding/plan.h"
#include "properties/testing.h"

namespace verlconf::testing {

// Every registry entry that aggregates a loss (its config has loss_agg_mode or verl's
// global-batch arguments), with a generator, a scalar loss and gradients: read from the
// registry, so a new loss joins the suites by being registered.
std::vector<const FunctionSpec*> AggregatingLosses();
// A gtest-safe name: family_name with every other character an underscore.
std::string TestName(const FunctionSpec& spec);

struct ShardedDraw {
  Case full;
  sharding::ShardPlan plan;
};
// How RapidCheck prints a failing draw: the function, seed, shape, mode and plan.
void showValue(const ShardedDraw& d, std::ostream& os);

// A case from the spec's generator (B >= k rows) sharded over k in {2, 4, 8} ranks with
// uneven rows, up to 3 micro-batches per rank, a quarter of the time one rank whose
// rows are all masked, a quarter of the time full-width micro-batches and (separately)
// live-sequence counting; clip_cov / kl_cov get a random token pick half the time.
rc::Gen<ShardedDraw> ArbitrarySharding(const FunctionSpec& spec, DType dtype);

// Zeroes every token mask (the loss mask, a token pick) of every row `rank` holds.
void MaskRank(const FunctionSpec& spec, Case& full, const sharding::ShardPlan& plan, int64_t rank);

// Whether some micro-batch of the plan holds no valid token.
bool HasEmptyCall(const FunctionSpec& spec, const Case& full, const sharding::ShardPlan& plan);

// The combined loss and every gradient of `got` against `want`: the loss within
// `loss_tol` (its atol scaled by max(1, scale), the magnitude of the sums behind it),
// gradients within `grad_tol`; NaN equals NaN (a zero count makes verl's loss 0/0).
Closeness CloseResults(const FunctionSpec& spec, const Result& got, const Result& want, Tol loss_tol, Tol grad_tol,
                       double scale);

}  // namespace verlconf::testing
