// `conform list` and `conform spec`: what the registry holds, what the goldens cover,
// and which names verl defines that have no oracle entry.
#include <cstdio>
#include <map>
#include <ostream>
#include <set>

#include "oracle/core/json.h"
#include "oracle/core/registry.h"
#include "oracle/core/validate.h"
#include "tools/commands.h"
#include "tools/golden_set.h"

namespace verlconf::tools {

int RunSpec(std::ostream& out) {
  out << RegistryJson() << "\n";
  return kExitOk;
}

int RunList(const std::string& against, bool json, std::ostream& out) {
  const GoldenSet golden = GoldenSet::Load(against);
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> counts;  // (family, function) -> (f64, f32)
  // Per coverage label of the entries that have them (FunctionSpec::variants); cases
  // where verl raised count for the function but not for a label.
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::pair<int, int>>> by_variant;
  for (const auto& [key, c] : golden.index) {
    auto& n = counts[{c->family, c->function}];
    (c->dtype == DType::kFloat64 ? n.first : n.second)++;
    const FunctionSpec* s = FindSpec(c->function, c->family);
    // The coverage labels read the case: only after its structure is known to be sound.
    if (s) ValidateStructure(*s, *c);
    if (!s || !s->variants || c->expect_error) continue;
    for (const auto& v : s->variants(*c)) {
      auto& m = by_variant[{c->family, c->function}][v];
      (c->dtype == DType::kFloat64 ? m.first : m.second)++;
    }
  }
  struct Item {
    std::string name, family;
    bool oracle, cuda;
    int f64, f32;
    std::string notes;
  };
  std::vector<Item> items;
  std::set<std::pair<std::string, std::string>> listed;
  for (const auto& s : Registry()) {
    const auto n = counts[{s.family, s.name}];
    items.push_back({s.name, s.family, s.Implementation(Impl::kOracle) != nullptr,
                     s.Implementation(Impl::kCuda) != nullptr, n.first, n.second, s.notes});
    listed.insert({s.family, s.name});
  }
  for (const auto& [key, n] : counts)  // goldens of functions the registry lacks
    if (!listed.count(key)) items.push_back({key.second, key.first, false, false, n.first, n.second, ""});

  // verl spells some names in more than one registry ("gpg" is an estimator and a
  // loss), so the gaps are kept per registry list as well as flat.
  std::set<std::string> missing;
  std::map<std::string, std::set<std::string>> missing_by_list;
  for (const auto& [kind, names] : golden.VerlRegistry())
    for (const auto& name : names) {
      const FunctionSpec* s = FindSpec(name, FamilyOfVerlRegistry(kind));
      if (!s || !s->oracle) missing.insert(name), missing_by_list[kind].insert(name);
    }

  if (json) {
    JsonWriter j;
    j.BeginObject();
    j.Key("verl_version").String(golden.VerlVersion());
    j.Key("functions").BeginArray();
    for (const auto& it : items) {
      j.BeginObject();
      j.Key("name").String(it.name);
      j.Key("family").String(it.family);
      j.Key("oracle").Bool(it.oracle);
      j.Key("cuda").Bool(it.cuda);
      j.Key("golden_cases").BeginObject();
      j.Key("float64").Int(it.f64);
      j.Key("float32").Int(it.f32);
      j.EndObject();
      const auto v = by_variant.find({it.family, it.name});
      if (v != by_variant.end()) {
        j.Key("golden_cases_by_variant").BeginObject();
        for (const auto& [label, n] : v->second) {
          j.Key(label).BeginObject();
          j.Key("float64").Int(n.first);
          j.Key("float32").Int(n.second);
          j.EndObject();
        }
        j.EndObject();
      }
      j.EndObject();
    }
    j.EndArray();
    j.Key("verl_names_without_oracle").BeginArray();
    for (const auto& m : missing) j.String(m);
    j.EndArray();
    j.Key("verl_names_without_oracle_by_list").BeginObject();
    for (const auto& [kind, names] : golden.VerlRegistry()) {
      j.Key(kind).BeginArray();
      if (missing_by_list.count(kind))
        for (const auto& m : missing_by_list.at(kind)) j.String(m);
      j.EndArray();
    }
    j.EndObject();
    j.EndObject();
    out << j.str() << "\n";
    return kExitOk;
  }
  out << "verl " << golden.VerlVersion() << " goldens in " << against << "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-46s %-18s %-6s %-5s %7s %7s\n", "function", "family", "oracle", "cuda", "f64",
                "f32");
  out << line;
  for (const auto& it : items) {
    std::snprintf(line, sizeof line, "%-46s %-18s %-6s %-5s %7d %7d\n", it.name.c_str(), it.family.c_str(),
                  it.oracle ? "yes" : "no", it.cuda ? "yes" : "no", it.f64, it.f32);
    out << line;
    const auto v = by_variant.find({it.family, it.name});
    if (v == by_variant.end()) continue;
    for (const auto& [label, n] : v->second) {
      std::snprintf(line, sizeof line, "  %-44s %-18s %-6s %-5s %7d %7d\n", ("[" + label + "]").c_str(), "", "", "",
                    n.first, n.second);
      out << line;
    }
  }
  // Each function without a CUDA entry with its spec's notes, which say why.
  std::vector<const Item*> no_cuda;
  for (const auto& it : items)
    if (it.oracle && !it.cuda) no_cuda.push_back(&it);
  out << "\nfunctions without a CUDA entry (" << no_cuda.size() << "):";
  for (const Item* it : no_cuda) out << "\n  " << it->family << "/" << it->name << ": " << it->notes;
  out << "\n";
  out << "\nverl names without an oracle entry (" << missing.size() << "):";
  for (const auto& m : missing) out << " " << m;
  out << "\n";
  for (const auto& [kind, names] : missing_by_list) {
    out << "  " << kind << ":";
    for (const auto& m : names) out << " " << m;
    out << "\n";
  }
  return kExitOk;
}

}  // namespace verlconf::tools
