#include "tools/bench/traffic.h"

int main(int argc, char** argv) { return verlconf::bench::TrafficMain(argc, argv); }
