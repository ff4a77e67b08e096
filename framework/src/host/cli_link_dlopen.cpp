// The full command line in the `mapex` executable: libmapex_cli.so is
// opened for every command but `version`, `help` and `evaluate --maestro`
// (cli_light.hpp says why), from the library folder next to the
// executable's (the same layout in the build tree and an installation), and
// never closed.

#include <dlfcn.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <mapex/error.hpp>

#include "host/cli_light.hpp"

namespace mapex::host {

int call_full_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const std::string path = (boost::dll::program_location().parent_path() / MAPEX_CLI_LIBRARY_PATH)
                               .lexically_normal()
                               .string();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    throw Error(std::string("`mapex ") + argv[1] + "` needs " + path +
                ", which cannot be loaded: " + dlerror());
  auto* entry = reinterpret_cast<decltype(&mapex_cli_main)>(dlsym(library, MAPEX_CLI_ENTRY_NAME));
  if (entry == nullptr)
    throw Error(path + " has no entry point '" MAPEX_CLI_ENTRY_NAME "'; rebuild mapex");
  return entry(argc, argv, out, err);
}

}  // namespace mapex::host
