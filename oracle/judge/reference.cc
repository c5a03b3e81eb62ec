#include "oracle/judge/reference.h"

#include <cmath>
#include <exception>

#include "oracle/core/errors.h"
#include "oracle/judge/tolerance.h"

namespace verlconf {
namespace {

// How far the decision input is pushed to find the other decision's value: 32 times the
// 16-ulp margin within which the oracle marks a decision as rounding-dependent
// (kDecisionUlps in torch_rules.h), so that the push crosses the threshold wherever the
// decided quantity moves with the log-ratio at a rate near 1 (ratios, weights).
constexpr double kPushUlps = 512.0;

// The input whose rounding decides the thresholds, as the spec declares it
// (InputSpec::decides), when the case has it in the boundary's shape.
const char* DecisionInput(const FunctionSpec& spec, const Case& c, const Array& boundary) {
  for (const InputSpec& in : spec.inputs) {
    if (!in.decides) continue;
    const Array* a = c.OptionalInput(in.name);
    if (a && a->shape == boundary.shape) return in.name.c_str();
  }
  return nullptr;
}

bool AnyNonZero(const Array& a) {
  for (double v : a.data)
    if (v != 0.0) return true;
  return false;
}

Result Extrapolate(const Result& near, const Result& far) {
  // Two pushes on the same side: 2 f(x + d) - f(x + 2d) is the other decision's value at x
  // up to O(d^2), so the push's own smooth change does not count against a candidate.
  Result out;
  auto lin = [](const std::map<std::string, Array>& a, const std::map<std::string, Array>& b,
                std::map<std::string, Array>& to) {
    for (const auto& [name, x] : a) {
      auto it = b.find(name);
      if (it == b.end() || it->second.shape != x.shape) continue;
      Array e = x;
      for (int64_t k = 0; k < e.size(); ++k) e[k] = 2.0 * x[k] - it->second[k];
      to.emplace(name, std::move(e));
    }
  };
  lin(near.outputs, far.outputs, out.outputs);
  lin(near.grads, far.grads, out.grads);
  for (const auto& [name, x] : near.metrics)
    if (auto it = far.metrics.find(name); it != far.metrics.end()) out.metrics.emplace(name, 2.0 * x - it->second);
  return out;
}

}  // namespace

Result ReferenceDecisions::PushedBy(const std::vector<double>& sides) const {
  auto pushed = [&](double times) {
    Case p = *golden;
    Array& x = p.inputs.at(input);
    for (int64_t k = 0; k < x.size(); ++k) x[k] += times * sides[static_cast<size_t>(k)] * push[k];
    return run(p);
  };
  return Extrapolate(pushed(1.0), pushed(2.0));
}

ReferenceDecisions ReferenceView(const FunctionSpec& spec, const Case& golden, const RunFn* reference) {
  ReferenceDecisions ref;
  if (!spec.oracle) return ref;
  ref.run = reference ? *reference : spec.oracle;
  try {
    ref.result = ref.run(golden);
    ref.have = true;
  } catch (const VerlError&) {
    return ref;  // the oracle disagreeing with verl is the oracle's own check's business
  } catch (const Unsupported&) {
    return ref;
  }
  const Array& b = ref.result.boundary;
  if (!AnyNonZero(b)) return ref;
  ref.boundary = b;
  for (const InputSpec& in : spec.inputs) {
    const Array* m = in.is_mask ? golden.OptionalInput(in.name) : nullptr;
    if (m && m->shape == b.shape) {
      ref.mask = m;
      break;
    }
  }
  for (const OutputSpec& o : spec.outputs) {
    auto it = golden.outputs.find(o.name);
    if (!o.discrete || it == golden.outputs.end() || it->second.shape != b.shape || !ref.mask) continue;
    Array f = it->second;
    for (int64_t k = 0; k < f.size(); ++k)
      if (b[k] != 0.0 && (*ref.mask)[k] != 0.0 && (f[k] == 0.0 || f[k] == 1.0)) f[k] = 1.0 - f[k];
    ref.flipped_discrete.emplace(o.name, std::move(f));
  }
  const char* input = DecisionInput(spec, golden, b);
  const double eps = golden.dtype == DType::kFloat32 ? kEps32 : kEps64;
  Array push(b.shape, DType::kFloat64);
  for (int64_t k = 0; k < b.size(); ++k) {
    if (b[k] == 0.0) continue;
    double scale = 1.0;
    for (const auto& [name, x] : golden.inputs) {
      const InputSpec* is = spec.FindInput(name);
      if (x.shape == b.shape && !(is && is->is_mask)) scale += std::fabs(x[k]);
    }
    push[k] = kPushUlps * eps * scale;
  }
  ref.spec = &spec;
  ref.golden = &golden;
  ref.input = input;
  ref.push = push;
  for (double side : {1.0, -1.0}) {
    if (!input) break;
    try {
      ref.branches.push_back(ref.PushedBy(std::vector<double>(static_cast<size_t>(b.size()), side)));
      ref.branch_sides.push_back(side);
    } catch (const std::exception&) {
      // A push that makes verl's semantics raise (a bound crossed into an error) gives
      // no branch value on that side; the other side and the reference still count.
    }
  }
  auto scaled = [](const std::map<std::string, Array>& a, const std::map<std::string, Array>* b, double fa, double fb) {
    Result t;
    for (const auto& [name, v] : a) {
      const Array* o = nullptr;
      if (b) {
        auto it = b->find(name);
        if (it == b->end() || it->second.shape != v.shape) continue;
        o = &it->second;
      }
      Array m = v;
      for (int64_t k = 0; k < m.size(); ++k) m[k] = fa * v[k] + (o ? fb * (*o)[k] : 0.0);
      t.grads.emplace(name, std::move(m));
    }
    return t;
  };
  if (!ref.branches.empty()) ref.ties.push_back(scaled(ref.result.grads, nullptr, 0.5, 0.0));
  for (const Result& br : ref.branches) {
    ref.ties.push_back(scaled(br.grads, &ref.result.grads, 0.5, 0.5));
    ref.ties.push_back(scaled(br.grads, nullptr, 0.5, 0.0));
  }
  // A boundary position is observable when some element-wise field takes values on the
  // two decisions that a correct implementation could not confuse.
  std::set<int64_t> seen;
  for (const bool grads : {false, true}) {
    for (const auto& [name, v] : grads ? ref.result.grads : ref.result.outputs) {
      if (v.shape != b.shape) continue;
      const Tolerance t =
          CaseTolerance(spec, std::string(grads ? "grads/" : "outputs/") + name, golden, &ref.result.magnitude);
      for (const Result& br : ref.branches) {
        const auto& m = grads ? br.grads : br.outputs;
        auto it = m.find(name);
        if (it == m.end()) continue;
        for (int64_t k = 0; k < b.size(); ++k) {
          const double w = v[k], o = it->second[k];
          if (b[k] != 0.0 && std::isfinite(w) && std::isfinite(o) && !Close(o, w, t, k)) seen.insert(k);
        }
      }
    }
  }
  for (int64_t k = 0; k < b.size(); ++k)
    if (b[k] != 0.0 && !seen.count(k)) ref.unobservable.insert(k);
  return ref;
}

}  // namespace verlconf
