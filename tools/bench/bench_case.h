// The cases cuda_bench times: one per registry entry with a CUDA implementation (and one
// per perf-anchor row that names a configuration), built by the entry's own generator at
// the bench's shape, with verl's default for every configuration key that has one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "tools/bench/anchor.h"

namespace verlconf::bench {

struct BenchItem {
  std::string label;  // "family/name", or the anchor's row name for a configured row
  const FunctionSpec* spec;
  std::map<std::string, ConfigValue> config;  // on top of verl's defaults
  const AnchorRow* anchor = nullptr;
};

// The entries with a CUDA implementation and the configured anchor rows: first every row
// the perf anchor times (registry order, a configured row after its entry's place), then
// the entries it does not time; `only` (labels or "family/name" keys; empty = all) selects
// among them. `impl`: the slot an entry must fill (the host build of the CUDA sources fills
// cuda-host alone).
std::vector<BenchItem> BenchItems(const std::vector<std::string>& only, Impl impl = Impl::kCuda);

// Generates inputs for `spec` at rows x tokens (float32 values), sets the configuration
// as described above and resolves it. Inputs are generated once per family, input
// names and shape and reused by the next entry of the same signature, and above 2^22
// tokens a band of rows is drawn and repeated down the batch: a 4096 x 8192 draw costs
// the host tens of seconds, and the values do not change the work an entry does.
class CaseMaker {
 public:
  // `verl_defaults` false keeps the generator's drawn configuration (a function verl
  // refuses to run with its defaults alone).
  Case Make(const BenchItem& item, int64_t rows, int64_t tokens, int64_t group, bool verl_defaults = true);

 private:
  std::map<std::string, std::map<std::string, Array>> inputs_by_signature_;
};

// The tokens per row the bench gives `spec` at T tokens: the entropy loss reads a
// rows x T x V logits tensor, so its T is divided by 16 to keep the tensor the size of a
// few token matrices.
int64_t TokensFor(const FunctionSpec& spec, int64_t tokens);

// The minimal traffic of one call, in bytes: every input read and every output and
// gradient written once, in float32.
double MinimalTrafficBytes(const Case& c, const Result& r);

}  // namespace verlconf::bench
