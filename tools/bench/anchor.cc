#include "tools/bench/anchor.h"

namespace verlconf::bench {
namespace {

AnchorRow Adv(const std::string& name, double verl_ms, double roofline_ms = 0.103) {
  return {"adv/" + name, "advantage", name, {}, verl_ms, roofline_ms};
}
AnchorRow Loss(const std::string& label, const std::string& name, double verl_ms) {
  return {"loss/" + label + "_fwd_bwd", "policy_loss", name, {}, verl_ms, 0.172};
}
AnchorRow Kl(const std::string& label, const std::string& name, double verl_ms) {
  return {"kl/" + label, "kl", name, {}, verl_ms, 0.103};
}
AnchorRow Agg(const std::string& mode, double verl_ms) {
  return {"agg/" + mode, "aggregation", mode, {}, verl_ms, 0.069};
}
AnchorRow Rc(const std::string& label, const std::string& name, std::map<std::string, ConfigValue> config,
             double verl_ms) {
  return {"rc/" + label, "rollout_correction", name, std::move(config), verl_ms, 0.172};
}

}  // namespace

const std::vector<AnchorRow>& AnchorRows() {
  static const std::vector<AnchorRow> rows = [] {
    std::vector<AnchorRow> v = {
        Adv("gae", 1345.384, 0.172),
        Adv("grpo", 202.861),
        Adv("grpo_vectorized", 1.212),
        Adv("grpo_passk", 46.591),
        Adv("rloo", 363.871),
        Adv("rloo_vectorized", 2.641),
        Adv("reinforce_plus_plus", 896.247),
        Adv("reinforce_plus_plus_baseline", 97.957),
        Adv("remax", 0.75),
        Adv("opo", 115.393),
        Adv("gpg", 424.224),
        Adv("optimal_token_baseline", 91.605, 0.207),
        Adv("tir_optimal_token_baseline", 1465.647, 0.207),
        Adv("gdpo", 389.969),
        Loss("bypass_mode", "bypass_mode", 10.262),
        Loss("cispo", "cispo", 2.669),
        Loss("clip_cov", "clip_cov", 60.222),
        Loss("dppo_kl", "dppo_kl", 4.987),
        Loss("dppo_tv", "dppo_tv", 4.04),
        Loss("dro", "dro", 2.53),
        Loss("geo_mean", "geo_mean", 4.645),
        Loss("gpg", "gpg", 0.977),
        Loss("gspo", "gspo", 4.656),
        Loss("kl_cov", "kl_cov", 572.204),
        Loss("sapo", "sapo", 3.205),
        Loss("vanilla", "vanilla", 6.403),
        Loss("reinforce", "compute_policy_loss_reinforce", 1.638),
        // verl's kl rows time the forward only; the registry entries also write the
        // gradient (one more token matrix), which the bench counts in their traffic.
        Kl("kl", "kl", 0.113),
        Kl("abs", "abs", 0.181),
        Kl("mse", "mse", 0.249),
        Kl("low_var_kl", "low_var_kl", 0.475),
        Kl("low_var_kl+_fwd_bwd", "low_var_kl+", 1.265),
        Agg("token-mean", 0.425),
        Agg("token-sum", 0.386),
        Agg("seq-mean-token-sum", 0.234),
        Agg("seq-mean-token-mean", 0.232),
        Agg("seq-mean-token-sum-norm", 0.227),
        Rc("token_is", "compute_rollout_correction_weights", {{"rollout_is", std::string("token")}}, 9.861),
        Rc("sequence_is", "compute_rollout_correction_weights", {{"rollout_is", std::string("sequence")}}, 8.761),
        Rc("token_icepop", "compute_rollout_correction_weights",
           {{"rollout_is", std::string("token")}, {"rollout_is_threshold", std::string("0.5_2.0")}}, 10.921),
        Rc("token_is_batchnorm", "compute_rollout_correction_weights",
           {{"rollout_is", std::string("token")}, {"rollout_is_batch_normalize", int64_t{1}}}, 10.749),
        Rc("token_is+token_k1,seq_mean_k3", "compute_rollout_correction_and_rejection_mask",
           {{"rollout_is", std::string("token")},
            {"rollout_is_threshold", 2.0},
            {"rollout_rs", std::string("token_k1,seq_mean_k3")},
            {"rollout_rs_threshold", std::string("0.5_2.0,0.01")}},
           20.035),
    };
    for (const auto& [label, name, ms] :
         std::vector<std::tuple<std::string, std::string, double>>{{"rs_token_k1", "token_k1", 11.032},
                                                                   {"rs_token_k2", "token_k2", 10.334},
                                                                   {"rs_token_k3", "token_k3", 9.777},
                                                                   {"rs_seq_sum_k1", "seq_sum_k1", 8.979},
                                                                   {"rs_seq_sum_k2", "seq_sum_k2", 9.216},
                                                                   {"rs_seq_sum_k3", "seq_sum_k3", 9.027},
                                                                   {"rs_seq_mean_k1", "seq_mean_k1", 9.425},
                                                                   {"rs_seq_mean_k2", "seq_mean_k2", 9.192},
                                                                   {"rs_seq_mean_k3", "seq_mean_k3", 9.374},
                                                                   {"rs_seq_max_k2", "seq_max_k2", 9.57},
                                                                   {"rs_seq_max_k3", "seq_max_k3", 9.692}})
      v.push_back(Rc(label, name, {}, ms));
    v.front().target_factor = 3.0;  // gae
    return v;
  }();
  return rows;
}

}  // namespace verlconf::bench
