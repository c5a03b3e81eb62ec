#include "tools/cli/conform_main.h"

int main(int argc, char** argv) { return verlconf::tools::ConformMain(argc, argv); }
