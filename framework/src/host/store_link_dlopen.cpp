// The store commands in the `mapex` executable: libmapex_store.so is opened
// on first use, from the library folder next to the executable's (the same
// layout in the build tree and an installation), and never closed.

#include <dlfcn.h>

#include <boost/dll/runtime_symbol_info.hpp>
#include <mapex/error.hpp>

#include "host/store_commands.hpp"

namespace mapex::host {

int call_store_command(const std::string& command, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err) {
  const std::string path = (boost::dll::program_location().parent_path() / MAPEX_STORE_LIBRARY_PATH)
                               .lexically_normal()
                               .string();
  // RTLD_GLOBAL: Open MPI opens its own components later, and they resolve
  // libmpi's symbols in the global scope (a local libmpi makes MPI_Init fail).
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr)
    throw Error("`mapex " + command + "` needs " + path + ", which cannot be loaded: " + dlerror());
  auto* entry =
      reinterpret_cast<decltype(&mapex_store_command)>(dlsym(library, MAPEX_STORE_ENTRY_NAME));
  if (entry == nullptr)
    throw Error(path + " has no entry point '" MAPEX_STORE_ENTRY_NAME "'; rebuild mapex");
  return entry(command, args, out, err);
}

}  // namespace mapex::host
