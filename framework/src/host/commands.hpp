#pragma once
// The `mapex` command line (docs/design.md, Command line). Exit status: 0 success, 1 a run
// that failed, 2 bad usage or bad input.

#include <ostream>

namespace mapex::host {

/// The usage text of `mapex` (all commands), printed after a usage error.
const char* cli_usage();

int main_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace mapex::host
