// verlconf_gpu: the GPU bundle's programs in one binary. Each program that links
// cuda_impl embeds all of its device code (megabytes per family); the device tool
// carries 64 MiB with the working tree, so the bundle carries that code once. The
// program is chosen by the name it is called under (the bundle's symlinks) or by the
// first argument:
//
//   verlconf_gpu conform ARGS...               the conform command line
//   verlconf_gpu cuda_bench ARGS...            the benchmark
//   verlconf_gpu tools_gpu_cuda_test ARGS...  the device tests (GoogleTest flags)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/bench/cuda_bench.h"
#include "tools/cli/conform_main.h"

namespace {

int RunTests(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

struct Applet {
  const char* name;
  int (*main)(int, char**);
};

constexpr Applet kApplets[] = {
    {"conform", verlconf::tools::ConformMain},
    {"cuda_bench", verlconf::bench::BenchMain},
    {"tools_gpu_cuda_test", RunTests},
};

const Applet* Find(const char* name) {
  for (const Applet& a : kApplets)
    if (std::strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

int Usage() {
  std::fprintf(stderr, "usage: verlconf_gpu PROGRAM [ARGS...], PROGRAM one of:");
  for (const Applet& a : kApplets) std::fprintf(stderr, " %s", a.name);
  std::fprintf(stderr, "\n(or call it through a link of that name)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* slash = std::strrchr(argv[0], '/');
  if (const Applet* a = Find(slash ? slash + 1 : argv[0])) return a->main(argc, argv);
  if (argc < 2) return Usage();
  if (const Applet* a = Find(argv[1])) return a->main(argc - 1, argv + 1);
  std::fprintf(stderr, "verlconf_gpu: unknown program '%s'\n", argv[1]);
  return Usage();
}
