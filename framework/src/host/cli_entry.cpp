// The entry point the `mapex` executable finds in libmapex_cli.so.

#include "host/cli_light.hpp"
#include "host/commands.hpp"

extern "C" int mapex_cli_main(int argc, const char* const* argv, std::ostream& out,
                              std::ostream& err) {
  return mapex::host::main_cli(argc, argv, out, err);
}
