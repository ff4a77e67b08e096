// The entry point the `mapex` executable finds in libmapex_store.so.

#include "host/store_commands.hpp"

extern "C" int mapex_store_command(const std::string& command, const std::vector<std::string>& args,
                                   std::ostream& out, std::ostream& err) {
  return mapex::host::store_command(command, args, out, err);
}
