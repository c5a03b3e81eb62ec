#include "oracle/compare.h"

#include <cmath>
#include <cstdio>
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
  }
  return "?";
}

namespace {
// The named factors of the default table (see compare.h).
constexpr double kF64RelUlps = 262144.0;  // 2^18
constexpr double kF64AbsUlps = 1024.0;    // 2^10
constexpr double kF32RelUlps = 256.0;     // 2^8
constexpr double kF32AbsUlps = 256.0;     // 2^8

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

// NaN matches NaN and an infinity matches the same infinity: verl's own NaN (0/0 on an
// empty batch) is a value to reproduce, not an error.
bool SameSpecial(double g, double w) {
  if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
  return g == w;  // infinities
}
}  // namespace

Tolerance DefaultTolerance(DType d) {
  if (d == DType::kFloat32) return {kF32RelUlps * kEps32, kF32AbsUlps * kEps32, ""};
  return {kF64RelUlps * kEps64, kF64AbsUlps * kEps64, ""};
}

Tolerance ExactTolerance() { return {0.0, 0.0, "discrete output: compared exactly"}; }

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
                         bool discrete, const Array* boundary) {
  if (boundary && boundary->shape != want.shape) boundary = nullptr;
  FieldReport r;
  r.field = field;
  r.tol = tol;
  r.discrete = discrete;
  r.shape = want.shape;
  r.total = want.size();
  if (got == nullptr) {
    r.outcome = Outcome::kUnsupported;
    r.note = "not produced by the implementation";
    return r;
  }
  if (got->shape != want.shape) {
    r.outcome = Outcome::kFailed;
    r.note = "shape " + got->ShapeString() + " but expected " + want.ShapeString();
    return r;
  }
  double worst_excess = -1.0;
  bool all_zero = true;
  for (int64_t k = 0; k < want.size(); ++k) {
    const double g = (*got)[k], w = want[k];
    if (w != 0.0) all_zero = false;
    bool ok;
    double diff;
    if (!std::isfinite(g) || !std::isfinite(w)) {
      ok = SameSpecial(g, w);
      diff = ok ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      diff = std::fabs(g - w);
      ok = diff <= tol.atol + tol.rtol * std::fabs(w);
    }
    if (diff > r.worst_abs) r.worst_abs = diff;
    if (w != 0.0 && std::isfinite(w)) r.worst_rel = std::max(r.worst_rel, diff / std::fabs(w));
    const double allowed = tol.atol + tol.rtol * (std::isfinite(w) ? std::fabs(w) : 0.0);
    const double excess = allowed > 0 ? diff / allowed : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (excess > worst_excess) {
      worst_excess = excess;
      r.worst_index = k;
    }
    if (!ok) {
      ++r.mismatched;
      if (boundary && (*boundary)[k] != 0.0) ++r.flips;
      if (r.first_mismatches.size() < 5) r.first_mismatches.push_back({k, g, w});
    }
  }
  if (r.mismatched > 0 && r.flips == r.mismatched) {
    r.outcome = Outcome::kPassed;
    r.note = std::to_string(r.flips) + " element(s) differ only where rounding can flip a threshold decision";
  } else if (r.mismatched > 0) {
    r.outcome = Outcome::kFailed;
    if (discrete) r.note = "discrete output differs: a threshold decision flipped";
  } else if (all_zero) {
    r.outcome = Outcome::kMistrusted;
    r.note = want.size() == 0 ? "empty reference" : "reference is all zero: agreement proves little";
  } else {
    r.outcome = Outcome::kPassed;
  }
  return r;
}

std::string FieldReport::Describe() const {
  std::ostringstream o;
  o << field << ": " << OutcomeName(outcome);
  if (!note.empty()) o << " (" << note << ")";
  if (outcome != Outcome::kFailed || mismatched == 0) return o.str();
  if (flips > 0) o << "\n    " << flips << " of the mismatches sit at threshold boundaries";
  const double pct = total ? 100.0 * static_cast<double>(mismatched) / static_cast<double>(total) : 0.0;
  char pbuf[32];
  std::snprintf(pbuf, sizeof pbuf, "%.2f", pct);
  o << "\n    mismatched " << mismatched << " of " << total << " (" << pbuf << "%)";
  o << "\n    worst abs error " << Num(worst_abs) << ", worst rel error " << Num(worst_rel) << ", at index "
    << FormatIndex(worst_index, shape);
  o << "\n    tolerance atol=" << Num(tol.atol) << " rtol=" << Num(tol.rtol);
  if (!tol.reason.empty()) o << " (" << tol.reason << ")";
  for (const auto& p : first_mismatches)
    o << "\n    at " << FormatIndex(p.index, shape) << ": got " << Num(p.got) << ", want " << Num(p.want);
  return o.str();
}

}  // namespace verlconf
