#include <iostream>

#include "host/cli_light.hpp"

// Runs the commands that need no yaml-cpp or TBB here and hands the others
// to libmapex_cli.so (cli_light.hpp says why).
int main(int argc, char** argv) {
  return mapex::host::run_guarded(std::cerr, [&] {
    if (auto status = mapex::host::run_light_command(argc, argv, std::cout)) return *status;
    return mapex::host::call_full_cli(argc, argv, std::cout, std::cerr);
  });
}
