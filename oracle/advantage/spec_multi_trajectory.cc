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
  return MultiTrajectoryDelegate(c).oracle(MultiTrajectoryDelegateCase(c));
}

// float32's condition of what the function computes: the per-session GRPO sees only the
// sessions' final outputs, so its group statistics (and their cancellation) are those of
// the final outputs' scores grouped by uid, not of every row; a delegated estimator has
// its own entry's condition.
double MultiTrajectoryCondition(const Case& c) {
  const std::string est = c.config.String("adv_estimator");
  if (est != "grpo") {
    try {
      const FunctionSpec& target = MultiTrajectoryDelegate(c);
      return target.float32_condition ? target.float32_condition(MultiTrajectoryDelegateCase(c)) : 1.0;
    } catch (const BadInput&) {
      return 1.0;  // no such estimator, or it needs an input the case lacks: the run reports it
    } catch (const Unsupported&) {
      return 1.0;
    }
  }
  const Array& r = c.Input("token_level_rewards");
  const Array& index = c.Input("index");
  const Array& session = c.Input("session");
  const Array& turn = c.Input("turn");
  // (uid, session) -> its final output: the largest turn, the first such row on a tie.
  std::map<std::pair<double, double>, int64_t> final_row;
  for (int64_t i = 0; i < r.rows(); ++i) {
    const auto key = std::make_pair(index[i], session[i]);
    const auto it = final_row.find(key);
    if (it == final_row.end() || turn[i] > turn[it->second]) final_row[key] = i;
  }
  Case finals;
  Array rewards({static_cast<int64_t>(final_row.size()), r.cols()}, r.dtype);
  Array uids({static_cast<int64_t>(final_row.size())}, index.dtype);
  int64_t k = 0;
  for (const auto& [key, i] : final_row) {
    for (int64_t t = 0; t < r.cols(); ++t) rewards.at(k, t) = r.at(i, t);
    uids[k++] = key.first;
  }
  finals.inputs["token_level_rewards"] = rewards;
  finals.inputs["index"] = uids;
  return GrpoFloat32ConditionWith(finals, c.config.Bool("norm_adv_by_std_in_grpo"), GrpoDefaultEpsilon());
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

double GrpoDefaultEpsilon() { return std::get<double>(FindEstimator("grpo")->FindConfigKey("epsilon")->verl_default); }

const FunctionSpec& MultiTrajectoryDelegate(const Case& c) {
  const std::string est = c.config.String("adv_estimator");
  const FunctionSpec* target = FindEstimator(est);
  if (!target) throw BadInput(c.Where() + ": cfg.adv_estimator: '" + est + "' is not an advantage estimator");
  return *target;
}

Case MultiTrajectoryDelegateCase(const Case& c) {
  const FunctionSpec& target = MultiTrajectoryDelegate(c);
  Case d;
  d.family = "advantage";
  d.function = target.name;
  d.dtype = c.dtype;
  for (const InputSpec& in : target.inputs) {
    if (in.optional) continue;
    if (in.name != "token_level_rewards" && in.name != "response_mask" && in.name != "index")
      throw Unsupported("delegating to '" + target.name + "' needs its input '" + in.name + "'");
    d.inputs[in.name] = c.Input(in.name);
  }
  // The delegate's own registry entry is not wrapped by the registry: its config is
  // completed from its spec here, as the registry would.
  ResolveConfig(target, d.config);
  return d;
}

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
    s.float32_condition = MultiTrajectoryCondition;
    s.notes = "one advantage per session, from GRPO over the sessions' final outputs";
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf::oracle
