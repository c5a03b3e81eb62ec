// Shared by the advantage specs (oracle/spec_advantage_*.cc): the random rollout
// batches their generators make, the input specs every estimator shares, and packing
// an estimator's (advantages, returns) into a Result.
#pragma once

#include <vector>

#include "oracle/advantage_returns.h"
#include "oracle/registry.h"

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

// compute_advantage_for_multi_trajectories (oracle/spec_advantage_multi_trajectory.cc).
void AddMultiTrajectorySpec(std::vector<FunctionSpec>& out);

}  // namespace verlconf::oracle
