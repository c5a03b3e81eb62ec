#include "oracle/judge/candidate.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "oracle/core/errors.h"
#include "oracle/judge/validate.h"

namespace verlconf {
namespace {

[[noreturn]] void Fail(const Case& c, const std::string& field, const std::string& what) {
  throw BadInput(c.Where() + ": " + field + ": " + what);
}

// `pattern` with "<...>" placeholders matched against `name` from positions p and n.
bool MatchesFrom(const std::string& pattern, const std::string& name, size_t p, size_t n) {
  while (p < pattern.size()) {
    if (pattern[p] == '<') {
      const size_t close = pattern.find('>', p);
      if (close == std::string::npos) break;
      for (size_t end = n + 1; end <= name.size() && name[end - 1] != '/'; ++end)
        if (MatchesFrom(pattern, name, close + 1, end)) return true;
      return false;
    }
    if (n >= name.size() || pattern[p] != name[n]) return false;
    ++p, ++n;
  }
  return p == pattern.size() && n == name.size();
}

bool Known(const std::vector<std::string>& names, const std::string& n) {
  for (const auto& pattern : names)
    if (MatchesNamePattern(pattern, n)) return true;
  return false;
}

// The names a candidate may use in one group: the function's own (registry) and the
// golden case's (verl's, which the registry may spell with placeholders).
void RequireKnownNames(const Case& cand, const char* group, const std::vector<std::string>& spec_names,
                       const std::set<std::string>& golden_names, const std::vector<std::string>& stored,
                       const std::string& function) {
  for (const auto& n : stored) {
    if (golden_names.count(n) || Known(spec_names, n)) continue;
    const std::string field = std::string(group) + "/" + n;
    if (std::string(group) != "metrics" && n.find('/') != std::string::npos)
      Fail(cand, field, "a nested group inside " + std::string(group) + "/ (expected datasets directly under it)");
    const std::string g = group;
    const char* kind = g == "outputs" ? "an output" : g == "grads" ? "a gradient" : "a metric";
    Fail(cand, field, std::string("not ") + kind + " of '" + function + "' (misspelled?)");
  }
}

template <class Map>
std::vector<std::string> Keys(const Map& m) {
  std::vector<std::string> k;
  for (const auto& kv : m) k.push_back(kv.first);
  return k;
}

template <class Map>
std::set<std::string> KeySet(const Map& m) {
  std::set<std::string> k;
  for (const auto& kv : m) k.insert(kv.first);
  return k;
}

void CheckSchema(const FunctionSpec& spec, const Case& golden, const Case& cand) {
  for (const auto& [name, w] : golden.inputs) {
    const Array* have = cand.OptionalInput(name);
    if (!have) Fail(cand, "inputs/" + name, "missing (the golden has it)");
    if (have->shape != w.shape || have->data != w.data || have->dtype != w.dtype)
      Fail(cand, "inputs/" + name, "differs from the golden input (was the candidate produced from these goldens?)");
  }
  for (const auto& [name, a] : cand.inputs)
    if (!golden.inputs.count(name))
      Fail(cand, "inputs/" + name,
           spec.FindInput(name) ? "not an input of the golden case (a candidate carries the golden's inputs unchanged)"
                                : "not an input of '" + spec.name + "'");
  if (cand.config.values() != golden.config.values())
    Fail(cand, "cfg",
         "the config attributes differ from the golden case's (was the candidate produced from these "
         "goldens?)");
  std::vector<std::string> outputs;
  for (const auto& o : spec.outputs) outputs.push_back(o.name);
  RequireKnownNames(cand, "outputs", outputs, KeySet(golden.outputs), Keys(cand.outputs), spec.name);
  RequireKnownNames(cand, "grads", spec.grads, KeySet(golden.grads), Keys(cand.grads), spec.name);
  RequireKnownNames(cand, "metrics", spec.metrics, KeySet(golden.metrics), Keys(cand.metrics), spec.name);
  auto floating = [&](const std::string& field, DType d) {
    if (d != DType::kFloat32 && d != DType::kFloat64)
      Fail(cand, field,
           std::string("dtype ") + DTypeName(d) +
               "; a candidate's outputs, gradients and metrics are "
               "float32 or float64");
  };
  for (const auto& [n, a] : cand.outputs) floating("outputs/" + n, a.dtype);
  for (const auto& [n, a] : cand.grads) floating("grads/" + n, a.dtype);
  for (const auto& [n, d] : cand.metric_dtypes) floating("metrics/" + n, d);
}

bool HasResult(const Case& c) { return !c.outputs.empty() || !c.grads.empty() || !c.metrics.empty(); }

// Metrics stored as float32 in a float64 case: the candidate computed in that precision,
// which is a result of its own, not a file to refuse. (Every golden metric is float64:
// Python floats.)
std::set<std::string> Float32Metrics(const Case& golden, const Case& cand) {
  std::set<std::string> out;
  for (const auto& [n, d] : cand.metric_dtypes)
    if (d == DType::kFloat32 && golden.dtype == DType::kFloat64 && golden.metrics.count(n)) out.insert("metrics/" + n);
  return out;
}

}  // namespace

std::vector<std::string> FieldNames(const Case& c) {
  std::vector<std::string> out;
  for (const auto& [n, a] : c.outputs) out.push_back("outputs/" + n);
  for (const auto& [n, a] : c.grads) out.push_back("grads/" + n);
  for (const auto& [n, v] : c.metrics) out.push_back("metrics/" + n);
  for (const auto& [n, a] : c.vjps) out.push_back("vjps/" + n);
  return out;
}

CaseReport NotProvided(const Case& golden, const std::string& why) {
  CaseReport r = CaseReport::NotCompared(golden, Outcome::kUnsupported, why);
  for (const auto& f : FieldNames(golden)) {
    FieldReport fr;
    fr.field = f;
    fr.outcome = Outcome::kUnsupported;
    fr.note = "not provided";
    r.fields.push_back(std::move(fr));
  }
  return r;
}

CaseReport CheckCandidate(const FunctionSpec& spec, const Case& golden, const Case& cand,
                          const std::string& verl_version) {
  ValidateGolden(spec, golden, verl_version);
  CheckSchema(spec, golden, cand);
  if (golden.declined) {
    CaseReport r = DeclinedGolden(golden);
    r.where = cand.Where();
    return r;
  }
  auto at_candidate = [&](CaseReport r) {
    r.where = cand.Where();
    return r;
  };
  if (cand.declined) {
    if (cand.expect_error || HasResult(cand))
      Fail(cand, "attribute 'declined'",
           std::string("the case also carries ") +
               (cand.expect_error ? "expect_error" : "outputs, gradients or metrics") +
               "; a declined case has neither");
    return at_candidate(NotProvided(
        golden, "declined by the candidate: " + (cand.declined->empty() ? "(no reason given)" : *cand.declined)));
  }
  if (cand.expect_error) {
    if (HasResult(cand))
      Fail(cand, "attribute 'expect_error'",
           "the case also carries outputs, gradients or metrics; a case that "
           "raised has none");
    return at_candidate(CompareResult(spec, golden, nullptr, cand.expect_error, verl_version));
  }
  if (!HasResult(cand)) {
    CaseReport r = NotProvided(golden, "the candidate file has no outputs for this case");
    r.not_provided = true;
    return at_candidate(std::move(r));
  }
  // Judged on the fields provided: the comparison reports each missing one UNSUPPORTED
  // and the case partial, and fails a float array of the other dtype itself.
  const Result got = Result::Of(cand);
  CaseReport r = CompareResult(spec, golden, &got, std::nullopt, verl_version);
  // Metrics travel as doubles in a Result, so their stored dtype is judged here.
  const auto retyped = Float32Metrics(golden, cand);
  for (auto& f : r.fields) {
    if (!retyped.count(f.field)) continue;
    const std::string what = std::string("candidate returned float32 for a ") + DTypeName(golden.dtype) + " case";
    f.note = f.note.empty() ? what : what + "; " + f.note;
    f.dtype_differs = true;
    if (f.outcome != Outcome::kFailed) {
      f.outcome = Outcome::kFailed;
      // The values may agree; the precision does not, so the figures read as a failure.
      f.err_tol = std::numeric_limits<double>::infinity();
      r.err_tol = f.err_tol;
      r.outcome = Outcome::kFailed;
      r.detail = what + (r.detail.empty() ? "" : "; " + r.detail);
    }
  }
  return at_candidate(std::move(r));
}

bool MatchesNamePattern(const std::string& pattern, const std::string& name) {
  return MatchesFrom(pattern, name, 0, 0);
}

}  // namespace verlconf
