// Reading agg_loss's arguments from a case, for every CUDA entry that ends in agg_loss
// (the aggregation family's own and the policy losses').
#pragma once

#include <string>

#include "oracle/aggregation/agg_loss.h"

namespace verlconf::cuda {

enum class AggMode : int;
struct AggGlobal;

// The mode verl names; the name must have passed oracle::CheckAggArguments.
AggMode ToAggMode(const std::string& mode);
AggGlobal ToAggGlobal(const oracle::GlobalBatchInfo& g);

}  // namespace verlconf::cuda
