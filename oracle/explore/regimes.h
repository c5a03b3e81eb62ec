// Generated cases beyond the goldens: the registry's own generator for a function, run at
// shapes and in regimes that the captured inputs rarely or never reach (1x1 and long rows,
// all-masked batches, singleton and constant groups, log-ratios beyond every clamp, ratios
// on a threshold, quantised values that tie, config keys drawn across their range and into
// values verl refuses). Deterministic in (seed, function, index).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf::explore {

// Config keys fixed by the user: key -> the values a generated case draws from (one: the
// key is pinned). A key the function lacks is not its business.
using ConfigPins = std::map<std::string, std::vector<ConfigValue>>;

// Whether `c`'s config keeps to `pins` (each pinned key the spec has holds one of its values).
bool KeepsPins(const FunctionSpec& spec, const Case& c, const ConfigPins& pins);

struct Explored {
  Case c;              // inputs, config (resolved), dtype, projections; no result
  std::string regime;  // what was done to it, e.g. "4x1 float32 all-masked quantised config"
};

// Case number `index` of `spec`'s exploration under `seed`. `dtype` forces the dtype (an
// implementation that computes in one dtype). The case is structurally valid
// (ValidateStructure); whether the oracle accepts it is the caller's to find out.
Explored GenerateExplored(const FunctionSpec& spec, uint64_t seed, int64_t index, std::optional<DType> dtype,
                          int attempt = 0, const ConfigPins& pins = {});

// A 64-bit mix of its arguments (SplitMix64 over an FNV-1a of the text): the seed of one
// case, independent of the order cases are run in.
uint64_t CaseSeed(uint64_t seed, const std::string& text, int64_t index, int attempt);

// Standard-normal projections for every tensor output of a function whose spec lists VJPs,
// shaped like the outputs of `result`, as the capture draws them (stop-gradient checks).
void AddProjections(const FunctionSpec& spec, const Result& result, uint64_t seed, Case& c);

}  // namespace verlconf::explore
