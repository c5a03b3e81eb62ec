#include "oracle/judge/judge.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "oracle/core/errors.h"
#include "oracle/core/torch_rules.h"
#include "oracle/judge/reference.h"
#include "oracle/judge/tolerance.h"

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

// Whether verl raises can itself hang on a decision at a boundary: IcePop drops the one
// token sitting on its lower bound, every applied weight is zero and the ESS divides by
// zero, while a float32 implementation whose rounding keeps it returns a result (and the
// other way round). Where one side raised and the other returned, each side's outcome is
// looked for in the oracle on the golden's inputs with at most one position's decision
// input moved by a few ulps (no more than the margin within which the oracle marks a
// decision as rounding's): an error of that side's kind, or a result the side's values
// pass against with the judge's usual rules. Both found: the case is judged by the
// candidate's side (its result against that result). An error every input gets (a
// refused config) is no decision's, and neither is one a move of more than rounding gives.
std::optional<CaseReport> AcrossABoundary(const FunctionSpec& spec, const Case& golden, const Result* got,
                                          const std::optional<std::string>& raised, const std::string& verl_version,
                                          const RunFn* reference) {
  constexpr size_t kMaxPositions = 64;
  if (!spec.oracle) return std::nullopt;
  const RunFn& run = reference ? *reference : spec.oracle;
  const Array* x = nullptr;
  std::string input;
  for (const InputSpec& in : spec.inputs)
    if (in.decides && (x = golden.OptionalInput(in.name))) {
      input = in.name;
      break;
    }
  if (!x) return std::nullopt;
  const Array* mask = nullptr;
  for (const InputSpec& in : spec.inputs) {
    const Array* m = in.is_mask ? golden.OptionalInput(in.name) : nullptr;
    if (m && m->shape == x->shape) {
      mask = m;
      break;
    }
  }
  std::vector<int64_t> positions;
  for (int64_t k = 0; k < x->size(); ++k)
    if (!mask || (*mask)[k] != 0.0) positions.push_back(k);
  if (positions.size() > kMaxPositions) return std::nullopt;
  const double eps = golden.dtype == DType::kFloat32 ? kEps32 : kEps64;
  // The golden's inputs first, then each position moved 1, 2, ... 16 ulps either way.
  std::vector<std::pair<int64_t, double>> moves{{-1, 0.0}};
  for (double ulps = 1; ulps <= oracle::kDecisionUlps; ulps *= 2)
    for (int64_t k : positions)
      for (double side : {1.0, -1.0}) moves.push_back({k, side * ulps * eps * (1.0 + std::fabs((*x)[k]))});
  auto moved = [&](const std::pair<int64_t, double>& m) {
    Case p = golden;
    if (m.first >= 0) p.inputs.at(input)[m.first] += m.second;
    p.expect_error.reset();
    return p;
  };
  auto raises = [&](const std::string& error) {
    for (const auto& m : moves) try {
        run(moved(m));
      } catch (const VerlError& e) {
        if (ErrorKind(e.what()) == ErrorKind(error)) return true;
      } catch (const std::exception&) {
      }
    return false;
  };
  auto returns = [&](const Result& r) -> std::optional<CaseReport> {
    for (const auto& m : moves) try {
        Case p = moved(m);
        const Result o = run(p);
        p.outputs = o.outputs;
        p.grads = o.grads;
        p.metrics = o.metrics;
        CaseReport rep = CompareResult(spec, p, &r, std::nullopt, verl_version, reference);
        if (rep.outcome != Outcome::kFailed) return rep;
      } catch (const std::exception&) {
      }
    return std::nullopt;
  };
  if (golden.expect_error && got) {
    if (!raises(*golden.expect_error)) return std::nullopt;
    std::optional<CaseReport> rep = returns(*got);
    if (rep)
      rep->detail = "verl raised '" + *golden.expect_error + "' where a decision at a boundary went the other way; " +
                    "judged against the other decision's result" + (rep->detail.empty() ? "" : "; " + rep->detail);
    return rep;
  }
  if (!golden.expect_error && raised) {
    if (!raises(*raised) || !returns(Result::Of(golden))) return std::nullopt;
    CaseReport rep = CaseReport::NotCompared(golden, Outcome::kPassed, "");
    rep.detail = "raised " + ErrorKind(*raised) + " where verl returned, as a decision at a boundary taken the " +
                 "other way does";
    return rep;
  }
  return std::nullopt;
}

// Whether `option` gives the golden's outputs and gradients within their tolerances.
bool GivesTheGolden(const FunctionSpec& spec, const Case& golden, const Result& option) {
  for (const auto* group : {"outputs", "grads"}) {
    const bool grads = std::string(group) == "grads";
    for (const auto& [name, w] : grads ? golden.grads : golden.outputs) {
      const auto& m = grads ? option.grads : option.outputs;
      auto it = m.find(name);
      if (it == m.end() || it->second.shape != w.shape) return false;
      const Tolerance tol = CaseTolerance(spec, std::string(group) + "/" + name, golden, &option.magnitude);
      for (int64_t k = 0; k < w.size(); ++k)
        if (!Close(it->second[k], w[k], tol, k)) return false;
    }
  }
  return true;
}

bool SameInputs(const Case& a, const Case& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (const auto& [name, x] : a.inputs) {
    auto it = b.inputs.find(name);
    if (it == b.inputs.end() || it->second.shape != x.shape || it->second.data != x.data) return false;
  }
  return true;
}

// A candidate that fails against the reference's choice, where the reference chooses
// among options it cannot rank (Result::alternatives) and the golden is one of them: the
// case is judged against each other option in turn (the first it passes against is its
// report). Where there are more options than listed and none clears it, it is MISTRUSTED:
// neither a pass nor a failure can be stated.
std::optional<CaseReport> AgainstAlternatives(const FunctionSpec& spec, const Case& golden, const Result& got,
                                              const ReferenceDecisions& ref, const std::string& verl_version) {
  const Result& base = ref.result;
  if (base.alternatives.empty() && !base.more_alternatives) return std::nullopt;
  bool golden_is_an_option = GivesTheGolden(spec, golden, base);
  for (size_t i = 0; !golden_is_an_option && i < base.alternatives.size(); ++i)
    golden_is_an_option = GivesTheGolden(spec, golden, base.alternatives[i]);
  if (!golden_is_an_option) return std::nullopt;
  for (const Result& alt : base.alternatives) {
    Case other = golden;
    other.outputs = alt.outputs;
    other.grads = alt.grads;
    other.metrics = alt.metrics;
    // The reference of the other option: its result on these inputs, the reference's own
    // elsewhere (a push across a threshold boundary), neither offering options again.
    const RunFn as_other = [&](const Case& c) {
      Result x = SameInputs(c, golden) ? alt : ref.run(c);
      x.alternatives.clear();
      x.more_alternatives = false;
      return x;
    };
    CaseReport again = CompareResult(spec, other, &got, std::nullopt, verl_version, &as_other);
    if (again.outcome != Outcome::kFailed) {
      again.detail = "against another choice verl may equally make (a pick among values tied within rounding)" +
                     (again.detail.empty() ? "" : "; " + again.detail);
      return again;
    }
  }
  if (!base.more_alternatives) return std::nullopt;
  return CaseReport::NotCompared(golden, Outcome::kMistrusted,
                                 "verl's choice among values tied within rounding has more options than the judge "
                                 "enumerates, and none of those listed gives the candidate's result");
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
                         const std::optional<std::string>& raised, const std::string& verl_version,
                         const RunFn* reference) {
  CaseReport r = CaseReport::NotCompared(golden, Outcome::kPassed, "");
  if (golden.expect_error || raised) {
    // Error semantics: the same condition must raise the same kind of exception.
    if (golden.expect_error && raised && ErrorKind(*golden.expect_error) == ErrorKind(*raised)) {
      r.outcome = Outcome::kPassed;
      r.detail = "raised " + ErrorKind(*raised) + " as verl does";
    } else if (std::optional<CaseReport> across =
                   (golden.expect_error && raised)
                       ? std::nullopt
                       : AcrossABoundary(spec, golden, got, raised, verl_version, reference)) {
      return *across;
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
  const ReferenceDecisions ref = ReferenceView(spec, golden, reference);
  if (verl_version == kOracleVerlVersion) RefuseNonFiniteReference(golden, ref);
  std::set<int64_t> flipped;  // token positions whose decision differs from the reference's
  // A scalar of decisions taken each their own way: the candidate's value is one that the
  // decisions its tensors show give, and so is the reference's (verl's own float32
  // rounding decides too; where the reference is the oracle itself it is one trivially).
  DecisionCombinations by_candidate(spec, golden, ref, got), by_reference(spec, golden, ref, nullptr);
  // A failed scalar (a loss, a statistic) judged again as one of decisions taken each their
  // own way: it passes where the candidate's value is one that the decisions its tensors
  // show give, and the golden's one that the reference's give (or the oracle's own value).
  auto as_combination = [&](FieldReport& f, const std::string& group, const std::string& name, const Array& have,
                            const Array& want, const Tolerance& tol, const double* oracle_value) {
    std::vector<Array> values;
    for (double v : by_candidate.Values(group, name)) values.push_back(Array::Scalar(v));
    const Array anywhere = Array::Scalar(1.0);
    DecisionView d;
    d.boundary = &anywhere;
    for (const Array& a : values) d.branch_values.push_back(&a);
    FieldReport again = CompareField(f.field, &have, want, tol, f.discrete, d);
    if (again.outcome == Outcome::kFailed) return;
    bool explained = oracle_value && Close(want[0], *oracle_value, tol);
    for (double v : by_reference.Values(group, name)) explained = explained || Close(want[0], v, tol);
    if (explained) f = std::move(again);
  };
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
        f.dtype_differs = true;
        f.err_tol = std::numeric_limits<double>::infinity();
        f.note = std::string("candidate returned ") + DTypeName(it->second.dtype) + " for a " + DTypeName(w.dtype) +
                 " case" + (f.note.empty() ? "" : "; " + f.note);
      }
      if (ref.boundary.shape == w.shape)
        for (int64_t k : f.flipped) flipped.insert(k);
      if (f.outcome == Outcome::kFailed && it != have.end() && w.size() == 1 && ref.boundary.shape != w.shape &&
          AnyMarked(ref.boundary)) {
        auto own = ref.result.outputs.find(name);
        as_combination(f, group, name, it->second, w, f.tol,
                       own != ref.result.outputs.end() && own->second.size() == 1 ? &own->second.data[0] : nullptr);
      }
      if (f.outcome == Outcome::kFailed && it != have.end() && w.size() > 1 && AnyMarked(ref.boundary)) {
        // An element-wise field a decision moves beyond its own position (IS weights
        // divided by their batch mean): it passes as a whole when the candidate's array is
        // the result of one set of decisions at the boundary and verl's of another.
        auto whole = [&](const Array& x, const std::vector<const Array*>& options) -> const Array* {
          for (const Array* o : options) {
            bool all = o->shape == x.shape;
            for (int64_t k = 0; all && k < x.size(); ++k) all = Close(x[k], (*o)[k], f.tol, k);
            if (all) return o;
          }
          return nullptr;
        };
        const Array* as = whole(it->second, by_candidate.Arrays(group, name));
        if (as && whole(w, by_reference.Arrays(group, name))) {
          Array everywhere(w.shape, DType::kFloat64);
          for (double& x : everywhere.data) x = 1.0;
          DecisionView d;
          d.boundary = &everywhere;
          d.branch_values.push_back(as);
          FieldReport again = CompareField(field, &it->second, w, f.tol, f.discrete, d);
          if (again.outcome != Outcome::kFailed) f = std::move(again);
        }
      }
      r.fields.push_back(std::move(f));
    }
  };
  compare_map("outputs", golden.outputs, got->outputs, ref.result.outputs);
  compare_map("grads", golden.grads, got->grads, ref.result.grads);
  const double share = ref.DecisionShare(flipped), row_share = ref.DecisionShare(flipped, /*rows=*/true);
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
    const Tolerance floating = CaseTolerance(spec, field, golden, &ref.result.magnitude);
    const bool rows = discrete && spec.counts_rows && spec.counts_rows(golden, name);
    const auto own_mask = ref.result.fraction_masks.find(name);
    const double own_share = own_mask == ref.result.fraction_masks.end()
                                 ? (rows ? row_share : share)
                                 : ref.DecisionShare(flipped, rows, &own_mask->second);
    const Tolerance tol = discrete ? FractionTolerance(floating, w, golden, own_share) : floating;
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
    if (f.outcome == Outcome::kFailed && it != got->metrics.end() && AnyMarked(ref.boundary)) {
      // A fraction too: only the combinations the tensors allow, each counted by the
      // combination itself, so its count is judged exactly.
      auto own = ref.result.metrics.find(name);
      as_combination(f, "metrics", name, have, want, discrete ? FractionTolerance(floating, w, golden, 0.0) : floating,
                     own == ref.result.metrics.end() ? nullptr : &own->second);
    }
    if (discrete && f.outcome == Outcome::kFailed) f.note = FractionNote(f, golden, tol, own_share);
    r.fields.push_back(std::move(f));
  }
  // Metrics travel as doubles: every field's rounding is the case's dtype's (grade.h).
  for (FieldReport& f : r.fields) f.dtype = golden.dtype;
  FoldOutcome(r);
  if (r.outcome == Outcome::kFailed)
    if (std::optional<CaseReport> other = AgainstAlternatives(spec, golden, *got, ref, verl_version)) return *other;
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
