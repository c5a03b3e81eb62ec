// Group bookkeeping shared by the group-relative estimators: verl groups sequences by
// their prompt uid; here the uids arrive as int64 codes.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "oracle/tensor.h"

namespace verlconf::oracle {

// Members of each group, in first-appearance order of the group and in element order
// within it (the order verl's Python loops visit them).
struct Groups {
  std::vector<std::vector<int64_t>> members;
  std::vector<int64_t> group_of;  // per sequence: position in `members`
};

Groups GroupBy(const Array& index);

// s_i = sum_t r_{i,t} over every token (verl sums the whole row, not just the mask).
std::vector<double> RowSums(const Array& m);

}  // namespace verlconf::oracle
