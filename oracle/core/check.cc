#include "oracle/core/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "oracle/core/aggregate_probe.h"
#include "oracle/core/errors.h"
#include "oracle/core/validate.h"

namespace verlconf {
namespace {

std::string ErrorKind(const std::string& e) { return e.substr(0, e.find(':')); }

bool IsDiscrete(const FunctionSpec& spec, const std::string& field) {
  const std::string prefix = "outputs/";
  if (field.rfind(prefix, 0) != 0) return false;
  const OutputSpec* o = spec.FindOutput(field.substr(prefix.size()));
  return o && o->discrete;
}

// A case whose every mask input covers nothing exercises no arithmetic.
bool MasksCoverNothing(const FunctionSpec& spec, const Case& c) {
  bool any_mask = false;
  for (const InputSpec& in : spec.inputs) {
    if (!in.is_mask) continue;
    const Array* m = c.OptionalInput(in.name);
    if (!m) continue;
    any_mask = true;
    for (double v : m->data)
      if (v != 0.0) return false;
  }
  return any_mask;
}

void Fold(CaseReport& r) {
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

}  // namespace

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

void ValidateTolerances(const FunctionSpec& spec) {
  for (const auto& o : spec.tolerances) {
    const Tolerance d = DefaultTolerance(o.dtype);
    const std::string where =
        spec.family + "/" + spec.name + " tolerance for " + o.field + " [" + DTypeName(o.dtype) + "]";
    if (o.reason.empty()) throw std::logic_error(where + ": an override must say why");
    if (!(o.rtol >= d.rtol) || !(o.atol >= d.atol))
      throw std::logic_error(where + ": rtol=" + std::to_string(o.rtol) + " atol=" + std::to_string(o.atol) +
                             " is tighter than the default (rtol=" + std::to_string(d.rtol) +
                             " atol=" + std::to_string(d.atol) + "); overrides may only loosen");
    for (const auto& p : spec.tolerances)
      if (&p != &o && p.field == o.field && p.dtype == o.dtype) throw std::logic_error(where + ": given twice");
  }
}

std::string CaseReport::Describe() const {
  std::ostringstream o;
  o << OutcomeName(outcome) << " " << function << "/" << case_name << " [" << DTypeName(dtype) << "]";
  if (!detail.empty()) o << ": " << detail;
  for (const auto& f : fields)
    if (f.outcome == Outcome::kFailed || outcome != Outcome::kPassed) o << "\n  " << f.Describe();
  if (!repro.empty()) o << "\n  repro: " << repro;
  return o.str();
}

namespace {

// A float32 scalar loss is a weighted sum of per-token terms (aggregate_probe.h). Its
// rounding is bounded by the terms' magnitude M = sum |W_k L_k|, not by |loss|: a
// pairwise or blocked float32 sum of n terms is within ~log2(n) eps32 M of the exact
// sum, and each term's own rounding (exp, products, clips: a few eps32 each) adds up to
// ~8 eps32 M more. Where the terms do not cancel, M ~ |loss| and the default's 256 eps32
// |loss| already exceeds this; it matters only where they cancel. M comes from the
// oracle's run on the golden's inputs, never from the implementation under test.
// M for a case: what the oracle's aggregations report on its inputs; nullopt where the
// oracle raises (a case verl raises on, or one without verl semantics, has no sum).
std::optional<AggregateMagnitude> OracleMagnitude(const FunctionSpec& spec, const Case& c) {
  if (!spec.oracle) return std::nullopt;
  try {
    AggregateProbe probe;
    spec.oracle(c);
    return probe.result();
  } catch (const VerlError&) {
    return std::nullopt;
  } catch (const Unsupported&) {
    return std::nullopt;
  }
}

// `known`: M from an oracle run on `c` the caller already made; null to run it here.
void AllowForAggregateMagnitude(const FunctionSpec& spec, const std::string& field, const Case& c,
                                const std::optional<AggregateMagnitude>* known, Tolerance& t) {
  if (field.rfind("outputs/", 0) != 0 || !spec.oracle) return;
  const OutputSpec* out = spec.FindOutput(field.substr(std::string("outputs/").size()));
  if (!out || out->kind != OutputKind::kScalar) return;
  const std::optional<AggregateMagnitude> run = known ? std::nullopt : OracleMagnitude(spec, c);
  const std::optional<AggregateMagnitude>& m = known ? *known : run;
  if (!m || m->terms == 0 || !(m->abs_sum > 0.0)) return;
  const double factor = std::ceil(std::log2(static_cast<double>(std::max<int64_t>(m->terms, 2)))) + 8.0;
  const double extra = factor * kEps32 * m->abs_sum;
  if (!(extra > 0.0) || !std::isfinite(extra)) return;
  t.atol += extra;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "float32 sum of %lld terms of magnitude %.3g: atol + %.3g (%.0f eps32 times the magnitude)",
                static_cast<long long>(m->terms), m->abs_sum, extra, factor);
  t.reason = t.reason.empty() ? buf : t.reason + "; " + buf;
}

// ToleranceFor(spec, field, c), with the aggregate magnitude of an oracle run already made.
Tolerance CaseTolerance(const FunctionSpec& spec, const std::string& field, const Case& c,
                        const std::optional<AggregateMagnitude>* known) {
  Tolerance t = ToleranceFor(spec, field, c.dtype);
  if (spec.case_tolerance) {
    // A bound computed from the case itself (a cancellation's condition number): it
    // replaces the table's entry, and may only loosen the dtype's default.
    if (std::optional<Tolerance> b = spec.case_tolerance(c, field)) {
      const Tolerance d = DefaultTolerance(c.dtype);
      t = {std::max(b->rtol, d.rtol), std::max(b->atol, d.atol), b->reason};
    }
  }
  if (c.dtype != DType::kFloat32) return t;
  AllowForAggregateMagnitude(spec, field, c, known, t);
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

}  // namespace

Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, const Case& c) {
  return CaseTolerance(spec, field, c, nullptr);
}

namespace {

std::string Num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// How far the decision input is pushed to find the other decision's value: 32 times the
// 16-ulp margin within which the oracle marks a decision as rounding-dependent
// (kDecisionUlps in torch_rules.h), so that the push crosses the threshold wherever the
// decided quantity moves with the log-ratio at a rate near 1 (ratios, weights).
constexpr double kPushUlps = 512.0;

// The input whose rounding decides the thresholds: the training policy's log-prob moves
// both the PPO ratio and the rollout log-ratio; the others are what the function has.
const char* DecisionInput(const Case& c, const Array& boundary) {
  for (const char* name : {"old_log_prob", "log_prob", "logprob", "log_ratio", "vpreds"}) {
    const Array* a = c.OptionalInput(name);
    if (a && a->shape == boundary.shape) return name;
  }
  return nullptr;
}

bool AnyNonZero(const Array& a) {
  for (double v : a.data)
    if (v != 0.0) return true;
  return false;
}

// The reference side of a comparison: the oracle on the golden's inputs, where its
// decisions are rounding-dependent, and the values the other decision gives there.
struct ReferenceDecisions {
  bool have = false;
  Result result;
  // What result's aggregations reported (aggregate_probe.h): the scalar outputs' float32
  // allowance, so the judge does not run the oracle again for it.
  std::optional<AggregateMagnitude> magnitude;
  Array boundary;                // empty when no decision is close
  std::vector<Result> branches;  // the other decision's values, one per push direction
  // An exact tie between the two sides (a ratio rounded onto the bound itself): torch's
  // max/min then split the gradient evenly, so the midpoint of the two decisions' values is
  // what a correct implementation whose rounding lands on the bound returns.
  std::vector<Result> ties;
  // Discrete (0/1) outputs: the other decision is the flipped value, on valid tokens. This
  // needs no push, so it holds where the decided quantity hardly moves with the log-ratio
  // (k3 near a log-ratio of 0).
  std::map<std::string, Array> flipped_discrete;
  std::set<int64_t> unobservable;  // boundary positions where no field tells the decisions apart
  const Array* mask = nullptr;     // the response mask fractions are taken over

  DecisionView View(const std::map<std::string, Array>& ref_fields, const std::string& name, bool grads) const {
    DecisionView v;
    if (!boundary.size()) return v;
    v.boundary = &boundary;
    auto own = ref_fields.find(name);
    if (own != ref_fields.end()) v.branch_values.push_back(&own->second);
    auto flip = grads ? flipped_discrete.end() : flipped_discrete.find(name);
    if (flip != flipped_discrete.end()) v.branch_values.push_back(&flip->second);
    for (const auto* set : {&branches, &ties})
      for (const Result& b : *set) {
        const auto& m = grads ? b.grads : b.outputs;
        auto it = m.find(name);
        if (it != m.end()) v.branch_values.push_back(&it->second);
      }
    return v;
  }

  // Share of the response whose decision the reference makes within rounding (a valid
  // token at a boundary: a masked one is in no fraction) and that differs from the
  // reference's, as some element-wise field shows, or that no field can show at all (the
  // fraction is then the only witness, and a correct implementation may decide either
  // way). Where the reference makes no close decision (a clip that returns its input
  // unchanged), nothing is allowed.
  double DecisionShare(const std::set<int64_t>& flipped) const {
    if (!mask || !boundary.size()) return 0.0;
    double moved = 0, total = 0;
    for (int64_t k = 0; k < mask->size(); ++k) {
      total += (*mask)[k];
      if (boundary[k] != 0.0 && (flipped.count(k) || unobservable.count(k))) moved += (*mask)[k];
    }
    return moved / (total + 1e-8);
  }
};

Result Extrapolate(const Result& near, const Result& far) {
  // Two pushes on the same side: 2 f(x + d) - f(x + 2d) is the other decision's value at x
  // up to O(d^2), so the push's own smooth change does not count against a candidate.
  Result out;
  auto lin = [](const std::map<std::string, Array>& a, const std::map<std::string, Array>& b,
                std::map<std::string, Array>& to) {
    for (const auto& [name, x] : a) {
      auto it = b.find(name);
      if (it == b.end() || it->second.shape != x.shape) continue;
      Array e = x;
      for (int64_t k = 0; k < e.size(); ++k) e[k] = 2.0 * x[k] - it->second[k];
      to.emplace(name, std::move(e));
    }
  };
  lin(near.outputs, far.outputs, out.outputs);
  lin(near.grads, far.grads, out.grads);
  return out;
}

ReferenceDecisions ReferenceView(const FunctionSpec& spec, const Case& golden) {
  ReferenceDecisions ref;
  if (!spec.oracle) return ref;
  try {
    AggregateProbe probe;
    ref.result = spec.oracle(golden);
    ref.magnitude = probe.result();
    ref.have = true;
  } catch (const VerlError&) {
    return ref;  // the oracle disagreeing with verl is the oracle's own check's business
  } catch (const Unsupported&) {
    return ref;
  }
  const Array& b = ref.result.boundary;
  if (!AnyNonZero(b)) return ref;
  ref.boundary = b;
  for (const InputSpec& in : spec.inputs) {
    const Array* m = in.is_mask ? golden.OptionalInput(in.name) : nullptr;
    if (m && m->shape == b.shape) {
      ref.mask = m;
      break;
    }
  }
  for (const OutputSpec& o : spec.outputs) {
    auto it = golden.outputs.find(o.name);
    if (!o.discrete || it == golden.outputs.end() || it->second.shape != b.shape || !ref.mask) continue;
    Array f = it->second;
    for (int64_t k = 0; k < f.size(); ++k)
      if (b[k] != 0.0 && (*ref.mask)[k] != 0.0 && (f[k] == 0.0 || f[k] == 1.0)) f[k] = 1.0 - f[k];
    ref.flipped_discrete.emplace(o.name, std::move(f));
  }
  const char* input = DecisionInput(golden, b);
  const double eps = golden.dtype == DType::kFloat32 ? kEps32 : kEps64;
  Array push(b.shape, DType::kFloat64);
  for (int64_t k = 0; k < b.size(); ++k) {
    if (b[k] == 0.0) continue;
    double scale = 1.0;
    for (const auto& [name, x] : golden.inputs) {
      const InputSpec* is = spec.FindInput(name);
      if (x.shape == b.shape && !(is && is->is_mask)) scale += std::fabs(x[k]);
    }
    push[k] = kPushUlps * eps * scale;
  }
  auto pushed = [&](double times) {
    Case p = golden;
    Array& x = p.inputs.at(input);
    for (int64_t k = 0; k < x.size(); ++k) x[k] += times * push[k];
    return spec.oracle(p);
  };
  for (double side : {1.0, -1.0}) {
    if (!input) break;
    try {
      ref.branches.push_back(Extrapolate(pushed(side), pushed(2.0 * side)));
    } catch (const std::exception&) {
      // A push that makes verl's semantics raise (a bound crossed into an error) gives
      // no branch value on that side; the other side and the reference still count.
    }
  }
  for (const Result& br : ref.branches) {
    Result tie;
    for (const bool grads : {false, true}) {
      const auto& own = grads ? ref.result.grads : ref.result.outputs;
      for (const auto& [name, v] : grads ? br.grads : br.outputs) {
        auto it = own.find(name);
        if (it == own.end() || it->second.shape != v.shape) continue;
        Array mid = v;
        for (int64_t k = 0; k < mid.size(); ++k) mid[k] = 0.5 * (v[k] + it->second[k]);
        (grads ? tie.grads : tie.outputs).emplace(name, std::move(mid));
      }
    }
    ref.ties.push_back(std::move(tie));
  }
  // A boundary position is observable when some element-wise field takes values on the
  // two decisions that a correct implementation could not confuse.
  std::set<int64_t> seen;
  for (const bool grads : {false, true}) {
    for (const auto& [name, v] : grads ? ref.result.grads : ref.result.outputs) {
      if (v.shape != b.shape) continue;
      const Tolerance t =
          CaseTolerance(spec, std::string(grads ? "grads/" : "outputs/") + name, golden, &ref.magnitude);
      for (const Result& br : ref.branches) {
        const auto& m = grads ? br.grads : br.outputs;
        auto it = m.find(name);
        if (it == m.end()) continue;
        for (int64_t k = 0; k < b.size(); ++k) {
          const double w = v[k], o = it->second[k];
          if (b[k] != 0.0 && std::isfinite(w) && std::isfinite(o) && !Close(o, w, t)) seen.insert(k);
        }
      }
    }
  }
  for (int64_t k = 0; k < b.size(); ++k)
    if (b[k] != 0.0 && !seen.count(k)) ref.unobservable.insert(k);
  return ref;
}

// verl returns NaN where it divides 0 by 0 (an empty mask), and an implementation must
// reproduce that; a non-finite reference where verl's semantics give a number is a file
// verl did not produce (edited, or captured from something else).
void RefuseNonFiniteReference(const Case& golden, const ReferenceDecisions& ref) {
  if (!ref.have) return;
  auto check = [&](const std::string& field, const Array& want, const Array* oracle) {
    if (!oracle || oracle->shape != want.shape) return;
    for (int64_t k = 0; k < want.size(); ++k)
      if (!std::isfinite(want[k]) && std::isfinite((*oracle)[k]))
        throw BadInput(golden.Where() + ": " + field + ": the reference is " + Num(want[k]) + " at " +
                       FormatIndex(k, want.shape) + " where verl's semantics give " + Num((*oracle)[k]) +
                       " (not a result verl produces for these inputs)");
  };
  auto find = [](const std::map<std::string, Array>& m, const std::string& n) -> const Array* {
    auto it = m.find(n);
    return it == m.end() ? nullptr : &it->second;
  };
  for (const auto& [n, w] : golden.outputs) check("outputs/" + n, w, find(ref.result.outputs, n));
  for (const auto& [n, w] : golden.grads) check("grads/" + n, w, find(ref.result.grads, n));
  for (const auto& [n, w] : golden.metrics) {
    auto it = ref.result.metrics.find(n);
    if (it == ref.result.metrics.end()) continue;
    const Array o = Array::Scalar(it->second);
    check("metrics/" + n, Array::Scalar(w), &o);
  }
}

// The most elements any count in the case can be taken over: its largest input.
int64_t CountedElements(const Case& c) {
  int64_t n = 1;
  for (const auto& [name, x] : c.inputs) n = std::max<int64_t>(n, x.size());
  return n;
}

// A fraction (a clip fraction, a rejected share) is a count over a denominator of at most
// CountedElements(c). Two counts differ by at least 1 / that, so a tolerance below half
// of it judges the count exactly, and within that the division is held to the dtype's
// floating tolerance: a correct different summation order (an ulp) never fails, one token
// counted differently always does. A token whose decision the candidate's fields show to
// differ at a rounding boundary moves the count legitimately: `share` of the valid tokens.
Tolerance FractionTolerance(const Tolerance& floating, double want, const Case& c, double share) {
  const double half_count = 0.5 / static_cast<double>(CountedElements(c));
  double arithmetic = floating.atol + floating.rtol * std::fabs(want);
  if (!std::isfinite(arithmetic)) arithmetic = half_count;  // verl's NaN (0/0) is matched as a value
  Tolerance t{0.0, std::min(arithmetic, half_count) + share, ""};
  t.reason = "a fraction: the count it implies exactly, the division to " +
             std::string(arithmetic < half_count ? "the dtype's tolerance"
                                                 : "half a count of " + std::to_string(CountedElements(c))) +
             (share > 0 ? "; + " + Num(share) + " for valid tokens whose decision differs at a rounding boundary" : "");
  return t;
}

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

std::string FractionNote(const FieldReport& f, const Case& c, const Tolerance& tol, double share) {
  const int64_t n = CountedElements(c);
  std::string s = "a fraction moved by " + Num(f.worst_abs);
  if (!std::isfinite(f.worst_abs)) return s + " (not a number)";
  if (f.worst_abs > 0.5 / static_cast<double>(n) + share) {
    const std::string ratio = AsCountRatio(f.worst_abs, n);
    s += (ratio.empty() ? "" : " (" + ratio + ")") + std::string(": the count it implies differs");
  } else {
    s += ": the count agrees, the division is beyond its floating tolerance";
  }
  s += "; allowed " + Num(tol.atol);
  if (share > 0) s += ", " + Num(share) + " of it for tokens whose decision differs from the reference's";
  return s;
}

}  // namespace

CaseReport DeclinedGolden(const Case& golden) {
  if (golden.expect_error || !golden.outputs.empty() || !golden.grads.empty() || !golden.metrics.empty())
    throw BadInput(golden.Where() +
                   ": attribute 'declined': the case also carries a result or expect_error; a "
                   "declined case has neither");
  return CaseReport::NotCompared(
      golden, Outcome::kUnsupported,
      "the verl that produced this golden set could not run it (declined at capture: " + *golden.declined + ")");
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

CaseReport CompareResult(const FunctionSpec& spec, const Case& golden, const Result* got,
                         const std::optional<std::string>& raised, const std::string& verl_version) {
  CaseReport r = CaseReport::NotCompared(golden, Outcome::kPassed, "");
  if (golden.expect_error || raised) {
    // Error semantics: the same condition must raise the same kind of exception.
    if (golden.expect_error && raised && ErrorKind(*golden.expect_error) == ErrorKind(*raised)) {
      r.outcome = Outcome::kPassed;
      r.detail = "raised " + ErrorKind(*raised) + " as verl does";
    } else {
      r.outcome = Outcome::kFailed;
      r.err_tol = std::numeric_limits<double>::infinity();
      r.detail = golden.expect_error ? "verl raised '" + *golden.expect_error + "' but the implementation " +
                                           (raised ? "raised '" + *raised + "'" : std::string("returned a result"))
                                     : "the implementation raised '" + *raised + "' but verl returned a result";
    }
    return r;
  }
  // The reference side's view of the decisions: the oracle on the golden's inputs. An
  // implementation's own idea of where its decisions are close never enters the judgement.
  const ReferenceDecisions ref = ReferenceView(spec, golden);
  if (verl_version == kOracleVerlVersion) RefuseNonFiniteReference(golden, ref);
  std::set<int64_t> flipped;  // token positions whose decision differs from the reference's
  auto compare_map = [&](const char* group, const std::map<std::string, Array>& want,
                         const std::map<std::string, Array>& have, const std::map<std::string, Array>& ref_fields) {
    for (const auto& [name, w] : want) {
      const std::string field = std::string(group) + "/" + name;
      auto it = have.find(name);
      FieldReport f = CompareField(field, it == have.end() ? nullptr : &it->second, w,
                                   CaseTolerance(spec, field, golden, &ref.magnitude), IsDiscrete(spec, field),
                                   ref.View(ref_fields, name, std::string(group) == "grads"));
      if (it != have.end() && it->second.dtype != w.dtype && it->second.dtype != DType::kInt64 &&
          w.dtype != DType::kInt64 && f.outcome != Outcome::kUnsupported) {
        // Precision is semantics: a float32 answer to a float64 case is reported as such.
        f.outcome = Outcome::kFailed;
        f.err_tol = std::numeric_limits<double>::infinity();
        f.note = std::string("candidate returned ") + DTypeName(it->second.dtype) + " for a " + DTypeName(w.dtype) +
                 " case" + (f.note.empty() ? "" : "; " + f.note);
      }
      if (ref.boundary.shape == w.shape)
        for (int64_t k : f.flipped) flipped.insert(k);
      r.fields.push_back(std::move(f));
    }
  };
  compare_map("outputs", golden.outputs, got->outputs, ref.result.outputs);
  compare_map("grads", golden.grads, got->grads, ref.result.grads);
  const double share = ref.DecisionShare(flipped);
  // Stop-gradients (vjps/<output>/<input>), held to the gradients' tolerances. A VJP
  // that verl makes exactly zero (a detached output) is a real check, not an all-zero
  // reference that proves nothing: an implementation that lets gradient through fails it.
  // No boundary allowance: a threshold decision that flips changes a detached output's
  // value, never its zero VJP, and the outputs with non-zero VJPs have no thresholds.
  for (const auto& [name, w] : golden.vjps) {
    const std::string field = "vjps/" + name;
    auto it = got->vjps.find(name);
    FieldReport f = CompareField(field, it == got->vjps.end() ? nullptr : &it->second, w,
                                 CaseTolerance(spec, field, golden, &ref.magnitude), false);
    if (f.outcome == Outcome::kMistrusted && f.total > 0 && f.compared_finite) {
      f.outcome = Outcome::kPassed;
      f.note = "zero, as in verl: no gradient flows through this output";
    }
    r.fields.push_back(std::move(f));
  }
  for (const auto& [name, w] : golden.metrics) {
    const std::string field = "metrics/" + name;
    auto it = got->metrics.find(name);
    const Array want = Array::Scalar(w);
    const Array have = it == got->metrics.end() ? Array() : Array::Scalar(it->second);
    const bool discrete =
        std::find(spec.discrete_metrics.begin(), spec.discrete_metrics.end(), name) != spec.discrete_metrics.end();
    Tolerance tol = CaseTolerance(spec, field, golden, &ref.magnitude);
    if (discrete) tol = FractionTolerance(tol, w, golden, share);
    FieldReport f = CompareField(field, it == got->metrics.end() ? nullptr : &have, want, tol, discrete);
    if (discrete && f.outcome == Outcome::kFailed) f.note = FractionNote(f, golden, tol, share);
    r.fields.push_back(std::move(f));
  }
  Fold(r);
  if (r.outcome == Outcome::kPassed && MasksCoverNothing(spec, golden)) {
    r.outcome = Outcome::kMistrusted;
    r.detail = "every mask input is all zero";
  } else if (r.outcome == Outcome::kPassed && spec.mistrust) {
    const std::string why = spec.mistrust(golden);
    if (!why.empty()) {
      r.outcome = Outcome::kMistrusted;
      r.detail = why;
    }
  }
  return r;
}

CaseReport CheckImplementation(const FunctionSpec& spec, const Case& golden, const RunFn& impl,
                               const std::string& verl_version) {
  ValidateGolden(spec, golden, verl_version);
  if (golden.declined) return DeclinedGolden(golden);
  // The implementation and the judge see the golden's config completed from the spec's
  // defaults (what verl ran with), resolved once; the caller's golden is not altered.
  Case storage;
  const Case& resolved = Resolved(spec, golden, storage);
  try {
    const Result got = impl(resolved);
    return CompareResult(spec, resolved, &got, std::nullopt, verl_version);
  } catch (const VerlError& e) {
    return CompareResult(spec, resolved, nullptr, std::string(e.what()), verl_version);
  } catch (const Unsupported& e) {
    return CaseReport::NotCompared(golden, Outcome::kUnsupported, e.what());
  }
}

}  // namespace verlconf
