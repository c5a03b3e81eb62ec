// An explore run as data: what a shard hands to the merge. Everything the reports read of
// a run is carried bit for bit (arrays and numbers in the adapter protocol's exact forms,
// wire.h), so a merged report is rendered from the very cases, results and judgements the
// shards had, never from a re-run.
#pragma once

#include <string>

#include "tools/explore/engine.h"
#include "tools/explore/wire.h"

namespace verlconf::explore {

// One JSON value (an object) holding `run`.
std::string EncodeRun(const ExploreRun& run);

// The inverse; BadInput naming `what` (the shard's file) and the member on anything
// malformed, a function the registry lacks included.
ExploreRun DecodeRun(const Json& j, const std::string& what);

}  // namespace verlconf::explore
