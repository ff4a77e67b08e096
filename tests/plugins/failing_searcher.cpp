// A searcher that evaluates a few mappings and then throws: the job must be
// recorded as failed with the message while the other jobs go on.
#include <mapex/plugin.hpp>
#include <random>
#include <stdexcept>
#include <vector>

namespace {
class Failing final : public mapex::Searcher {
 public:
  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    std::mt19937_64 rng(ctx.seed());
    std::vector<mapex::Mapping> batch;
    if (auto m = ctx.mapspace().sample(rng)) batch.push_back(*m);
    ctx.evaluate(batch);
    throw std::runtime_error("failing searcher gave up on purpose");
  }
};
mapex::Searcher* make(const mapex::Params&) { return new Failing(); }
const mapex::PluginDescriptor kDescriptor{mapex::kPluginAbiVersion,
                                          MAPEX_BUILD_ID,
                                          mapex::PluginKind::kSearcher,
                                          "failing",
                                          "0.0.1",
                                          "throws after one evaluation",
                                          nullptr,
                                          0,
                                          nullptr,
                                          &make};
}  // namespace

MAPEX_PLUGIN(kDescriptor)
