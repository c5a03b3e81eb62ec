#include "tools/explore/run_codec.h"

#include <cmath>

#include "oracle/core/errors.h"
#include "oracle/core/json.h"
#include "oracle/registry.h"

namespace verlconf::explore {
namespace {

// ---------------------------------------------------------------- writing

// A double that reads back bit for bit (NaN and the infinities included).
std::string Exact(double v) {
  std::string s;
  AppendConfigValue(s, ConfigValue{v});
  return s;
}

// Values as float64 bytes whatever the dtype says: an array marked float32 may hold a
// value a float32 cannot (an oracle result before the candidate's rounding).
std::string ArrayText(const Array& a) {
  Array wide = a;
  wide.dtype = DType::kFloat64;
  std::string s = "{\"dtype\":\"" + std::string(DTypeName(a.dtype)) + "\",\"values\":";
  AppendArray(s, wide);
  return s + "}";
}

void Arrays(JsonWriter& w, const std::string& key, const std::map<std::string, Array>& m) {
  w.Key(key).BeginObject();
  for (const auto& [name, a] : m) w.Key(name).Raw(ArrayText(a));
  w.EndObject();
}

void Optional(JsonWriter& w, const std::string& key, const std::optional<std::string>& v) {
  w.Key(key);
  if (v)
    w.String(*v);
  else
    w.Null();
}

void WriteCase(JsonWriter& w, const Case& c) {
  w.BeginObject();
  w.Key("file").String(c.file).Key("family").String(c.family).Key("function").String(c.function);
  w.Key("name").String(c.name).Key("dtype").String(DTypeName(c.dtype)).Key("seed").String(std::to_string(c.seed));
  w.Key("why").String(c.why);
  w.Key("config").BeginObject();
  for (const auto& [k, v] : c.config.values()) {
    std::string s;
    AppendConfigValue(s, v);
    w.Key(k).Raw(s);
  }
  w.EndObject();
  w.Key("config_resolved_for").String(c.config.resolved_for());
  Arrays(w, "inputs", c.inputs);
  Arrays(w, "outputs", c.outputs);
  Arrays(w, "grads", c.grads);
  Arrays(w, "projections", c.projections);
  Arrays(w, "vjps", c.vjps);
  w.Key("metrics").BeginObject();
  for (const auto& [k, v] : c.metrics) w.Key(k).Raw(Exact(v));
  w.EndObject();
  w.Key("metric_dtypes").BeginObject();
  for (const auto& [k, d] : c.metric_dtypes) w.Key(k).String(DTypeName(d));
  w.EndObject();
  Optional(w, "expect_error", c.expect_error);
  Optional(w, "declined", c.declined);
  w.EndObject();
}

void WriteField(JsonWriter& w, const FieldReport& f) {
  w.BeginObject();
  w.Key("field").String(f.field).Key("outcome").Int(static_cast<int64_t>(f.outcome)).Key("note").String(f.note);
  w.Key("tol").BeginObject().Key("rtol").Raw(Exact(f.tol.rtol)).Key("atol").Raw(Exact(f.tol.atol));
  w.Key("reason").String(f.tol.reason).Key("atol_scale");
  if (f.tol.atol_scale) {
    w.BeginArray();
    for (double x : *f.tol.atol_scale) w.Raw(Exact(x));
    w.EndArray();
  } else {
    w.Null();
  }
  w.EndObject();
  w.Key("discrete").Bool(f.discrete).Key("total").Int(f.total).Key("mismatched").Int(f.mismatched);
  w.Key("worst_abs").Raw(Exact(f.worst_abs)).Key("worst_rel").Raw(Exact(f.worst_rel));
  w.Key("worst_index").Int(f.worst_index).Key("abs_at_worst").Raw(Exact(f.abs_at_worst));
  w.Key("rel_at_worst").Raw(Exact(f.rel_at_worst)).Key("flips").Int(f.flips);
  w.Key("flipped").BeginArray();
  for (int64_t i : f.flipped) w.Int(i);
  w.EndArray();
  w.Key("compared_finite").Bool(f.compared_finite).Key("zero_reference").Bool(f.zero_reference);
  w.Key("identical").Bool(f.identical);
  w.Key("shape").BeginArray();
  for (int64_t x : f.shape) w.Int(x);
  w.EndArray();
  w.Key("worst_mismatches").BeginArray();
  for (const FieldReport::Pair& p : f.worst_mismatches) {
    w.BeginObject().Key("index").Int(p.index).Key("got").Raw(Exact(p.got)).Key("want").Raw(Exact(p.want));
    w.Key("err_tol").Raw(Exact(p.err_tol)).Key("same").Int(p.same).Key("other").Raw(Exact(p.other)).EndObject();
  }
  w.EndArray();
  w.Key("grade_rel").Raw(Exact(f.grade_rel)).Key("grade_abs_at_zero").Raw(Exact(f.grade_abs_at_zero));
  w.Key("grade_non_finite").Bool(f.grade_non_finite).Key("err_tol").Raw(Exact(f.err_tol));
  w.Key("float32").Bool(f.dtype == DType::kFloat32).Key("dtype_differs").Bool(f.dtype_differs);
  w.EndObject();
}

void WriteReport(JsonWriter& w, const CaseReport& r) {
  w.BeginObject();
  w.Key("family").String(r.family).Key("function").String(r.function).Key("case_name").String(r.case_name);
  w.Key("where").String(r.where).Key("dtype").String(DTypeName(r.dtype));
  w.Key("outcome").Int(static_cast<int64_t>(r.outcome)).Key("detail").String(r.detail);
  w.Key("fields").BeginArray();
  for (const FieldReport& f : r.fields) WriteField(w, f);
  w.EndArray();
  w.Key("repro").String(r.repro).Key("worst_rel").Raw(Exact(r.worst_rel)).Key("err_tol");
  if (r.err_tol)
    w.Raw(Exact(*r.err_tol));
  else
    w.Null();
  w.Key("not_provided").Bool(r.not_provided).Key("flips").Int(r.flips).Key("partial").Bool(r.partial);
  w.EndObject();
}

void WriteFailure(JsonWriter& w, const Failure& f) {
  w.BeginObject().Key("field").String(f.field).Key("kind").String(f.kind).Key("grade").String(f.grade);
  w.Key("cause").String(f.cause).EndObject();
}

std::string Key(const FunctionSpec& s) { return s.family + "/" + s.name; }

// ---------------------------------------------------------------- reading

// Each accessor names the file and the member path it was reading.
struct Reader {
  const std::string& what;

  [[noreturn]] void Fail(const std::string& at, const std::string& why) const {
    throw BadInput(what + ": run" + at + ": " + why);
  }
  const Json& At(const Json& j, const std::string& key, const std::string& at) const {
    if (j.kind != Json::Kind::kObject) Fail(at, "not an object");
    const Json* m = j.Find(key);
    if (!m) Fail(at, "no member '" + key + "'");
    return *m;
  }
  const Json& Of(const Json& j, const std::string& key, const std::string& at, Json::Kind kind,
                 const char* kind_name) const {
    const Json& m = At(j, key, at);
    if (m.kind != kind) Fail(at + "." + key, std::string("not ") + kind_name);
    return m;
  }
  std::string Str(const Json& j, const std::string& key, const std::string& at) const {
    return Of(j, key, at, Json::Kind::kString, "a string").text;
  }
  double Num(const Json& j, const std::string& key, const std::string& at) const {
    return Of(j, key, at, Json::Kind::kNumber, "a number").number;
  }
  int64_t Int(const Json& j, const std::string& key, const std::string& at) const {
    const Json& m = Of(j, key, at, Json::Kind::kNumber, "a number");
    if (!m.integral || std::fabs(m.number) > 9.007199254740992e15) Fail(at + "." + key, "not a whole number");
    return static_cast<int64_t>(m.number);
  }
  bool Bool(const Json& j, const std::string& key, const std::string& at) const {
    return Of(j, key, at, Json::Kind::kBool, "true or false").boolean;
  }
  const Json& Arr(const Json& j, const std::string& key, const std::string& at) const {
    return Of(j, key, at, Json::Kind::kArray, "an array");
  }
  std::vector<int64_t> Ints(const Json& j, const std::string& key, const std::string& at) const {
    std::vector<int64_t> v;
    for (const Json& x : Arr(j, key, at).items) {
      if (!x.integral) Fail(at + "." + key, "holds a value that is not a whole number");
      v.push_back(static_cast<int64_t>(x.number));
    }
    return v;
  }
  const Json& Obj(const Json& j, const std::string& key, const std::string& at) const {
    return Of(j, key, at, Json::Kind::kObject, "an object");
  }
  std::optional<std::string> OptStr(const Json& j, const std::string& key, const std::string& at) const {
    const Json& m = At(j, key, at);
    if (m.IsNull()) return std::nullopt;
    if (m.kind != Json::Kind::kString) Fail(at + "." + key, "not a string or null");
    return m.text;
  }
  DType Type(const Json& j, const std::string& key, const std::string& at) const {
    DType d;
    if (!ParseDType(Str(j, key, at), &d)) Fail(at + "." + key, "unknown dtype '" + Str(j, key, at) + "'");
    return d;
  }
  template <typename E>
  E Enum(const Json& j, const std::string& key, const std::string& at, int64_t last) const {
    const int64_t v = Int(j, key, at);
    if (v < 0 || v > last) Fail(at + "." + key, "out of range");
    return static_cast<E>(v);
  }
  const FunctionSpec& Spec(const std::string& key, const std::string& at) const {
    const size_t slash = key.find('/');
    const FunctionSpec* s =
        slash == std::string::npos ? nullptr : FindSpec(key.substr(slash + 1), key.substr(0, slash));
    if (!s) Fail(at, "'" + key + "' is no function of this conform's registry");
    return *s;
  }

  std::map<std::string, Array> Arrays(const Json& j, const std::string& key, const std::string& at) const {
    std::map<std::string, Array> m;
    for (const auto& [name, v] : Obj(j, key, at).members) {
      const std::string here = at + "." + key + "." + name;
      Array a = ReadArray(At(v, "values", here), what + ": run" + here);
      a.dtype = Type(v, "dtype", here);
      m.emplace(name, std::move(a));
    }
    return m;
  }

  Case ReadCase(const Json& j, const std::string& at) const {
    Case c;
    c.file = Str(j, "file", at);
    c.family = Str(j, "family", at);
    c.function = Str(j, "function", at);
    c.name = Str(j, "name", at);
    c.dtype = Type(j, "dtype", at);
    const std::string seed = Str(j, "seed", at);
    char* end = nullptr;
    c.seed = std::strtoll(seed.c_str(), &end, 10);
    if (seed.empty() || *end) Fail(at + ".seed", "not a whole number");
    c.why = Str(j, "why", at);
    for (const auto& [k, v] : Obj(j, "config", at).members) {
      if (v.IsNull())
        c.config.Set(k, std::monostate{});
      else if (v.kind == Json::Kind::kString)
        c.config.Set(k, v.text);
      else if (v.kind == Json::Kind::kNumber)
        c.config.Set(k, v.integral ? ConfigValue{static_cast<int64_t>(v.number)} : ConfigValue{v.number});
      else
        Fail(at + ".config." + k, "not a config value");
    }
    c.config.set_resolved_for(Str(j, "config_resolved_for", at));
    c.inputs = Arrays(j, "inputs", at);
    c.outputs = Arrays(j, "outputs", at);
    c.grads = Arrays(j, "grads", at);
    c.projections = Arrays(j, "projections", at);
    c.vjps = Arrays(j, "vjps", at);
    for (const auto& [k, v] : Obj(j, "metrics", at).members) {
      if (v.kind != Json::Kind::kNumber) Fail(at + ".metrics." + k, "not a number");
      c.metrics[k] = v.number;
    }
    const Json& md = Obj(j, "metric_dtypes", at);
    for (const auto& [k, v] : md.members) c.metric_dtypes[k] = Type(md, k, at + ".metric_dtypes");
    c.expect_error = OptStr(j, "expect_error", at);
    c.declined = OptStr(j, "declined", at);
    return c;
  }

  FieldReport ReadField(const Json& j, const std::string& at) const {
    FieldReport f;
    f.field = Str(j, "field", at);
    f.outcome = Enum<Outcome>(j, "outcome", at, static_cast<int64_t>(Outcome::kBaselined));
    f.note = Str(j, "note", at);
    const Json& tol = Obj(j, "tol", at);
    f.tol.rtol = Num(tol, "rtol", at + ".tol");
    f.tol.atol = Num(tol, "atol", at + ".tol");
    f.tol.reason = Str(tol, "reason", at + ".tol");
    if (const Json& scale = At(tol, "atol_scale", at + ".tol"); !scale.IsNull()) {
      if (scale.kind != Json::Kind::kArray) Fail(at + ".tol.atol_scale", "not an array or null");
      auto v = std::make_shared<std::vector<double>>();
      for (const Json& x : scale.items) {
        if (x.kind != Json::Kind::kNumber) Fail(at + ".tol.atol_scale", "holds a value that is not a number");
        v->push_back(x.number);
      }
      f.tol.atol_scale = std::move(v);
    }
    f.discrete = Bool(j, "discrete", at);
    f.total = Int(j, "total", at);
    f.mismatched = Int(j, "mismatched", at);
    f.worst_abs = Num(j, "worst_abs", at);
    f.worst_rel = Num(j, "worst_rel", at);
    f.worst_index = Int(j, "worst_index", at);
    f.abs_at_worst = Num(j, "abs_at_worst", at);
    f.rel_at_worst = Num(j, "rel_at_worst", at);
    f.flips = Int(j, "flips", at);
    f.flipped = Ints(j, "flipped", at);
    f.compared_finite = Bool(j, "compared_finite", at);
    f.zero_reference = Bool(j, "zero_reference", at);
    f.identical = Bool(j, "identical", at);
    f.shape = Ints(j, "shape", at);
    const Json& pairs = Arr(j, "worst_mismatches", at);
    for (size_t k = 0; k < pairs.items.size(); ++k) {
      const Json& p = pairs.items[k];
      const std::string here = at + ".worst_mismatches[" + std::to_string(k) + "]";
      f.worst_mismatches.push_back({Int(p, "index", here), Num(p, "got", here), Num(p, "want", here),
                                    Num(p, "err_tol", here), Int(p, "same", here), Num(p, "other", here)});
    }
    f.grade_rel = Num(j, "grade_rel", at);
    f.grade_abs_at_zero = Num(j, "grade_abs_at_zero", at);
    f.grade_non_finite = Bool(j, "grade_non_finite", at);
    f.err_tol = Num(j, "err_tol", at);
    f.dtype = Bool(j, "float32", at) ? DType::kFloat32 : DType::kFloat64;
    f.dtype_differs = Bool(j, "dtype_differs", at);
    return f;
  }

  CaseReport ReadReport(const Json& j, const std::string& at) const {
    CaseReport r;
    r.family = Str(j, "family", at);
    r.function = Str(j, "function", at);
    r.case_name = Str(j, "case_name", at);
    r.where = Str(j, "where", at);
    r.dtype = Type(j, "dtype", at);
    r.outcome = Enum<Outcome>(j, "outcome", at, static_cast<int64_t>(Outcome::kBaselined));
    r.detail = Str(j, "detail", at);
    const Json& fields = Arr(j, "fields", at);
    for (size_t k = 0; k < fields.items.size(); ++k)
      r.fields.push_back(ReadField(fields.items[k], at + ".fields[" + std::to_string(k) + "]"));
    r.repro = Str(j, "repro", at);
    r.worst_rel = Num(j, "worst_rel", at);
    if (const Json& e = At(j, "err_tol", at); !e.IsNull()) r.err_tol = Num(j, "err_tol", at);
    r.not_provided = Bool(j, "not_provided", at);
    r.flips = Int(j, "flips", at);
    r.partial = Bool(j, "partial", at);
    return r;
  }

  Failure ReadFailure(const Json& j, const std::string& at) const {
    Failure f;
    f.field = Str(j, "field", at);
    f.kind = Str(j, "kind", at);
    f.grade = Str(j, "grade", at);
    f.cause = Str(j, "cause", at);
    return f;
  }
};

}  // namespace

std::string EncodeRun(const ExploreRun& run) {
  JsonWriter w;
  w.BeginObject();
  w.Key("candidate_name").String(run.candidate_name);
  for (const auto* versions : {&run.candidate_versions, &run.reference_versions}) {
    w.Key(versions == &run.candidate_versions ? "candidate_versions" : "reference_versions").BeginObject();
    for (const auto& [k, v] : *versions) w.Key(k).String(v);
    w.EndObject();
  }
  w.Key("explore_seconds").Raw(Exact(run.explore_seconds)).Key("shrink_seconds").Raw(Exact(run.shrink_seconds));
  w.Key("not_provided").BeginArray();
  for (const FunctionSpec* s : run.not_provided) w.String(Key(*s));
  w.EndArray();
  w.Key("stale").BeginArray();
  for (const tools::BaselineEntry& b : run.stale) {
    w.BeginObject().Key("file").String(b.file).Key("line").Int(b.line).Key("family").String(b.family);
    w.Key("function").String(b.function).Key("field").String(b.field).Key("case_glob").String(b.case_glob);
    w.Key("reason").String(b.reason).Key("dp_row").Int(b.dp_row).Key("cause").String(b.cause);
    w.Key("covered").Int(b.covered).EndObject();
  }
  w.EndArray();
  w.Key("functions").BeginArray();
  for (const FunctionTally& t : run.functions) {
    w.BeginObject().Key("function").String(Key(*t.spec)).Key("dp_ranks").Int(t.dp_ranks);
    w.Key("cases").Int(t.cases).Key("passed").Int(t.passed).Key("failed").Int(t.failed);
    w.Key("baselined").Int(t.baselined).Key("mistrusted").Int(t.mistrusted).Key("unsupported").Int(t.unsupported);
    w.Key("skipped").Int(t.skipped).Key("refused").Int(t.refused).Key("refused_example").String(t.refused_example);
    w.Key("refused_first").Int(t.refused_first).EndObject();
  }
  w.EndArray();
  w.Key("differences").BeginArray();
  for (const Difference& d : run.differences) {
    w.BeginObject().Key("function").String(Key(*d.spec)).Key("dp_ranks").Int(d.dp_ranks);
    w.Key("row").Int(static_cast<int64_t>(d.row)).Key("position").Int(static_cast<int64_t>(d.position));
    w.Key("failure");
    WriteFailure(w, d.failure);
    w.Key("cases").Int(d.cases).Key("first_index").Int(d.first_index).Key("first_regime").String(d.first_regime);
    w.Key("case_indices").BeginArray();
    for (int64_t i : d.case_indices) w.Int(i);
    w.EndArray();
    w.Key("minimal");
    WriteCase(w, d.minimal);
    w.Key("golden");
    WriteCase(w, d.golden);
    w.Key("got");
    WriteCase(w, d.got);
    w.Key("report");
    WriteReport(w, d.report);
    w.Key("trials").Int(d.trials).Key("shrink_seconds").Raw(Exact(d.shrink_seconds));
    w.Key("exhausted").Bool(d.exhausted).EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

ExploreRun DecodeRun(const Json& j, const std::string& what) {
  const Reader r{what};
  ExploreRun run;
  run.candidate_name = r.Str(j, "candidate_name", "");
  for (const char* key : {"candidate_versions", "reference_versions"})
    for (const auto& [k, v] : r.Obj(j, key, "").members) {
      if (v.kind != Json::Kind::kString) r.Fail(std::string(".") + key + "." + k, "not a string");
      (key[0] == 'c' ? run.candidate_versions : run.reference_versions)[k] = v.text;
    }
  run.explore_seconds = r.Num(j, "explore_seconds", "");
  run.shrink_seconds = r.Num(j, "shrink_seconds", "");
  for (const Json& s : r.Arr(j, "not_provided", "").items) {
    if (s.kind != Json::Kind::kString) r.Fail(".not_provided", "holds a value that is not a string");
    run.not_provided.push_back(&r.Spec(s.text, ".not_provided"));
  }
  const Json& stale = r.Arr(j, "stale", "");
  for (size_t k = 0; k < stale.items.size(); ++k) {
    const Json& b = stale.items[k];
    const std::string at = ".stale[" + std::to_string(k) + "]";
    tools::BaselineEntry e;
    e.file = r.Str(b, "file", at);
    e.line = static_cast<int>(r.Int(b, "line", at));
    e.family = r.Str(b, "family", at);
    e.function = r.Str(b, "function", at);
    e.field = r.Str(b, "field", at);
    e.case_glob = r.Str(b, "case_glob", at);
    e.reason = r.Str(b, "reason", at);
    e.dp_row = r.Int(b, "dp_row", at);
    e.cause = r.Str(b, "cause", at);
    e.covered = static_cast<int>(r.Int(b, "covered", at));
    run.stale.push_back(std::move(e));
  }
  const Json& functions = r.Arr(j, "functions", "");
  for (size_t k = 0; k < functions.items.size(); ++k) {
    const Json& f = functions.items[k];
    const std::string at = ".functions[" + std::to_string(k) + "]";
    FunctionTally t;
    t.spec = &r.Spec(r.Str(f, "function", at), at);
    t.dp_ranks = r.Int(f, "dp_ranks", at);
    t.cases = r.Int(f, "cases", at);
    t.passed = r.Int(f, "passed", at);
    t.failed = r.Int(f, "failed", at);
    t.baselined = r.Int(f, "baselined", at);
    t.mistrusted = r.Int(f, "mistrusted", at);
    t.unsupported = r.Int(f, "unsupported", at);
    t.skipped = r.Int(f, "skipped", at);
    t.refused = r.Int(f, "refused", at);
    t.refused_example = r.Str(f, "refused_example", at);
    t.refused_first = r.Int(f, "refused_first", at);
    run.functions.push_back(std::move(t));
  }
  const Json& differences = r.Arr(j, "differences", "");
  for (size_t k = 0; k < differences.items.size(); ++k) {
    const Json& e = differences.items[k];
    const std::string at = ".differences[" + std::to_string(k) + "]";
    Difference d;
    d.spec = &r.Spec(r.Str(e, "function", at), at);
    d.dp_ranks = r.Int(e, "dp_ranks", at);
    d.row = static_cast<size_t>(r.Int(e, "row", at));
    d.position = static_cast<size_t>(r.Int(e, "position", at));
    d.failure = r.ReadFailure(r.Obj(e, "failure", at), at + ".failure");
    d.cases = r.Int(e, "cases", at);
    d.first_index = r.Int(e, "first_index", at);
    d.first_regime = r.Str(e, "first_regime", at);
    d.case_indices = r.Ints(e, "case_indices", at);
    d.minimal = r.ReadCase(r.Obj(e, "minimal", at), at + ".minimal");
    d.golden = r.ReadCase(r.Obj(e, "golden", at), at + ".golden");
    d.got = r.ReadCase(r.Obj(e, "got", at), at + ".got");
    d.report = r.ReadReport(r.Obj(e, "report", at), at + ".report");
    d.trials = r.Int(e, "trials", at);
    d.shrink_seconds = r.Num(e, "shrink_seconds", at);
    d.exhausted = r.Bool(e, "exhausted", at);
    run.differences.push_back(std::move(d));
  }
  return run;
}

}  // namespace verlconf::explore
