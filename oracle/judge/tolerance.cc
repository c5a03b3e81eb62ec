#include "oracle/judge/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "oracle/core/errors.h"

namespace verlconf {
namespace {}  // namespace

bool IsDiscrete(const FunctionSpec& spec, const std::string& field) {
  const std::string prefix = "outputs/";
  if (field.rfind(prefix, 0) != 0) return false;
  const OutputSpec* o = spec.FindOutput(field.substr(prefix.size()));
  return o && o->discrete;
}

Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, DType dtype) {
  Tolerance t = IsDiscrete(spec, field) && dtype == DType::kFloat64 ? ExactTolerance() : DefaultTolerance(dtype);
  // The field's own entry wins over the spec-wide "*".
  const ToleranceOverride* pick = nullptr;
  for (const auto& o : spec.tolerances) {
    if (o.dtype != dtype) continue;
    if (o.field == field) {
      pick = &o;
      break;
    }
    if (o.field == "*" && !pick) pick = &o;
  }
  if (pick) return {pick->rtol, pick->atol, pick->reason};
  return t;
}

namespace {

// A float32 scalar loss is a weighted sum of per-token terms (Result::magnitude, oracle/core/case.h). Its
// rounding is bounded by the terms' magnitude M = sum |W_k L_k|, not by |loss|: a
// pairwise or blocked float32 sum of n terms is within ~log2(n) eps32 M of the exact
// sum, and each term's own rounding (exp, products, clips: a few eps32 each) adds up to
// ~8 eps32 M more. Where the terms do not cancel, M ~ |loss| and the default's 256 eps32
// |loss| already exceeds this; it matters only where they cancel. M comes from the
// oracle's run on the golden's inputs, never from the implementation under test.
// M for a case: what the oracle's aggregations report on its inputs; none (no terms)
// where the oracle raises (a case verl raises on, or one without verl semantics, has no sum).
AggregateMagnitude OracleMagnitude(const FunctionSpec& spec, const Case& c) {
  if (!spec.oracle) return {};
  try {
    return spec.oracle(c).magnitude;
  } catch (const VerlError&) {
    return {};
  } catch (const Unsupported&) {
    return {};
  }
}

// outputs/<name> of a scalar output: an aggregated loss, when the oracle reports terms.
bool IsScalarOutput(const FunctionSpec& spec, const std::string& field) {
  if (field.rfind("outputs/", 0) != 0) return false;
  const OutputSpec* out = spec.FindOutput(field.substr(std::string("outputs/").size()));
  return out && out->kind == OutputKind::kScalar;
}

// `m`: the oracle's aggregations on the case (CaseTolerance runs it once for both rules).
void AllowForAggregateMagnitude(const AggregateMagnitude& m, bool scalar, Tolerance& t) {
  if (!scalar || m.terms == 0 || !(m.abs_sum > 0.0)) return;
  const double factor = SumRoundingEps(m.terms);
  const double extra = factor * kEps32 * m.abs_sum;
  if (!(extra > 0.0) || !std::isfinite(extra)) return;
  t.atol += extra;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "float32 sum of %lld terms of magnitude %.3g: atol + %.3g (%.0f eps32 times the magnitude)",
                static_cast<long long>(m.terms), m.abs_sum, extra, factor);
  t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
}

// The table's absolute tolerance is for quantities of order one: the error a correct
// implementation can show where a value cancels toward 0. An aggregated loss is its
// terms times weights W (and any coefficient after it: kl_loss_coef 1e-3, a local share
// of a global token count), so what cancellation can leave in the loss is sum |W| times
// a term's, and in each gradient element max |W| times a term's. Scaling the absolute
// part by that (never above 1: it only narrows what the table allows near 0) keeps a
// small-scaled output from passing any relative error below the table's atol. The
// weights come from the oracle's run on the case's inputs, never from the candidate.
void ScaleAbsoluteByWeights(const std::string& field, const AggregateMagnitude& m, bool scalar, Tolerance& t) {
  const bool loss = scalar, grad = field.rfind("grads/", 0) == 0;
  if (!loss && !grad) return;
  if (m.terms == 0) return;
  const double weight = loss ? m.weight_sum : m.weight_max;
  if (!(weight < 1.0) || !std::isfinite(weight)) return;
  t.atol *= weight;
  char buf[128];
  std::snprintf(buf, sizeof buf, "atol times the aggregation's %s weight %.3g", loss ? "total" : "largest", weight);
  t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
}

// The spec's per-element scale (FunctionSpec::atol_scale), each factor capped at 1: the
// same narrowing, element by element, for a coefficient-scaled quantity no aggregation
// carries.
void ScaleAbsoluteByElements(const FunctionSpec& spec, const std::string& field, const Case& c, Tolerance& t) {
  if (!spec.atol_scale) return;
  std::optional<std::vector<double>> scale;
  try {
    scale = spec.atol_scale(c, field);
  } catch (const std::exception&) {
    return;  // inputs the oracle refuses: the table's tolerance, as for the rest of the case
  }
  if (!scale) return;
  double lowest = 1.0;
  for (double& s : *scale) {
    s = std::isfinite(s) ? std::clamp(s, 0.0, 1.0) : 1.0;
    lowest = std::min(lowest, s);
  }
  if (!(lowest < 1.0)) return;
  t.atol_scale = std::make_shared<const std::vector<double>>(std::move(*scale));
  char buf[112];
  std::snprintf(buf, sizeof buf, "atol times each element's coefficient-scaled magnitude (down to %.3g)", lowest);
  t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
}

}  // namespace

Tolerance CaseTolerance(const FunctionSpec& spec, const std::string& field, const Case& c,
                        const AggregateMagnitude* known) {
  Tolerance t = ToleranceFor(spec, field, c.dtype);
  if (spec.case_tolerance) {
    // A bound computed from the case itself (a cancellation's condition number): it
    // replaces the table's entry, and may only loosen the dtype's default.
    if (std::optional<Tolerance> b = spec.case_tolerance(c, field)) {
      const Tolerance d = DefaultTolerance(c.dtype);
      t = {std::max(b->rtol, d.rtol), std::max(b->atol, d.atol), b->reason};
    }
  }
  // The oracle's aggregations, run once for the two rules that read them.
  const bool scalar = IsScalarOutput(spec, field);
  AggregateMagnitude own;
  if (!known && spec.oracle && (scalar || field.rfind("grads/", 0) == 0)) {
    own = OracleMagnitude(spec, c);
    known = &own;
  }
  const AggregateMagnitude none;
  const AggregateMagnitude& m = known ? *known : none;
  ScaleAbsoluteByWeights(field, m, scalar, t);
  ScaleAbsoluteByElements(spec, field, c, t);
  if (c.dtype != DType::kFloat32) {
    // The condition number bounds float64's absolute rounding the same way (a constant
    // group's (s - mean) / (std + 1e-6) is the sums' last bit times 1e6: 4e-10 where verl
    // gets exactly 0); float64's 2^18-ulp rtol already covers the relative part.
    if (spec.float32_condition) {
      const double cond = spec.float32_condition(c);
      if (cond > 1.0) {
        t.atol *= cond;
        char buf[96];
        std::snprintf(buf, sizeof buf, "float64 atol scaled by the case's condition number %.3g", cond);
        t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
      }
    }
    return t;
  }
  AllowForAggregateMagnitude(m, scalar, t);
  if (!spec.float32_condition) return t;
  const double cond = spec.float32_condition(c);
  if (cond > 1.0) {
    t.rtol *= cond;
    t.atol *= cond;
    char buf[96];
    std::snprintf(buf, sizeof buf, "float32 tolerance scaled by the case's condition number %.3g", cond);
    t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
  }
  return t;
}

Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, const Case& c) {
  return CaseTolerance(spec, field, c, nullptr);
}

namespace {

// The most elements any count in the case can be taken over: its largest input.
int64_t CountedElements(const Case& c) {
  int64_t n = 1;
  for (const auto& [name, x] : c.inputs) n = std::max<int64_t>(n, x.size());
  return n;
}

}  // namespace

// A fraction (a clip fraction, a rejected share) is a count over a denominator of at most
// CountedElements(c). Two counts differ by at least 1 / that, so a tolerance below half
// of it judges the count exactly, and within that the division is held to the dtype's
// floating tolerance: a correct different summation order (an ulp) never fails, one token
// counted differently always does. A token whose decision the candidate's fields show to
// differ at a rounding boundary moves the count legitimately: `share` of the valid tokens.
Tolerance FractionTolerance(const Tolerance& floating, double want, const Case& c, double share) {
  const double half_count = 0.5 / static_cast<double>(CountedElements(c));
  // The division is verl's, guard included: masked_mean's k / (n + 1e-8) is 1e-8 / n
  // relative below an exact k / n, beyond float64's tolerance (docs/verl-quirks.md).
  double arithmetic = floating.atol + floating.rtol * std::fabs(want);
  if (!std::isfinite(arithmetic)) arithmetic = half_count;  // verl's NaN (0/0) is matched as a value
  // verl reduces a boolean fraction in float32 whatever the case's dtype (.float().mean()),
  // so a fraction the share moves arrives as float32(k / n), not k / n: each side within
  // half a float32 ulp of its exact count ratio.
  const double rounding = share > 0 ? kEps32 * (std::fabs(want) + share) : 0.0;
  Tolerance t{0.0, std::min(arithmetic, half_count) + share + rounding, ""};
  t.reason =
      "a fraction: the count it implies exactly, the division to " +
      std::string(arithmetic < half_count ? "the dtype's tolerance"
                                          : "half a count of " + std::to_string(CountedElements(c))) +
      (share > 0 ? "; + " + ShortNumber(share) + " for valid tokens whose decision differs at a rounding boundary"
                 : "");
  return t;
}

namespace {

// `d` as a ratio of small integers (1/64, 3/40) when one with a denominator of at most
// `n` gives it to within rounding: the count difference a fraction's move implies.
std::string AsCountRatio(double d, int64_t n) {
  for (int64_t den = 1; den <= n && den <= (int64_t{1} << 22); ++den) {
    const double k = std::round(d * static_cast<double>(den));
    if (k >= 1 && std::fabs(d * static_cast<double>(den) - k) <= 1e-6 * k)
      return std::to_string(static_cast<long long>(k)) + "/" + std::to_string(den);
  }
  return "";
}

}  // namespace

std::string FractionNote(const FieldReport& f, const Case& c, const Tolerance& tol, double share) {
  const int64_t n = CountedElements(c);
  std::string s = "a fraction moved by " + ShortNumber(f.worst_abs);
  if (!std::isfinite(f.worst_abs)) return s + " (not a number)";
  if (f.worst_abs > 0.5 / static_cast<double>(n) + share) {
    const std::string ratio = AsCountRatio(f.worst_abs, n);
    s += (ratio.empty() ? "" : " (" + ratio + ")") + std::string(": the count it implies differs");
  } else {
    s += ": the count agrees, the division is beyond its floating tolerance";
  }
  s += "; allowed " + ShortNumber(tol.atol);
  if (share > 0) s += ", " + ShortNumber(share) + " of it for tokens whose decision differs from the reference's";
  return s;
}

}  // namespace verlconf
