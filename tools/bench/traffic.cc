#include "tools/bench/traffic.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>

#include "oracle/core/errors.h"
#include "tools/bench/anchor.h"

namespace verlconf::bench {
namespace {

// The fit's shapes: two row counts (groups of kAnchorGroup rows, as the anchor's) and two
// token counts, small enough that 4 runs of every entry take seconds on the host.
constexpr int64_t kRows1 = 32, kRows2 = 64;
constexpr int64_t kTokens1 = 256, kTokens2 = 512;

std::string RawList(const std::map<std::string, int64_t>& raw) {
  std::string s;
  for (const auto& [name, count] : raw) s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  return s;
}

// The first `rows` rows and `tokens` tokens of c (every input whose leading dimensions
// are the batch's rows and tokens). The four fit shapes are crops of one case, so they
// have the same inputs and configuration: a generator that draws whether an optional
// input is present would otherwise change the function between two shapes.
Case Crop(const FunctionSpec& spec, const Case& c, int64_t rows, int64_t tokens) {
  Case out = c;
  for (const InputSpec& in : spec.inputs) {
    auto it = out.inputs.find(in.name);
    if (it == out.inputs.end() || in.role == Role::kScalar || in.role == Role::kComponentWeights) continue;
    Array& a = it->second;
    const int64_t full_rows = a.shape.empty() ? 0 : a.shape[0];
    const bool token_dim = a.shape.size() >= 2 && (in.role == Role::kTokens || in.role == Role::kVocabLogits);
    const int64_t full_tokens = token_dim ? a.shape[1] : 1;
    const int64_t keep_tokens = token_dim ? std::min(tokens, full_tokens) : 1;
    int64_t inner = 1;
    for (size_t d = token_dim ? 2 : 1; d < a.shape.size(); ++d) inner *= a.shape[d];
    std::vector<double> data;
    const int64_t keep_rows = std::min(rows, full_rows);
    data.reserve(static_cast<size_t>(keep_rows * keep_tokens * inner));
    for (int64_t i = 0; i < keep_rows; ++i)
      for (int64_t t = 0; t < keep_tokens; ++t)
        for (int64_t k = 0; k < inner; ++k)
          data.push_back(a.data[static_cast<size_t>((i * full_tokens + t) * inner + k)]);
    a.data = std::move(data);
    if (!a.shape.empty()) a.shape[0] = keep_rows;
    if (token_dim) a.shape[1] = keep_tokens;
  }
  return out;
}

}  // namespace

BytesModel FitBytes(int64_t r1, int64_t r2, int64_t t1, int64_t t2, const double f[4]) {
  const double dr = static_cast<double>(r2 - r1), dt = static_cast<double>(t2 - t1);
  BytesModel m;
  m.a = (f[3] - f[1] - f[2] + f[0]) / (dr * dt);
  m.b = (f[1] - f[0]) / dr - m.a * static_cast<double>(t1);
  m.c = (f[2] - f[0]) / dt - m.a * static_cast<double>(r1);
  m.d = f[0] - m.a * static_cast<double>(r1) * static_cast<double>(t1) - m.b * static_cast<double>(r1) -
        m.c * static_cast<double>(t1);
  return m;
}

namespace {

TrafficRow MeasureAt(const BenchItem& item, const RunFn& impl, const Case& largest);

}  // namespace

TrafficRow MeasureTraffic(const BenchItem& item, const RunFn& impl, CaseMaker& maker) {
  TrafficRow row;
  row.label = item.label;
  if (!item.spec->generate) {
    // verl accepts the name only to raise (kl "full"): there is no case to run.
    row.verdict = "raises";
    row.detail = item.spec->notes;
    return row;
  }
  row = MeasureAt(item, impl, maker.Make(item, kRows2, kTokens2, kAnchorGroup));
  if (row.verdict == "raises" && item.config.empty()) {
    // verl's defaults alone are refused (rollout_rs without a threshold): the
    // generator's drawn configuration, which verl runs, is counted instead.
    TrafficRow drawn = MeasureAt(item, impl, maker.Make(item, kRows2, kTokens2, kAnchorGroup, false));
    if (drawn.verdict != "raises") {
      drawn.detail = (drawn.detail.empty() ? "" : drawn.detail + "; ") +
                     "at the generator's configuration: verl refuses its defaults (" + row.detail + ")";
      return drawn;
    }
  }
  return row;
}

namespace {

TrafficRow MeasureAt(const BenchItem& item, const RunFn& impl, const Case& largest) {
  TrafficRow row;
  row.label = item.label;
  const int64_t rows[4] = {kRows1, kRows2, kRows1, kRows2};
  const int64_t tokens[4] = {kTokens1, kTokens1, kTokens2, kTokens2};
  double moved[4], minimal[4];
  const int64_t t1 = TokensFor(*item.spec, kTokens1), t2 = TokensFor(*item.spec, kTokens2);
  for (int k = 0; k < 4; ++k) {
    const Case c = Crop(*item.spec, largest, rows[k], TokensFor(*item.spec, tokens[k]));
    cuda::TrafficLedger ledger;
    cuda::TrafficLedger* previous = cuda::SetTrafficLedger(&ledger);
    Result result;
    try {
      result = impl(c);
    } catch (const VerlError& e) {
      cuda::SetTrafficLedger(previous);
      row.verdict = "raises";
      row.detail = e.what();
      return row;
    } catch (const std::exception& e) {
      cuda::SetTrafficLedger(previous);
      row.verdict = "error";
      row.detail = e.what();
      return row;
    }
    cuda::SetTrafficLedger(previous);
    moved[k] = ledger.bytes();
    minimal[k] = MinimalTrafficBytes(c, result);
    for (const auto& [name, count] : ledger.raw_passes) row.raw_passes[name] = std::max(row.raw_passes[name], count);
    // The largest shape's counts: a pass per group or per chunk would show there.
    row.launches = std::max(row.launches, ledger.launches);
    row.host_syncs = std::max(row.host_syncs, ledger.host_syncs);
  }
  const double anchor_tokens = static_cast<double>(TokensFor(*item.spec, kAnchorTokens));
  // TokensFor scales the fit's token counts as it scales the anchor's (the entropy loss).
  row.moved = FitBytes(kRows1, kRows2, t1, t2, moved).At(static_cast<double>(kAnchorBatch), anchor_tokens);
  row.minimal = FitBytes(kRows1, kRows2, t1, t2, minimal).At(static_cast<double>(kAnchorBatch), anchor_tokens);
  if (!row.raw_passes.empty()) {
    row.verdict = "not counted";
    row.detail = "Thrust passes outside the row templates: " + RawList(row.raw_passes);
  }
  return row;
}

}  // namespace

void JudgeTraffic(TrafficRow& row, const std::vector<TrafficException>& exceptions) {
  const auto it = std::find_if(exceptions.begin(), exceptions.end(),
                               [&](const TrafficException& e) { return e.label == row.label; });
  if (it != exceptions.end()) {
    row.budget = it->bound;
    if (row.detail.empty()) row.detail = it->reason;
  }
  if (!row.verdict.empty()) return;  // raises, error or not counted: no ratio to judge
  row.verdict = row.ratio() <= row.budget ? "ok" : "over budget";
}

std::vector<std::string> StaleExceptions(const std::vector<TrafficRow>& rows,
                                         const std::vector<TrafficException>& exceptions) {
  std::vector<std::string> out;
  for (const TrafficException& e : exceptions) {
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const TrafficRow& r) { return r.label == e.label; });
    if (it == rows.end()) {
      out.push_back(e.label + ": an exception for an entry the report does not have");
    } else if (it->verdict == "ok" && it->ratio() <= kTargetFactor) {
      char line[256];
      std::snprintf(line, sizeof line, "%s: within %.1fx (%.2fx), so its exception (bound %.2fx) is stale",
                    e.label.c_str(), kTargetFactor, it->ratio(), e.bound);
      out.push_back(line);
    }
  }
  return out;
}

}  // namespace verlconf::bench

namespace verlconf::bench {
namespace {

constexpr const char* kUsage =
    "usage: traffic [--only KEY,...]\n"
    "  Every CUDA entry run through its host twin at four small shapes, the bytes its row\n"
    "  templates declare fitted and evaluated at the perf anchor's shape (4096 x 8192),\n"
    "  against its minimal traffic. Exit 1 when an entry exceeds its budget.\n"
    "  --only  labels (family/name, or an anchor row such as rc/token_is) or family names\n";

std::vector<std::string> SplitList(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (out.back().empty()) throw std::invalid_argument("--only: empty item in '" + v + "'");
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

int TrafficMain(int argc, char** argv) {
  std::vector<std::string> only;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        std::printf("%s", kUsage);
        return 0;
      }
      std::string v;
      if (a.rfind("--only=", 0) == 0) {
        v = a.substr(7);
      } else if (a == "--only" && i + 1 < argc) {
        v = argv[++i];
      } else {
        throw std::invalid_argument("unexpected argument '" + a + "'");
      }
      only = SplitList(v);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "traffic: %s\n%s", e.what(), kUsage);
    return 2;
  }
  const std::vector<BenchItem> items = BenchItems(only, Impl::kCudaHost);
  if (items.empty()) {
    std::fprintf(stderr, "traffic: --only selects no entry with a CUDA implementation\n");
    return 2;
  }
  std::printf(
      "traffic model: the bytes each CUDA entry's passes declare, at the perf anchor's shape (%lld x %lld, "
      "float32),\nagainst its minimal traffic (every input read once, every output and gradient written once); "
      "counted\non the host (cuda-host), fitted from four small shapes\n\n",
      static_cast<long long>(kAnchorBatch), static_cast<long long>(kAnchorTokens));
  std::printf("%-54s %8s %6s %10s %10s %7s %7s  %s\n", "entry", "launches", "syncs", "moved GB", "minimal GB", "ratio",
              "budget", "verdict");
  CaseMaker maker;
  std::vector<TrafficRow> rows;
  for (const BenchItem& item : items) {
    TrafficRow row = MeasureTraffic(item, item.spec->cuda_host, maker);
    JudgeTraffic(row, TrafficExceptions());
    if (row.verdict == "raises" || row.verdict == "error") {
      std::printf("%-54s %8s %6s %10s %10s %7s %7s  %s\n", row.label.c_str(), "-", "-", "-", "-", "-", "-",
                  row.verdict.c_str());
    } else {
      std::printf("%-54s %8lld %6lld %10.3f %10.3f %7.2f %7.2f  %s\n", row.label.c_str(),
                  static_cast<long long>(row.launches), static_cast<long long>(row.host_syncs), row.moved / 1e9,
                  row.minimal / 1e9, row.ratio(), row.budget, row.verdict.c_str());
    }
    rows.push_back(row);
  }
  int failed = 0, counted = 0, within = 0;
  std::printf("\n");
  for (const TrafficRow& r : rows) {
    if (r.verdict == "raises") continue;
    ++counted;
    if (r.verdict == "ok" && r.ratio() <= kTargetFactor) ++within;
    if (r.verdict != "ok") ++failed;
    if (r.verdict == "ok" && r.budget != kTargetFactor)
      std::printf("  %s: excepted, held to %.2fx: %s\n", r.label.c_str(), r.budget, r.detail.c_str());
    else if (r.verdict != "ok")
      std::printf("  %s: %s%s%s\n", r.label.c_str(), r.verdict.c_str(), r.detail.empty() ? "" : ": ", r.detail.c_str());
  }
  for (const TrafficRow& r : rows)
    if (r.verdict == "raises")
      std::printf("  %s: not counted, verl refuses its defaults (%s)\n", r.label.c_str(), r.detail.c_str());
  if (only.empty())
    for (const std::string& s : StaleExceptions(rows, TrafficExceptions())) {
      std::printf("  %s\n", s.c_str());
      ++failed;
    }
  std::printf("\ntraffic: %d of %d functions within %.1fx of their minimal traffic\n", within, counted, kTargetFactor);
  return failed ? 1 : 0;
}

}  // namespace verlconf::bench
