// The grouped advantage estimators' CUDA entries through the host system on group
// layouts the generator's groups of 2-6 do not reach: all singletons, pairs, groups of
// 64 and one group of everything, each with its members shuffled through the batch
// (130 rows, not a multiple of 32), for every entry of the family that takes uids.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "oracle/registry.h"
#include "properties/cuda_host_check.h"

namespace verlconf {
namespace {

std::vector<const FunctionSpec*> GroupedEntries() {
  std::vector<const FunctionSpec*> v;
  for (const FunctionSpec& s : Registry()) {
    if (s.family != "advantage" || !s.Implementation(Impl::kCudaHost)) continue;
    for (const InputSpec& in : s.inputs)
      if (in.role == Role::kGroupIndex && in.name == "index") v.push_back(&s);
  }
  return v;
}

// Codes for `rows` rows in groups of `size` (the last one smaller), shuffled, renumbered
// in order of first appearance as the fixtures store them.
std::vector<double> Layout(int64_t rows, int64_t size, uint64_t seed) {
  std::vector<double> codes(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) codes[static_cast<size_t>(i)] = static_cast<double>(i / size);
  std::mt19937_64 rng(seed);
  std::shuffle(codes.begin(), codes.end(), rng);
  std::map<double, double> first;
  for (double& c : codes) c = first.emplace(c, static_cast<double>(first.size())).first->second;
  return codes;
}

TEST(CudaHostAdvantage, GroupLayouts) {
  const std::vector<const FunctionSpec*> entries = GroupedEntries();
  ASSERT_GE(entries.size(), 8u);
  const int64_t rows = 130;
  for (const FunctionSpec* spec : entries)
    for (const int64_t size : {int64_t{1}, int64_t{2}, int64_t{64}, rows})
      for (uint64_t seed = 1; seed <= 2; ++seed) {
        Case c = testing::RandomCase(*spec, seed * 31 + static_cast<uint64_t>(size), rows, 257, seed == 2);
        auto index = c.inputs.find("index");
        if (index == c.inputs.end() || index->second.data.size() != static_cast<size_t>(rows)) continue;
        index->second.data = Layout(rows, size, seed);
        EXPECT_EQ(testing::CheckCudaHostAgainstOracle(*spec, c), "")
            << spec->name << ": groups of " << size << ", seed " << seed;
      }
}

}  // namespace
}  // namespace verlconf
