#include "tools/bench/cuda_bench.h"

int main(int argc, char** argv) { return verlconf::bench::BenchMain(argc, argv); }
