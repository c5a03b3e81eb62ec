#include "oracle/judge/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/judge/reference.h"

namespace verlconf {
namespace {

bool AnyMarked(const Array& boundary) {
  for (double v : boundary.data)
    if (v != 0.0) return true;
  return false;
}

std::string ErrorKind(const std::string& e) { return e.substr(0, e.find(':')); }

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

// verl returns NaN where it divides 0 by 0 (an empty mask), and an implementation must
// reproduce that; a non-finite reference where verl's semantics give a number is a file
// verl did not produce (edited, or captured from something else).
void RefuseNonFiniteReference(const Case& golden, const ReferenceDecisions& ref) {
  if (!ref.have) return;
  auto check = [&](const std::string& field, const Array& want, const Array* oracle) {
    if (!oracle || oracle->shape != want.shape) return;
    for (int64_t k = 0; k < want.size(); ++k)
      if (!std::isfinite(want[k]) && std::isfinite((*oracle)[k]))
        throw BadInput(golden.Where() + ": " + field + ": the reference is " + ShortNumber(want[k]) + " at " +
                       FormatIndex(k, want.shape) + " where verl's semantics give " + ShortNumber((*oracle)[k]) +
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
                                   CaseTolerance(spec, field, golden, &ref.result.magnitude), IsDiscrete(spec, field),
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
                                 CaseTolerance(spec, field, golden, &ref.result.magnitude), false);
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
    Tolerance tol = CaseTolerance(spec, field, golden, &ref.result.magnitude);
    if (discrete) tol = FractionTolerance(tol, w, golden, share);
    // A statistic of decided values (the largest kept IS weight, their mean) takes the
    // other decision's value when a decision at a boundary goes the other way: that value,
    // from the same push the tensors' branches come from, is a flip like theirs.
    Array near;
    std::vector<Array> others;
    DecisionView decisions;
    if (!discrete && AnyMarked(ref.boundary)) {
      near = Array::Scalar(1.0);
      for (const auto* set : {&ref.branches, &ref.ties})
        for (const Result& b : *set)
          if (auto m = b.metrics.find(name); m != b.metrics.end()) others.push_back(Array::Scalar(m->second));
      decisions.boundary = &near;
      for (const Array& o : others) decisions.branch_values.push_back(&o);
    }
    FieldReport f = CompareField(field, it == got->metrics.end() ? nullptr : &have, want, tol, discrete, decisions);
    if (discrete && f.outcome == Outcome::kFailed) f.note = FractionNote(f, golden, tol, share);
    r.fields.push_back(std::move(f));
  }
  FoldOutcome(r);
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
