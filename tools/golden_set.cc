#include "tools/golden_set.h"

#include <set>

#include "oracle/errors.h"

namespace verlconf::tools {

GoldenSet GoldenSet::Load(const std::string& dir) {
  GoldenSet g;
  g.dir = dir;
  g.files = fixtures::ReadFixtureDir(dir);
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
    if (!v.empty() && v != fv) throw BadInput(f.path + ":/: verl_version " + fv + " differs from " + v + " in the same set");
    v = fv;
  }
  return v;
}

std::map<std::string, std::vector<std::string>> GoldenSet::VerlRegistry() const {
  std::map<std::string, std::set<std::string>> merged;
  for (const auto& f : files)
    for (const auto& [k, names] : f.verl_registry) merged[k].insert(names.begin(), names.end());
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [k, s] : merged) out[k] = std::vector<std::string>(s.begin(), s.end());
  return out;
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
