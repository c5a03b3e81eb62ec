#include "tools/golden_set.h"

#include <set>

#include "oracle/core/errors.h"
#include "oracle/core/registry.h"

namespace verlconf::tools {
namespace {

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool IsRegistryFamily(const std::string& f) {
  for (const auto& s : Registry())
    if (s.family == f) return true;
  return false;
}

}  // namespace

GoldenSet GoldenSet::Load(const std::string& dir) {
  GoldenSet g;
  g.dir = dir;
  g.files = fixtures::ReadFixtureDir(dir);
  for (const auto& f : g.files)
    if (f.family + ".h5" != Basename(f.path))
      throw BadInput(f.path + ":/: attribute 'family' is '" + f.family + "' but the file is named " + Basename(f.path) +
                     " (expected " + f.family + ".h5)");
  g.Index();
  return g;
}

GoldenSet GoldenSet::LoadFile(const std::string& path) {
  GoldenSet g;
  g.dir = path;
  g.files.push_back(fixtures::ReadFixtureFile(path));
  g.Index();
  return g;
}

void GoldenSet::Index() {
  for (const auto& f : files)
    for (const Case& c : f.cases)
      if (!index.emplace(Key{c.family, c.function, c.name}, &c).second)
        throw BadInput(c.Where() + ": duplicate case name (also in another file of " + dir + ")");
}

std::string GoldenSet::VerlVersion() const {
  std::string v;
  for (const auto& f : files) {
    const std::string fv = f.Provenance("verl_version");
    if (fv.empty()) throw BadInput(f.path + ":/: missing attribute 'verl_version'");
    if (!v.empty() && v != fv)
      throw BadInput(f.path + ":/: verl_version " + fv + " differs from " + v + " in the same set");
    v = fv;
  }
  return v;
}

std::map<std::string, std::string> GoldenSet::Provenance() const {
  std::map<std::string, std::set<std::string>> values;
  for (const auto& f : files)
    for (const auto& [k, v] : f.provenance)
      if (!v.empty()) values[k].insert(v);
  std::map<std::string, std::string> out;
  for (const auto& [k, vs] : values) {
    std::string joined;
    for (const auto& v : vs) joined += (joined.empty() ? "" : ", ") + v;
    out[k] = joined;
  }
  return out;
}

std::string GoldenSet::CommonProvenance(const std::string& key) const {
  const auto all = Provenance();
  auto it = all.find(key);
  return it == all.end() ? "" : it->second;
}

std::map<std::string, std::vector<std::string>> GoldenSet::VerlRegistry() const {
  std::map<std::string, std::set<std::string>> merged;
  for (const auto& f : files)
    for (const auto& [k, names] : f.verl_registry) merged[k].insert(names.begin(), names.end());
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [k, s] : merged) out[k] = std::vector<std::string>(s.begin(), s.end());
  return out;
}

std::vector<const Case*> GoldenSet::Cases() const {
  std::vector<const Case*> out;
  for (const auto& [key, c] : index) out.push_back(c);
  return out;
}

void RequireCandidateRoots(const GoldenSet& candidate, const GoldenSet& golden) {
  std::set<std::string> families;
  std::string all;
  for (const auto& f : golden.files)
    if (families.insert(f.family).second) all += (all.empty() ? "" : ", ") + f.family;
  const std::string verl = golden.VerlVersion();
  for (const auto& f : candidate.files) {
    const std::string where = f.path + ":/";
    const std::string name = Basename(f.path);
    const std::string stem =
        name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0 ? name.substr(0, name.size() - 3) : name;
    if ((IsRegistryFamily(stem) || families.count(stem)) && stem != f.family)
      throw BadInput(where + ": attribute 'family' is '" + f.family + "' but the file is named " + name +
                     " (the golden file of family '" + stem + "')");
    if (!families.count(f.family))
      throw BadInput(where + ": attribute 'family' is '" + f.family + "', not a family of the goldens in " +
                     golden.dir + " (" + all + ")");
    const std::string v = f.Provenance("verl_version");
    if (v.empty()) throw BadInput(where + ": missing attribute 'verl_version' (the goldens' is " + verl + ")");
    if (v != verl)
      throw BadInput(where + ": verl_version is '" + v + "' but the goldens' (" + golden.dir + ") is '" + verl +
                     "': the candidate was produced from other goldens");
  }
}

std::string FamilyOfVerlRegistry(const std::string& list) {
  if (list == "adv_estimators") return "advantage";
  if (list == "policy_losses") return "policy_loss";
  if (list == "loss_agg_modes") return "aggregation";
  if (list.rfind("kl_penalty", 0) == 0) return "kl";
  if (list == "rs_options") return "rollout_correction";
  if (list == "kl_ctrl_types") return "reward_kl";
  return "";
}

}  // namespace verlconf::tools
