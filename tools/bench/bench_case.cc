#include "tools/bench/bench_case.h"

#include <algorithm>
#include <stdexcept>

#include "oracle/registry.h"

namespace verlconf::bench {
namespace {

std::string Key(const FunctionSpec& s) { return s.family + "/" + s.name; }

bool Selected(const std::vector<std::string>& only, const std::string& label, const FunctionSpec& s) {
  if (only.empty()) return true;
  return std::find(only.begin(), only.end(), label) != only.end() ||
         std::find(only.begin(), only.end(), Key(s)) != only.end() ||
         std::find(only.begin(), only.end(), s.family) != only.end();
}

const FunctionSpec* CudaSpec(const std::string& family, const std::string& name, Impl impl) {
  for (const FunctionSpec& s : Registry())
    if (s.family == family && s.name == name && s.Implementation(impl)) return &s;
  return nullptr;
}

// Above this many tokens the generator draws a band of rows and the band is repeated
// down the batch (group codes shifted per copy, so groups stay groups of the draw's
// size): a 4096 x 8192 draw costs the host tens of seconds per input set, and the
// values do not change the work a CUDA entry does.
constexpr int64_t kDrawTokens = int64_t{1} << 22;

Case GenerateTiled(const FunctionSpec& spec, const GenParams& p) {
  int64_t band = p.batch;
  while (band > 1 && band * p.tokens > kDrawTokens) band = (band + 1) / 2;
  if (band == p.batch) return spec.generate(p);
  GenParams small = p;
  small.batch = band;
  Case c = spec.generate(small);
  std::map<std::string, Role> roles;
  for (const InputSpec& in : spec.inputs) roles[in.name] = in.role;
  for (auto& [name, a] : c.inputs) {
    const auto role = roles.find(name);
    if (a.shape.empty() || a.shape[0] != band || role == roles.end() || role->second == Role::kScalar) continue;
    const size_t per_band = a.data.size();
    double code_span = 0;
    if (role->second == Role::kGroupIndex)
      for (const double v : a.data) code_span = std::max(code_span, v + 1);
    std::vector<double> tiled;
    tiled.reserve(per_band * static_cast<size_t>((p.batch + band - 1) / band));
    for (int64_t r0 = 0, copy = 0; r0 < p.batch; r0 += band, ++copy) {
      const int64_t take = std::min(band, p.batch - r0);
      const size_t n = per_band / static_cast<size_t>(band) * static_cast<size_t>(take);
      for (size_t k = 0; k < n; ++k) tiled.push_back(a.data[k] + static_cast<double>(copy) * code_span);
    }
    a.data = std::move(tiled);
    a.shape[0] = p.batch;
  }
  return c;
}

}  // namespace

std::vector<BenchItem> BenchItems(const std::vector<std::string>& only, Impl impl) {
  // The rows the perf anchor times run first, each configured one right after its entry's
  // place: a --budget-s that runs out then cuts rows that have no verl figure beside them,
  // not the anchor's (the configured rows, last before, were the ones a budget cut).
  std::vector<BenchItem> anchored, others;
  std::map<std::string, const AnchorRow*> plain_anchor;  // anchor rows without a configuration
  for (const AnchorRow& a : AnchorRows())
    if (a.config.empty()) plain_anchor[a.family + "/" + a.name] = &a;
  for (const FunctionSpec& s : Registry()) {
    if (!s.Implementation(impl)) continue;
    if (Selected(only, Key(s), s)) {
      const auto it = plain_anchor.find(Key(s));
      (it == plain_anchor.end() ? others : anchored)
          .push_back({Key(s), &s, {}, it == plain_anchor.end() ? nullptr : it->second});
    }
    for (const AnchorRow& a : AnchorRows())
      if (!a.config.empty() && CudaSpec(a.family, a.name, impl) == &s && Selected(only, a.label, s))
        anchored.push_back({a.label, &s, a.config, &a});
  }
  anchored.insert(anchored.end(), others.begin(), others.end());
  return anchored;
}

int64_t TokensFor(const FunctionSpec& spec, int64_t tokens) {
  for (const InputSpec& in : spec.inputs)
    if (in.role == Role::kVocabLogits) return std::max<int64_t>(1, tokens / 16);
  return tokens;
}

Case CaseMaker::Make(const BenchItem& item, int64_t rows, int64_t tokens, int64_t group, bool verl_defaults) {
  const FunctionSpec& spec = *item.spec;
  GenParams p;
  p.seed = 20261201;
  p.batch = rows;
  p.tokens = TokensFor(spec, tokens);
  p.dtype = DType::kFloat32;
  std::string signature = spec.family;
  for (const InputSpec& in : spec.inputs) signature += "|" + in.name;
  signature += "|" + std::to_string(rows) + "x" + std::to_string(p.tokens);
  // Reuse the inputs of the first entry with this signature (see the class comment);
  // the configuration still comes from this entry's generator, drawn at a few tokens.
  Case c;
  auto it = inputs_by_signature_.find(signature);
  if (it == inputs_by_signature_.end()) {
    c = GenerateTiled(spec, p);
    inputs_by_signature_[signature] = c.inputs;
  } else {
    GenParams small = p;
    small.tokens = std::min<int64_t>(p.tokens, 64);
    c = spec.generate(small);
    c.inputs = it->second;
  }
  // uids in groups of `group` consecutive rows, as the anchor and verl's rollout.n give
  // them (the generator's occasional singletons would make grpo_passk raise).
  if (auto idx = c.inputs.find("index"); idx != c.inputs.end() && idx->second.data.size() == static_cast<size_t>(rows))
    for (int64_t i = 0; i < rows; ++i) idx->second[i] = static_cast<double>(i / group);
  for (const ConfigKey& k : spec.config) {
    if (!verl_defaults) break;
    if (std::holds_alternative<std::monostate>(k.verl_default)) continue;  // keep the generator's value
    if (k.absent_is_none)
      c.config.Set(k.name, k.verl_default);
    else
      c.config.Erase(k.name);
  }
  for (const auto& [key, value] : item.config) c.config.Set(key, value);
  c.name = "bench";
  ResolveConfig(spec, c.config);
  return c;
}

double MinimalTrafficBytes(const Case& c, const Result& r) {
  double elements = 0;
  for (const auto& [name, a] : c.inputs) elements += static_cast<double>(a.data.size());
  for (const auto& [name, a] : r.outputs) elements += static_cast<double>(a.data.size());
  for (const auto& [name, a] : r.grads) elements += static_cast<double>(a.data.size());
  return 4.0 * elements;
}

}  // namespace verlconf::bench
