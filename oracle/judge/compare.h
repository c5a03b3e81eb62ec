// Comparison of an implementation's result with a reference, and the outcome model.
//
// Closeness is the tolerance's (oracle/core/tolerance.h). Every comparison has exactly
// one outcome; only PASSED counts as evidence of conformance.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "oracle/core/tensor.h"
#include "oracle/core/tolerance.h"

namespace verlconf {

enum class Outcome {
  kPassed,
  kFailed,
  kMistrusted,   // the check proves nothing (all-zero reference, empty mask, ...)
  kSkipped,      // not run, with a reason
  kUnsupported,  // the implementation does not provide this function or output
  kBaselined,    // FAILED, but every failing field is an accepted difference (conform --baseline)
};
const char* OutcomeName(Outcome o);

struct FieldReport {
  std::string field;  // "outputs/advantages", "grads/log_prob", "metrics/actor/ppo_kl"
  Outcome outcome = Outcome::kPassed;
  std::string note;  // why MISTRUSTED / UNSUPPORTED, or a shape/dtype problem
  Tolerance tol;
  bool discrete = false;
  int64_t total = 0;
  int64_t mismatched = 0;
  double worst_abs = 0.0;
  double worst_rel = 0.0;    // over elements whose reference is non-zero
  int64_t worst_index = -1;  // element with the largest error relative to tolerance
  // The absolute and relative error of that one element (relative: NaN where its reference
  // is zero or not finite). worst_abs and worst_rel are maxima over all elements and may
  // come from different ones; a summary that names one element quotes these.
  double abs_at_worst = 0.0;
  double rel_at_worst = std::numeric_limits<double>::quiet_NaN();
  int64_t flips = 0;             // elements that took the other decision's value at a boundary
  std::vector<int64_t> flipped;  // their flat indices (token-shaped fields: which decisions differ)
  bool compared_finite = false;  // some reference element was finite (NaN == NaN alone proves nothing)
  bool zero_reference = false;   // every reference element is zero (and there is one)
  bool identical = false;        // got equals the reference bit for bit (same shape, dtype, values)
  std::vector<int64_t> shape;    // of the reference, to print the worst index
  struct Pair {
    int64_t index;
    double got, want;
    double err_tol;    // ErrorRatio(got, want) as judged
    int64_t same = 0;  // further mismatched elements with these very got and want values
    // At a boundary, the other decision's value when it is nearer to got than want is:
    // the element is off by rounding from a decision the reference allows. NaN otherwise.
    double other = std::numeric_limits<double>::quiet_NaN();
  };
  // The worst mismatched elements (the largest err/tol), at most kShownMismatches
  // distinct (got, want) pairs, worst first: what a reader needs to see, where the first
  // ones in memory order may all be alike and miss the worst.
  static constexpr size_t kShownMismatches = 5;
  std::vector<Pair> worst_mismatches;

  // How far the mismatched elements are from the nearest value the reference allows them
  // (its own decision's, or at a boundary the other decision's), for the grade alone: the
  // largest relative distance, the largest absolute one where that value is 0, and whether
  // one of them is non-finite on one side only (or a different non-finite value).
  double grade_rel = 0.0;
  double grade_abs_at_zero = 0.0;
  bool grade_non_finite = false;
  // The reference's dtype: what "rounding" means for the grade (float32's or float64's).
  DType dtype = DType::kFloat64;
  // The candidate returned the field in the other float dtype (judge.cc, candidate.cc):
  // failed whatever its values, and named a dtype difference, not a shape.
  bool dtype_differs = false;

  // The largest ErrorRatio over the elements (at a flipped element, against the decision
  // value it matched): <= 1 exactly when no element is mismatched. +inf when the field
  // failed for a reason no element shows (a shape, a dtype). 0 when nothing was compared.
  double err_tol = 0.0;

  // Multi-line description: counts, worst errors with index, pairs, tolerance.
  std::string Describe() const;
};

// Where a rounding-level decision (a clip bound, a threshold) may go either way, and the
// values each decision gives there. Both come from the reference side (the oracle run on
// the golden's inputs), never from the implementation under test.
struct DecisionView {
  const Array* boundary = nullptr;          // 1 where the decision may flip; want's shape
  std::vector<const Array*> branch_values;  // each want's shape: a value one decision gives
};

// Compares one field. `got` may be null: the implementation did not produce it.
// At a boundary element a value that misses `want` still passes when it matches (within
// `tol`) one of the decision's branch values: it is counted as a flip. Anything else there
// (a non-finite value, a number no decision gives) is a mismatch like any other.
// A field whose reference holds no finite number is MISTRUSTED, never PASSED.
FieldReport CompareField(const std::string& field, const Array* got, const Array& want, const Tolerance& tol,
                         bool discrete, const DecisionView& decisions = {});

// A number in three significant digits, for the judge's messages and reasons.
std::string ShortNumber(double v);

// Index of a flat position in a shape, as "(i, j)".
std::string FormatIndex(int64_t flat, const std::vector<int64_t>& shape);

}  // namespace verlconf
