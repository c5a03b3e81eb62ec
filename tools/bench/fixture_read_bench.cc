// Times ReadFixtureFile on the files named on the command line (written by
// tools/bench/fixture_read_bench.py). A manual benchmark, not a test: it prints one
// line per file, "<path>: <cases> cases in <seconds> s (<microseconds> us/case)".
#include <chrono>
#include <cstdio>
#include <exception>

#include "tools/h5/h5io.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fixture_read_bench FILE.h5...\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    try {
      const auto t0 = std::chrono::steady_clock::now();
      const auto f = verlconf::fixtures::ReadFixtureFile(argv[i]);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s: %zu cases in %.3f s (%.1f us/case)\n", argv[i], f.cases.size(), s,
                  f.cases.empty() ? 0.0 : 1e6 * s / static_cast<double>(f.cases.size()));
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fixture_read_bench: %s\n", e.what());
      return 1;
    }
  }
  return 0;
}
