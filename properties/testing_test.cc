// testing::Close, the closeness check of every property test: the rule, each NaN
// policy passing and failing, and the array overload's message.
#include "properties/testing.h"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>

namespace verlconf::testing {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Close, AtolPlusRtolTimesWant) {
  const Tol tol{1e-3, 1e-6};
  EXPECT_TRUE(Close(1.0 + 1e-3, 1.0, tol, NanPolicy::kNanFails));  // at the bound
  EXPECT_FALSE(Close(1.0 + 1.1e-3, 1.0, tol, NanPolicy::kNanFails));
  EXPECT_TRUE(Close(1e-6, 0.0, tol, NanPolicy::kNanFails));  // atol alone at 0
  EXPECT_FALSE(Close(2e-6, 0.0, tol, NanPolicy::kNanFails));
  EXPECT_TRUE(Close(0.5, 1.0, Tol{0.5, 0.0}, NanPolicy::kNanFails));   // rtol scales |want|,
  EXPECT_FALSE(Close(1.0, 0.5, Tol{0.5, 0.0}, NanPolicy::kNanFails));  // not |got|
}

TEST(Close, ExactIsEquality) {
  EXPECT_TRUE(Close(0.1 + 0.2, 0.1 + 0.2, kExact, NanPolicy::kNanFails));
  EXPECT_FALSE(Close(0.1 + 0.2, 0.3, kExact, NanPolicy::kNanFails));
  EXPECT_TRUE(Close(-0.0, 0.0, kExact, NanPolicy::kNanFails));
}

TEST(Close, AnInfinityMatchesOnlyItself) {
  EXPECT_TRUE(Close(kInf, kInf, kExact, NanPolicy::kNanFails));
  EXPECT_TRUE(Close(-kInf, -kInf, Tol{1e-3, 1e-3}, NanPolicy::kNanFails));
  EXPECT_FALSE(Close(kInf, -kInf, Tol{1e9, 1e9}, NanPolicy::kNanFails));
  EXPECT_FALSE(Close(kInf, 1.0, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan));
  EXPECT_FALSE(Close(1.0, kInf, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan));  // rtol * |inf| allows no slack
}

TEST(Close, NanEqualsNanPassesOnlyForTwoNans) {
  EXPECT_TRUE(Close(kNan, kNan, kExact, NanPolicy::kNanEqualsNan));
  EXPECT_FALSE(Close(kNan, 1.0, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan));
  EXPECT_FALSE(Close(1.0, kNan, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan));
  EXPECT_TRUE(Close(1.0, 1.0 + 1e-9, Tol{1e-6, 0.0}, NanPolicy::kNanEqualsNan));
}

TEST(Close, NanFailsFailsForAnyNan) {
  EXPECT_FALSE(Close(kNan, kNan, kExact, NanPolicy::kNanFails));
  EXPECT_FALSE(Close(kNan, 1.0, Tol{1e9, 1e9}, NanPolicy::kNanFails));
  EXPECT_FALSE(Close(1.0, kNan, Tol{1e9, 1e9}, NanPolicy::kNanFails));
  EXPECT_TRUE(Close(1.0, 1.0 + 1e-9, Tol{1e-6, 0.0}, NanPolicy::kNanFails));
}

TEST(CloseArray, EachPolicyPassesAndFails) {
  Array want = Array::Matrix(2, 2, DType::kFloat64), got = want;
  want.data = {1.0, kNan, 3.0, 4.0};
  got.data = {1.0, kNan, 3.0 + 1e-9, 4.0};
  EXPECT_TRUE(Close(got, want, Tol{1e-6, 0.0}, NanPolicy::kNanEqualsNan));
  const Closeness fails = Close(got, want, Tol{1e-6, 0.0}, NanPolicy::kNanFails);
  EXPECT_FALSE(fails);
  EXPECT_NE(fails.message().find("index 1:"), std::string::npos) << fails.message();
  EXPECT_NE(fails.message().find("NaN fails"), std::string::npos) << fails.message();

  got.data[1] = 2.0;
  const Closeness nan_vs_number = Close(got, want, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan);
  EXPECT_FALSE(nan_vs_number);
  EXPECT_NE(nan_vs_number.message().find("index 1:"), std::string::npos) << nan_vs_number.message();
}

TEST(CloseArray, NamesTheFirstDifferingIndex) {
  Array want = Array::Matrix(1, 4, DType::kFloat64), got = want;
  want.data = {1.0, 2.0, 3.0, 4.0};
  got.data = {1.0, 2.0, 3.5, 4.5};
  const Closeness c = Close(got, want, Tol{1e-3, 1e-3}, NanPolicy::kNanFails);
  EXPECT_FALSE(c);
  EXPECT_EQ(c.message().rfind("index 2: got 3.5, want 3", 0), 0u) << c.message();
  std::ostringstream shown;  // what RC_ASSERT prints
  shown << c;
  EXPECT_NE(shown.str().find("index 2"), std::string::npos) << shown.str();
  EXPECT_TRUE(Close(got, got, kExact, NanPolicy::kNanFails));
}

TEST(CloseArray, ShapesMustMatch) {
  const Array a = Array::Matrix(2, 3, DType::kFloat64), b = Array::Matrix(3, 2, DType::kFloat64);
  const Closeness c = Close(a, b, Tol{1e9, 1e9}, NanPolicy::kNanEqualsNan);
  EXPECT_FALSE(c);
  EXPECT_NE(c.message().find("shape"), std::string::npos) << c.message();
}

TEST(CloseArray, FailsAsAnAssertionResult) {
  Array want = Array::Matrix(1, 1, DType::kFloat64), got = want;
  got.data = {1.0};
  const ::testing::AssertionResult r = Close(got, want, kExact, NanPolicy::kNanFails);
  EXPECT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("index 0"), std::string::npos) << r.message();
}

}  // namespace
}  // namespace verlconf::testing
