// A C++ framework's LibTorch implementation of verl's vanilla PPO loss (and the k3 /
// low_var_kl estimator) checked against verl's golden cases:
//
//   bazel run //tools/torch_api:example_vanilla                 # bundled goldens
//   bazel run //tools/torch_api:example_vanilla -- --goldens DIR
//   bazel run //tools/torch_api:example_vanilla -- --bug=no_clamp   # see a failure
//     (also --bug=wrong_sign; --bug=native_clamp: LibTorch's own clamp, boundary flips)
//
// The implementation is tools/torch_api/example_losses.cc; swap in your own function
// with the same signature (inputs as tensors + the case's config -> TorchResult).
// Exit code: 0 every case passed (or MISTRUSTED), 1 some case FAILED, 2 bad input.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "oracle/core/errors.h"
#include "tools/cli/paths.h"
#include "tools/h5/golden_set.h"
#include "tools/torch_api/example_losses.h"
#include "tools/torch_api/verlconf_torch.h"

using namespace verlconf;
using namespace verlconf::torch_api;

int main(int argc, char** argv) {
  std::string dir;
  example::Bug bug = example::Bug::kNone;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--goldens" && i + 1 < argc) {
      dir = tools::ResolveUserPath(argv[++i]);
    } else if (a == "--bug=no_clamp") {
      bug = example::Bug::kNoLogRatioClamp;
    } else if (a == "--bug=wrong_sign") {
      bug = example::Bug::kWrongSign;
    } else if (a == "--bug=native_clamp") {
      bug = example::Bug::kNativeClamp;
    } else {
      std::fprintf(stderr, "usage: example_vanilla [--goldens DIR] [--bug=no_clamp|wrong_sign|native_clamp]\n");
      return 2;
    }
  }
  try {
    if (dir.empty()) dir = tools::BundledGoldenDir(argv[0]);
    const fixtures::GoldenSet set = fixtures::GoldenSet::Load(dir);
    std::printf("goldens: %s (verl %s)\n\n", dir.c_str(), set.VerlVersion().c_str());
    std::vector<CaseReport> all;
    const struct {
      const char* function;
      CandidateFn fn;
    } checks[] = {
        {"vanilla", example::VanillaCandidate(bug)},
        {"low_var_kl", example::KlCandidate("low_var_kl")},
        {"k3", example::KlCandidate("k3")},
    };
    for (const auto& check : checks) {
      std::vector<CaseReport> reports = CheckAgainstGoldenSet(set, check.function, check.fn);
      all.insert(all.end(), reports.begin(), reports.end());
    }
    std::fputs(FormatReports(all).c_str(), stdout);
    for (const CaseReport& r : all)
      if (r.outcome == Outcome::kFailed) return 1;
    return 0;
  } catch (const BadInput& e) {
    std::fprintf(stderr, "example_vanilla: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_vanilla: internal error: %s\n", e.what());
    return 3;
  }
}
