#include "oracle/explore/causes.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "oracle/explore/elements.h"
#include "oracle/judge/grade.h"

namespace verlconf::explore {
namespace {

bool NonFinitePair(double got, double want) { return std::isfinite(got) != std::isfinite(want); }

// verl clamps every log-ratio to +-20 before exp.
constexpr double kLogRatioClamp = 20.0;

// Which side of the decisions a token's ratio is on: beyond verl's clamp, or above,
// below or at 1. Coarse on purpose: a cause must not move when the shrinker moves a
// threshold (a clip ratio back to verl's default), and the branch the reference took is
// told apart by the element's own reference (0 where a clip or a mask stops the gradient).
std::string Band(double lr) {
  if (std::isnan(lr)) return "log-ratio NaN";
  if (std::fabs(lr) > kLogRatioClamp) return lr > 0 ? "log-ratio above the +20 clamp" : "log-ratio below the -20 clamp";
  return lr == 0.0 ? "ratio 1" : (lr > 0 ? "ratio above 1" : "ratio below 1");
}

// What the reference did at one element of a token-shaped (or row-shaped) field.
std::string ElementCause(const FunctionSpec& spec, const Case& golden, const Array& want, int64_t flat,
                         const Array* boundary) {
  const Array* mask = TokenMask(spec, golden);
  std::string s;
  const auto add = [&s](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (mask && want.shape == mask->shape) {
    if ((*mask)[flat] == 0.0) return want[flat] == 0.0 ? "masked token, reference 0" : "masked token";
    add("valid token");
    if (auto lr = LogRatio(spec, golden, flat)) add(Band(*lr));
    if (const Array* a = golden.OptionalInput("advantages"); a && a->shape == want.shape)
      add((*a)[flat] > 0 ? "A > 0" : ((*a)[flat] < 0 ? "A < 0" : "A = 0"));
  } else if (mask && mask->rank() == 2 && want.rank() >= 1 && want.shape[0] == mask->rows()) {
    const int64_t row = flat / std::max<int64_t>(1, want.size() / want.shape[0]);
    double live = 0;
    for (int64_t j = 0; j < mask->cols(); ++j) live += mask->at(row, j);
    add(live > 0 ? "row with valid tokens" : "fully masked row");
  } else {
    return "";
  }
  if (boundary && boundary->shape == want.shape && (*boundary)[flat] != 0.0) add("at a decision boundary");
  if (want[flat] == 0.0) add("reference 0");
  return s;
}

std::string FieldKind(const FieldReport& f) {
  if (f.mismatched == 0 && f.dtype_differs) return "dtype";
  if (f.mismatched == 0 && std::isinf(f.err_tol)) return "shape";
  for (const auto& p : f.worst_mismatches)
    if (NonFinitePair(p.got, p.want)) return "non-finite";
  return "value";
}

}  // namespace

std::vector<Failure> ReportFailures(const CaseReport& r) {
  std::vector<Failure> out;
  if (r.outcome != Outcome::kFailed) return out;
  for (const auto& f : r.fields)
    if (f.outcome == Outcome::kFailed) out.push_back({f.field, FieldKind(f), GradeName(FieldGrade(f)), ""});
  if (out.empty()) out.push_back({"error", "exception vs result", "material", ""});
  return out;
}

std::vector<Failure> CaseFailures(const FunctionSpec& spec, const Case& golden, const Case& got, const CaseReport& r) {
  if (r.outcome != Outcome::kFailed) return {};
  Array boundary;
  bool have_boundary = false;
  std::vector<Failure> out;
  for (const auto& f : r.fields) {
    if (f.outcome != Outcome::kFailed) continue;
    Array ws, gs;
    const Array* want = FieldArray(golden, f.field, ws);
    const Array* have = FieldArray(got, f.field, gs);
    if (!want || !have || want->shape != have->shape || want->rank() == 0 || f.mismatched == 0) {
      out.push_back({f.field, FieldKind(f), GradeName(FieldGrade(f)), ""});
      continue;
    }
    if (!have_boundary) {
      try {
        boundary = spec.oracle(golden).boundary;
      } catch (const std::exception&) {
        boundary = Array();
      }
      have_boundary = true;
    }
    const std::set<int64_t> flipped(f.flipped.begin(), f.flipped.end());
    // (cause, kind) -> the worst grade among its elements, in order of first appearance.
    std::vector<std::pair<std::string, std::string>> order;
    std::map<std::pair<std::string, std::string>, Grade> groups;
    for (const ElementDiff& e :
         DifferingElements(spec, golden, got, f.field, f.tol, static_cast<size_t>(-1), &boundary)) {
      if (flipped.count(e.index)) continue;  // the other decision's value: no miss
      const std::string cause = ElementCause(spec, golden, *want, e.index, boundary.size() ? &boundary : nullptr);
      const std::string kind = NonFinitePair(e.got, e.want) ? "non-finite" : "value";
      const auto key = std::make_pair(cause, kind);
      auto [it, fresh] = groups.emplace(key, Grade::kNone);
      if (fresh) order.push_back(key);
      it->second = std::max(it->second, ValueGrade(e.got, e.want, golden.dtype));
    }
    if (order.empty()) {  // nothing element-wise (every miss was in the judge's combinations)
      out.push_back({f.field, FieldKind(f), GradeName(FieldGrade(f)), ""});
      continue;
    }
    // The judge measures a miss from the nearest value the reference allows (grade.h): a
    // group is never graded above its field.
    const Grade field_grade = FieldGrade(f);
    for (const auto& key : order) {
      out.push_back({f.field, key.second, GradeName(std::min(groups.at(key), field_grade)), key.first});
    }
  }
  if (out.empty()) out.push_back({"error", "exception vs result", "material", ""});
  return out;
}

}  // namespace verlconf::explore
