// Proves @gtest, @gtest//:gmock and @rapidcheck//:rapidcheck_gtest link and run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <vector>

RC_GTEST_PROP(RapidCheckSmoke, ReverseTwiceIsIdentity, (std::vector<int> v)) {
  auto r = v;
  std::reverse(r.begin(), r.end());
  std::reverse(r.begin(), r.end());
  RC_ASSERT(r == v);
}

TEST(RapidCheckSmoke, CheckApiAndGmockMatchers) {
  EXPECT_TRUE(rc::check("sorted is sorted", [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    RC_ASSERT(std::is_sorted(v.begin(), v.end()));
  }));
  EXPECT_THAT(std::vector<int>({1, 2, 3}), ::testing::ElementsAre(1, 2, 3));
}
