// Mirrors verl 0.9.1 core_algos.kl_penalty and kl_penalty_forward.
#include "oracle/kl/kl_penalty.h"

#include <algorithm>
#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/torch_rules.h"

namespace verlconf::oracle {
namespace {
constexpr double kLogRatioClamp = 20.0;  // k3 clamps the log-ratio before exp
constexpr double kK3ValueClamp = 10.0;   // and the estimate after

}  // namespace

KlEstimator ParseKlName(const std::string& name) {
  const bool plus = !name.empty() && name.back() == '+';
  const std::string base = plus ? name.substr(0, name.size() - 1) : name;
  KlEstimator e{KlEstimator::kK1, plus};
  if (base == "kl" || base == "k1") {
    e.kind = KlEstimator::kK1;
  } else if (base == "abs") {
    e.kind = KlEstimator::kAbs;
  } else if (base == "mse" || base == "k2") {
    e.kind = KlEstimator::kK2;
  } else if (base == "low_var_kl" || base == "k3") {
    e.kind = KlEstimator::kK3;
  } else {
    // verl raises a bare NotImplementedError for "full" and for unknown names alike.
    throw VerlError("NotImplementedError", "kl_penalty '" + name + "'");
  }
  return e;
}

double kl_value(KlEstimator e, double logprob, double ref) {
  const double d = logprob - ref;
  switch (e.kind) {
    case KlEstimator::kK1: return d;
    case KlEstimator::kAbs: return std::fabs(d);
    case KlEstimator::kK2: return 0.5 * d * d;
    case KlEstimator::kK3: {
      const double kl = Clamp(ref - logprob, -kLogRatioClamp, kLogRatioClamp);
      return Clamp(std::exp(kl) - kl - 1.0, -kK3ValueClamp, kK3ValueClamp);
    }
  }
  return 0.0;
}

double kl_grad_logprob(KlEstimator e, double logprob, double ref) {
  const double d = logprob - ref;
  if (e.straight_through) return d;  // gradient of d^2 / 2
  switch (e.kind) {
    case KlEstimator::kK1: return 1.0;
    case KlEstimator::kAbs: return d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);  // torch: sign, 0 at 0
    case KlEstimator::kK2: return d;
    case KlEstimator::kK3: {
      const double raw = ref - logprob;
      const double kl = Clamp(raw, -kLogRatioClamp, kLogRatioClamp);
      const double ratio = std::exp(kl);
      const double value = ratio - kl - 1.0;
      // d value / d kl = ratio - 1; d kl / d logprob = -1 inside the clamp.
      return (ratio - 1.0) * -1.0 * ClampPasses(raw, -kLogRatioClamp, kLogRatioClamp) *
             ClampPasses(value, -kK3ValueClamp, kK3ValueClamp);
    }
  }
  return 0.0;
}

Array kl_penalty(const Array& logprob, const Array& ref, const std::string& name) {
  const KlEstimator e = ParseKlName(name);
  Array out(logprob.shape, logprob.dtype);
  for (int64_t k = 0; k < logprob.size(); ++k) out[k] = kl_value(e, logprob[k], ref[k]);
  return out;
}

Array kl_penalty_grad(const Array& logprob, const Array& ref, const std::string& name) {
  const KlEstimator e = ParseKlName(name);
  Array out(logprob.shape, logprob.dtype);
  for (int64_t k = 0; k < logprob.size(); ++k) out[k] = kl_grad_logprob(e, logprob[k], ref[k]);
  return out;
}

}  // namespace verlconf::oracle
