// cuda_bench as a function: the `cuda_bench` binary's main, and one applet of the GPU
// bundle's multi-call binary (tools/gpu/verlconf_gpu.cc).
#pragma once

namespace verlconf::bench {

// Parses argv (argv[0] is the program) and runs the benchmark; the exit codes are
// cuda_bench.cc's.
int BenchMain(int argc, char** argv);

}  // namespace verlconf::bench
