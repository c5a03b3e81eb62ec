#include "oracle/judge/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace verlconf {

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPassed: return "PASSED";
    case Outcome::kFailed: return "FAILED";
    case Outcome::kMistrusted: return "MISTRUSTED";
    case Outcome::kSkipped: return "SKIPPED";
    case Outcome::kUnsupported: return "UNSUPPORTED";
    case Outcome::kBaselined: return "BASELINED";
  }
  return "?";
}

namespace {

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// The shortest decimal that reads back as the same double: two values that differ
// always print differently (a float64 loss 1 ulp off is not "1.24408302" twice).
std::string Exact(double v) {
  char b[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(b, sizeof b, "%.*g", precision, v);
    if (!std::isfinite(v) || std::strtod(b, nullptr) == v) break;
  }
  return b;
}

// The same bits (NaN payloads aside: a NaN matches a NaN; -0 is not +0).
bool SameBits(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return x == y && std::signbit(x) == std::signbit(y);
}

bool BitIdentical(const Array& a, const Array& b) {
  if (a.shape != b.shape) return false;
  for (int64_t k = 0; k < a.size(); ++k)
    if (!SameBits(a[k], b[k])) return false;
  return true;
}

// Inserts p among the worst mismatches if it is among the kShownMismatches largest
// err/tol so far (NaN, a non-number, counts as the largest); ties keep memory order.
void KeepWorst(std::vector<FieldReport::Pair>& worst, const FieldReport::Pair& p) {
  for (auto& w : worst)
    if (SameBits(w.got, p.got) && SameBits(w.want, p.want)) {
      ++w.same;
      return;
    }
  auto worse = [](double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a > b; };
  auto at = worst.begin();
  while (at != worst.end() && !worse(p.err_tol, at->err_tol)) ++at;
  if (at == worst.end() && worst.size() >= FieldReport::kShownMismatches) return;
  worst.insert(at, p);
  if (worst.size() > FieldReport::kShownMismatches) worst.pop_back();
}
}  // namespace

std::string ShortNumber(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

std::string FormatIndex(int64_t flat, const std::vector<int64_t>& shape) {
  if (shape.empty()) return "()";
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] ? flat % shape[k] : 0;
    flat = shape[k] ? flat / shape[k] : 0;
  }
  std::string s = "(";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s + ")";
}

FieldReport CompareField(const std::string& field, const Array* got, const Array& want, const Tolerance& tol,
                         bool discrete, const DecisionView& decisions) {
  const Array* boundary = decisions.boundary && decisions.boundary->shape == want.shape ? decisions.boundary : nullptr;
  std::vector<const Array*> branches;
  for (const Array* b : decisions.branch_values)
    if (b && b->shape == want.shape) branches.push_back(b);
  FieldReport r;
  r.field = field;
  r.tol = tol;
  r.discrete = discrete;
  r.shape = want.shape;
  r.dtype = want.dtype;
  r.total = want.size();
  if (got == nullptr) {
    r.outcome = Outcome::kUnsupported;
    r.note = "not produced by the implementation";
    return r;
  }
  if (got->shape != want.shape) {
    r.outcome = Outcome::kFailed;
    r.err_tol = std::numeric_limits<double>::infinity();
    r.note = "shape " + got->ShapeString() + " but expected " + want.ShapeString();
    return r;
  }
  double worst_excess = -1.0;
  bool all_zero = true;
  for (int64_t k = 0; k < want.size(); ++k) {
    const double g = (*got)[k], w = want[k];
    if (w != 0.0) all_zero = false;
    if (std::isfinite(w)) r.compared_finite = true;
    const double ratio = ErrorRatio(g, w, tol, k);
    const bool ok = ratio <= 1.0;
    const double diff = ok && !std::isfinite(w) ? 0.0 : std::fabs(g - w);  // NaN when g is NaN
    if (!(diff <= r.worst_abs)) r.worst_abs = diff;                        // keeps a NaN
    if (w != 0.0 && std::isfinite(w) && !(diff / std::fabs(w) <= r.worst_rel)) r.worst_rel = diff / std::fabs(w);
    // The worst element has the largest ratio as judged (a flip against the value it
    // matched), so a mismatch always comes before any element that passed.
    auto judged = [&](double e) {
      r.err_tol = std::max(r.err_tol, e);
      if (e > worst_excess) {
        worst_excess = e;
        r.worst_index = k;
        r.abs_at_worst = diff;
        r.rel_at_worst = w != 0.0 && std::isfinite(w) ? diff / std::fabs(w) : std::numeric_limits<double>::quiet_NaN();
      }
    };
    if (ok) {
      judged(ratio);
      continue;
    }
    // The other decision's value, where the reference says the decision may flip: the
    // element is then judged against the closest such value. A miss is graded from the
    // nearest value the reference allows here (its own or a branch's).
    double flip_ratio = std::numeric_limits<double>::infinity();
    double nearest = w;
    if (boundary && (*boundary)[k] != 0.0 && std::isfinite(g))
      for (const Array* b : branches) {
        const double v = (*b)[k];
        if (!std::isfinite(v)) continue;
        flip_ratio = std::min(flip_ratio, ErrorRatio(g, v, tol, k));
        if (!(std::fabs(g - nearest) <= std::fabs(g - v))) nearest = v;
      }
    const bool flip = flip_ratio <= 1.0;
    judged(flip ? flip_ratio : ratio);
    if (flip) {
      ++r.flips;
      r.flipped.push_back(k);
      continue;
    }
    ++r.mismatched;
    if (std::isfinite(g) != std::isfinite(nearest) || !std::isfinite(nearest))
      r.grade_non_finite = true;
    else if (nearest == 0.0)
      r.grade_abs_at_zero = std::max(r.grade_abs_at_zero, std::fabs(g));
    else
      r.grade_rel = std::max(r.grade_rel, std::fabs(g - nearest) / std::fabs(nearest));
    FieldReport::Pair pair{k, g, w, ratio};
    if (!SameBits(nearest, w)) pair.other = nearest;
    KeepWorst(r.worst_mismatches, pair);
  }
  r.zero_reference = all_zero && want.size() > 0;
  r.identical = got->dtype == want.dtype && BitIdentical(*got, want);
  if (r.mismatched > 0) {
    r.outcome = Outcome::kFailed;
    if (discrete) r.note = std::to_string(r.mismatched) + " element(s) decided differently";
  } else if (!r.compared_finite) {
    r.outcome = Outcome::kMistrusted;
    r.note = want.size() == 0 ? "empty reference" : "the reference holds no finite number: agreement proves nothing";
  } else if (all_zero) {
    r.outcome = Outcome::kMistrusted;
    r.note = "reference is all zero: agreement proves little";
  } else {
    r.outcome = Outcome::kPassed;
  }
  if (r.flips > 0 && r.outcome != Outcome::kFailed)
    r.note = std::to_string(r.flips) +
             " element(s) took the other decision's value where rounding can flip a "
             "threshold decision";
  return r;
}

std::string FieldReport::Describe() const {
  std::ostringstream o;
  o << field << ": " << OutcomeName(outcome);
  if (!note.empty()) o << " (" << note << ")";
  if (outcome != Outcome::kFailed || mismatched == 0) return o.str();
  if (flips > 0) o << "\n    " << flips << " other element(s) took the other decision's value at a threshold boundary";
  const double pct = total ? 100.0 * static_cast<double>(mismatched) / static_cast<double>(total) : 0.0;
  char pbuf[32];
  std::snprintf(pbuf, sizeof pbuf, "%.2f", pct);
  o << "\n    mismatched " << mismatched << " of " << total << " (" << pbuf << "%)";
  o << "\n    worst abs error " << Num(worst_abs) << ", worst rel error " << Num(worst_rel) << ", at index "
    << FormatIndex(worst_index, shape) << "; worst err/tol " << Num(err_tol);
  o << "\n    tolerance atol=" << Num(tol.atol) << " rtol=" << Num(tol.rtol);
  if (!tol.reason.empty()) o << " (" << tol.reason << ")";
  for (const auto& p : worst_mismatches)
    o << "\n    at " << FormatIndex(p.index, shape) << ": got " << Exact(p.got) << ", want " << Exact(p.want)
      << " (diff " << Num(p.got - p.want) << ", err/tol " << Num(p.err_tol)
      << (std::isnan(p.other) ? "" : "; the other decision at this boundary gives " + Exact(p.other)) << ")"
      << (p.same ? "; " + std::to_string(p.same) + " more element(s) with these values" : "");
  return o.str();
}

}  // namespace verlconf
