// A second searcher called "random": the host must refuse the name and show
// both files.
#include <mapex/plugin.hpp>

namespace {
class Nothing final : public mapex::Searcher {
 public:
  mapex::SearchOutcome search(mapex::SearchContext&) const override { return {true, "nothing"}; }
};
mapex::Searcher* make(const mapex::Params&) { return new Nothing(); }
const mapex::PluginDescriptor kDescriptor{mapex::kPluginAbiVersion,
                                          MAPEX_BUILD_ID,
                                          mapex::PluginKind::kSearcher,
                                          "random",
                                          "0.0.1",
                                          "a duplicate name",
                                          nullptr,
                                          0,
                                          nullptr,
                                          &make};
}  // namespace

MAPEX_PLUGIN(kDescriptor)
