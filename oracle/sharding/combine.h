// What DDP/FSDP make of the per-call results of a sharded case: within a rank the
// micro-batches' gradients accumulate (a sum), across ranks they are averaged; the loss,
// read the same way, is the sum over micro-batches averaged over ranks.
#pragma once

#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/sharding/shard.h"

namespace verlconf::sharding {

// The loss a spec backpropagates: its first scalar output. std::logic_error if none.
const std::string& LossOutput(const FunctionSpec& spec);

// What one call returned, held to its micro-batch before any of it is used: the loss one
// number, each gradient one of spec.grads in the shape of the call's input. BadInput
// "rank R, micro-batch M: FIELD: what is wrong" otherwise (the caller names the case).
void RequireCallResult(const FunctionSpec& spec, const ShardCall& call, const Result& r);

// The combined result, shaped like the full batch: outputs[LossOutput] = (1/k) sum of
// the calls' losses, grads[g] for every g in spec.grads = each call's gradient scattered
// back to its rows (and first `horizon` columns) times 1/k, zero in the columns a call
// did not hold. A field some call left out is left out of the combination (not provided,
// never a partial sum). Metrics are not combined (verl averages or sums them per metric;
// the check is of the gradient and the loss). `results[i]` belongs to `sharded.calls[i]`
// and is checked by RequireCallResult first.
Result Combine(const FunctionSpec& spec, const Case& full, const ShardedCase& sharded,
               const std::vector<Result>& results);

// ShardCase, `impl` on every call, Combine.
Result RunSharded(const FunctionSpec& spec, const RunFn& impl, const Case& full, const ShardPlan& plan);

}  // namespace verlconf::sharding
