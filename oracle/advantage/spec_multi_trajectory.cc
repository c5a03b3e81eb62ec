// Registry entry for verl's per-session advantage of multi-output agent loops
// (verl/trainer/ppo/v1/utils.py compute_advantage_for_multi_trajectories), family
// "advantage".
#include <map>

#include "oracle/advantage/multi_trajectory.h"
#include "oracle/advantage/spec.h"
#include "oracle/advantage/spec_common.h"
#include "oracle/core/errors.h"
#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"

namespace verlconf::oracle {
namespace {

// compute_advantage_for_multi_trajectories: GRPO over each session's final output; any
// other estimator is delegated to compute_advantage on the whole batch, which hands an
// outcome estimator rewards, mask and index and leaves its other parameters at their
// defaults.
// The estimator compute_advantage would dispatch to, from this family's own entries (the
// registry above the families is out of reach from here, and only advantage estimators
// can be delegated to anyway).
const FunctionSpec* FindEstimator(const std::string& name) {
  static const std::vector<FunctionSpec> estimators = [] {
    std::vector<FunctionSpec> v;
    AddAdvantageSpecs(v);
    AddAdvantageEstimatorSpecs(v);
    return v;
  }();
  for (const FunctionSpec& s : estimators)
    if (s.name == name && s.name != "compute_advantage_for_multi_trajectories") return &s;
  return nullptr;
}

// compute_grpo_outcome_advantage's default epsilon, from its registry entry.
double GrpoDefaultEpsilon() { return std::get<double>(FindEstimator("grpo")->FindConfigKey("epsilon")->verl_default); }

Result RunMultiTrajectory(const Case& c) {
  const std::string est = c.config.String("adv_estimator");
  if (est == "grpo") {
    GrpoConfig g;
    // The per-session step is compute_grpo_outcome_advantage with its default epsilon.
    g.epsilon = GrpoDefaultEpsilon();
    g.norm_adv_by_std_in_grpo = c.config.Bool("norm_adv_by_std_in_grpo");
    return Same(multi_trajectory_grpo_advantage(c.Input("token_level_rewards"), c.Input("response_mask"),
                                                c.Input("index"), c.Input("session"), c.Input("turn"), g));
  }
  const FunctionSpec* target = FindEstimator(est);
  if (!target) throw BadInput(c.Where() + ": cfg.adv_estimator: '" + est + "' is not an advantage estimator");
  Case d;
  d.family = "advantage";
  d.function = est;
  d.dtype = c.dtype;
  for (const InputSpec& in : target->inputs) {
    if (in.optional) continue;
    if (in.name != "token_level_rewards" && in.name != "response_mask" && in.name != "index")
      throw Unsupported("delegating to '" + est + "' needs its input '" + in.name + "'");
    d.inputs[in.name] = c.Input(in.name);
  }
  // The delegate's own registry entry is not wrapped by the registry: its config is
  // completed from its spec here, as the registry would.
  Case resolved;
  return target->oracle(Resolved(*target, d, resolved));
}

Case GenerateMultiTrajectory(const GenParams& p) {
  Case c = GenerateAdvantage(p, kOutcome);
  InputGen g(p.seed ^ 0x9e3779b97f4a7c15ull);
  const int64_t b = c.Input("index").size();
  Array session({b}, DType::kInt64), turn({b}, p.dtype);
  std::map<std::pair<double, int64_t>, double> codes;  // (uid, session label) -> code
  for (int64_t i = 0; i < b; ++i) {
    const double uid = c.Input("index")[i];
    const int64_t label = g.Int(0, 1);  // two sessions per uid
    auto it = codes.emplace(std::make_pair(uid, label), static_cast<double>(codes.size())).first;
    session[i] = it->second;
    turn[i] = static_cast<double>(g.Int(0, 3));
  }
  // The session codes must be first-appearance codes as the fixtures store them.
  std::map<double, double> canon;
  for (double& v : session.data) v = canon.emplace(v, static_cast<double>(canon.size())).first->second;
  c.inputs["session"] = session;
  c.inputs["turn"] = turn;
  c.config.Set("adv_estimator", std::string("grpo"));
  c.config.Set("norm_adv_by_std_in_grpo", int64_t{g.Coin(0.8) ? 1 : 0});
  return c;
}

}  // namespace

void AddMultiTrajectorySpec(std::vector<FunctionSpec>& out) {
  {
    FunctionSpec s;
    s.name = "compute_advantage_for_multi_trajectories";
    s.family = "advantage";
    s.verl_symbol = "verl.trainer.ppo.v1.utils.compute_advantage_for_multi_trajectories";
    s.inputs = {kRewards,
                kMask,
                kIndex,
                {"session", Role::kGroupIndex, false, false,
                 "the session_id part of the row's batch key '{uid}_{session_id}_{turn}' (with the uid: a session)"},
                {"turn", Role::kSequences, false, false, "the turn (output index) part of the row's batch key"}};
    s.config = {{"adv_estimator", "str", None(), "grpo: per-session GRPO; any other name: compute_advantage"},
                {"norm_adv_by_std_in_grpo", "bool", int64_t{1}, "passed on to compute_advantage"}};
    s.outputs = {{"advantages"}, {"returns"}};
    s.oracle = RunMultiTrajectory;
    s.generate = GenerateMultiTrajectory;
    // The per-session GRPO step runs with compute_grpo_outcome_advantage's default epsilon.
    s.float32_condition = [](const Case& c) {
      return GrpoFloat32ConditionWith(c, c.config.Bool("norm_adv_by_std_in_grpo"), GrpoDefaultEpsilon());
    };
    s.notes = "one advantage per session, from GRPO over the sessions' final outputs";
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf::oracle
