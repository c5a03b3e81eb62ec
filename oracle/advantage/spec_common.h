// Shared by the advantage estimators' registry entries (oracle/advantage/spec_*.cc): the
// random rollout batches their generators make, the input specs every estimator shares,
// packing an estimator's (advantages, returns) into a Result, and their float32
// condition numbers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "oracle/advantage/returns.h"
#include "oracle/core/function_spec.h"

namespace verlconf::oracle {

inline const InputSpec kRewards{"token_level_rewards", Role::kTokens, false, false,
                                "data.batch['token_level_rewards']"};
inline const InputSpec kMask{"response_mask", Role::kTokens, true, false, "data.batch['response_mask']"};
inline const InputSpec kIndex{"index", Role::kGroupIndex, false, false, "data.non_tensor_batch['uid']"};

Result Pack(AdvantageReturns ar);
inline Result Same(const Array& a) { return Pack({a, a}); }

// What the generators share: a rollout batch with outcome rewards (at the last valid
// token, or spread over several), groups with singletons and interleaving, and the
// per-estimator extras.
enum Want : unsigned {
  kOutcome = 0,             // rewards, mask, group index
  kNoIndex = 1u << 0,       // the estimator takes no group index
  kValues = 1u << 1,        // critic values (gae)
  kBaselines = 1u << 2,     // greedy-rollout rewards (remax)
  kPolicyStats = 1u << 3,   // old log-probs, sum pi^2, optional IS weights (OTB)
  kComponents = 1u << 4,    // GDPO reward components and weights (sometimes)
  kWhitened = 1u << 5,      // verl's masked_whiten needs a mask sum >= 2
  kNoSingletons = 1u << 6,  // grpo_passk raises on groups of one
  kGrpoConfig = 1u << 7,    // epsilon and norm_adv_by_std_in_grpo
  kGamma = 1u << 8,         // a discount (and GAE's lambda)
  kFNorm = 1u << 9,         // gpg's f_norm (and its ignored alpha)
};

Case GenerateAdvantage(const GenParams& p, unsigned want);

// compute_advantage_for_multi_trajectories (oracle/advantage/spec_multi_trajectory.cc).
void AddMultiTrajectorySpec(std::vector<FunctionSpec>& out);

// float32 condition numbers of the advantage estimators (FunctionSpec::float32_condition).
// verl's float32 result is only as good as float32 arithmetic on the case's scores
// allows; the float32 tolerance is scaled by these, never the float64 one.
//
// GRPO: row sums lose eps32 * sum_t |r_t|, the group mean eps32 * |mean|, and the
// division by (std + eps) amplifies both.
double GrpoFloat32Condition(const Case& c);
// The same for a GRPO step whose settings are not the case's config keys.
double GrpoFloat32ConditionWith(const Case& c, bool normalize, double eps);
// GDPO's: GRPO's condition number of every reward component's groups (the component's
// values over its group's std + epsilon), times the component's weight; the largest.
// A float32 implementation that sums a group in another order than torch is off by
// eps32 times it. 0 without components.
double ComponentGroupCondition(const Case& c);
// Un-normalised baselines (rloo, opo, gpg, remax): the error is eps32 times the size of
// the scores that cancel, max_i sum_t |r_{i,t}|.
double ScoreScaleCondition(const Case& c);
// gpg: the same, times verl's alpha / f_norm scaling of the advantage.
double GpgScoreScaleCondition(const Case& c);
// Baselines followed by batch whitening (reinforce_plus_plus_baseline): the same error,
// divided by the whitening's std.
// float32's condition of masked_whiten(x, mask): rounding x to float32 moves it by
// eps * |x|, which the whitening divides by x's masked std, so the bound is
// max |x| over valid tokens / sqrt(var + 1e-8) (at least 1).
double WhitenCondition(const Array& x, const Array& mask);
// The same when x itself carries an absolute error of eps * `upstream` (GRPO's
// (s - mean) / (std + eps) of a near-constant group: eps * |s| / 1e-6): the whitening
// multiplies x's error by r = rsqrt(var + 1e-8), and r's own relative error (about r
// times x's error) reaches each result in proportion to its size, 1 + r max |x - mean|:
// r (max |x| + upstream) (1 + r max |x - mean|), at least 1.
double WhitenConditionAfter(const Array& x, const Array& mask, double upstream);

// compute_advantage_for_multi_trajectories (spec_multi_trajectory.cc), what every
// implementation of it shares. An estimator's entry by name, from this family's own
// entries (compute_advantage only dispatches to advantage estimators); nullptr if none.
const FunctionSpec* FindEstimator(const std::string& name);
// compute_grpo_outcome_advantage's default epsilon, which the per-session step uses.
double GrpoDefaultEpsilon();
// For adv_estimator other than "grpo": the estimator compute_advantage dispatches to
// (BadInput if it names none), and the case it is handed: rewards, mask and index only
// (Unsupported if the estimator needs more), its config completed from its spec.
const FunctionSpec& MultiTrajectoryDelegate(const Case& c);
Case MultiTrajectoryDelegateCase(const Case& c);
// Sets s.case_tolerance so that float32 `outputs/advantages` are held to the float32
// default times WhitenCondition(whitened(case), response_mask); the other fields (the
// returns, which are not whitened) keep their bounds.
// float64 fields get the default atol times the same condition (a constant whitened
// batch: the float64 mean's last bit, times rsqrt(0 + 1e-8) = 1e4), not a larger rtol.
// `fields` are the whitened outputs (gdpo returns its advantages as its returns too).
// `upstream`, when given, is the condition number of the step that computed x (its
// absolute error in eps, for O(1) results): the bound is then WhitenConditionAfter's.
// `computed_in`, when given, is the dtype verl computes the case in where it is not the
// case's own (gdpo's float32 components): the bound is that dtype's.
void SetWhitenedAdvantageTolerance(FunctionSpec& s, std::function<Array(const Case&)> whitened,
                                   std::vector<std::string> fields = {"outputs/advantages"},
                                   std::function<double(const Case&)> upstream = nullptr,
                                   std::function<DType(const Case&)> computed_in = nullptr);
double WhitenedScoreCondition(const Case& c);
// The whitening bound for a case of `dtype` whose whitened input has condition `cond`
// (SetWhitenedAdvantageTolerance's rule); nullopt when cond <= 1.
std::optional<Tolerance> WhitenedTolerance(DType dtype, double cond);

}  // namespace verlconf::oracle
