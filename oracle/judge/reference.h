// The reference side of a comparison where rounding decides: the oracle on the golden's
// inputs, the tokens whose threshold decision it makes within rounding, and the values the
// other decision gives there. None of it comes from the implementation under test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "oracle/core/case.h"
#include "oracle/core/function_spec.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/tolerance.h"

namespace verlconf {

// The reference side of a comparison: the oracle on the golden's inputs, where its
// decisions are rounding-dependent, and the values the other decision gives there.
struct ReferenceDecisions {
  bool have = false;
  // The oracle on the golden's inputs; its magnitude gives the scalar outputs' float32
  // allowance without another oracle run.
  Result result;
  Array boundary;                    // empty when no decision is close
  std::vector<Result> branches;      // the other decision's values, one per push direction
  std::vector<double> branch_sides;  // +1 / -1: the direction branches[i] was pushed in
  // An exact tie between the two sides (a ratio rounded onto the bound itself): torch's
  // max/min then split the gradient evenly between their two arguments. Gradients only:
  // a forward value at a tie is either side's. The split gives the midpoint of the two
  // decisions' gradients, or, where one argument passes no gradient at the tie (a clamp
  // at its own bound, a constant), half of the other's even when both sides select the
  // same argument (PPO's max(-A r, -A clip(r)) at r on the bound with A < 0): half of
  // either decision's gradient.
  std::vector<Result> ties;
  // Discrete (0/1) outputs: the other decision is the flipped value, on valid tokens. This
  // needs no push, so it holds where the decided quantity hardly moves with the log-ratio
  // (k3 near a log-ratio of 0).
  std::map<std::string, Array> flipped_discrete;
  std::set<int64_t> unobservable;  // boundary positions where no field tells the decisions apart
  const Array* mask = nullptr;     // the response mask fractions are taken over

  // What a push needs: the function, the case (alive as long as this view), the input
  // whose rounding decides, and the push per position (0 off the boundary).
  const FunctionSpec* spec = nullptr;
  RunFn run;  // the reference's function: the oracle, or verl's semantics of a sharding
  const Case* golden = nullptr;
  const char* input = nullptr;
  Array push;

  // The oracle with position k's decision input pushed by sides[k] (0, +1 or -1) times
  // its push, extrapolated to the push's start as the branches are: the values a result
  // gives that takes, at each boundary position independently, one decision or the other.
  // Throws what the oracle throws.
  Result PushedBy(const std::vector<double>& sides) const;

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
  // `rows`: the same for a fraction of rows (FunctionSpec::counts_rows): a row with such a
  // token counts once, over the rows that have a valid token (verl divides by those or by
  // every row; the smaller denominator bounds both).
  // `counted`: the mask the fraction counts over where it is not the input mask
  // (Result::fraction_masks): the share is of its tokens, of which a boundary token of the
  // input's may be one or not (a decision that keeps or drops it moves the denominator too).
  double DecisionShare(const std::set<int64_t>& flipped, bool rows = false, const Array* counted = nullptr) const {
    if (!mask || !boundary.size()) return 0.0;
    if (counted && counted->shape != mask->shape) counted = nullptr;
    const Array& over = counted ? *counted : *mask;
    auto moves = [&](int64_t k) {
      return (*mask)[k] != 0.0 && boundary[k] != 0.0 && (flipped.count(k) || unobservable.count(k));
    };
    // Exactly 1 when every counted token may move (not 1 - 1e-8: a one-row fraction moves
    // by all of it), and at most 1 over a counted mask smaller than the moving tokens.
    auto ratio = [](double moved, double total) { return moved == 0 ? 0.0 : total > moved ? moved / total : 1.0; };
    double moved = 0, total = 0;
    if (rows && mask->shape.size() == 2) {
      const int64_t T = mask->cols();
      for (int64_t i = 0; i < mask->rows(); ++i) {
        bool valid = false, moved_row = false;
        for (int64_t k = i * T; k < (i + 1) * T; ++k) {
          valid = valid || over[k] != 0.0;
          moved_row = moved_row || moves(k);
        }
        total += valid ? 1.0 : 0.0;
        moved += moved_row ? 1.0 : 0.0;
      }
      return ratio(moved, total);
    }
    for (int64_t k = 0; k < mask->size(); ++k) {
      total += over[k];
      if (moves(k)) moved += counted ? 1.0 : (*mask)[k];
    }
    return ratio(moved, total);
  }
};

// The oracle on `golden`'s inputs and, where its result marks a boundary, the other
// decision's values (the spec's decision input pushed across it on each side), the ties,
// and the positions no field can tell apart. have == false when the oracle raises.
// `reference`: the function whose values the golden holds where it is not the oracle
// alone (a sharded case's: sharding::ShardedSemantics).
ReferenceDecisions ReferenceView(const FunctionSpec& spec, const Case& golden, const RunFn* reference = nullptr);

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
// past that nothing is added (the branches alone judge).
class DecisionCombinations {
 public:
  // `tensors`: the side whose element-wise fields pin the decisions; null for the golden's.
  DecisionCombinations(const FunctionSpec& spec, const Case& golden, const ReferenceDecisions& ref,
                       const Result* tensors);

  // The values of a scalar field (group "outputs" or "metrics") over the combinations.
  std::vector<double> Values(const std::string& group, const std::string& name);

  // The arrays of an element-wise field (group "outputs" or "grads") over the combinations.
  std::vector<const Array*> Arrays(const std::string& group, const std::string& name);

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
  static const Array* In(const Result& r, const Elementwise& e);

  // The side's element-wise fields at position k match `values`', or an exact tie's
  // value (a gradient no decision gives: the ratio sits on the bound, where both
  // decisions' forward values hold).
  bool Holds(int64_t k, const Result& values) const;

  // Where the tolerance cannot tell two decisions apart at k (a gradient smaller than
  // its atol), the side's value still can when it sits far nearer one of them: an option
  // is dropped where some field's value is over four times nearer another option's than
  // the two options' values are apart, and they are apart by more than rounding (float32
  // rounding of an element is ulps; a decision that matters there moves it by its whole
  // effect, while a continuous one, min(w, upper) on the bound, moves it by nothing).
  void Narrow(int64_t k, std::vector<double>& options, const std::vector<Result>& seen) const;

  // Some scalar field (a scalar output, a metric) of a differs from b's beyond tolerance.
  bool MovesAScalar(const Result& a, const Result& b) const;

  // Runs the combinations, on the first question asked.
  void Compute();

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

}  // namespace verlconf
