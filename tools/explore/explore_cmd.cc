#include "tools/explore/explore_cmd.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/explore/elements.h"
#include "oracle/explore/shrink.h"
#include "oracle/judge/compare.h"
#include "oracle/judge/grade.h"
#include "oracle/judge/validate.h"
#include "oracle/registry.h"
#include "tools/cli/commands.h"
#include "tools/cli/junit.h"
#include "tools/cli/paths.h"
#include "tools/cli/report_file.h"
#include "tools/cli/selection.h"
#include "tools/cli/version.h"
#include "tools/explore/engine.h"
#include "tools/explore/merge.h"
#include "tools/explore/run_codec.h"
#include "tools/h5/h5io.h"

namespace verlconf::explore {
namespace {

namespace t = verlconf::tools;

std::string Shortest(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string PyNumber(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  return Shortest(v);
}

// A nested Python list literal of an array.
std::string PyList(const Array& a, size_t dim = 0, int64_t offset = 0) {
  if (a.rank() == 0) return PyNumber(a.data.at(0));
  int64_t stride = 1;
  for (size_t k = dim + 1; k < a.shape.size(); ++k) stride *= a.shape[k];
  std::string s = "[";
  for (int64_t i = 0; i < a.shape[dim]; ++i) {
    if (i) s += ", ";
    s += dim + 1 == a.shape.size() ? PyNumber(a[offset + i]) : PyList(a, dim + 1, offset + i * stride);
  }
  return s + "]";
}

// What a person reads of an input: the literal when it is small, else a summary (the
// fixture under --out and the JSON carry every value).
constexpr size_t kShownValues = 64;
std::string InputText(const Array& a) {
  if (a.data.size() <= kShownValues) return PyList(a);
  double lo = a.data[0], hi = a.data[0];
  size_t nonzero = 0;
  for (double x : a.data) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    nonzero += x != 0;
  }
  std::string shape;
  for (int64_t x : a.shape) shape += (shape.empty() ? "" : " x ") + std::to_string(x);
  return "<" + shape + ": " + std::to_string(nonzero) + " of " + std::to_string(a.data.size()) + " nonzero, from " +
         Shortest(lo) + " to " + Shortest(hi) + ">";
}

// The differing elements a person reads; the JSON carries them all.
constexpr size_t kShownElements = 12;

std::string NpDType(DType d) {
  return d == DType::kFloat32 ? "np.float32" : d == DType::kInt64 ? "np.int64" : "np.float64";
}

std::string ConfigText(const ConfigValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "None";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return PyNumber(*d);
  return JsonEscape(std::get<std::string>(v));
}

std::string Sanitise(const std::string& s) {
  std::string o;
  for (const char c : s) o += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return o;
}

// One file name per difference, distinct across the run: the function, then the minimal
// case's name (its field, kind and grade), numbered where two would still coincide, so
// that two differences of one field (a real bug and a rounding one) never share a file.
std::map<const Difference*, std::string> DiffNames(const ExploreRun& run) {
  std::map<const Difference*, std::string> names;
  std::map<std::string, int> used;
  for (const Difference& d : run.differences) {
    const std::string& m = d.minimal.name;
    const std::string what = m.rfind("min_", 0) == 0 ? m.substr(4) : (m.empty() ? d.failure.field : m);
    const std::string base = d.spec->family + "__" + Sanitise(d.spec->name) + "__" + Sanitise(what);
    const int n = ++used[base];
    names[&d] = n == 1 ? base : base + "__" + std::to_string(n);
  }
  return names;
}

// The config keys of the minimal case that are not verl's defaults.
std::vector<std::pair<std::string, ConfigValue>> NonDefaults(const FunctionSpec& spec, const Case& c) {
  std::vector<std::pair<std::string, ConfigValue>> out;
  for (const auto& k : spec.config) {
    const auto& values = c.config.values();
    const auto it = values.find(k.name);
    const ConfigValue v = it == values.end() ? ConfigValue{} : it->second;
    if (!(v == k.verl_default)) out.emplace_back(k.name, v);
  }
  return out;
}

std::string ShapeText(const FunctionSpec& spec, const Case& c) {
  const int64_t b = BatchRows(spec, c), tk = TokenColumns(spec, c);
  std::string s = std::to_string(b) + (b == 1 ? " row" : " rows");
  if (tk) s += " x " + std::to_string(tk) + (tk == 1 ? " token" : " tokens");
  return s + ", " + DTypeName(c.dtype);
}

const FieldReport* FailedField(const Difference& d) {
  for (const auto& f : d.report.fields)
    if (f.field == d.failure.field) return &f;
  return nullptr;
}

// The size of the difference on its minimal case (grade.h); an error-semantics one is
// material.
Grade DifferenceGrade(const Difference& d) {
  const FieldReport* f = FailedField(d);
  const Grade g = f ? FieldGrade(*f) : Grade::kNone;
  return g == Grade::kNone ? Grade::kMaterial : g;
}

std::string Replay(const ExploreCommand& o, const Difference& d, const std::string& out_dir) {
  std::string s = o.display + " check --against " + out_dir + "/cases ";
  s += o.impl.empty() || o.reference == "verl" ? "--candidate " + out_dir + "/candidate" : "--impl " + o.impl;
  return s + " --only " + d.spec->family + "/" + d.spec->name + "/" + d.minimal.name;
}

// ---------------------------------------------------------------- Python repro

std::string Repro(const Difference& d, const std::string& adapter_path, const std::string& package_dir,
                  bool adapter_is_reference) {
  const FunctionSpec& s = *d.spec;
  const Case& c = d.minimal;
  std::ostringstream p;
  p << "#!/usr/bin/env python3\n"
    << "\"\"\"A minimal reproduction found by `conform explore` (verlconf " << t::Revision() << ").\n\n"
    << s.family << "/" << s.name << ", " << d.failure.field << " (" << d.failure.kind << "): " << ShapeText(s, c)
    << ".\nRun it with the interpreter that has the framework; it calls the adapter's function on\n"
    << "these literal arrays and prints its result beside the "
    << (adapter_is_reference ? "oracle's (the candidate)" : "reference's") << ".\n\"\"\"\n\n"
    << "import importlib.util\nimport os\nimport sys\n\nimport numpy as np\n\n"
    << "ADAPTER = " << JsonEscape(adapter_path) << "\n"
    << "sys.path[:0] = [os.path.dirname(ADAPTER), " << JsonEscape(package_dir) << "]\n"
    << "_spec = importlib.util.spec_from_file_location(\"adapter_under_test\", ADAPTER)\n"
    << "adapter = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(adapter)\n"
    << "fn = adapter.FUNCTIONS.get(" << JsonEscape(s.family + "/" + s.name) << ") or adapter.FUNCTIONS["
    << JsonEscape(s.name) << "]\n\n";
  p << "inputs = {\n";
  for (const auto& [name, a] : c.inputs)
    p << "    " << JsonEscape(name) << ": np.array(" << PyList(a) << ", dtype=" << NpDType(a.dtype) << "),\n";
  p << "}\ncfg = {" << (s.config.empty() ? "" : "\n");
  for (const auto& k : s.config) {
    const auto& values = c.config.values();
    const auto it = values.find(k.name);
    p << "    " << JsonEscape(k.name) << ": " << ConfigText(it == values.end() ? ConfigValue{} : it->second) << ",\n";
  }
  p << "}\n";
  const bool vjp = d.failure.field.rfind("vjps/", 0) == 0;
  if (vjp) {
    p << "projections = {\n";
    for (const auto& [name, a] : c.projections)
      p << "    " << JsonEscape(name) << ": np.array(" << PyList(a) << ", dtype=" << NpDType(a.dtype) << "),\n";
    p << "}\n";
  }
  const Case& other = adapter_is_reference ? d.got : d.golden;
  const std::string label = adapter_is_reference ? "oracle" : "reference";
  p << "\ntry:\n    result = fn(inputs, cfg, " << JsonEscape(DTypeName(c.dtype))
    << (vjp ? ", projections=projections" : "")
    << ")\nexcept Exception as ex:  # noqa: BLE001 - an error is a result here\n"
    << "    result = None\n    print(\"adapter raised   \", type(ex).__name__ + \": \" + str(ex))\n";
  if (d.failure.field == "error") {
    p << "print(\"" << label << (label == "oracle" ? "   " : "") << "        \", "
      << JsonEscape(other.expect_error ? *other.expect_error : "returns a result") << ")\n"
      << "if result is not None:\n    print(\"adapter returned \", result)\n";
    return p.str();
  }
  const size_t slash = d.failure.field.find('/');
  const std::string group = d.failure.field.substr(0, slash), name = d.failure.field.substr(slash + 1);
  Array storage;
  const Array* want = FieldArray(other, d.failure.field, storage);
  p << "np.set_printoptions(precision=17, floatmode=\"unique\")\n"
    << "if result is not None:\n"
    << "    got = (result.get(" << JsonEscape(group) << ") or {}).get(" << JsonEscape(name) << ")\n"
    << "    print(\"adapter   " << d.failure.field << ":\", None if got is None else np.asarray(got))\n";
  if (want)
    p << "print(\"" << label << (label == "oracle" ? "   " : "") << " " << d.failure.field << ":\", np.array("
      << PyList(*want) << ", dtype=" << NpDType(want->dtype) << "))\n";
  else
    p << "print(\"" << label << " " << d.failure.field << ": not produced\")\n";
  return p.str();
}

// ---------------------------------------------------------------- files

void MakeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw BadInput("cannot create " + dir + ": " + std::strerror(errno));
}

void WriteText(const std::string& path, const std::string& text) { t::WriteFileAtomically(path, text); }

void WriteCases(const ExploreCommand& o, const ExploreRun& run, const std::string& dir, bool golden_side) {
  std::map<std::string, fixtures::FixtureFile> files;
  for (const Difference& d : run.differences) {
    if (d.dp_ranks) continue;  // a sharding's reference is no golden of the unsplit function
    fixtures::FixtureFile& f = files[d.spec->family];
    f.family = d.spec->family;
    f.provenance["verl_version"] = kOracleVerlVersion;
    f.provenance["producer"] = golden_side ? "conform explore (reference: " + o.reference + ")" : run.candidate_name;
    f.provenance["reference"] =
        o.reference == "verl" ? "verl, through its adapter" : "the verlconf oracle (not captured from verl)";
    f.provenance["explore_seed"] = std::to_string(o.seed);
    f.provenance["conform_revision"] = t::Revision();
    Case c = golden_side ? d.golden : d.got;
    c.name = d.minimal.name;
    c.why = "minimal case of " + d.failure.field + " (" + d.failure.kind + ") from conform explore --seed " +
            std::to_string(o.seed) + ", case " + std::to_string(d.first_index) + " (" + d.first_regime + ")";
    if (!golden_side) c.projections = d.minimal.projections;
    f.cases.push_back(c);
  }
  MakeDir(dir);
  for (auto& [family, f] : files) {
    f.path = dir + "/" + family + ".h5";
    fixtures::WriteFixtureFile(f.path, f);
  }
}

// ---------------------------------------------------------------- reports

// A row's name: the function, and for sharded cases the ranks (dp-invariance).
std::string Label(const FunctionTally& t) {
  return t.spec->family + "/" + t.spec->name + (t.dp_ranks ? " [dp k=" + std::to_string(t.dp_ranks) + "]" : "");
}

std::string DiffLabel(const Difference& d) {
  return d.spec->family + "/" + d.spec->name + (d.dp_ranks ? " [dp k=" + std::to_string(d.dp_ranks) + "]" : "");
}

std::string Row(const FunctionTally& t) {
  char line[256];
  std::snprintf(line, sizeof line, "%-44s %6lld %7lld %7lld %6lld %6lld %6lld %6lld %8lld\n", Label(t).c_str(),
                static_cast<long long>(t.cases), static_cast<long long>(t.passed), static_cast<long long>(t.failed),
                static_cast<long long>(t.baselined), static_cast<long long>(t.mistrusted),
                static_cast<long long>(t.unsupported), static_cast<long long>(t.skipped),
                static_cast<long long>(t.refused));
  return line;
}

// The run's outcome counts over every row.
FunctionTally Sum(const ExploreRun& run) {
  FunctionTally s;
  for (const auto& t : run.functions) s.AddCounts(t);
  return s;
}

// The cases a difference's row explored: a dp row's are --dp-cases.
int64_t CasesOfRow(const ExploreCommand& o, const Difference& d) {
  return d.dp_ranks ? (o.dp_cases < 0 ? std::max<int64_t>(1, o.cases / 10) : o.dp_cases) : o.cases;
}

// Differences that were shrunk (a sharded row's are not).
int64_t Shrunk(const ExploreRun& run) {
  int64_t n = 0;
  for (const Difference& d : run.differences) n += !d.dp_ranks;
  return n;
}

// What every report (text, JSON, Markdown, JUnit) says of one difference, worked out once
// per run: the reports differ in layout only.
struct DifferenceView {
  const Difference* d = nullptr;
  std::string label;     // the row: "family/name" or "family/name [dp k=K]"
  std::string grade;     // GradeName of the difference on its minimal case
  std::string headline;  // "field (kind, grade)" and " where cause"
  int64_t of_cases = 0;  // the cases its row explored
  std::string shape;     // of the minimal case
  std::vector<std::pair<std::string, ConfigValue>> non_defaults;
  std::vector<ElementDiff> elements;  // the differing elements, all of them
  std::string got_error, want_error;  // an error-semantics difference: each side's outcome
  std::string note;                   // the failed field's note where no element shows it
  std::string replay, repro;          // with --out ("" for a sharded row's)
};

std::vector<DifferenceView> Views(const ExploreCommand& o, const ExploreRun& run, const std::string& out_dir) {
  const auto names = DiffNames(run);
  std::vector<DifferenceView> views;
  for (const Difference& d : run.differences) {
    DifferenceView v;
    v.d = &d;
    v.label = DiffLabel(d);
    v.grade = GradeName(DifferenceGrade(d));
    v.headline = d.failure.field + " (" + d.failure.kind + ", " + v.grade + ")" +
                 (d.failure.cause.empty() ? "" : " where " + d.failure.cause);
    v.of_cases = CasesOfRow(o, d);
    v.shape = ShapeText(*d.spec, d.minimal);
    v.non_defaults = NonDefaults(*d.spec, d.minimal);
    const FieldReport* f = FailedField(d);
    if (d.failure.field == "error") {
      v.got_error = d.got.expect_error ? *d.got.expect_error : "returned a result";
      v.want_error = d.golden.expect_error ? *d.golden.expect_error : "returned a result";
    } else if (f) {
      v.elements = DifferingElements(*d.spec, d.golden, d.got, d.failure.field, f->tol);
    }
    v.note = f ? f->note : std::string("the field differs");
    if (!out_dir.empty() && !d.dp_ranks) {
      v.replay = Replay(o, d, out_dir);
      if (!o.adapter.empty() || o.reference == "verl") v.repro = out_dir + "/repro/" + names.at(&d) + ".py";
    }
    views.push_back(std::move(v));
  }
  return views;
}

std::string Header(const ExploreCommand& o, const ExploreRun& run) {
  std::string s = "conform explore: candidate " + run.candidate_name +
                  (o.adapter.empty() ? " (implementation)" : " (adapter " + o.adapter + ")") + ", reference " +
                  (o.reference == "verl" ? "verl through its adapter"
                                         : std::string("the oracle (verl ") + kOracleVerlVersion + " semantics)") +
                  ", seed " + std::to_string(o.seed) + ", " + std::to_string(o.cases) + " cases per function";
  return s;
}

std::string PartList(const std::vector<int64_t>& parts) {
  std::string s;
  for (int64_t p : parts) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

// Which part of the run this is: one shard, or shards merged (and which are missing); "".
std::string PartsLine(const ExploreCommand& o) {
  if (o.shard_count > 0)
    return "shard " + std::to_string(o.shard_index) + "/" + std::to_string(o.shard_count) +
           ": one part of the run, its items " + std::to_string(o.shard_index) + ", " +
           std::to_string(o.shard_index + o.shard_count) + ", ... in the unsharded order (conform explore merge)";
  if (o.merged_count == 0) return "";
  std::string s =
      "merged from " + std::to_string(o.merged_parts.size()) + " of " + std::to_string(o.merged_count) + " shards";
  if (!o.missing_parts.empty())
    s += "; missing part(s) " + PartList(o.missing_parts) +
         ": an incomplete run, whose counts and differences are those of the parts given";
  return s;
}

void Text(const ExploreCommand& o, const ExploreRun& run, const std::vector<DifferenceView>& views, std::ostream& out) {
  out << Header(o, run) << "\n";
  if (const std::string parts = PartsLine(o); !parts.empty()) out << parts << "\n";
  out << "function                                      cases  passed  failed  basel  mistr  unsup   skip  refused\n";
  for (const auto& t : run.functions) out << Row(t);
  const FunctionTally s = Sum(run);
  char line[512];
  const double rate = run.explore_seconds > 0 ? static_cast<double>(s.cases) / run.explore_seconds : 0;
  std::snprintf(line, sizeof line,
                "explored %zu rows, %lld cases in %.1f s (%.0f cases/s): %lld passed, %lld failed, %lld "
                "baselined, %lld mistrusted, %lld unsupported, %lld skipped, %lld refused by the reference\n",
                run.functions.size(), static_cast<long long>(s.cases), run.explore_seconds, rate,
                static_cast<long long>(s.passed), static_cast<long long>(s.failed), static_cast<long long>(s.baselined),
                static_cast<long long>(s.mistrusted), static_cast<long long>(s.unsupported),
                static_cast<long long>(s.skipped), static_cast<long long>(s.refused));
  out << line;
  if (!run.not_provided.empty())
    out << "not explored: " << run.not_provided.size() << " selected functions the "
        << (o.reference == "verl" ? "candidate or verl's adapter" : "candidate") << " does not provide\n";
  for (const auto& b : run.stale)
    out << "stale baseline entry " << b.file << ":" << b.line << ": " << b.function << " " << b.field
        << " covered no difference\n";
  for (const auto& t : run.functions)
    if (t.refused)
      out << "  " << Label(t) << ": " << t.refused << " case(s) refused, e.g. " << t.refused_example << "\n";
  if (run.differences.empty()) {
    out << "no difference\n";
    return;
  }
  out << run.differences.size() << " difference(s), each shrunk to a minimal case (" << ShortNumber(run.shrink_seconds)
      << " s; " << ShrinksAtBudget(run) << " of " << Shrunk(run) << " shrinks stopped at the budget):\n";
  int n = 0;
  for (const DifferenceView& v : views) {
    const Difference& d = *v.d;
    out << "\ndifference " << ++n << ": " << v.label << " " << v.headline << " in " << d.cases << " of " << v.of_cases
        << " cases; first at case " << d.first_index << " (" << d.first_regime << ")\n";
    for (const Difference::Shared& m : d.may_share)
      out << "  may share a cause with: " << m.failure.field << " (" << m.failure.kind << ", " << m.failure.grade << ")"
          << (m.failure.cause.empty() ? "" : " where " + m.failure.cause) << " (" << m.why << ")\n";
    if (d.dp_ranks)
      out << "  the case, sharded (" << d.golden.why << "; not shrunk): " << v.shape << "\n";
    else
      out << "  minimal case (" << d.trials << " trials, " << ShortNumber(d.shrink_seconds) << " s"
          << (d.exhausted ? ", the budget ran out" : "") << "): " << v.shape << "\n";
    for (const auto& [name, a] : d.minimal.inputs) out << "    " << name << " = " << InputText(a) << "\n";
    if (v.non_defaults.empty()) {
      out << "    config: verl's defaults\n";
    } else {
      out << "    config (not verl's defaults):";
      for (const auto& [k, x] : v.non_defaults) out << " " << k << "=" << ConfigText(x);
      out << "\n";
    }
    if (d.failure.field == "error") {
      out << "  got:  " << v.got_error << "\n  want: " << v.want_error << "\n";
    } else if (v.elements.empty()) {
      out << "  " << v.note << "\n";
    } else {
      out << "  differing elements (" << v.elements.size() << "):\n";
      for (size_t i = 0; i < v.elements.size() && i < kShownElements; ++i) {
        const auto& e = v.elements[i];
        out << "    " << e.at << (e.status.empty() ? "" : " " + e.status) << ": got " << Shortest(e.got) << ", want "
            << Shortest(e.want) << " (diff " << ShortNumber(e.got - e.want) << ", err/tol " << ShortNumber(e.err_tol)
            << ")\n";
      }
      if (v.elements.size() > kShownElements) out << "    ... and " << v.elements.size() - kShownElements << " more\n";
    }
    if (!v.replay.empty()) out << "  replay: " << v.replay << "\n";
    if (!v.repro.empty()) out << "  python: " << v.repro << "\n";
  }
}

std::string Json(const ExploreCommand& o, const ExploreRun& run, const std::vector<DifferenceView>& views) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema").String("verlconf.explore").Key("schema_version").Int(1);
  w.Key("conform_revision").String(t::Revision());
  w.Key("candidate").String(run.candidate_name).Key("adapter").String(o.adapter).Key("impl").String(o.impl);
  w.Key("reference")
      .String(o.reference)
      .Key("seed")
      .Int(static_cast<int64_t>(o.seed))
      .Key("cases_per_function")
      .Int(o.cases);
  w.Key("dp_cases_per_function").Int(o.dp_cases).Key("only").String(o.only).Key("baseline").String(o.baseline);
  w.Key("config").BeginArray();
  for (const std::string& c : o.config) w.String(c);
  w.EndArray();
  if (o.shard_count > 0)
    w.Key("shard").BeginObject().Key("index").Int(o.shard_index).Key("count").Int(o.shard_count).EndObject();
  if (o.merged_count > 0) {
    w.Key("shards").BeginObject().Key("count").Int(o.merged_count).Key("merged").BeginArray();
    for (int64_t p : o.merged_parts) w.Int(p);
    w.EndArray().Key("missing").BeginArray();
    for (int64_t p : o.missing_parts) w.Int(p);
    w.EndArray().EndObject();
  }
  const FunctionTally s = Sum(run);
  w.Key("totals").BeginObject();
  w.Key("cases").Int(s.cases).Key("passed").Int(s.passed).Key("failed").Int(s.failed).Key("baselined").Int(s.baselined);
  w.Key("mistrusted").Int(s.mistrusted).Key("unsupported").Int(s.unsupported).Key("skipped").Int(s.skipped);
  w.Key("refused").Int(s.refused).Key("differences").Int(static_cast<int64_t>(run.differences.size()));
  w.Key("explore_seconds").Number(run.explore_seconds).Key("shrink_seconds").Number(run.shrink_seconds);
  w.Key("shrunk").Int(Shrunk(run)).Key("shrinks_at_budget").Int(ShrinksAtBudget(run));
  w.EndObject();
  w.Key("functions").BeginArray();
  for (const auto& t : run.functions) {
    w.BeginObject().Key("function").String(t.spec->family + "/" + t.spec->name).Key("dp_ranks").Int(t.dp_ranks);
    w.Key("cases")
        .Int(t.cases)
        .Key("passed")
        .Int(t.passed)
        .Key("failed")
        .Int(t.failed)
        .Key("baselined")
        .Int(t.baselined);
    w.Key("mistrusted").Int(t.mistrusted).Key("unsupported").Int(t.unsupported).Key("skipped").Int(t.skipped);
    w.Key("refused").Int(t.refused).EndObject();
  }
  w.EndArray();
  w.Key("stale_baseline").BeginArray();
  for (const auto& b : run.stale) w.String(b.file + ":" + std::to_string(b.line));
  w.EndArray();
  w.Key("not_provided").BeginArray();
  for (const auto* spec : run.not_provided) w.String(spec->family + "/" + spec->name);
  w.EndArray();
  w.Key("differences").BeginArray();
  for (const DifferenceView& v : views) {
    const Difference& d = *v.d;
    w.BeginObject().Key("function").String(d.spec->family + "/" + d.spec->name).Key("dp_ranks").Int(d.dp_ranks);
    if (d.dp_ranks) w.Key("sharding").String(d.golden.why);
    w.Key("field").String(d.failure.field).Key("kind").String(d.failure.kind);
    w.Key("cause").String(d.failure.cause);
    w.Key("may_share_a_cause_with").BeginArray();
    for (const Difference::Shared& m : d.may_share) {
      const Failure& f = m.failure;
      w.BeginObject().Key("field").String(f.field).Key("kind").String(f.kind).Key("grade").String(f.grade);
      w.Key("cause").String(f.cause).Key("why").String(m.why).EndObject();
    }
    w.EndArray();
    w.Key("grade").String(v.grade);
    w.Key("cases").Int(d.cases).Key("first_case").Int(d.first_index).Key("first_regime").String(d.first_regime);
    w.Key("minimal").BeginObject();
    w.Key("name").String(d.minimal.name).Key("dtype").String(DTypeName(d.minimal.dtype));
    w.Key("rows").Int(BatchRows(*d.spec, d.minimal)).Key("tokens").Int(TokenColumns(*d.spec, d.minimal));
    w.Key("inputs").BeginObject();
    for (const auto& [name, a] : d.minimal.inputs) {
      w.Key(name).BeginObject().Key("shape").BeginArray();
      for (int64_t x : a.shape) w.Int(x);
      w.EndArray().Key("values").BeginArray();
      for (double x : a.data) w.Number(x);
      w.EndArray().EndObject();
    }
    w.EndObject();
    w.Key("config_not_default").BeginObject();
    for (const auto& [k, x] : v.non_defaults) w.Key(k).String(ConfigText(x));
    w.EndObject();
    w.Key("trials")
        .Int(d.trials)
        .Key("shrink_seconds")
        .Number(d.shrink_seconds)
        .Key("budget_ran_out")
        .Bool(d.exhausted);
    w.EndObject();
    if (d.failure.field == "error") {
      w.Key("got_error").String(v.got_error).Key("want_error").String(v.want_error);
    }
    w.Key("elements").BeginArray();
    for (const auto& e : v.elements) {
      w.BeginObject().Key("index").String(e.at).Key("got").Number(e.got).Key("want").Number(e.want);
      w.Key("err_tol").Number(e.err_tol).Key("status").String(e.status).EndObject();
    }
    w.EndArray();
    if (!v.replay.empty()) w.Key("replay").String(v.replay);
    if (!v.repro.empty()) w.Key("repro").String(v.repro);

    w.EndObject();
  }
  w.EndArray();
  // What `explore merge` reads back: the run itself, every case and judgement bit for bit.
  if (o.shard_count > 0) w.Key("run").Raw(EncodeRun(run));
  w.EndObject();
  return w.str();
}

// One test suite per row: a test case for its generated cases and one per difference,
// failed with the judge's description of its minimal case and its replay line.
std::vector<CaseReport> JunitReports(const ExploreRun& run, const std::vector<DifferenceView>& views) {
  std::vector<CaseReport> reports;
  for (const FunctionTally& t : run.functions) {
    std::vector<const DifferenceView*> mine;
    for (const DifferenceView& v : views)
      if (v.d->spec == t.spec && v.d->dp_ranks == t.dp_ranks) mine.push_back(&v);
    CaseReport row;
    row.family = t.spec->family;
    row.function = Label(t);
    row.case_name = "generated cases";
    row.outcome = !mine.empty() ? Outcome::kFailed : t.passed > 0 ? Outcome::kPassed : Outcome::kSkipped;
    row.detail = std::to_string(t.cases) + " cases: " + std::to_string(t.passed) + " passed, " +
                 std::to_string(t.failed) + " failed, " + std::to_string(mine.size()) + " difference(s)" +
                 (row.outcome == Outcome::kSkipped ? "; nothing compared" : "");
    reports.push_back(row);
    for (const DifferenceView* v : mine) {
      const Difference& d = *v->d;
      CaseReport r = d.report;
      r.function = Label(t);
      r.case_name = d.minimal.name;
      r.outcome = Outcome::kFailed;
      r.detail = v->headline + " in " + std::to_string(d.cases) + " of " + std::to_string(v->of_cases) +
                 " cases; first at case " + std::to_string(d.first_index) + " (" + d.first_regime + ")";
      r.repro = v->replay;
      reports.push_back(std::move(r));
    }
  }
  return reports;
}

std::string Markdown(const ExploreCommand& o, const ExploreRun& run, const std::vector<DifferenceView>& views) {
  std::ostringstream m;
  m << "# conform explore\n\n" << Header(o, run) << " (conform " << t::Revision() << ").\n\n";
  if (const std::string parts = PartsLine(o); !parts.empty()) m << parts << ".\n\n";
  m << "| function | cases | passed | failed | baselined | mistrusted | unsupported | skipped | refused "
       "|\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& t : run.functions)
    m << "| " << Label(t) << " | " << t.cases << " | " << t.passed << " | " << t.failed << " | " << t.baselined << " | "
      << t.mistrusted << " | " << t.unsupported << " | " << t.skipped << " | " << t.refused << " |\n";
  if (run.differences.empty()) m << "\nNo difference.\n";
  int n = 0;
  for (const DifferenceView& v : views) {
    const Difference& d = *v.d;
    m << "\n## " << ++n << ". " << v.label << " `" << d.failure.field << "` (" << d.failure.kind << ", " << v.grade
      << ")" << (d.failure.cause.empty() ? "" : " where " + d.failure.cause) << "\n\n"
      << d.cases << " of " << v.of_cases << " cases; minimal case: " << v.shape << ".\n\n";
    for (const Difference::Shared& s : d.may_share)
      m << "May share a cause with `" << s.failure.field << "`"
        << (s.failure.cause.empty() ? "" : " where " + s.failure.cause) << ": " << s.why << ".\n\n";
    m << "| input | value |\n|---|---|\n";
    for (const auto& [name, a] : d.minimal.inputs) m << "| " << name << " | `" << InputText(a) << "` |\n";
    if (d.failure.field == "error") {
      m << "\ngot: `" << v.got_error << "`; want: `" << v.want_error << "`\n";
    } else if (!v.elements.empty()) {
      m << "\n| element | status | got | want |\n|---|---|---|---|\n";
      for (size_t i = 0; i < v.elements.size() && i < kShownElements; ++i) {
        const auto& e = v.elements[i];
        m << "| " << e.at << " | " << e.status << " | " << Shortest(e.got) << " | " << Shortest(e.want) << " |\n";
      }
      if (v.elements.size() > kShownElements) m << "\n... and " << v.elements.size() - kShownElements << " more.\n";
    }
    if (!v.replay.empty()) m << "\nReplay: `" << v.replay << "`\n";
  }
  return m.str();
}

std::string BundledAdapterPath(const ExploreCommand& o, const std::string& adapter) {
  if (adapter.size() > 3 && adapter.compare(adapter.size() - 3, 3, ".py") == 0) return t::ResolveUserPath(adapter);
  const std::string p = t::RunfilePath(o.argv0.c_str(), "tools/adapters/" + adapter + "_adapter.py");
  char buf[PATH_MAX];
  return !p.empty() && realpath(p.c_str(), buf) ? buf : p;
}

std::string AbsoluteRunfile(const ExploreCommand& o, const std::string& rel) {
  const std::string p = t::RunfilePath(o.argv0.c_str(), rel);
  char buf[PATH_MAX];
  return !p.empty() && realpath(p.c_str(), buf) ? buf : p;
}

// --out and --report, checked before the run: a directory that cannot be made fails now,
// not after it.
void CheckOutputs(const ExploreCommand& o) {
  if (!o.out.empty()) {
    struct stat st;
    const size_t slash = o.out.find_last_of('/');
    const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : o.out.substr(0, slash);
    if (stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw BadInput("--out " + o.out + ": the directory " + parent + " does not exist");
    for (const auto& [option, file] : {std::pair{"--report", o.report}, std::pair{"--junit", o.junit}})
      if (!file.empty() && file.rfind(o.out + "/", 0) == 0)
        throw BadInput(std::string(option) + " " + file + ": inside --out " + o.out + ", whose files this run writes");
    if (stat(o.out.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) throw BadInput("--out " + o.out + ": not a directory");
      if (!t::InputFiles(o.out).empty())
        throw BadInput("--out " + o.out + ": holds .h5 files (a golden or candidate set?); give a new directory");
      for (const char* sub : {"/cases", "/candidate", "/repro"})
        if (stat((o.out + sub).c_str(), &st) == 0)
          throw BadInput("--out " + o.out + ": holds the results of an earlier run (" + std::string(sub + 1) +
                         "/); give a new directory");
    }
  }
}

// The reports of a finished run (explore's own, or shards merged) and its exit code.
int Emit(const ExploreCommand& o, ExploreRun& run, std::ostream& out) {
  // Material differences first (grade.h), each grade in the order the functions were explored.
  std::stable_sort(run.differences.begin(), run.differences.end(),
                   [](const Difference& a, const Difference& b) { return DifferenceGrade(a) > DifferenceGrade(b); });

  if (!o.out.empty()) {
    MakeDir(o.out);
    if (!run.differences.empty()) {
      WriteCases(o, run, o.out + "/cases", true);
      WriteCases(o, run, o.out + "/candidate", false);
      if (!o.adapter.empty() || o.reference == "verl") {
        MakeDir(o.out + "/repro");
        const std::string adapter_path = BundledAdapterPath(o, o.adapter.empty() ? "verl" : o.adapter);
        // The package's own directory (through the runfiles' links): a repro outlives the run.
        std::string package = AbsoluteRunfile(o, "tools/python/verlconf/__init__.py");
        for (int up = 0; up < 2 && package.rfind('/') != std::string::npos; ++up) package.resize(package.rfind('/'));
        const auto names = DiffNames(run);
        for (const Difference& d : run.differences)
          if (!d.dp_ranks)
            WriteText(o.out + "/repro/" + names.at(&d) + ".py", Repro(d, adapter_path, package, o.adapter.empty()));
      }
    }
  }
  // Each difference's figures, once, for every report below.
  const std::vector<DifferenceView> views = Views(o, run, o.out);
  const std::string json = o.json || !o.out.empty() ? Json(o, run, views) : "";
  if (!o.out.empty()) WriteText(o.out + "/explore.json", json + "\n");
  if (!o.report.empty()) WriteText(o.report, Markdown(o, run, views));
  if (!o.junit.empty()) t::WriteJunit(o.junit, "conform.explore", JunitReports(run, views));
  if (o.json)
    out << json << "\n";
  else
    Text(o, run, views, out);

  const FunctionTally s = Sum(run);
  if (!run.differences.empty()) return t::kExitFailure;
  if (!o.missing_parts.empty()) {
    std::cerr << "conform: explore merge: part(s) " << PartList(o.missing_parts) << " of " << o.merged_count
              << " missing: no verdict on the whole run\n";
    return t::kExitNothingCompared;
  }
  if (s.passed == 0) {
    std::cerr << "conform: explore compared nothing: no generated case PASSED or FAILED\n";
    return t::kExitNothingCompared;
  }
  return t::kExitOk;
}

}  // namespace

// One --config value for `k`, as its declared type reads it; BadInput naming the option.
ConfigValue PinnedValue(const ConfigKey& k, const std::string& text, const std::string& option) {
  const std::string where = "--config " + option + ": ";
  if (text.empty()) throw BadInput(where + "an empty value");
  if (text == "None") {
    if (!k.absent_is_none)
      throw BadInput(where + "None is no value " + k.name + " can be pinned to (verl then uses its default)");
    return std::monostate{};
  }
  auto number = [&](bool integer) -> std::optional<double> {
    char* end = nullptr;
    const double x = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(x) || (integer && x != std::floor(x))) return std::nullopt;
    return x;
  };
  if (k.type == "int") {
    const auto x = number(true);
    if (!x || std::fabs(*x) > 1e15)
      throw BadInput(where + "'" + text + "' is not a whole number (" + k.name + " is an int)");
    return static_cast<int64_t>(*x);
  }
  if (k.type == "bool") {
    if (text == "1" || text == "true" || text == "True") return int64_t{1};
    if (text == "0" || text == "false" || text == "False") return int64_t{0};
    throw BadInput(where + "'" + text + "' is not a bool (true, false, 1 or 0)");
  }
  if (k.type == "float") {
    const auto x = number(false);
    if (!x) throw BadInput(where + "'" + text + "' is not a finite number (" + k.name + " is a float)");
    return *x;
  }
  if (k.type == "float|str") {
    if (const auto x = number(false)) return *x;
    return text;
  }
  if (!k.choices.empty() && std::find(k.choices.begin(), k.choices.end(), text) == k.choices.end()) {
    std::string names;
    for (const auto& c : k.choices) names += (names.empty() ? "" : ", ") + c;
    throw BadInput(where + "'" + text + "' is not one of " + k.name + "'s names (" + names + ")");
  }
  return text;
}

// --config KEY=V[,V...] for the selected functions: every key must be some selected
// function's, given once, with values its type reads.
ConfigPins ParsePins(const std::vector<std::string>& given, const std::vector<const FunctionSpec*>& specs) {
  ConfigPins pins;
  for (const std::string& g : given) {
    const size_t eq = g.find('=');
    if (eq == std::string::npos || eq == 0) throw BadInput("--config " + g + ": expected KEY=VALUE[,VALUE...]");
    const std::string key = g.substr(0, eq), text = g.substr(eq + 1);
    if (pins.count(key)) throw BadInput("--config " + key + ": given twice");
    const ConfigKey* k = nullptr;
    for (const FunctionSpec* s : specs)
      if ((k = s->FindConfigKey(key))) break;
    if (!k) throw BadInput("--config " + g + ": no selected function has a config key '" + key + "' (conform spec)");
    // A string key without a closed set of names holds verl's own comma syntax (an RS chain).
    const bool whole = k->type == "str" && k->choices.empty();
    std::vector<std::string> parts;
    if (whole) {
      parts.push_back(text);
    } else {
      for (size_t start = 0;;) {
        const size_t comma = text.find(',', start);
        parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    std::vector<ConfigValue>& values = pins[key];
    for (const std::string& p : parts) {
      const ConfigValue v = PinnedValue(*k, p, g);
      // Every selected function with the key must read the value the same way.
      for (const FunctionSpec* s : specs)
        if (const ConfigKey* other = s->FindConfigKey(key); other && other != k) (void)PinnedValue(*other, p, g);
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
  }
  return pins;
}

int RunExploreCommand(const ExploreCommand& o, std::ostream& out) {
  EngineOptions e;
  e.seed = o.seed;
  e.cases = o.cases;
  e.jobs = o.jobs;
  e.shrink_seconds = o.shrink_seconds;
  e.dp_cases = o.dp_cases;
  if (o.shard_count > 0) e.shard_index = o.shard_index, e.shard_count = o.shard_count;
  const std::string script = AbsoluteRunfile(o, "tools/harness/serve_adapter.py");
  if (script.empty() && (!o.adapter.empty() || o.reference == "verl"))
    throw BadInput(
        "cannot find the adapter server tools/harness/serve_adapter.py (run conform through `bazel run "
        "//tools:conform`, as bazel-bin/tools/conform, or from the repository root)");
  if (!o.adapter.empty()) {
    e.candidate = AdapterOptions{o.python, script,
                                 o.adapter.size() > 3 && o.adapter.rfind(".py") == o.adapter.size() - 3
                                     ? t::ResolveUserPath(o.adapter)
                                     : o.adapter,
                                 t::SelfExecutable("the adapter server"), static_cast<double>(o.call_timeout)};
  } else {
    const std::optional<Impl> impl = ParseImpl(o.impl);
    if (!impl) throw BadInput("--impl " + o.impl + ": not one of oracle, cuda, cuda-host");
    e.impl = *impl;
  }
  if (o.reference == "verl")
    e.reference = AdapterOptions{o.python, script, "verl", t::SelfExecutable("the adapter server"),
                                 static_cast<double>(o.call_timeout)};

  // The selection, over the registry's functions.
  t::Selection sel(o.only);
  std::vector<Case> probes;
  for (const auto& s : Registry()) {
    Case c;
    c.family = s.family;
    c.function = s.name;
    probes.push_back(c);
  }
  std::vector<const Case*> universe;
  for (const auto& c : probes) universe.push_back(&c);
  sel.RequireResolved(universe, "the registry");
  std::vector<const FunctionSpec*> specs;
  for (size_t k = 0; k < probes.size(); ++k)
    if (sel.Selects(probes[k])) specs.push_back(&Registry()[k]);
  e.pins = ParsePins(o.config, specs);

  CheckOutputs(o);

  std::optional<t::Baseline> baseline;
  if (!o.baseline.empty()) {
    baseline = t::LoadBaseline(o.baseline);
    e.baseline = &*baseline;
  }
  // Without a device the first allocation would end the run as an internal error; say why
  // instead, as check does, and count it as a run that compared nothing. The arguments
  // were read first: a bad one is still bad input.
  if (!e.candidate && e.impl == Impl::kCuda) {
    if (const std::string why = t::CudaUnavailableReason(); !why.empty()) {
      if (!o.json) out << "conform explore: candidate cuda (implementation)\nCUDA: " << why << "\n";
      std::cerr << "conform: explore compared nothing: --impl cuda cannot run here: " << why << "\n";
      return t::kExitNothingCompared;
    }
  }
  ExploreRun run = RunExplore(specs, e, [](const std::string& line) { std::cerr << "conform: " << line << "\n"; });

  return Emit(o, run, out);
}

int RunExploreMerge(const ExploreMergeCommand& m, std::ostream& out) {
  std::vector<ShardFile> shards;
  for (const std::string& path : m.shards) shards.push_back(ReadShard(path));
  MergedRun merged = MergeShards(std::move(shards));
  if (!merged.missing.empty() && !m.partial)
    throw BadInput("explore merge: part(s) " + PartList(merged.missing) + " of " + std::to_string(merged.count) +
                   " missing (give every shard, or --partial to report the parts given)");
  // The run as its shards were started, so that every report reads as the unsharded one.
  ExploreCommand o;
  o.adapter = merged.id.adapter;
  o.impl = merged.id.impl;
  o.reference = merged.id.reference;
  o.only = merged.id.only;
  o.baseline = merged.id.baseline;
  o.seed = merged.id.seed;
  o.cases = merged.id.cases;
  o.dp_cases = merged.id.dp_cases;
  o.config = merged.id.config;
  o.out = m.out;
  o.report = m.report;
  o.junit = m.junit;
  o.json = m.json;
  o.argv0 = m.argv0;
  o.display = m.display;
  o.merged_parts = merged.merged;
  o.missing_parts = merged.missing;
  o.merged_count = merged.count;
  CheckOutputs(o);
  return Emit(o, merged.run, out);
}

}  // namespace verlconf::explore
