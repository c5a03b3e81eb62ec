// Group bookkeeping shared by the group-relative estimators: verl groups sequences by
// their prompt uid; here the uids arrive as int64 codes.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "oracle/core/tensor.h"

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

// A_{i,t} = a_i * mask_{i,t}: verl's `scalars.unsqueeze(-1) * response_mask`.
Array RowsTimesMask(const std::vector<double>& per_seq, const Array& mask);

// Mean of s over one group's members, as torch.mean of the stacked scores (accurately
// summed; verl's float64 sums differ from it only in the last bits).
double GroupMean(const std::vector<double>& s, const std::vector<int64_t>& members);
// torch.std (unbiased, n - 1) of the same, about GroupMean.
double GroupStd(const std::vector<double>& s, const std::vector<int64_t>& members);
// The same about a given center: torch's std of a whole tensor on the CPU takes its
// deviations from the tensor's own mean in its dtype (a float32 mean, rounded), summing
// their squares in double.
double GroupStdAbout(const std::vector<double>& s, const std::vector<int64_t>& members, double center);

}  // namespace verlconf::oracle
