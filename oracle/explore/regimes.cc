#include "oracle/explore/regimes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>

#include "oracle/core/generate.h"
#include "oracle/explore/shrink.h"

namespace verlconf::explore {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

bool IsFloatInput(const InputSpec& in, const Array& a) {
  return a.dtype != DType::kInt64 && !in.is_mask && in.role != Role::kScalar;
}

// A number as Python's str() would write it in a config string (shortest round trip).
std::string PyText(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", SignificantDigits(x), x);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// A threshold string's numbers ("0.5_2.0" -> 0.5, 2.0; "3" -> 3); none when malformed.
std::vector<double> NumbersIn(const std::string& t) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= t.size()) {
    const size_t end = t.find('_', start);
    const std::string part = t.substr(start, end == std::string::npos ? std::string::npos : end - start);
    char* stop = nullptr;
    const double x = std::strtod(part.c_str(), &stop);
    if (part.empty() || *stop != '\0') return {};
    out.push_back(x);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

struct Shape {
  int64_t b, t;
  const char* label;
};

Shape PickShape(oracle::InputGen& g, bool vocab) {
  const double r = g.UniformScalar(0.0, 1.0);
  if (r < 0.05) return {1, 1, "1x1"};
  if (r < 0.12) return {1, g.Int(2, 32), "one row"};
  if (r < 0.20) return {g.Int(2, 8), 1, "one token"};
  if (r < 0.80) return {g.Int(2, 8), g.Int(2, 24), "small"};
  if (r < 0.95) return {g.Int(8, 32), g.Int(16, 64), "medium"};
  return {g.Int(1, 3), vocab ? g.Int(100, 256) : g.Int(1000, 4000), "long rows"};
}

const InputSpec* GroupInput(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (in.role == Role::kGroupIndex && c.inputs.count(in.name)) return &in;
  return nullptr;
}

void MutateMasks(const FunctionSpec& spec, oracle::InputGen& g, Case& c, std::vector<std::string>& tags) {
  const double r = g.UniformScalar(0.0, 1.0);
  const char* what = r < 0.07   ? "all-masked"
                     : r < 0.15 ? "unmasked"
                     : r < 0.25 ? "right-padded"
                     : r < 0.3  ? "one-token rows"
                                : nullptr;
  if (!what) return;
  for (const auto& in : spec.inputs) {
    auto it = c.inputs.find(in.name);
    if (!in.is_mask || in.role != Role::kTokens || it == c.inputs.end() || it->second.rank() != 2) continue;
    Array& m = it->second;
    for (int64_t i = 0; i < m.rows(); ++i) {
      int64_t last = -1;
      for (int64_t j = 0; j < m.cols(); ++j)
        if (m.at(i, j) != 0) last = j;
      for (int64_t j = 0; j < m.cols(); ++j) {
        double v = m.at(i, j);
        if (r < 0.07)
          v = 0;
        else if (r < 0.15)
          v = 1;
        else if (r < 0.25)
          v = j <= last ? 1 : 0;
        else
          v = j == 0 ? 1 : 0;
        m.at(i, j) = v;
      }
    }
  }
  tags.emplace_back(what);
}

void MutateGroups(const FunctionSpec& spec, oracle::InputGen& g, Case& c, std::vector<std::string>& tags) {
  const InputSpec* gi = GroupInput(spec, c);
  if (!gi) return;
  Array& idx = c.inputs.at(gi->name);
  const double r = g.UniformScalar(0.0, 1.0);
  if (r < 0.1) {
    for (int64_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>(i);
    tags.emplace_back("singleton groups");
  } else if (r < 0.2) {
    for (double& v : idx.data) v = 0;
    tags.emplace_back("one group");
  } else if (r < 0.3) {
    // Every member of a group gets the first member's rows: constant groups (a zero std).
    std::map<double, int64_t> first;
    for (int64_t i = 0; i < idx.size(); ++i) first.emplace(idx[i], i);
    for (const auto& in : spec.inputs) {
      auto it = c.inputs.find(in.name);
      if (in.role == Role::kGroupIndex || !Batched(in.role) || it == c.inputs.end()) continue;
      Array& a = it->second;
      if (a.rank() == 0 || a.shape[0] != idx.size()) continue;
      const int64_t row = a.size() / a.shape[0];
      for (int64_t i = 0; i < idx.size(); ++i) {
        const int64_t src = first.at(idx[i]);
        std::copy_n(a.data.begin() + src * row, row, a.data.begin() + i * row);
      }
    }
    tags.emplace_back("constant groups");
    if (g.Coin(0.5)) {
      // ... then a genuinely small spread within each group (1e-4 down to 1e-8 of the
      // values), so that a group's std is tiny but not zero: GRPO's epsilon floor and the
      // cancellation in a mean-centred score, not only float32's rounding of equal scores.
      const double delta = std::pow(10.0, -static_cast<double>(g.Int(4, 8)));
      for (const auto& in : spec.inputs) {
        auto it = c.inputs.find(in.name);
        // Scores only (token rewards, reward components): a turn or session number is a
        // label, not a value with a spread.
        const bool score = in.role == Role::kTokens || in.role == Role::kComponents;
        if (!score || in.is_mask || it == c.inputs.end()) continue;
        Array& a = it->second;
        if (a.rank() == 0 || a.shape[0] != idx.size() || a.dtype == DType::kInt64) continue;
        const int64_t row = a.size() / a.shape[0];
        for (int64_t i = 0; i < idx.size(); ++i)
          for (int64_t j = 0; j < row; ++j) {
            double& v = a[i * row + j];
            v += delta * (1.0 + std::fabs(v)) * static_cast<double>(i % 3 - 1);
          }
      }
      tags.back() = "small-spread groups";
    }
  }
}

const InputSpec* Decides(const FunctionSpec& spec, const Case& c) {
  for (const auto& in : spec.inputs)
    if (in.decides && c.inputs.count(in.name)) return &in;
  return nullptr;
}

// The log-probability the deciding input is a ratio against (old_log_prob for log_prob,
// ref_logprob for logprob, ...): another token input named as a log-probability.
const Array* Partner(const FunctionSpec& spec, const Case& c, const InputSpec& d) {
  for (const auto& in : spec.inputs) {
    if (in.name == d.name || in.role != Role::kTokens) continue;
    if (in.name.find("log_prob") == std::string::npos && in.name.find("logprob") == std::string::npos) continue;
    if (auto it = c.inputs.find(in.name); it != c.inputs.end() && it->second.shape == c.inputs.at(d.name).shape)
      return &it->second;
  }
  return nullptr;
}

void MutateDecisions(const FunctionSpec& spec, oracle::InputGen& g, Case& c, std::vector<std::string>& tags) {
  const InputSpec* d = Decides(spec, c);
  if (!d) return;
  Array& x = c.inputs.at(d->name);
  const double r = g.UniformScalar(0.0, 1.0);
  if (r < 0.1) {
    for (double& v : x.data)
      if (g.Coin(0.25)) v += (g.Coin(0.5) ? 1 : -1) * g.UniformScalar(20.0, 60.0);
    tags.emplace_back("beyond clamps");
  } else if (r < 0.22) {
    // Ratios exactly on the config's thresholds: exp(log r) rounds back to r, or to its
    // neighbour; either way the decision sits at its boundary.
    std::vector<double> logs = {0.0};
    for (const auto& [k, v] : c.config.values()) {
      if (const double* f = std::get_if<double>(&v); f && *f > 0 && std::isfinite(*f)) {
        logs.push_back(std::log(*f));
        logs.push_back(std::log1p(*f));
        if (*f < 1) logs.push_back(std::log1p(-*f));
      }
      // A threshold given as a string ("0.5_2.0", "3"): its numbers as ratio bounds, and as
      // k1 bounds (k1 = -log-ratio against log of the bound).
      if (const std::string* t = std::get_if<std::string>(&v))
        for (const double x : NumbersIn(*t))
          if (x > 0 && std::isfinite(x)) {
            logs.push_back(std::log(x));
            logs.push_back(-std::log(x));
          }
    }
    const Array* p = Partner(spec, c, *d);
    for (int64_t k = 0; k < x.size(); ++k)
      if (g.Coin(0.3))
        x[k] = (p ? (*p)[k] : 0.0) + logs[static_cast<size_t>(g.Int(0, static_cast<int64_t>(logs.size()) - 1))];
    tags.emplace_back("on thresholds");
  }
}

void Quantise(const FunctionSpec& spec, oracle::InputGen& g, Case& c, std::vector<std::string>& tags) {
  if (!g.Coin(0.15)) return;
  for (const auto& in : spec.inputs) {
    auto it = c.inputs.find(in.name);
    if (it == c.inputs.end() || !IsFloatInput(in, it->second)) continue;
    for (double& v : it->second.data) v = std::round(v * 2) / 2;
  }
  tags.emplace_back("quantised");
}

// A value across the key's range as verl's users set it: the same sign and order of
// magnitude as the generator's (a clip ratio stays a clip ratio, a count stays a positive
// count), 1 (where verl refuses some keys: clip_ratio_c must exceed 1), None where verl's
// default is None, the ends of a key's range (a discount or a GAE lambda of exactly 0 or 1,
// where a framework's series or recursion may break), and the values the key says verl
// refuses. Other zero and negative
// counts are no setting verl is given, and verl neither refuses nor means anything by
// them; they are not drawn.
ConfigValue DrawNumber(oracle::InputGen& g, const ConfigKey& k, const ConfigValue& now) {
  if (std::holds_alternative<std::monostate>(k.verl_default) && g.Coin(0.3)) return std::monostate{};
  if (!k.refused.empty() && g.Coin(0.15))
    return k.refused[static_cast<size_t>(g.Int(0, static_cast<int64_t>(k.refused.size()) - 1))];
  if (k.range && g.Coin(0.2)) return g.Coin(0.5) ? k.range->first : k.range->second;
  double base = 0.0;
  bool have = true;
  if (const auto* d = std::get_if<double>(&now))
    base = *d;
  else if (const auto* i = std::get_if<int64_t>(&now))
    base = static_cast<double>(*i);
  else
    have = false;
  if (k.type == "int") {
    const double v = have && base >= 1 ? base : 1.0;
    const double picks[] = {v, 2 * v, std::max(1.0, std::floor(v / 2)), 1.0, 2.0, 4.0};
    return static_cast<int64_t>(picks[g.Int(0, 5)]);
  }
  if (!have || base == 0.0) {
    const double picks[] = {0.0, 0.1, 1.0, 0.5};
    return picks[g.Int(0, have ? 3 : 2) + (have ? 0 : 1)];
  }
  const double picks[] = {base, base * 0.5, base * 2, base * 1.5, std::copysign(1.0, base), base * 0.1};
  double v = picks[g.Int(0, 5)];
  if (k.range) v = std::clamp(v, k.range->first, k.range->second);
  return v;
}

// A value of a key typed "float|str" (verl's thresholds: a number, or IcePop's and k1's
// "lower_upper"): the current value's numbers moved as DrawNumber moves a number, written
// as a number, as a float-like string, as a "lower_upper" pair, and the strings verl
// refuses: the pair inverted, equal bounds, a malformed or an empty string, a negative.
ConfigValue DrawThreshold(oracle::InputGen& g, const ConfigValue& now) {
  std::vector<double> nums;
  if (const double* d = std::get_if<double>(&now)) nums.push_back(*d);
  if (const int64_t* i = std::get_if<int64_t>(&now)) nums.push_back(static_cast<double>(*i));
  if (const std::string* t = std::get_if<std::string>(&now)) nums = NumbersIn(*t);
  double hi = nums.empty() ? 2.0 : nums.back();
  if (!(hi > 0) || !std::isfinite(hi)) hi = 2.0;
  const double scales[] = {1.0, 0.5, 2.0, 1.5};
  hi *= scales[g.Int(0, 3)];
  double lo = nums.size() >= 2 && nums.front() > 0 && nums.front() < hi ? nums.front() : 1.0 / hi;
  if (!(lo < hi)) lo = hi / 2;
  switch (g.Int(0, 11)) {
    case 0:
    case 1: return hi;
    case 2: return PyText(hi);
    case 3:
    case 4:
    case 5: return PyText(lo) + "_" + PyText(hi);
    case 6: return PyText(hi) + "_" + PyText(lo);  // inverted: verl refuses it
    case 7: return PyText(hi) + "_" + PyText(hi);  // equal bounds
    case 8: return std::string("abc");             // not a number
    case 9: return PyText(lo) + "_";               // a missing bound
    case 10: return std::string("");               // empty
    default: return -hi;                           // not positive
  }
}

// A value of a string key without a closed set of names (an RS option chain, a loss
// type, an estimator): the current value, its comma-separated parts reordered or
// repeated, a name verl does not define, or an empty string.
ConfigValue DrawText(oracle::InputGen& g, const ConfigValue& now) {
  const std::string* t = std::get_if<std::string>(&now);
  if (!t) return now;
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = t->find(',', start);
    parts.push_back(t->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto join = [](const std::vector<std::string>& p) {
    std::string s;
    for (const auto& x : p) s += (s.empty() ? "" : ",") + x;
    return s;
  };
  switch (g.Int(0, 5)) {
    case 0:
    case 1: return *t;
    case 2: std::reverse(parts.begin(), parts.end()); return join(parts);
    case 3:
      parts.push_back(parts.front());  // an option given twice
      return join(parts);
    case 4: return parts.front() + "_unknown";
    default: return std::string("");
  }
}

void DrawConfig(const FunctionSpec& spec, oracle::InputGen& g, Case& c, std::vector<std::string>& tags) {
  if (!g.Coin(0.3)) return;
  for (const auto& k : spec.config) {
    if (spec.FixedConfig(k.name) || !g.Coin(0.5)) continue;
    const auto& stored = c.config.values();
    const auto found = stored.find(k.name);
    const ConfigValue now = found != stored.end() ? found->second : k.verl_default;
    if (!k.choices.empty()) {
      c.config.Set(k.name, k.choices[static_cast<size_t>(g.Int(0, static_cast<int64_t>(k.choices.size()) - 1))]);
    } else if (k.type == "bool") {
      c.config.Set(k.name, static_cast<int64_t>(g.Coin(0.5)));
    } else if (k.type == "float" || k.type == "int") {
      c.config.Set(k.name, DrawNumber(g, k, now));
    } else if (k.type == "float|str") {
      if (std::holds_alternative<std::monostate>(k.verl_default) && g.Coin(0.2))
        c.config.Set(k.name, std::monostate{});
      else
        c.config.Set(k.name, DrawThreshold(g, now));
    } else if (k.type == "str") {
      c.config.Set(k.name, DrawText(g, now));
    }
  }
  tags.emplace_back("config drawn");
}

// The user's pins, drawn last among the config: they hold whatever was drawn before.
void ApplyPins(const FunctionSpec& spec, oracle::InputGen& g, Case& c, const ConfigPins& pins,
               std::vector<std::string>& tags) {
  bool any = false;
  for (const auto& [key, values] : pins) {
    if (!spec.FindConfigKey(key) || values.empty()) continue;
    c.config.Set(key, values[static_cast<size_t>(g.Int(0, static_cast<int64_t>(values.size()) - 1))]);
    any = true;
  }
  if (any) tags.emplace_back("config pinned");
}

}  // namespace

uint64_t CaseSeed(uint64_t seed, const std::string& text, int64_t index, int attempt) {
  uint64_t h = 1469598103934665603ULL;
  for (const char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
  return Mix(Mix(Mix(seed) ^ h) ^ static_cast<uint64_t>(index)) ^
         static_cast<uint64_t>(attempt) * 0x632BE59BD9B4E019ULL;
}

bool KeepsPins(const FunctionSpec& spec, const Case& c, const ConfigPins& pins) {
  for (const auto& [key, values] : pins) {
    if (!spec.FindConfigKey(key)) continue;
    const auto it = c.config.values().find(key);
    const ConfigValue now = it == c.config.values().end() ? ConfigValue{} : it->second;
    if (std::find(values.begin(), values.end(), now) == values.end()) return false;
  }
  return true;
}

Explored GenerateExplored(const FunctionSpec& spec, uint64_t seed, int64_t index, std::optional<DType> dtype,
                          int attempt, const ConfigPins& pins) {
  const uint64_t s = CaseSeed(seed, spec.family + "/" + spec.name, index, attempt);
  oracle::InputGen g(s);
  bool vocab = false;
  for (const auto& in : spec.inputs) vocab |= in.role == Role::kVocabLogits;
  const Shape shape = PickShape(g, vocab);
  GenParams p;
  p.seed = s;
  p.batch = shape.b;
  p.tokens = shape.t;
  p.dtype = dtype ? *dtype : (g.Coin(0.5) ? DType::kFloat32 : DType::kFloat64);
  Explored e;
  e.c = spec.generate(p);
  e.c.family = spec.family;
  e.c.function = spec.name;
  e.c.name = "explore_" + std::to_string(index) + (attempt ? "_" + std::to_string(attempt) : "");
  e.c.seed = static_cast<int64_t>(s >> 1);
  std::vector<std::string> tags = {std::to_string(p.batch) + "x" + std::to_string(p.tokens), DTypeName(p.dtype)};
  MutateMasks(spec, g, e.c, tags);
  MutateGroups(spec, g, e.c, tags);
  DrawConfig(spec, g, e.c, tags);
  if (!pins.empty()) {
    // Its own stream: pinning a key leaves every other draw of the case as it was.
    oracle::InputGen pg(Mix(s ^ 0x70696E73ULL));
    ApplyPins(spec, pg, e.c, pins, tags);
  }
  Quantise(spec, g, e.c, tags);
  MutateDecisions(spec, g, e.c, tags);
  for (auto& [name, a] : e.c.inputs) oracle::RoundToDType(a);
  ResolveConfig(spec, e.c.config);
  for (const auto& t : tags) e.regime += (e.regime.empty() ? "" : " ") + t;
  e.c.why = "generated by conform explore: " + e.regime;
  return e;
}

void AddProjections(const FunctionSpec& spec, const Result& result, uint64_t seed, Case& c) {
  if (spec.vjp_inputs.empty()) return;
  std::mt19937_64 rng(seed ^ 0x5bd1e995ULL);
  std::normal_distribution<double> n(0.0, 1.0);
  for (const auto& o : spec.outputs) {
    if (o.kind != OutputKind::kTensor) continue;
    auto it = result.outputs.find(o.name);
    if (it == result.outputs.end()) continue;
    Array p(it->second.shape, c.dtype);
    for (double& v : p.data) v = n(rng);
    oracle::RoundToDType(p);
    c.projections[o.name] = p;
  }
}

}  // namespace verlconf::explore
