// A plugin that claims another ABI version: the host must refuse it and
// name both versions.
#include <mapex/plugin.hpp>

namespace {
const mapex::PluginDescriptor kDescriptor{mapex::kPluginAbiVersion + 100,
                                          MAPEX_BUILD_ID,
                                          mapex::PluginKind::kSearcher,
                                          "broken_abi",
                                          "0.0.1",
                                          "built for a future ABI",
                                          nullptr,
                                          0,
                                          nullptr,
                                          nullptr};
}  // namespace

MAPEX_PLUGIN(kDescriptor)
