// The aggregation keys every loss's registry entry carries (agg_loss's mode and verl's
// global_batch_info), as config entries, read back, and drawn at random.
#pragma once

#include <string>
#include <vector>

#include "oracle/aggregation/agg_loss.h"
#include "oracle/core/function_spec.h"
#include "oracle/core/generate.h"

namespace verlconf::oracle {

// verl's global_batch_info keys as config entries, and reading them back.
void AddGlobalBatchKeys(FunctionSpec& s);
GlobalBatchInfo ReadGlobalBatchInfo(const Config& c);

// verl's loss_agg_mode names, as a config key's choices, and one drawn at random.
std::vector<std::string> AggModeChoices();
std::string RandomAggMode(InputGen& g);

}  // namespace verlconf::oracle
