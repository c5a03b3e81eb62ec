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

// Every decision at a boundary may go either way on its own: a float32 result that keeps
// one IcePop token on the bound and drops another is as correct as one that keeps both,
// and a token can carry several decisions (an IS bound and a rejection bound at the same
// ratio) that its rounding settles independently. The branches push every boundary
// position in one direction at once, so a statistic of such a result (a mean of kept
// weights, a fraction, a loss) matches neither. This gives the values a scalar field
// takes over combinations of per-position pushes of the oracle, each position pushed
// either way or not at all, keeping only the combinations under which one side's own
// element-wise fields (`tensors`: the candidate's, or the reference's) hold at every
// boundary position: where they show a decision (a kept weight, a zero gradient) a
// statistic never moves with the other one. Positions whose push moves no scalar are left
// alone. The count is bounded; past the bound the positions of a row move together, and
// past that nothing is added (the branches alone judge, as before).
class DecisionCombinations {
 public:
  // `tensors`: the side whose element-wise fields pin the decisions; null for the golden's.
  DecisionCombinations(const FunctionSpec& spec, const Case& golden, const ReferenceDecisions& ref,
                       const Result* tensors)
      : spec_(spec),
        golden_(golden),
        ref_(ref),
        tensors_(tensors),
        eps_(golden.dtype == DType::kFloat32 ? kEps32 : kEps64) {}

  // The values of a scalar field (group "outputs" or "metrics") over the combinations.
  std::vector<double> Values(const std::string& group, const std::string& name) {
    if (!computed_) Compute();
    std::vector<double> v;
    for (const Result& r : results_) {
      if (group == "metrics") {
        if (auto it = r.metrics.find(name); it != r.metrics.end()) v.push_back(it->second);
      } else if (auto it = r.outputs.find(name); it != r.outputs.end() && it->second.size() == 1) {
        v.push_back(it->second[0]);
      }
    }
    return v;
  }

  // The arrays of an element-wise field (group "outputs" or "grads") over the combinations.
  std::vector<const Array*> Arrays(const std::string& group, const std::string& name) {
    if (!computed_) Compute();
    std::vector<const Array*> v;
    for (const Result& r : results_) {
      const auto& m = group == "grads" ? r.grads : r.outputs;
      if (auto it = m.find(name); it != m.end()) v.push_back(&it->second);
    }
    return v;
  }

 private:
  // At most this many combinations are run (two oracle calls each).
  static constexpr size_t kMaxCombinations = 256;
  // At most this many boundary positions are pushed one at a time.
  static constexpr size_t kMaxProbes = 256;

  struct Elementwise {
    std::string field;
    bool grads;
    const Array* want;  // the golden's
    const Array* got;
    Tolerance tol;
  };

  // The value of e's field in r at k, if r has it.
  static const Array* In(const Result& r, const Elementwise& e) {
    const auto& m = e.grads ? r.grads : r.outputs;
    auto it = m.find(e.field.substr(e.field.find('/') + 1));
    return it == m.end() || it->second.shape != e.want->shape ? nullptr : &it->second;
  }

  // The side's element-wise fields at position k match `values`', or an exact tie's
  // value (a gradient no decision gives: the ratio sits on the bound, where both
  // decisions' forward values hold).
  bool Holds(int64_t k, const Result& values) const {
    for (const Elementwise& e : fields_) {
      const double x = (*e.got)[k];
      const Array* v = In(values, e);
      if (!v || Close(x, (*v)[k], e.tol, k)) continue;
      if (!e.grads) return false;
      bool decision = false, tie = false;
      for (const Result* r : decisions_)
        if (const Array* d = In(*r, e)) decision = decision || Close(x, (*d)[k], e.tol, k);
      for (const Result& t : ref_.ties)
        if (const Array* d = In(t, e)) tie = tie || Close(x, (*d)[k], e.tol, k);
      if (decision || !tie) return false;
    }
    return true;
  }

  // Where the tolerance cannot tell two decisions apart at k (a gradient smaller than
  // its atol), the side's value still can when it sits far nearer one of them: an option
  // is dropped where some field's value is over four times nearer another option's than
  // the two options' values are apart, and they are apart by more than rounding (float32
  // rounding of an element is ulps; a decision that matters there moves it by its whole
  // effect, while a continuous one, min(w, upper) on the bound, moves it by nothing).
  void Narrow(int64_t k, std::vector<double>& options, const std::vector<Result>& seen) const {
    if (options.size() < 2) return;
    std::vector<bool> drop(options.size(), false);
    for (const Elementwise& e : fields_) {
      const double x = (*e.got)[k];
      size_t best = options.size();
      double best_d = 0;
      for (size_t o = 0; o < options.size(); ++o)
        if (const Array* v = In(seen[o], e); v && std::isfinite((*v)[k])) {
          const double d = std::fabs(x - (*v)[k]);
          if (best == options.size() || d < best_d) best = o, best_d = d;
        }
      if (best == options.size()) continue;
      const double at_best = (*In(seen[best], e))[k];
      for (size_t o = 0; o < options.size(); ++o)
        if (const Array* v = In(seen[o], e); o != best && v) {
          const double gap = std::fabs((*v)[k] - at_best);
          if (gap > 4.0 * best_d &&
              gap > oracle::kDecisionUlps * eps_ * std::max(std::fabs(at_best), std::fabs((*v)[k])))
            drop[o] = true;
        }
    }
    std::vector<double> kept;
    for (size_t o = 0; o < options.size(); ++o)
      if (!drop[o]) kept.push_back(options[o]);
    options = kept;
  }

  // Some scalar field (a scalar output, a metric) of a differs from b's beyond tolerance.
  bool MovesAScalar(const Result& a, const Result& b) const {
    for (const auto& [name, v] : a.metrics) {
      auto it = b.metrics.find(name);
      if (it == b.metrics.end()) continue;
      if (!Close(v, it->second, CaseTolerance(spec_, "metrics/" + name, golden_, &ref_.result.magnitude))) return true;
    }
    for (const auto& [name, v] : a.outputs) {
      auto it = b.outputs.find(name);
      if (v.size() != 1 || it == b.outputs.end() || it->second.size() != 1) continue;
      if (!Close(v[0], it->second[0], CaseTolerance(spec_, "outputs/" + name, golden_, &ref_.result.magnitude)))
        return true;
    }
    return false;
  }

  void Compute() {
    computed_ = true;
    const Array& b = ref_.boundary;
    if (!ref_.input || ref_.branch_sides.empty() || !b.size()) return;
    for (const bool grads : {false, true}) {
      const auto& want = grads ? golden_.grads : golden_.outputs;
      const auto& have =
          grads ? (tensors_ ? tensors_->grads : golden_.grads) : (tensors_ ? tensors_->outputs : golden_.outputs);
      for (const auto& [name, w] : want) {
        auto g = have.find(name);
        if (w.shape != b.shape || g == have.end() || g->second.shape != b.shape) continue;
        const std::string field = std::string(grads ? "grads/" : "outputs/") + name;
        fields_.push_back({field, grads, &w, &g->second, CaseTolerance(spec_, field, golden_, &ref_.result.magnitude)});
      }
    }
    decisions_.push_back(&ref_.result);
    for (const Result& r : ref_.branches) decisions_.push_back(&r);
    std::vector<int64_t> positions;
    for (int64_t k = 0; k < b.size(); ++k)
      if (b[k] != 0.0 && !(ref_.mask && (*ref_.mask)[k] == 0.0) && ref_.push[k] > 0.0) positions.push_back(k);
    const std::vector<double> none(static_cast<size_t>(b.size()), 0.0);
    // Each position's options: the oracle's own decision, and each push that, on its own
    // or with every position pushed alike, gives the side's element-wise values there; a
    // push that is only an alternative to the oracle's decision counts where it moves
    // some scalar.
    std::vector<std::pair<std::vector<int64_t>, std::vector<double>>> units;
    for (int64_t k : positions) {
      const bool stays = Holds(k, ref_.result);
      std::vector<double> options;
      std::vector<Result> seen;  // each option's values at k
      if (stays) {
        options.push_back(0.0);
        seen.push_back(ref_.result);
      }
      for (size_t i = 0; i < ref_.branch_sides.size(); ++i) {
        const double side = ref_.branch_sides[i];
        if (positions.size() > kMaxProbes) {
          if (Holds(k, ref_.branches[i])) {
            options.push_back(side);
            seen.push_back(ref_.branches[i]);
          }
          continue;
        }
        std::vector<double> one = none;
        one[static_cast<size_t>(k)] = side;
        try {
          Result alone = ref_.PushedBy(one);
          const bool holds = Holds(k, alone) || Holds(k, ref_.branches[i]);
          if (holds && (!stays || MovesAScalar(alone, ref_.result))) {
            options.push_back(side);
            seen.push_back(std::move(alone));
          }
        } catch (const std::exception&) {
        }
      }
      Narrow(k, options, seen);
      if (options.size() > 1 || (options.size() == 1 && options[0] != 0.0)) units.push_back({{k}, options});
    }
    auto count = [&] {
      double n = 1;
      for (const auto& u : units) n *= static_cast<double>(u.second.size());
      return n;
    };
    if (count() > kMaxCombinations && b.shape.size() == 2) {
      // A position with one option stays its own unit: only the open ones move by row.
      std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<double>>> rows;
      std::vector<std::pair<std::vector<int64_t>, std::vector<double>>> fixed;
      for (const auto& [ks, o] : units) {
        if (o.size() == 1) {
          fixed.push_back({ks, o});
          continue;
        }
        auto [it, fresh] = rows.try_emplace(ks[0] / b.cols(), std::vector<int64_t>{}, o);
        it->second.first.push_back(ks[0]);
        if (!fresh) {
          std::vector<double> common;
          for (double x : it->second.second)
            if (std::find(o.begin(), o.end(), x) != o.end()) common.push_back(x);
          it->second.second = common;
        }
      }
      units = std::move(fixed);
      for (auto& [row, u] : rows)
        if (!u.second.empty()) units.push_back(std::move(u));
    }
    if (count() > kMaxCombinations) return;
    std::vector<size_t> pick(units.size(), 0);
    for (bool more = true; more;) {
      std::vector<double> sides = none;
      bool all_reference = true;
      for (size_t u = 0; u < units.size(); ++u) {
        const double side = units[u].second[pick[u]];
        all_reference = all_reference && side == 0.0;
        for (int64_t k : units[u].first) sides[static_cast<size_t>(k)] = side;
      }
      try {
        Result r = all_reference ? ref_.result : ref_.PushedBy(sides);
        bool holds = true;
        for (int64_t k : positions) holds = holds && Holds(k, r);
        if (holds) results_.push_back(std::move(r));
      } catch (const std::exception&) {
        // A push into an error gives no value; the branches still judge.
      }
      size_t i = 0;
      while (i < pick.size() && ++pick[i] == units[i].second.size()) pick[i++] = 0;
      more = i < pick.size();
    }
  }

  const FunctionSpec& spec_;
  const Case& golden_;
  const ReferenceDecisions& ref_;
  const Result* tensors_;
  double eps_;
  bool computed_ = false;
  std::vector<Elementwise> fields_;
  std::vector<const Result*> decisions_;  // the oracle's values under each decision
  std::vector<Result> results_;
};

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
  auto explained = [&](const std::string& group, const std::string& name, double want, const Tolerance& tol,
                       const double* oracle_value) {
    if (oracle_value && Close(want, *oracle_value, tol)) return true;
    for (double v : by_reference.Values(group, name))
      if (Close(want, v, tol)) return true;
    return false;
  };
  // A scalar's decision view: its one element may take any of `values`.
  std::vector<Array> scalar_values;
  const Array scalar_near = Array::Scalar(1.0);
  auto ScalarDecisions = [&](const std::vector<double>& values) {
    scalar_values.clear();
    for (double v : values) scalar_values.push_back(Array::Scalar(v));
    DecisionView d;
    d.boundary = &scalar_near;
    for (const Array& a : scalar_values) d.branch_values.push_back(&a);
    return d;
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
        f.err_tol = std::numeric_limits<double>::infinity();
        f.note = std::string("candidate returned ") + DTypeName(it->second.dtype) + " for a " + DTypeName(w.dtype) +
                 " case" + (f.note.empty() ? "" : "; " + f.note);
      }
      if (ref.boundary.shape == w.shape)
        for (int64_t k : f.flipped) flipped.insert(k);
      if (f.outcome == Outcome::kFailed && it != have.end() && w.size() == 1 && ref.boundary.shape != w.shape &&
          AnyMarked(ref.boundary)) {
        // A scalar output (a loss) of decisions taken each their own way.
        const std::vector<double> values = by_candidate.Values(group, name);
        FieldReport again = CompareField(field, &it->second, w, f.tol, f.discrete, ScalarDecisions(values));
        auto own = ref.result.outputs.find(name);
        const double* oracle_value =
            own != ref.result.outputs.end() && own->second.size() == 1 ? &own->second.data[0] : nullptr;
        if (again.outcome != Outcome::kFailed && explained(group, name, w[0], f.tol, oracle_value))
          f = std::move(again);
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
      // Decisions taken each their own way (a fraction too: only those the tensors allow,
      // each counted by the combination itself, so its count is judged exactly).
      const Tolerance exact = discrete ? FractionTolerance(floating, w, golden, 0.0) : floating;
      std::vector<double> values = by_candidate.Values("metrics", name);
      FieldReport again = CompareField(field, &have, want, exact, discrete, ScalarDecisions(values));
      auto own = ref.result.metrics.find(name);
      if (again.outcome != Outcome::kFailed &&
          explained("metrics", name, w, exact, own == ref.result.metrics.end() ? nullptr : &own->second))
        f = std::move(again);
    }
    if (discrete && f.outcome == Outcome::kFailed) f.note = FractionNote(f, golden, tol, own_share);
    r.fields.push_back(std::move(f));
  }
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
