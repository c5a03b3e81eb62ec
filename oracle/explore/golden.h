// The live reference: an explored case's golden computed by the oracle, as the judge reads
// a captured one.
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"

namespace verlconf::explore {

// `c` with the oracle's result (float64 metrics, VJPs for its projections), or with
// expect_error where the oracle raises verl's error. nullopt, with the reason in `refused`,
// where the oracle refuses the inputs (BadInput: nothing verl could be handed) or has no
// semantics for them (Unsupported): such a case is not explored.
std::optional<Case> OracleGolden(const FunctionSpec& spec, const Case& c, std::string* refused);

// `c` with its inputs, config and projections only: no result, error or decline.
Case InputsOnly(const Case& c);

// The failure a shrink keeps: one field and how it fails.
struct Failure {
  std::string field;  // "outputs/loss", ..., or "error" for the error semantics
  // "exception vs result" (one side raised, or they raised differently), "non-finite" (a
  // NaN or Inf on one side only), "shape", "dtype" (the other float dtype, every value
  // within tolerance), or "value".
  std::string kind;
  // Its size (grade.h: "material", "small", "rounding"). Two mechanisms behind one field
  // (an epsilon placed differently and a missing clamp) usually differ in size, and each
  // gets its own minimal case only if the size is part of what must keep failing.
  std::string grade = "material";
  // What the reference did where the field's failing elements are (causes.h): "valid
  // token, ratio above 1, A < 0", "masked token"; "" for a field with no elements to tell
  // apart (a scalar, a shape). One cause, one minimal case.
  std::string cause;
  bool operator<(const Failure& o) const {
    return std::tie(field, kind, grade, cause) < std::tie(o.field, o.kind, o.grade, o.cause);
  }
  bool operator==(const Failure& o) const {
    return field == o.field && kind == o.kind && grade == o.grade && cause == o.cause;
  }
};

}  // namespace verlconf::explore
