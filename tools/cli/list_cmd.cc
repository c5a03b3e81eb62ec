// `conform list` and `conform spec`: what the registry holds, what the goldens cover,
// and which names verl defines that have no oracle entry.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <variant>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/cli/commands.h"
#include "tools/cli/selection.h"
#include "tools/h5/golden_set.h"

namespace verlconf::tools {

namespace {

// The shape an input of each role has: B sequences x T tokens, K reward components,
// V vocabulary entries.
const char* RoleShape(Role r) {
  switch (r) {
    case Role::kTokens: return "B x T";
    case Role::kSequences:  // one group id per sequence
    case Role::kGroupIndex: return "B";
    case Role::kScalar: return "()";
    case Role::kComponents: return "B x K";
    case Role::kComponentWeights: return "K";
    case Role::kVocabLogits: return "B x T x V";
  }
  return "?";
}

std::string ValueText(const ConfigValue& v, const std::string& type = "") {
  if (std::holds_alternative<std::monostate>(v)) return "None";
  if (auto* i = std::get_if<int64_t>(&v); i && type == "bool") return *i ? "True" : "False";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    // The shortest form that reads back as the same double (0.2, not 0.20000000000000001).
    char b[32];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(b, sizeof b, "%.*g", digits, *d);
      if (std::strtod(b, nullptr) == *d) break;
    }
    return b;
  }
  return "\"" + std::get<std::string>(v) + "\"";
}

// `text` as lines of at most `width` columns, every line after the first indented by
// `indent` (the first continues wherever the caller's line is).
std::string Wrapped(const std::string& text, size_t first_column, size_t indent, size_t width = 100) {
  std::string out;
  size_t column = first_column, pos = 0;
  while (pos < text.size()) {
    size_t sp = text.find(' ', pos);
    if (sp == std::string::npos) sp = text.size();
    const std::string word = text.substr(pos, sp - pos);
    pos = sp + 1;
    if (word.empty()) continue;
    if (!out.empty()) {
      if (column + 1 + word.size() > width) {
        out += "\n" + std::string(indent, ' ');
        column = indent;
      } else {
        out += ' ';
        ++column;
      }
    }
    out += word;
    column += word.size();
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s.empty() ? "(none)" : s;
}

void Describe(const FunctionSpec& s, std::ostream& out) {
  out << s.family << "/" << s.name << "\n";
  out << "  mirrors verl's " << s.verl_symbol << "\n";
  std::vector<std::string> impls;
  for (Impl impl : kImpls)
    if (s.Implementation(impl)) impls.push_back(ImplName(impl));
  out << "  implementations: " << Joined(impls) << "\n";
  out << "  inputs (B sequences, T tokens):\n";
  for (const auto& in : s.inputs) {
    std::string role = RoleName(in.role);
    if (in.role == Role::kGroupIndex) role += ", int64 codes";
    if (in.is_mask) role += ", mask (0/1)";
    if (in.optional) role += ", optional (verl's None when absent)";
    char line[256];
    std::snprintf(line, sizeof line, "    %-28s %-10s ", in.name.c_str(), RoleShape(in.role));
    const std::string head = line;
    out << head << Wrapped(role + (in.doc.empty() ? "" : "; " + in.doc), head.size(), head.size()) << "\n";
  }
  out << "  config (verl's default):";
  if (s.config.empty()) out << " (none)";
  out << "\n";
  for (const auto& c : s.config) {
    char line[256];
    std::snprintf(line, sizeof line, "    %-28s %-5s = %-12s ", c.name.c_str(), c.type.c_str(),
                  ValueText(c.verl_default, c.type).c_str());
    const std::string head = line;
    std::string text = c.doc;
    if (!c.choices.empty()) text += " (one of: " + Joined(c.choices) + ")";
    if (c.absent_is_none) text += " (absent means None)";
    out << head << Wrapped(text, head.size(), head.size()) << "\n";
  }
  for (const auto& [k, v] : s.fixed_config)
    out << "    " << k << " is ignored by verl, which uses " << ValueText(v) << "\n";
  out << "  outputs:\n";
  for (const auto& o : s.outputs)
    out << "    " << o.name << ": " << (o.kind == OutputKind::kScalar ? "scalar" : "tensor")
        << (o.discrete ? ", discrete (exact in float64)" : "") << "\n";
  out << "  gradients (grads/): " << Joined(s.grads) << "\n";
  if (!s.VjpFields().empty()) {
    std::vector<std::string> zero;
    for (const auto& f : s.VjpFields())
      if (s.VjpIsZero(f.substr(0, f.find('/')))) zero.push_back(f);
    out << "  stop-gradient VJPs (vjps/): " << Joined(s.VjpFields()) << "\n";
    if (!zero.empty()) out << "    exactly zero (verl detaches): " << Joined(zero) << "\n";
  }
  out << "  metrics: " << Wrapped(Joined(s.metrics), 11, 11) << "\n";
  if (s.straight_through)
    out << "  straight-through: the value of " << s.straight_through->value_of << ", the gradient of "
        << s.straight_through->gradient_of << "\n";
  if (!s.dispatch_kwargs.empty()) out << "  verl's compute_advantage passes: " << Joined(s.dispatch_kwargs) << "\n";
  for (const auto& t : s.tolerances) {
    char line[128];
    std::snprintf(line, sizeof line, "  tolerance %s [%s]: rtol=%.3g atol=%.3g", t.field.c_str(), DTypeName(t.dtype),
                  t.rtol, t.atol);
    out << line << " (" << t.reason << ")\n";
  }
  if (!s.notes.empty()) out << "  notes: " << Wrapped(s.notes, 9, 9) << "\n";
}

// The entries `name` selects: a function (NAME, or FAMILY/NAME), else a family (the KL
// estimator "kl" is a function of the family "kl": the function wins); every entry when
// empty. BadInput when it selects nothing.
std::vector<const FunctionSpec*> Select(const std::string& name) {
  std::vector<const FunctionSpec*> functions, family;
  const bool qualified = name.find('/') != std::string::npos;
  for (const auto& s : Registry()) {
    if (name.empty() || (qualified ? s.family + "/" + s.name == name : s.name == name)) functions.push_back(&s);
    if (s.family == name) family.push_back(&s);
  }
  if (!functions.empty()) return functions;
  if (family.empty()) throw BadInput("spec: no registry function or family '" + name + "' (see: conform list)");
  return family;
}

}  // namespace

int RunSpec(const std::string& name, bool json, bool pretty, std::ostream& out) {
  if (json) {
    // The whole registry is the stable form the harness and fixtures/spec.json read.
    std::string text;
    if (name.empty()) {
      text = RegistryJson();
    } else {
      const auto picked = Select(name);
      text = RegistryJson(
          [&](const FunctionSpec& s) { return std::find(picked.begin(), picked.end(), &s) != picked.end(); });
    }
    out << (pretty ? PrettyJson(text) : text) << "\n";
    return kExitOk;
  }
  const auto picked = Select(name);
  if (name.empty())
    out << Registry().size()
        << " registry functions; `conform spec NAME` shows one, `conform spec --json` is the "
           "machine form.\n";
  bool first = true;
  for (const FunctionSpec* s : picked) {
    out << (first ? "" : "\n");
    first = false;
    Describe(*s, out);
  }
  return kExitOk;
}

namespace {

// `conform list FUNCTION` (or FAMILY/FUNCTION): the function's golden cases, each with its
// dtype and the reason the catalogue has it (the case's `why`).
int ListCases(const fixtures::GoldenSet& golden, const std::string& name, bool json, std::ostream& out) {
  const size_t slash = name.find('/');
  const std::string family = slash == std::string::npos ? "" : name.substr(0, slash);
  const std::string fn = slash == std::string::npos ? name : name.substr(slash + 1);
  std::vector<const Case*> cases;
  std::set<std::string> known;
  for (const auto& [key, c] : golden.index) {
    known.insert(c->function);
    known.insert(c->family + "/" + c->function);
    if (c->function == fn && (family.empty() || c->family == family)) cases.push_back(c);
  }
  if (cases.empty())
    throw BadInput("list: '" + name + "'" + DidYouMean(name, known) + ": no golden case of such a function in " +
                   golden.dir);
  if (json) {
    JsonWriter j;
    j.BeginArray();
    for (const Case* c : cases) {
      j.BeginObject();
      j.Key("family").String(c->family);
      j.Key("function").String(c->function);
      j.Key("case").String(c->name);
      j.Key("dtype").String(DTypeName(c->dtype));
      j.Key("expect_error").String(c->expect_error.value_or(""));
      j.Key("why").String(c->why);
      j.EndObject();
    }
    j.EndArray();
    out << j.str() << "\n";
    return kExitOk;
  }
  size_t w = 4;
  for (const Case* c : cases) w = std::max(w, c->family.size() + c->function.size() + c->name.size() + 2);
  for (const Case* c : cases) {
    const std::string id = c->family + "/" + c->function + "/" + c->name;
    out << id << std::string(w - id.size() + 2, ' ') << DTypeName(c->dtype) << "  "
        << (c->expect_error ? "raises " + *c->expect_error + "; " : "") << c->why << "\n";
  }
  out << cases.size() << " case(s)\n";
  return kExitOk;
}

}  // namespace

int RunList(const std::string& against, const std::string& function, bool json, std::ostream& out) {
  const fixtures::GoldenSet golden = fixtures::GoldenSet::Load(against);
  if (!function.empty()) return ListCases(golden, function, json, out);
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
                     // One source fills both CUDA slots (cuda_impl/core/system.h); a build
                     // without nvcc has the cuda-host one alone.
                     s.Implementation(Impl::kCuda) != nullptr || s.Implementation(Impl::kCudaHost) != nullptr, n.first,
                     n.second, s.notes});
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
      const FunctionSpec* s = FindSpec(name, fixtures::FamilyOfVerlRegistry(kind));
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
