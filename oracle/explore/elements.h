// The elements a difference is made of, each with what it is in the case: which row and
// group, a valid or a masked token, the ratio its log-probabilities make, whether the
// reference sits at a decision boundary there. What a reader needs to see the cause.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/core/tolerance.h"

namespace verlconf::explore {

struct ElementDiff {
  int64_t index = 0;  // flat
  std::string at;     // "(i, j)"
  double got = 0, want = 0;
  double err_tol = 0;  // ErrorRatio(got, want, tol)
  std::string status;  // "row 0, group 1, valid token, ratio 1.2, at a decision boundary"
};

// The token-shaped mask input a case holds (response_mask, loss_mask); null when none.
const Array* TokenMask(const FunctionSpec& spec, const Case& c);

// The log-ratio at `flat` of the pair of log-probabilities the deciding input belongs to
// (log_ratio itself, or newer minus older policy); nullopt where the spec has none.
std::optional<double> LogRatio(const FunctionSpec& spec, const Case& c, int64_t flat);

// A field's array as a case holds it ("outputs/x", "grads/x", "vjps/o/i"; a metric as a
// 0-d array); null when the case lacks it.
const Array* FieldArray(const Case& c, const std::string& field, Array& metric_storage);

// Every element of `field` where `got` differs from `golden` beyond `tol` (NaN against a
// number included), in index order, at most `limit`. Empty when the shapes differ.
// `boundary`: the oracle's decision boundary on `golden` where the caller has it (empty:
// none); null to compute it here.
std::vector<ElementDiff> DifferingElements(const FunctionSpec& spec, const Case& golden, const Case& got,
                                           const std::string& field, const Tolerance& tol, size_t limit = 64,
                                           const Array* boundary = nullptr);

}  // namespace verlconf::explore
