// `conform check`'s dp-invariance rows: a candidate's golden case sharded over k ranks
// (the harness calls the candidate once per rank and micro-batch, as verl's trainer does,
// and writes each call's result as a case of its own), the calls combined as DDP/FSDP
// combine them and judged against what verl's semantics give for that sharding
// (oracle/sharding/invariance.h ShardedReference).
//
// A call's case is named "<case>.dp<k>.r<rank>.m<micro-batch>" and its `why` is
// "dp rows i j ...": the full batch's rows it held (tools/python/verlconf/sharding.py
// writes both). The rows of all calls are the plan; check validates it before judging.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/judge/case_report.h"
#include "tools/cli/selection.h"
#include "tools/h5/golden_set.h"

namespace verlconf::tools {

// The ranks check shards over, as the harness does.
inline constexpr int64_t kDpRanks[] = {2, 4, 8};

struct DpCallName {
  std::string case_name;  // the golden case sharded
  int64_t dp_size = 0, rank = 0, micro_batch = 0;
};
// The parts of a call's case name; nullopt for any other name.
std::optional<DpCallName> ParseDpCallName(const std::string& name);

// A dp-invariance row's function label, "vanilla [dp k=4]", and back (0 for a golden row).
std::string DpRowName(const std::string& function, int64_t dp_size);
// A rank count or index as written in a row or call name: 1 to 9 decimal digits.
bool AllDigits(const std::string& s);
int64_t DpRanksOfRow(const std::string& function);
// The function a dp-invariance row label is of ("vanilla" for "vanilla [dp k=4]").
std::string DpBaseFunction(const std::string& row);

// One report per (golden case, k) of every function that takes verl's global-batch
// arguments, among the golden cases `only` selects whose family is in `families`: the
// golden case's function, family and dtype, `function` labelled by DpRowName. `calls`
// are the candidate's call cases. A (case, k) without calls is UNSUPPORTED (not
// provided); a batch with fewer rows than k, or whose golden raises, has no row; where
// verl's loss is a statistic of each micro-batch (no full-batch formula) it is SKIPPED.
// BadInput (exit 2) naming the call's file and case for a plan that is not one: a
// malformed `why`, ranks or micro-batches missing or beyond k, a row outside the batch,
// given twice or to nobody, a call whose fields do not have the micro-batch's shape.
std::vector<CaseReport> CheckDpInvariance(const fixtures::GoldenSet& golden, const std::vector<const Case*>& calls,
                                          const Selection& only, const std::set<std::string>& families,
                                          const std::function<std::string(const Case&)>& repro);

}  // namespace verlconf::tools
