// Exhaustive search: the framework streams the whole mapspace
// (mapex/mapspace.hpp) in disjoint chunks that TBB workers evaluate in
// place, and merges them in enumeration order (SearchContext::
// evaluate_space): the optimum for the objective, ties going to the
// earlier mapping, and optionally the latency-energy Pareto front, the same
// at any thread count. With an evaluation budget the search covers the
// first mappings in enumeration order and says so (`complete` is false).

#include <mapex/plugin.hpp>
#include <vector>

namespace {

class Exhaustive final : public mapex::Searcher {
 public:
  explicit Exhaustive(const mapex::Params& params) : pareto_(params.get_bool("pareto")) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const auto sweep = ctx.evaluate_space(ctx.mapspace(), pareto_);
    // The whole space streamed and nothing in it: it is empty (the sweep
    // is exact), not merely unlucky.
    if (sweep.complete && sweep.evaluated == 0) return {true, mapex::kEmptyMapspace};
    if (sweep.complete) return {true, "space exhausted"};
    return {false, "budget"};
  }

 private:
  bool pareto_;
};

const mapex::ParamSpec kParams[] = {
    {"pareto", mapex::ParamType::kBool, "false",
     "Also keep the latency-energy Pareto front of the space."},
};

mapex::Searcher* make(const mapex::Params& params) { return new Exhaustive(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "exhaustive",
    "1.0.0",
    "Evaluates every mapping of the mapspace (or the first ones, within the budget)",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
