// agg_loss's arguments as a CUDA entry passes them: the one place they are read from a
// case and refused where verl refuses them, for every entry that ends in agg_loss (the
// aggregation family's own and the losses').
#pragma once

#include <string>

#include "cuda_impl/aggregation/agg_loss.cuh"
#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/case.h"

namespace verlconf::cuda {

struct AggArgs {
  AggMode mode;
  AggGlobal global;
};

// `mode` and `info` after oracle::CheckAggArguments (verl's ValueErrors), as the
// templates take them. For the entries whose mode or global batch verl fixes.
AggArgs CheckedAggArgs(const std::string& mode, const oracle::GlobalBatchInfo& info);

// The case's loss_agg_mode and global-batch keys, read in the oracle's order, then checked.
AggArgs ReadAggArgs(const Config& c);

}  // namespace verlconf::cuda
