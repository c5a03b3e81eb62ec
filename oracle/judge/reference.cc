#include "oracle/judge/reference.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <utility>

#include "oracle/core/errors.h"
#include "oracle/core/torch_rules.h"
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

DecisionCombinations::DecisionCombinations(const FunctionSpec& spec, const Case& golden, const ReferenceDecisions& ref,
                                           const Result* tensors)
    : spec_(spec),
      golden_(golden),
      ref_(ref),
      tensors_(tensors),
      eps_(golden.dtype == DType::kFloat32 ? kEps32 : kEps64) {}

std::vector<double> DecisionCombinations::Values(const std::string& group, const std::string& name) {
  if (!computed_) Compute();
  std::vector<double> v;
  for (const Result& r : results_) {
    if (group == "metrics") {
      if (auto it = r.metrics.find(name); it != r.metrics.end()) v.push_back(it->second);
    } else if (auto it = r.outputs.find(name); it != r.outputs.end() && it->second.size() == 1) {
      v.push_back(it->second[0]);
    }
  }
  return v;
}

std::vector<const Array*> DecisionCombinations::Arrays(const std::string& group, const std::string& name) {
  if (!computed_) Compute();
  std::vector<const Array*> v;
  for (const Result& r : results_) {
    const auto& m = group == "grads" ? r.grads : r.outputs;
    if (auto it = m.find(name); it != m.end()) v.push_back(&it->second);
  }
  return v;
}

const Array* DecisionCombinations::In(const Result& r, const Elementwise& e) {
  const auto& m = e.grads ? r.grads : r.outputs;
  auto it = m.find(e.field.substr(e.field.find('/') + 1));
  return it == m.end() || it->second.shape != e.want->shape ? nullptr : &it->second;
}

bool DecisionCombinations::Holds(int64_t k, const Result& values) const {
  for (const Elementwise& e : fields_) {
    const double x = (*e.got)[k];
    const Array* v = In(values, e);
    if (!v || Close(x, (*v)[k], e.tol, k)) continue;
    if (!e.grads) return false;
    bool decision = false, tie = false;
    for (const Result* r : decisions_)
      if (const Array* d = In(*r, e)) decision = decision || Close(x, (*d)[k], e.tol, k);
    for (const Result& t : ref_.ties)
      if (const Array* d = In(t, e)) tie = tie || Close(x, (*d)[k], e.tol, k);
    if (decision || !tie) return false;
  }
  return true;
}

void DecisionCombinations::Narrow(int64_t k, std::vector<double>& options, const std::vector<Result>& seen) const {
  if (options.size() < 2) return;
  std::vector<bool> drop(options.size(), false);
  for (const Elementwise& e : fields_) {
    const double x = (*e.got)[k];
    size_t best = options.size();
    double best_d = 0;
    for (size_t o = 0; o < options.size(); ++o)
      if (const Array* v = In(seen[o], e); v && std::isfinite((*v)[k])) {
        const double d = std::fabs(x - (*v)[k]);
        if (best == options.size() || d < best_d) best = o, best_d = d;
      }
    if (best == options.size()) continue;
    const double at_best = (*In(seen[best], e))[k];
    for (size_t o = 0; o < options.size(); ++o)
      if (const Array* v = In(seen[o], e); o != best && v) {
        const double gap = std::fabs((*v)[k] - at_best);
        if (gap > 4.0 * best_d && gap > oracle::kDecisionUlps * eps_ * std::max(std::fabs(at_best), std::fabs((*v)[k])))
          drop[o] = true;
      }
  }
  std::vector<double> kept;
  for (size_t o = 0; o < options.size(); ++o)
    if (!drop[o]) kept.push_back(options[o]);
  options = kept;
}

bool DecisionCombinations::MovesAScalar(const Result& a, const Result& b) const {
  for (const auto& [name, v] : a.metrics) {
    auto it = b.metrics.find(name);
    if (it == b.metrics.end()) continue;
    if (!Close(v, it->second, CaseTolerance(spec_, "metrics/" + name, golden_, &ref_.result.magnitude))) return true;
  }
  for (const auto& [name, v] : a.outputs) {
    auto it = b.outputs.find(name);
    if (v.size() != 1 || it == b.outputs.end() || it->second.size() != 1) continue;
    if (!Close(v[0], it->second[0], CaseTolerance(spec_, "outputs/" + name, golden_, &ref_.result.magnitude)))
      return true;
  }
  return false;
}

void DecisionCombinations::Compute() {
  computed_ = true;
  const Array& b = ref_.boundary;
  if (!ref_.input || ref_.branch_sides.empty() || !b.size()) return;
  for (const bool grads : {false, true}) {
    const auto& want = grads ? golden_.grads : golden_.outputs;
    const auto& have =
        grads ? (tensors_ ? tensors_->grads : golden_.grads) : (tensors_ ? tensors_->outputs : golden_.outputs);
    for (const auto& [name, w] : want) {
      auto g = have.find(name);
      if (w.shape != b.shape || g == have.end() || g->second.shape != b.shape) continue;
      const std::string field = std::string(grads ? "grads/" : "outputs/") + name;
      fields_.push_back({field, grads, &w, &g->second, CaseTolerance(spec_, field, golden_, &ref_.result.magnitude)});
    }
  }
  decisions_.push_back(&ref_.result);
  for (const Result& r : ref_.branches) decisions_.push_back(&r);
  std::vector<int64_t> positions;
  for (int64_t k = 0; k < b.size(); ++k)
    if (b[k] != 0.0 && !(ref_.mask && (*ref_.mask)[k] == 0.0) && ref_.push[k] > 0.0) positions.push_back(k);
  const std::vector<double> none(static_cast<size_t>(b.size()), 0.0);
  // Each position's options: the oracle's own decision, and each push that, on its own
  // or with every position pushed alike, gives the side's element-wise values there; a
  // push that is only an alternative to the oracle's decision counts where it moves
  // some scalar.
  std::vector<std::pair<std::vector<int64_t>, std::vector<double>>> units;
  for (int64_t k : positions) {
    const bool stays = Holds(k, ref_.result);
    std::vector<double> options;
    std::vector<Result> seen;  // each option's values at k
    if (stays) {
      options.push_back(0.0);
      seen.push_back(ref_.result);
    }
    for (size_t i = 0; i < ref_.branch_sides.size(); ++i) {
      const double side = ref_.branch_sides[i];
      if (positions.size() > kMaxProbes) {
        if (Holds(k, ref_.branches[i])) {
          options.push_back(side);
          seen.push_back(ref_.branches[i]);
        }
        continue;
      }
      std::vector<double> one = none;
      one[static_cast<size_t>(k)] = side;
      try {
        Result alone = ref_.PushedBy(one);
        const bool holds = Holds(k, alone) || Holds(k, ref_.branches[i]);
        if (holds && (!stays || MovesAScalar(alone, ref_.result))) {
          options.push_back(side);
          seen.push_back(std::move(alone));
        }
      } catch (const std::exception&) {
      }
    }
    Narrow(k, options, seen);
    if (options.size() > 1 || (options.size() == 1 && options[0] != 0.0)) units.push_back({{k}, options});
  }
  auto count = [&] {
    double n = 1;
    for (const auto& u : units) n *= static_cast<double>(u.second.size());
    return n;
  };
  if (count() > kMaxCombinations && b.shape.size() == 2) {
    // A position with one option stays its own unit: only the open ones move by row.
    std::map<int64_t, std::pair<std::vector<int64_t>, std::vector<double>>> rows;
    std::vector<std::pair<std::vector<int64_t>, std::vector<double>>> fixed;
    for (const auto& [ks, o] : units) {
      if (o.size() == 1) {
        fixed.push_back({ks, o});
        continue;
      }
      auto [it, fresh] = rows.try_emplace(ks[0] / b.cols(), std::vector<int64_t>{}, o);
      it->second.first.push_back(ks[0]);
      if (!fresh) {
        std::vector<double> common;
        for (double x : it->second.second)
          if (std::find(o.begin(), o.end(), x) != o.end()) common.push_back(x);
        it->second.second = common;
      }
    }
    units = std::move(fixed);
    for (auto& [row, u] : rows)
      if (!u.second.empty()) units.push_back(std::move(u));
  }
  if (count() > kMaxCombinations) return;
  std::vector<size_t> pick(units.size(), 0);
  for (bool more = true; more;) {
    std::vector<double> sides = none;
    bool all_reference = true;
    for (size_t u = 0; u < units.size(); ++u) {
      const double side = units[u].second[pick[u]];
      all_reference = all_reference && side == 0.0;
      for (int64_t k : units[u].first) sides[static_cast<size_t>(k)] = side;
    }
    try {
      Result r = all_reference ? ref_.result : ref_.PushedBy(sides);
      bool holds = true;
      for (int64_t k : positions) holds = holds && Holds(k, r);
      if (holds) results_.push_back(std::move(r));
    } catch (const std::exception&) {
      // A push into an error gives no value; the branches still judge.
    }
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == units[i].second.size()) pick[i++] = 0;
    more = i < pick.size();
  }
}

}  // namespace verlconf
