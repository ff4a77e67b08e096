// Exhaustive search: streams the whole mapspace (mapex/mapspace.hpp) in its
// fixed order and evaluates it batch by batch through the framework, which
// runs each batch in parallel. The best mapping is the framework's
// best-so-far, ties going to the earlier mapping in enumeration order, so
// the result does not depend on the thread count. With a budget the search
// stops early and says so (`complete` is false).

#include <mapex/plugin.hpp>
#include <vector>

namespace {

class Exhaustive final : public mapex::Searcher {
 public:
  explicit Exhaustive(const mapex::Params& params)
      : batch_size_(static_cast<std::size_t>(params.get_int("batch_size"))) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    mapex::Mapspace::Cursor cursor(ctx.mapspace());
    std::vector<mapex::Mapping> batch(batch_size_);
    for (;;) {
      std::size_t filled = 0;
      while (filled < batch_size_ && cursor.next(batch[filled])) ++filled;
      if (filled == 0) return {true, "space exhausted"};
      const auto results = ctx.evaluate(std::span<const mapex::Mapping>(batch.data(), filled));
      if (results.size() < filled) return {false, "budget"};
      if (filled < batch_size_) return {true, "space exhausted"};
      if (ctx.exhausted()) {
        // The budget ends exactly at a batch boundary: finished only if
        // nothing is left.
        mapex::Mapping probe;
        if (!cursor.next(probe)) return {true, "space exhausted"};
        return {false, "budget"};
      }
    }
  }

 private:
  std::size_t batch_size_;
};

const mapex::ParamSpec kParams[] = {
    {"batch_size", mapex::ParamType::kInt, "2048",
     "Mappings handed to the framework per parallel evaluation batch."},
};

mapex::Searcher* make(const mapex::Params& params) {
  if (params.get_int("batch_size") < 1)
    throw mapex::InputError(mapex::SourceLocation{}, "batch_size",
                            "parameter of searcher 'exhaustive' must be at least 1");
  return new Exhaustive(params);
}

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
