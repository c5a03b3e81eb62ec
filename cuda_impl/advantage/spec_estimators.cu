// The CUDA entries of oracle/advantage/spec_estimators.cc (the estimators of verl's
// ADV_ESTIMATOR_REGISTRY beyond grpo), in the cuda and cuda-host slots, with its
// outputs: advantages and returns (the same tensor for the outcome estimators).
#include <map>
#include <string>
#include <vector>

#include "cuda_impl/advantage/baselines.cuh"
#include "cuda_impl/advantage/grpo_variants.cuh"
#include "cuda_impl/advantage/optimal_token_baseline.cuh"
#include "cuda_impl/advantage/returns.cuh"
#include "cuda_impl/advantage/spec_common.h"
#include "cuda_impl/core/device.h"
#include "cuda_impl/core/system.cuh"
#include "oracle/advantage/grpo_variants.h"
#include "oracle/advantage/spec_common.h"

namespace verlconf::cuda {
namespace {

// The inputs every estimator shares, in the system's memory.
struct Batch {
  Batch(System system, const Case& c, bool with_index)
      : mask_array(c.Input("response_mask")),
        rows(mask_array.rows()),
        cols(mask_array.cols()),
        rewards(system, ToFloat(c.Input("token_level_rewards"))),
        mask(system, ToFloat(mask_array)),
        index(system, with_index ? IndexCodes(c.Input("index")) : std::vector<int64_t>{}) {}
  const Array& mask_array;
  int64_t rows, cols;
  SystemBuffer<float> rewards, mask;
  SystemBuffer<int64_t> index;
  size_t size() const { return mask_array.data.size(); }
  Array Out(const SystemBuffer<float>& b, DType d) const { return FromFloat(b.ToHost(), mask_array.shape, d); }
};

// An outcome estimator f(policy, rewards, mask, index, rows, cols, advantages):
// advantages == returns.
template <class F>
Result RunOutcome(System system, const Case& c, F f) {
  const Batch b(system, c, /*with_index=*/true);
  SystemBuffer<float> adv(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    f(policy, b.rewards.data(), b.mask.data(), b.index.data(), b.rows, b.cols, adv.data());
  });
  return oracle::Same(b.Out(adv, c.dtype));
}

struct RppBaselineFn {
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    reinforce_plus_plus_baseline_advantage(p, r, m, i, rows, cols, a);
  }
};
struct RlooFn {
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    rloo_outcome_advantage(p, r, m, i, rows, cols, a);
  }
};
struct RlooVectorizedFn {
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    rloo_vectorized_outcome_advantage(p, r, m, i, rows, cols, a);
  }
};
struct OpoFn {
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    opo_outcome_advantage(p, r, m, i, rows, cols, a);
  }
};
struct GpgFn {
  float f_norm;
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    gpg_outcome_advantage(p, r, m, i, rows, cols, f_norm, a);
  }
};
struct PasskFn {
  float epsilon;
  bool norm;
  template <class P>
  void operator()(P& p, const float* r, const float* m, const int64_t* i, int64_t rows, int64_t cols, float* a) const {
    grpo_passk_outcome_advantage(p, r, m, i, rows, cols, epsilon, norm, a);
  }
};

Result RunGae(System system, const Case& c) {
  const float gamma = static_cast<float>(c.config.Double("gamma"));
  // verl forms gamma * lam as Python floats before it meets the tensor.
  const float gamma_lam = static_cast<float>(c.config.Double("gamma") * c.config.Double("lam"));
  const Batch b(system, c, /*with_index=*/false);
  const SystemBuffer<float> values(system, ToFloat(c.Input("values")));
  SystemBuffer<float> adv(system, b.size()), ret(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    gae_advantage_return(policy, b.rewards.data(), values.data(), b.mask.data(), b.rows, b.cols, gamma, gamma_lam,
                         adv.data(), ret.data());
  });
  return oracle::Pack({b.Out(adv, c.dtype), b.Out(ret, c.dtype)});
}

Result RunReinforcePlusPlus(System system, const Case& c) {
  const float gamma = static_cast<float>(c.config.Double("gamma"));
  const Batch b(system, c, /*with_index=*/false);
  SystemBuffer<float> adv(system, b.size()), ret(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    reinforce_plus_plus_advantage(policy, b.rewards.data(), b.mask.data(), b.rows, b.cols, gamma, adv.data(),
                                  ret.data());
  });
  return oracle::Pack({b.Out(adv, c.dtype), b.Out(ret, c.dtype)});
}

Result RunRemax(System system, const Case& c) {
  const Batch b(system, c, /*with_index=*/false);
  const SystemBuffer<float> baselines(system, ToFloat(c.Input("reward_baselines")));
  SystemBuffer<float> adv(system, b.size()), ret(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    remax_outcome_advantage(policy, b.rewards.data(), baselines.data(), b.mask.data(), b.rows, b.cols, adv.data(),
                            ret.data());
  });
  return oracle::Pack({b.Out(adv, c.dtype), b.Out(ret, c.dtype)});
}

Result RunPassk(System system, const Case& c) {
  oracle::CheckPassAtKGroups(c.Input("index"));
  return RunOutcome(system, c,
                    PasskFn{static_cast<float>(c.config.Double("epsilon")), c.config.Bool("norm_adv_by_std_in_grpo")});
}

Result RunGdpo(System system, const Case& c) {
  const float epsilon = static_cast<float>(c.config.Double("epsilon"));
  const bool norm = c.config.Bool("norm_adv_by_std_in_grpo");
  const Array* components = c.OptionalInput("reward_components");
  const Array* weights = c.OptionalInput("reward_weights");
  const int64_t k_count = components ? components->cols() : 0;
  // verl's torch.tensor(weights, dtype=float32); None = all 1.
  std::vector<float> w(static_cast<size_t>(k_count), 1.0f);
  if (weights)
    for (int64_t k = 0; k < k_count; ++k) w[static_cast<size_t>(k)] = static_cast<float>((*weights)[k]);
  const Batch b(system, c, /*with_index=*/true);
  const SystemBuffer<float> comps(system, components ? ToFloat(*components) : std::vector<float>{});
  SystemBuffer<float> adv(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    gdpo_outcome_advantage(policy, b.rewards.data(), b.mask.data(), b.index.data(), b.rows, b.cols,
                           components ? comps.data() : nullptr, k_count, w, epsilon, norm, adv.data());
  });
  return oracle::Same(b.Out(adv, c.dtype));
}

template <bool kTir>
Result RunOtb(System system, const Case& c) {
  const bool handle_zero_tail = c.config.Bool("handle_zero_tail");
  const float epsilon = static_cast<float>(c.config.Double("epsilon"));
  const Array* rho = c.OptionalInput("rollout_is_weights");
  const Batch b(system, c, /*with_index=*/true);
  const SystemBuffer<float> lp(system, ToFloat(c.Input("old_log_probs"))),
      sp2(system, ToFloat(c.Input("sum_pi_squared"))), d_rho(system, rho ? ToFloat(*rho) : std::vector<float>{});
  SystemBuffer<float> adv(system, b.size()), ret(system, b.size());
  RunEntry(system, [&](auto&& policy) {
    const float* r = rho ? d_rho.data() : nullptr;
    if (kTir)
      tir_optimal_token_baseline_advantage(policy, b.rewards.data(), b.mask.data(), b.index.data(), lp.data(),
                                           sp2.data(), r, b.rows, b.cols, handle_zero_tail, epsilon, adv.data(),
                                           ret.data());
    else
      optimal_token_baseline_advantage(policy, b.rewards.data(), b.mask.data(), b.index.data(), lp.data(), sp2.data(),
                                       r, b.rows, b.cols, handle_zero_tail, epsilon, adv.data(), ret.data());
  });
  return oracle::Pack({b.Out(adv, c.dtype), b.Out(ret, c.dtype)});
}

const bool registered = [] {
  RegisterAdvantageEntry("gae", RunGae);
  RegisterAdvantageEntry("reinforce_plus_plus", RunReinforcePlusPlus);
  RegisterAdvantageEntry("reinforce_plus_plus_baseline",
                         [](System s, const Case& c) { return RunOutcome(s, c, RppBaselineFn()); });
  RegisterAdvantageEntry("rloo", [](System s, const Case& c) { return RunOutcome(s, c, RlooFn()); });
  RegisterAdvantageEntry("rloo_vectorized",
                         [](System s, const Case& c) { return RunOutcome(s, c, RlooVectorizedFn()); });
  RegisterAdvantageEntry("opo", [](System s, const Case& c) { return RunOutcome(s, c, OpoFn()); });
  RegisterAdvantageEntry("remax", RunRemax);
  RegisterAdvantageEntry("gpg", [](System s, const Case& c) {
    return RunOutcome(s, c, GpgFn{static_cast<float>(c.config.Double("f_norm"))});
  });
  RegisterAdvantageEntry("grpo_passk", RunPassk);
  RegisterAdvantageEntry("gdpo", RunGdpo);
  RegisterAdvantageEntry("optimal_token_baseline", RunOtb<false>);
  RegisterAdvantageEntry("tir_optimal_token_baseline", RunOtb<true>);
  return true;
}();

}  // namespace
}  // namespace verlconf::cuda
