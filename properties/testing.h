// Shared helpers for the property tests: RapidCheck generators over the registry's
// input generators, running the oracle by registry name, and the one closeness check
// every property test compares doubles with.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <ostream>
#include <string>
#include <utility>

#include "oracle/core/case.h"
#include "oracle/registry.h"

namespace verlconf::testing {

// Batch and length ranges small enough for thousands of runs, large enough to hold
// several groups, padding and interior mask spans.
rc::Gen<GenParams> ArbitraryParams(DType dtype = DType::kFloat64, int64_t max_batch = 24, int64_t max_tokens = 40);

// A case for `name` from its registry generator.
Case Generate(const std::string& name, const GenParams& p);

// Runs the oracle of `c.function`.
Result RunOracle(const Case& c);

// `c` holding `r`'s outputs, gradients and metrics as its result (its VJPs untouched):
// a golden made from a reference, or a candidate's file made from a result.
Case WithResult(Case c, const Result& r);

// What a NaN on either side means. There is no default: every call site says whether
// NaN is an expected value (agg_loss's 0/0 on an empty selection, opo's baseline of a
// group of empty rows) or a failure.
enum class NanPolicy {
  kNanEqualsNan,  // NaN matches NaN and nothing else
  kNanFails,      // any NaN fails
};

// |got - want| <= atol + rtol * |want|, the comparator's rule (oracle/core/tolerance.h),
// rtol first as in Tolerance. Tol{} (kExact) asks for equality.
struct Tol {
  double rtol = 0.0;
  double atol = 0.0;
};
inline constexpr Tol kExact{};

// got is close to want: |got - want| <= tol.atol + tol.rtol * |want|. An infinity on
// either side matches only the same infinity, as in the comparator (whose rule would
// otherwise let anything pass against an infinite want once rtol > 0). NaN follows `nan`.
bool Close(double got, double want, Tol tol, NanPolicy nan);

// The verdict of an elementwise comparison: true, or false with a message naming the
// first offending index (or the shapes). Usable as RC_ASSERT(Close(...)), which prints
// the message, and as EXPECT_TRUE(Close(...)), through the AssertionResult conversion.
class Closeness {
 public:
  static Closeness Pass() { return Closeness(true, ""); }
  static Closeness Fail(std::string message) { return Closeness(false, std::move(message)); }
  explicit operator bool() const { return ok_; }
  const std::string& message() const { return message_; }
  operator ::testing::AssertionResult() const {  // NOLINT: implicit, for EXPECT_TRUE
    return ok_ ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << message_;
  }

 private:
  Closeness(bool ok, std::string message) : ok_(ok), message_(std::move(message)) {}
  bool ok_;
  std::string message_;
};
std::ostream& operator<<(std::ostream& os, const Closeness& c);

// Same shape, and Close(got[k], want[k], tol, nan) for every element.
Closeness Close(const Array& got, const Array& want, Tol tol, NanPolicy nan);

// Appends `extra` all-zero columns (padding tokens) to every token-shaped input.
Case PadTokens(const Case& c, int64_t extra);

}  // namespace verlconf::testing
