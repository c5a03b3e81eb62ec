#include "oracle/explore/shrink.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace verlconf::explore {
namespace {

// Keeps the rows (dimension 0) or the token columns (dimension 1) `keep` of an array.
Array Select(const Array& a, int dim, const std::vector<int64_t>& keep) {
  std::vector<int64_t> shape = a.shape;
  shape[static_cast<size_t>(dim)] = static_cast<int64_t>(keep.size());
  Array out(shape, a.dtype);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; ++k) outer *= a.shape[static_cast<size_t>(k)];
  for (size_t k = static_cast<size_t>(dim) + 1; k < a.shape.size(); ++k) inner *= a.shape[k];
  const int64_t n = a.shape[static_cast<size_t>(dim)];
  int64_t o = 0;
  for (int64_t i = 0; i < outer; ++i)
    for (const int64_t j : keep)
      for (int64_t k = 0; k < inner; ++k) out[o++] = a[(i * n + j) * inner + k];
  return out;
}

class Shrinker {
 public:
  Shrinker(const FunctionSpec& spec, const std::function<bool(const Case&)>& fails, const ShrinkBudget& b)
      : spec_(spec), fails_(fails), budget_(b), start_(std::chrono::steady_clock::now()) {}

  Shrunk Run(Case c) {
    for (bool progress = true; progress && !Out();) {
      progress = false;
      progress |= Dimension(c, 0);
      progress |= Dimension(c, 1);
      progress |= DropProjections(c);
      progress |= DropOptionalInputs(c);
      progress |= Values(c);
      progress |= Groups(c);
      progress |= Defaults(c);
      progress |= RoundConfig(c);
    }
    return {c, trials_, Out()};
  }

 private:
  bool Out() const {
    return trials_ >= budget_.max_trials || std::chrono::steady_clock::now() - start_ > budget_.max_time;
  }
  bool Try(Case& c, const Case& candidate) {
    if (Out()) return false;
    ++trials_;
    if (!fails_(candidate)) return false;
    c = candidate;
    return true;
  }

  // The case with only `keep` along dimension `dim` (0 rows, 1 tokens) of every input and
  // projection laid out along it.
  Case Keep(const Case& c, int dim, int64_t n, const std::vector<int64_t>& keep) const {
    Case out = c;
    for (const auto& in : spec_.inputs) {
      auto it = out.inputs.find(in.name);
      if (it == out.inputs.end()) continue;
      Array& a = it->second;
      const bool along = dim == 0 ? Batched(in.role) : (in.role == Role::kTokens || in.role == Role::kVocabLogits);
      if (along && a.rank() > dim && a.shape[static_cast<size_t>(dim)] == n) a = Select(a, dim, keep);
    }
    for (auto& [name, p] : out.projections)
      if (p.rank() > dim && p.shape[static_cast<size_t>(dim)] == n && (dim == 0 || p.rank() == 2))
        p = Select(p, dim, keep);
    return out;
  }

  int64_t Extent(const Case& c, int dim) const { return dim == 0 ? BatchRows(spec_, c) : TokenColumns(spec_, c); }

  // Removes chunks of rows (or tokens), halves first, down to single ones; first tries each
  // one alone, since a failure need not survive every intermediate size (a local mean over
  // 3 tokens and over 1 token differs from a global count of 2; over 2 it does not).
  bool Dimension(Case& c, int dim) {
    bool any = false;
    for (int64_t j = 0; j < Extent(c, dim) && Extent(c, dim) > 1 && !Out(); ++j)
      if (Try(c, Keep(c, dim, Extent(c, dim), {j}))) {
        any = true;
        break;
      }
    for (int64_t chunk = Extent(c, dim) / 2; chunk >= 1 && !Out(); chunk /= 2) {
      for (int64_t start = 0; start < Extent(c, dim) && !Out();) {
        const int64_t n = Extent(c, dim);
        if (n <= 1) break;
        std::vector<int64_t> keep;
        for (int64_t j = 0; j < n; ++j)
          if (j < start || j >= start + chunk) keep.push_back(j);
        if (!keep.empty() && Try(c, Keep(c, dim, n, keep))) {
          any = true;
          continue;  // the same start now names the next chunk
        }
        start += chunk;
      }
    }
    return any;
  }

  // An optional input left out is verl's None: the simplest value there is.
  bool DropOptionalInputs(Case& c) {
    bool any = false;
    for (const auto& in : spec_.inputs) {
      if (!in.optional || !c.inputs.count(in.name)) continue;
      Case t = c;
      t.inputs.erase(in.name);
      if (Try(c, t)) any = true;
    }
    return any;
  }

  bool DropProjections(Case& c) {
    if (c.projections.empty()) return false;
    Case t = c;
    t.projections.clear();
    t.vjps.clear();
    return Try(c, t);
  }

  // Simpler stand-ins for a value, simplest first; only those simpler than it.
  static std::vector<double> Simpler(double x, bool mask) {
    if (mask) return x == 1.0 ? std::vector<double>{} : std::vector<double>{1.0};
    std::vector<double> out;
    const auto add = [&](double v) {
      if (v == x || !std::isfinite(v)) return;
      for (double o : out)
        if (o == v) return;
      out.push_back(v);
    };
    add(0.0);
    if (x == 0.0) return {};
    add(x > 0 ? 1.0 : -1.0);
    add(x > 0 ? -1.0 : 1.0);
    add(std::round(x));
    // Halving toward zero: repeated passes find the smallest magnitude that still fails
    // (a log-ratio of -44 becomes -22 where -11 would no longer cross the clamp at -20).
    if (x == std::round(x) && std::fabs(x) > 1) add(std::trunc(x / 2));
    // ... and one step toward zero, where halving overshoots (-5 to -2 loses a clamp at 3).
    if (x == std::round(x) && std::fabs(x) > 1) add(x - std::copysign(1.0, x));
    add(std::round(x * 10) / 10);
    add(std::round(x * 100) / 100);
    return out;
  }
  static bool IsSimple(double x) { return x == std::round(x) && std::fabs(x) <= 8; }

  bool Values(Case& c) {
    bool any = false;
    for (const auto& in : spec_.inputs) {
      if (in.role == Role::kGroupIndex) continue;
      // By name on every step: an accepted step replaces the whole case, inputs included.
      if (!c.inputs.count(in.name) || c.inputs.at(in.name).dtype == DType::kInt64) continue;
      for (int64_t k = 0; k < c.inputs.at(in.name).size() && !Out(); ++k) {
        const double x = c.inputs.at(in.name)[k];
        if (!in.is_mask && IsSimple(x) && x == 0.0) continue;
        for (const double v : Simpler(x, in.is_mask)) {
          if (!in.is_mask && IsSimple(x) && !(v == 0.0 || std::fabs(v) < std::fabs(x))) continue;
          Case t = c;
          double stored = v;
          if (t.dtype == DType::kFloat32) stored = static_cast<double>(static_cast<float>(v));
          // float32(0.3) is the value already there: no step, and taking it for progress
          // would repeat it until the budget ends.
          if (stored == x) continue;
          t.inputs.at(in.name)[k] = stored;
          if (Try(c, t)) {
            any = true;
            break;
          }
        }
      }
    }
    return any;
  }

  // Group codes renumbered 0, 1, ... in order of first appearance, then members moved
  // into group 0 one at a time: fewer, smaller codes.
  bool Groups(Case& c) {
    bool any = false;
    for (const auto& in : spec_.inputs) {
      if (in.role != Role::kGroupIndex || !c.inputs.count(in.name)) continue;
      {
        Case t = c;
        std::map<double, double> code;
        for (double& v : t.inputs.at(in.name).data) v = code.emplace(v, static_cast<double>(code.size())).first->second;
        if (t.inputs.at(in.name).data != c.inputs.at(in.name).data && Try(c, t)) any = true;
      }
      for (int64_t k = 0; k < c.inputs.at(in.name).size() && !Out(); ++k) {
        if (c.inputs.at(in.name)[k] == 0.0) continue;
        Case t = c;
        t.inputs.at(in.name)[k] = 0.0;
        if (Try(c, t)) any = true;
      }
    }
    return any;
  }

  bool Defaults(Case& c) {
    bool any = false;
    for (const auto& k : spec_.config) {
      const auto& values = c.config.values();
      const auto it = values.find(k.name);
      const ConfigValue now = it == values.end() ? ConfigValue{} : it->second;
      if (now == k.verl_default || spec_.FixedConfig(k.name)) continue;
      Case t = c;
      t.config.Set(k.name, k.verl_default);
      ResolveConfig(spec_, t.config);
      if (Try(c, t)) any = true;
    }
    return any;
  }

  // (significant decimal digits, magnitude): what a rounder number has less of.
  static std::pair<int, double> Roundness(double x) {
    return x == 0.0 ? std::pair<int, double>{0, 0.0} : std::pair<int, double>{SignificantDigits(x), std::fabs(x)};
  }

  // A float config value the generator scaled (0.2 * 0.1 = 0.020000000000000004) as the
  // rounder number a user would write: 1, 2 or 3 significant digits, or a Simpler() one.
  bool RoundConfig(Case& c) {
    bool any = false;
    for (const auto& k : spec_.config) {
      if (spec_.FixedConfig(k.name) || Out()) continue;
      const auto it = c.config.values().find(k.name);
      const double* x = it == c.config.values().end() ? nullptr : std::get_if<double>(&it->second);
      // verl's default is the simplest value a key has: never moved from it (Defaults
      // would move it back, and the two steps would take turns until the budget ends).
      if (!x || !std::isfinite(*x) || *x == 0.0 || it->second == k.verl_default) continue;
      const double now = *x;
      std::vector<double> tries;
      for (int digits = 1; digits <= 3; ++digits) {
        const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(now)))));
        const double r = std::round(now * scale) / scale;
        if (r != now && std::isfinite(r) && std::find(tries.begin(), tries.end(), r) == tries.end()) tries.push_back(r);
      }
      for (double r : Simpler(now, false))
        if (std::find(tries.begin(), tries.end(), r) == tries.end()) tries.push_back(r);
      for (double r : tries) {
        if (!(Roundness(r) < Roundness(now))) continue;  // strictly rounder: the steps end
        Case t = c;
        t.config.Set(k.name, r);
        ResolveConfig(spec_, t.config);
        if (Try(c, t)) {
          any = true;
          break;
        }
      }
    }
    return any;
  }

  const FunctionSpec& spec_;
  const std::function<bool(const Case&)>& fails_;
  ShrinkBudget budget_;
  std::chrono::steady_clock::time_point start_;
  int64_t trials_ = 0;
};

}  // namespace

int SignificantDigits(double x) {
  char buf[40];
  for (int digits = 1; digits < 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (std::strtod(buf, nullptr) == x) return digits;
  }
  return 17;
}

bool Batched(Role r) {
  return r == Role::kTokens || r == Role::kSequences || r == Role::kGroupIndex || r == Role::kComponents ||
         r == Role::kVocabLogits;
}

int64_t BatchRows(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (auto it = c.inputs.find(in.name); it != c.inputs.end() && Batched(in.role) && it->second.rank() >= 1)
      return it->second.shape[0];
  return 0;
}

int64_t TokenColumns(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (auto it = c.inputs.find(in.name);
        it != c.inputs.end() && (in.role == Role::kTokens || in.role == Role::kVocabLogits) && it->second.rank() >= 2)
      return it->second.shape[1];
  return 0;
}

Shrunk Shrink(const FunctionSpec& spec, const Case& start, const std::function<bool(const Case&)>& fails,
              const ShrinkBudget& budget) {
  return Shrinker(spec, fails, budget).Run(start);
}

}  // namespace verlconf::explore
