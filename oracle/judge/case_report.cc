#include "oracle/judge/case_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace verlconf {

void FoldOutcome(CaseReport& r) {
  int failed = 0, passed = 0;
  std::vector<std::string> missing;
  for (auto& f : r.fields) {
    // A field failed for a reason no element shows still reads as out of tolerance.
    if (f.outcome == Outcome::kFailed && !(f.err_tol > 1.0)) f.err_tol = std::numeric_limits<double>::infinity();
    if (f.outcome == Outcome::kFailed || (f.outcome != Outcome::kUnsupported && f.total > 0))
      r.err_tol = std::max(r.err_tol.value_or(0.0), f.err_tol);
    failed += f.outcome == Outcome::kFailed;
    passed += f.outcome == Outcome::kPassed;
    if (f.outcome == Outcome::kUnsupported) missing.push_back(f.field);
    if (std::isfinite(f.worst_rel)) r.worst_rel = std::max(r.worst_rel, f.worst_rel);
    if (f.outcome == Outcome::kPassed) r.flips += f.flips;
  }
  // A case is judged on the fields the implementation produced; the ones it did not are
  // UNSUPPORTED each, and the case says so ("partial").
  std::string partial;
  if (!missing.empty() && missing.size() < r.fields.size()) {
    r.partial = true;
    partial = "partial: judged on " + std::to_string(r.fields.size() - missing.size()) + " of " +
              std::to_string(r.fields.size()) + " fields; not provided: ";
    constexpr size_t kNamed = 4;
    for (size_t k = 0; k < missing.size() && k < kNamed; ++k) partial += (k ? ", " : "") + missing[k];
    if (missing.size() > kNamed) partial += ", ... (" + std::to_string(missing.size() - kNamed) + " more)";
  }
  // Agreement only on zeros (every output, gradient and projection reference zero, a
  // detached VJP included) proves nothing about the arithmetic.
  bool evidence = false;
  for (const auto& f : r.fields) evidence |= f.outcome == Outcome::kPassed && !f.zero_reference;
  if (failed) {
    r.outcome = Outcome::kFailed;
    r.detail = std::to_string(failed) + " field(s) out of tolerance";
  } else if (!r.fields.empty() && missing.size() == r.fields.size()) {
    r.outcome = Outcome::kUnsupported;
    r.detail = "no expected field was produced";
  } else if (!passed || !evidence) {
    r.outcome = Outcome::kMistrusted;
    r.detail = r.fields.empty() ? "nothing to compare"
               : passed         ? "every reference it agrees with is zero: agreement proves nothing"
                                : "no compared field proves anything (all zero or no finite number)";
  }
  if (!partial.empty()) r.detail = r.detail.empty() ? partial : r.detail + "; " + partial;
}

std::string CaseReport::Describe() const {
  std::ostringstream o;
  o << OutcomeName(outcome) << " " << function << "/" << case_name << " [" << DTypeName(dtype) << "]";
  if (!detail.empty()) o << ": " << detail;
  if (const Grade g = CaseGrade(*this); g != Grade::kNone) o << " (" << GradeName(g) << ")";
  for (const auto& f : fields)
    if (f.outcome == Outcome::kFailed || outcome != Outcome::kPassed) o << "\n  " << f.Describe();
  if (!repro.empty()) o << "\n  repro: " << repro;
  return o.str();
}

CaseReport CaseReport::NotCompared(const Case& c, Outcome outcome, const std::string& detail) {
  CaseReport r;
  r.family = c.family;
  r.function = c.function;
  r.case_name = c.name;
  r.where = c.Where();
  r.dtype = c.dtype;
  r.outcome = outcome;
  r.detail = detail;
  return r;
}

Grade CaseGrade(const CaseReport& r) {
  if (r.outcome != Outcome::kFailed && r.outcome != Outcome::kBaselined) return Grade::kNone;
  Grade g = Grade::kNone;
  for (const auto& f : r.fields) g = std::max(g, FieldGrade(f));
  return g == Grade::kNone ? Grade::kMaterial : g;
}

}  // namespace verlconf
