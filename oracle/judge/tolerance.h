// How far a field may be from its reference: the registry's table (the dtype default or
// the spec's override), the case's own bounds (a condition number, a cancellation), the
// float32 rounding of an aggregated loss's terms, and a fraction's count.
#pragma once

#include <string>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/core/tolerance.h"
#include "oracle/judge/compare.h"

namespace verlconf {

// outputs/<name> of an output the spec calls discrete (a mask, a 0/1 decision).
bool IsDiscrete(const FunctionSpec& spec, const std::string& field);

// The tolerance for one field: the dtype default, or the spec's override; for a case
// scaled by the spec's condition number of it, when it defines one.
Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, DType dtype);
Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, const Case& c);

// ToleranceFor(spec, field, c) with the magnitude of the oracle's aggregations on c's
// inputs already at hand (`known`, from a Result of spec.oracle(c)); null: run it here.
Tolerance CaseTolerance(const FunctionSpec& spec, const std::string& field, const Case& c,
                        const AggregateMagnitude* known);

// The tolerance of a fraction metric whose `floating` tolerance is the dtype's: the
// count it implies is judged exactly, the division to the floating tolerance; `share`
// of the valid tokens may move the count where their decision differs at a rounding
// boundary.
Tolerance FractionTolerance(const Tolerance& floating, double want, const Case& c, double share);
// Why a fraction failed: the count difference it implies, or the division.
std::string FractionNote(const FieldReport& f, const Case& c, const Tolerance& tol, double share);

}  // namespace verlconf
