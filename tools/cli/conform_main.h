// The conform command line as a function: the `conform` binary's main, and one applet of
// the GPU bundle's multi-call binary (tools/gpu/verlconf_gpu.cc), which carries every
// program that embeds cuda_impl's device code once instead of once per program.
#pragma once

namespace verlconf::tools {

// Parses argv (argv[0] is the program), runs the command, and returns its exit code
// (tools/cli/commands.h); prints the error and exits with a distinct code on bad input.
int ConformMain(int argc, char** argv);

}  // namespace verlconf::tools
