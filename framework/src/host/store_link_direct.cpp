// The store commands linked into the same binary (tests, mapex-flash, and
// libmapex_store.so itself): a plain call.

#include "host/store_commands.hpp"

namespace mapex::host {

int call_store_command(const std::string& command, const std::vector<std::string>& args,
                       std::ostream& out, std::ostream& err) {
  return store_command(command, args, out, err);
}

}  // namespace mapex::host
