// Registry entries for reward-side KL (family "reward_kl"): the in-reward penalty of
// verl's trainer, compute_rewards, and the KL coefficient controllers, keyed by verl's
// names (apply_kl_penalty, compute_rewards, and algorithm.kl_ctrl.type "fixed" /
// "adaptive").
#include "oracle/reward_kl/spec.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "oracle/core/generate.h"
#include "oracle/core/spec_util.h"
#include "oracle/kl/kl_penalty.h"
#include "oracle/reward_kl/reward_kl.h"

namespace verlconf {
namespace {

oracle::KlControl ReadControl(const Case& c, const std::string& type) {
  oracle::KlControl k;
  k.type = type;
  k.kl_coef = c.config.Double("kl_coef");
  k.target_kl = c.config.Double("target_kl");
  k.horizon = static_cast<double>(c.config.Int("horizon"));
  return k;
}

std::vector<ConfigKey> ControlKeys(bool with_type) {
  std::vector<ConfigKey> keys;
  if (with_type)
    keys.push_back({"kl_ctrl_type",
                    "str",
                    std::string("fixed"),
                    "algorithm.kl_ctrl.type: fixed or adaptive",
                    {"fixed", "adaptive"}});
  keys.push_back({"kl_coef", "float", 0.001, "algorithm.kl_ctrl.kl_coef: the coefficient before this step"});
  keys.push_back({"target_kl", "float", 0.1, "algorithm.kl_ctrl.target_kl (adaptive)"});
  keys.back().refused = {0.0};  // AdaptiveKLController.update divides by it
  keys.push_back({"horizon", "int", int64_t{10000}, "algorithm.kl_ctrl.horizon (adaptive; must be > 0)"});
  keys.back().refused = {int64_t{0}};  // AdaptiveKLController.__init__ asserts it is positive
  return keys;
}

Case GenerateTokens(const GenParams& p, bool with_mask) {
  oracle::InputGen g(p.seed);
  Case c = oracle::NewGeneratedCase(p);
  c.inputs["token_level_scores"] = g.Normal(p.batch, p.tokens, 0.0, 1.0, p.dtype);
  const Array ref = g.LogProbs(p.batch, p.tokens, p.dtype);
  c.inputs["ref_log_prob"] = ref;
  c.inputs["old_log_probs"] = g.Perturb(ref, g.Coin(0.8) ? 0.1 : 2.0);
  if (with_mask) c.inputs["response_mask"] = g.ResponseMask(p.batch, p.tokens, p.dtype);
  return c;
}

}  // namespace

void AddRewardKlSpecs(std::vector<FunctionSpec>& out) {
  {
    FunctionSpec s;
    s.name = "apply_kl_penalty";
    s.family = "reward_kl";
    s.verl_symbol = "verl.trainer.ppo.ray_trainer.apply_kl_penalty";
    s.inputs = {{"token_level_scores", Role::kTokens, false, false, "data.batch['token_level_scores']"},
                {"old_log_probs", Role::kTokens, false, false, "data.batch['old_log_probs']"},
                {"ref_log_prob", Role::kTokens, false, false, "data.batch['ref_log_prob']"},
                {"response_mask", Role::kTokens, true, false, "data.batch['response_mask']"}};
    s.config = ControlKeys(/*with_type=*/true);
    s.config.insert(s.config.begin(), {"kl_penalty", "str", std::string("kl"),
                                       "algorithm.kl_penalty: the kl_penalty estimator", oracle::kKlPenaltyNames});
    s.outputs = {{"token_level_rewards"}, {"kl_coef", OutputKind::kScalar}};
    s.metrics = {"actor/reward_kl_penalty", "actor/reward_kl_penalty_coeff"};
    s.oracle = [](const Case& c) {
      const oracle::KlPenaltyResult k = oracle::apply_kl_penalty(
          c.Input("token_level_scores"), c.Input("old_log_probs"), c.Input("ref_log_prob"), c.Input("response_mask"),
          c.config.String("kl_penalty"), ReadControl(c, c.config.String("kl_ctrl_type")));
      Result r;
      r.outputs["token_level_rewards"] = k.token_level_rewards;
      r.outputs["kl_coef"] = Array::Scalar(k.next_coef, c.dtype);
      r.metrics["actor/reward_kl_penalty"] = k.current_kl;
      r.metrics["actor/reward_kl_penalty_coeff"] = k.beta;
      return r;
    };
    s.generate = [](const GenParams& p) {
      Case c = GenerateTokens(p, /*with_mask=*/true);
      oracle::InputGen g(p.seed ^ 0x5bd1e995u);
      const char* names[] = {"kl", "abs", "mse", "low_var_kl", "k3+"};
      c.config.Set("kl_penalty", std::string(names[g.Int(0, 4)]));
      c.config.Set("kl_ctrl_type", std::string(g.Coin(0.5) ? "adaptive" : "fixed"));
      c.config.Set("kl_coef", g.UniformScalar(1e-3, 0.2));
      c.config.Set("target_kl", g.UniformScalar(0.01, 1.0));
      c.config.Set("horizon", g.Int(1, 20000));
      return c;
    };
    // rewards = scores - kl_coef * kld: where the score is small (0 off the last token in
    // verl's batches) an element is the coefficient times an order-one KL, and rounds at
    // that scale; the next coefficient moves from kl_coef by at most a fifth of it.
    s.atol_scale = [](const Case& c, const std::string& field) -> std::optional<std::vector<double>> {
      const double beta = std::fabs(c.config.Double("kl_coef"));
      if (field == "outputs/kl_coef") return std::vector<double>{2.0 * beta};
      if (field != "outputs/token_level_rewards") return std::nullopt;
      const Array kld =
          oracle::kl_penalty(c.Input("old_log_probs"), c.Input("ref_log_prob"), c.config.String("kl_penalty"));
      const Array& scores = c.Input("token_level_scores");
      std::vector<double> scale(static_cast<size_t>(scores.size()));
      for (int64_t k = 0; k < scores.size(); ++k)
        scale[static_cast<size_t>(k)] = std::max(std::fabs(scores[k]), beta * std::max(1.0, std::fabs(kld[k])));
      return scale;
    };
    s.notes = "kl_coef is the controller's value after update(current_kl, n_steps=B); the metric coeff is the one used";
    out.push_back(std::move(s));
  }
  {
    FunctionSpec s;
    s.name = "compute_rewards";
    s.family = "reward_kl";
    s.verl_symbol = "verl.trainer.ppo.core_algos.compute_rewards";
    s.inputs = {{"token_level_scores", Role::kTokens},
                {"old_log_prob", Role::kTokens, false, false, "", /*decides=*/true},
                {"ref_log_prob", Role::kTokens}};
    s.config = {{"kl_ratio", "float", oracle::None(), "the KL coefficient (no default in verl)"}};
    s.outputs = {{"token_level_rewards"}};
    s.oracle = [](const Case& c) {
      Result r;
      r.outputs["token_level_rewards"] = oracle::compute_rewards(c.Input("token_level_scores"), c.Input("old_log_prob"),
                                                                 c.Input("ref_log_prob"), c.config.Double("kl_ratio"));
      return r;
    };
    s.generate = [](const GenParams& p) {
      Case c = GenerateTokens(p, /*with_mask=*/false);
      c.inputs["old_log_prob"] = c.inputs.at("old_log_probs");
      c.inputs.erase("old_log_probs");
      oracle::InputGen g(p.seed ^ 0x27d4eb2du);
      c.config.Set("kl_ratio", g.UniformScalar(0.0, 1.0));
      return c;
    };
    // scores - kl_ratio * (old - ref), each element at its own scale (as apply_kl_penalty).
    s.atol_scale = [](const Case& c, const std::string& field) -> std::optional<std::vector<double>> {
      if (field != "outputs/token_level_rewards") return std::nullopt;
      const double beta = std::fabs(c.config.Double("kl_ratio"));
      const Array& scores = c.Input("token_level_scores");
      const Array& old_lp = c.Input("old_log_prob");
      const Array& ref = c.Input("ref_log_prob");
      std::vector<double> scale(static_cast<size_t>(scores.size()));
      for (int64_t k = 0; k < scores.size(); ++k)
        scale[static_cast<size_t>(k)] =
            std::max(std::fabs(scores[k]), beta * std::max({1.0, std::fabs(old_lp[k]), std::fabs(ref[k])}));
      return scale;
    };
    s.notes = "every token, no mask, always the k1 log-ratio";
    out.push_back(std::move(s));
  }
  for (const char* type : {"fixed", "adaptive"}) {
    FunctionSpec s;
    s.name = type;
    s.family = "reward_kl";
    s.verl_symbol = std::string("verl.trainer.ppo.core_algos.") +
                    (s.name == "fixed" ? "FixedKLController" : "AdaptiveKLController") +
                    ".update (via get_kl_controller)";
    s.inputs = {{"current_kl", Role::kScalar, false, false, "the batch KL apply_kl_penalty measured"}};
    s.config = ControlKeys(/*with_type=*/false);
    s.config.push_back({"n_steps", "int", oracle::None(), "update's n_steps; apply_kl_penalty passes the batch size"});
    s.outputs = {{"value", OutputKind::kScalar}};
    // The next coefficient is kl_coef times (1 + at most 0.2 n / horizon): its scale.
    s.atol_scale = [](const Case& c, const std::string& field) -> std::optional<std::vector<double>> {
      if (field != "outputs/value") return std::nullopt;
      const double grow = 1.0 + 0.2 * static_cast<double>(c.config.Int("n_steps")) /
                                    std::max(1.0, static_cast<double>(c.config.Int("horizon")));
      return std::vector<double>{std::fabs(c.config.Double("kl_coef")) * grow};
    };
    const std::string t = type;
    s.oracle = [t](const Case& c) {
      Result r;
      r.outputs["value"] = Array::Scalar(oracle::kl_controller_update(ReadControl(c, t), c.Input("current_kl")[0],
                                                                      static_cast<double>(c.config.Int("n_steps"))),
                                         c.dtype);
      return r;
    };
    s.generate = [](const GenParams& p) {
      oracle::InputGen g(p.seed);
      Case c = oracle::NewGeneratedCase(p);
      Array kl = Array::Scalar(g.UniformScalar(-0.05, 1.0), p.dtype);
      oracle::RoundToDType(kl);
      c.inputs["current_kl"] = kl;
      c.config.Set("kl_coef", g.UniformScalar(1e-3, 0.2));
      c.config.Set("target_kl", g.UniformScalar(0.01, 1.0));
      c.config.Set("horizon", g.Int(1, 20000));
      c.config.Set("n_steps", g.Int(1, 4096));
      return c;
    };
    s.notes = std::string(s.name == "fixed" ? "update is a no-op"
                                            : "coef *= 1 + clip(kl / target - 1, -0.2, 0.2) * n_steps / horizon") +
              "; oracle only: a scalar update of the controller's coefficient, nothing for a GPU to do";
    out.push_back(std::move(s));
  }
}

}  // namespace verlconf
