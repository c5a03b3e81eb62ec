#include "oracle/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "oracle/errors.h"
#include "oracle/validate.h"

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
  bool any_failed = false, any_passed = false, any_unsupported = false;
  for (const auto& f : r.fields) {
    any_failed |= f.outcome == Outcome::kFailed;
    any_passed |= f.outcome == Outcome::kPassed;
    any_unsupported |= f.outcome == Outcome::kUnsupported;
    if (std::isfinite(f.worst_rel)) r.worst_rel = std::max(r.worst_rel, f.worst_rel);
    if (f.outcome == Outcome::kPassed) r.flips += f.flips;
  }
  if (any_failed) {
    r.outcome = Outcome::kFailed;
    int n = 0;
    for (const auto& f : r.fields) n += f.outcome == Outcome::kFailed;
    r.detail = std::to_string(n) + " field(s) out of tolerance";
  } else if (any_unsupported) {
    r.outcome = Outcome::kUnsupported;
    r.detail = "some expected fields were not produced";
  } else if (!any_passed) {
    r.outcome = Outcome::kMistrusted;
    r.detail = r.fields.empty() ? "nothing to compare" : "every reference field is all zero";
  }
}

}  // namespace

Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, DType dtype) {
  Tolerance t = IsDiscrete(spec, field) && dtype == DType::kFloat64 ? ExactTolerance() : DefaultTolerance(dtype);
  for (const auto& o : spec.tolerances)
    if (o.dtype == dtype && (o.field == field || o.field == "*")) return {o.rtol, o.atol, o.reason};
  return t;
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

Tolerance ToleranceFor(const FunctionSpec& spec, const std::string& field, const Case& c) {
  Tolerance t = ToleranceFor(spec, field, c.dtype);
  if (c.dtype != DType::kFloat32 || !spec.float32_condition) return t;
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

namespace {
// Share of the response that sits at a decision boundary: how far a token
// fraction (a clip fraction) may move when those decisions flip.
double BoundaryShare(const FunctionSpec& spec, const Case& c, const Array& boundary) {
  for (const InputSpec& in : spec.inputs) {
    if (!in.is_mask) continue;
    const Array* m = c.OptionalInput(in.name);
    if (!m || m->shape != boundary.shape) continue;
    double flips = 0, total = 0;
    for (int64_t k = 0; k < m->size(); ++k) {
      total += (*m)[k];
      flips += (*m)[k] * boundary[k];
    }
    return flips / (total + 1e-8);
  }
  return 0.0;
}
}  // namespace

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
                         const std::optional<std::string>& raised) {
  CaseReport r = CaseReport::NotCompared(golden, Outcome::kPassed, "");
  if (golden.expect_error || raised) {
    // Error semantics: the same condition must raise the same kind of exception.
    if (golden.expect_error && raised && ErrorKind(*golden.expect_error) == ErrorKind(*raised)) {
      r.outcome = Outcome::kPassed;
      r.detail = "raised " + ErrorKind(*raised) + " as verl does";
    } else {
      r.outcome = Outcome::kFailed;
      r.detail = golden.expect_error ? "verl raised '" + *golden.expect_error + "' but the implementation " +
                                           (raised ? "raised '" + *raised + "'" : std::string("returned a result"))
                                     : "the implementation raised '" + *raised + "' but verl returned a result";
    }
    return r;
  }
  // Where a token sits relative to a threshold is a property of the inputs, so an
  // implementation that does not say (a candidate file, CUDA) gets the oracle's view.
  Array oracle_boundary;
  const Array* boundary = nullptr;
  if (got->boundary.size()) {
    boundary = &got->boundary;
  } else if (spec.oracle && !spec.discrete_metrics.empty()) {
    try {
      oracle_boundary = spec.oracle(golden).boundary;
    } catch (const std::exception&) {
      // The oracle raising here is reported by the oracle's own check, not this one.
    }
    if (oracle_boundary.size()) boundary = &oracle_boundary;
  }
  auto compare_map = [&](const char* group, const std::map<std::string, Array>& want,
                         const std::map<std::string, Array>& have, const Array* flips_at) {
    for (const auto& [name, w] : want) {
      const std::string field = std::string(group) + "/" + name;
      auto it = have.find(name);
      r.fields.push_back(CompareField(field, it == have.end() ? nullptr : &it->second, w,
                                      ToleranceFor(spec, field, golden), IsDiscrete(spec, field), flips_at));
    }
  };
  compare_map("outputs", golden.outputs, got->outputs, boundary);
  compare_map("grads", golden.grads, got->grads, boundary);
  // Stop-gradients (vjps/<output>/<input>), held to the gradients' tolerances. A VJP
  // that verl makes exactly zero (a detached output) is a real check, not an all-zero
  // reference that proves nothing: an implementation that lets gradient through fails it.
  // No boundary allowance: a threshold decision that flips changes a detached output's
  // value, never its zero VJP, and the outputs with non-zero VJPs have no thresholds.
  const size_t first_vjp = r.fields.size();
  compare_map("vjps", golden.vjps, got->vjps, nullptr);
  for (size_t k = first_vjp; k < r.fields.size(); ++k) {
    FieldReport& f = r.fields[k];
    if (f.outcome == Outcome::kMistrusted && f.total > 0) {
      f.outcome = Outcome::kPassed;
      f.note = "zero, as in verl: no gradient flows through this output";
    }
  }
  for (const auto& [name, w] : golden.metrics) {
    const std::string field = "metrics/" + name;
    auto it = got->metrics.find(name);
    const Array want = Array::Scalar(w);
    const Array have = it == got->metrics.end() ? Array() : Array::Scalar(it->second);
    const bool discrete =
        std::find(spec.discrete_metrics.begin(), spec.discrete_metrics.end(), name) != spec.discrete_metrics.end();
    Tolerance tol = discrete && golden.dtype == DType::kFloat64 ? ExactTolerance() : ToleranceFor(spec, field, golden);
    // A clip fraction may move by the share of tokens whose decision can flip.
    double share = 0.0;
    if (discrete && boundary) {
      share = BoundaryShare(spec, golden, *boundary);
      tol.atol += share;
    }
    FieldReport f = CompareField(field, it == got->metrics.end() ? nullptr : &have, want, tol, discrete);
    if (share > 0 && f.outcome == Outcome::kPassed && f.worst_abs > DefaultTolerance(golden.dtype).atol)
      f.note = "moved by " + std::to_string(f.worst_abs) + ", within the share of tokens at threshold "
               "boundaries (" + std::to_string(share) + ")";
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

CaseReport CheckImplementation(const FunctionSpec& spec, const Case& golden, const RunFn& impl) {
  ValidateCase(spec, golden);
  try {
    const Result got = impl(golden);
    return CompareResult(spec, golden, &got, std::nullopt);
  } catch (const VerlError& e) {
    return CompareResult(spec, golden, nullptr, std::string(e.what()));
  } catch (const Unsupported& e) {
    return CaseReport::NotCompared(golden, Outcome::kUnsupported, e.what());
  }
}

CaseReport CheckCandidate(const FunctionSpec& spec, const Case& golden, const Case& candidate) {
  ValidateCase(spec, golden);
  for (const auto& [name, w] : golden.inputs) {
    const Array* have = candidate.OptionalInput(name);
    if (!have) throw BadInput(candidate.Where() + ": inputs/" + name + ": missing (the golden has it)");
    if (have->shape != w.shape || have->data != w.data)
      throw BadInput(candidate.Where() + ": inputs/" + name + ": differs from the golden input (was the candidate "
                     "produced from these goldens?)");
  }
  if (candidate.config.values() != golden.config.values())
    throw BadInput(candidate.Where() + ": cfg: the config attributes differ from the golden case's (was the "
                   "candidate produced from these goldens?)");
  if (candidate.expect_error) return CompareResult(spec, golden, nullptr, candidate.expect_error);
  // Neither a result nor an error: the candidate did not compute this case.
  if (candidate.outputs.empty() && candidate.grads.empty() && candidate.metrics.empty()) {
    CaseReport r = CaseReport::NotCompared(golden, Outcome::kUnsupported, "the candidate file has no outputs for this case");
    r.where = candidate.Where();
    return r;
  }
  const Result got = Result::Of(candidate);
  CaseReport r = CompareResult(spec, golden, &got, std::nullopt);
  r.where = candidate.Where();
  return r;
}

}  // namespace verlconf
