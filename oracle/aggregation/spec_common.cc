#include "oracle/aggregation/spec_common.h"

#include <iterator>

#include "oracle/core/spec_util.h"

namespace verlconf::oracle {

void AddGlobalBatchKeys(FunctionSpec& s) {
  s.config.push_back({"dp_size", "int", int64_t{1}, "data-parallel size; > 1 requires the global counts"});
  s.config.push_back({"batch_num_tokens", "int", None(), "valid tokens in the global batch (token-mean)"});
  s.config.push_back({"global_batch_size", "int", None(), "sequences in the global batch (seq-mean-*)"});
  s.config.push_back({"loss_scale_factor", "float", None(), "seq-mean-token-sum-norm divisor; None = T"});
}

std::vector<std::string> AggModeChoices() { return {std::begin(kAggModes), std::end(kAggModes)}; }

std::string RandomAggMode(InputGen& g) { return kAggModes[g.Int(0, 4)]; }

GlobalBatchInfo ReadGlobalBatchInfo(const Config& c) {
  GlobalBatchInfo g;
  g.dp_size = c.Int("dp_size");
  g.batch_num_tokens = c.OptionalDouble("batch_num_tokens");
  g.global_batch_size = c.OptionalDouble("global_batch_size");
  g.loss_scale_factor = c.OptionalDouble("loss_scale_factor");
  return g;
}

}  // namespace verlconf::oracle
