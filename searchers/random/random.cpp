// Random search in the manner of Timeloop's random mapper: draw mappings
// from the mapspace with a seeded generator, evaluate them in parallel
// batches through the framework, keep the best. Stops at the budget
// (evaluations or seconds, owned by the framework) or at the victory
// condition: N consecutive samples without improvement. Samples are drawn
// on the searching thread in a fixed order, so a seed gives the same result
// at any thread count.

#include <algorithm>
#include <mapex/plugin.hpp>
#include <random>
#include <vector>

namespace {

class RandomSearch final : public mapex::Searcher {
 public:
  explicit RandomSearch(const mapex::Params& params)
      : batch_size_(static_cast<std::size_t>(params.get_int("batch_size"))),
        victory_(static_cast<std::uint64_t>(params.get_int("victory_condition"))),
        attempts_(static_cast<int>(params.get_int("max_attempts"))) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    if (ctx.budget().max_evaluations == 0 && ctx.budget().max_seconds <= 0 && victory_ == 0)
      throw mapex::InputError(mapex::SourceLocation{}, "victory_condition",
                              "searcher 'random' needs a budget (evaluations or seconds) or a "
                              "victory_condition, or it would never stop");
    // An empty space (exact count 0, Mapspace::size) has nothing to draw:
    // say so rather than fail every draw.
    if (ctx.mapspace().size() == 0) return {true, mapex::kEmptyMapspace};
    std::mt19937_64 rng(ctx.seed());
    std::uint64_t streak = 0;  // consecutive samples without improvement
    std::vector<mapex::Mapping> batch;
    for (;;) {
      std::size_t want = batch_size_;
      if (victory_)
        want = static_cast<std::size_t>(std::min<std::uint64_t>(want, victory_ - streak));
      batch.clear();
      for (std::size_t i = 0; i < want; ++i) {
        auto m = ctx.mapspace().sample(rng, attempts_);
        if (!m) break;
        batch.push_back(std::move(*m));
      }
      if (batch.empty()) {
        // Every draw overflowed a buffer: when no mapping fits at all (the
        // enumeration finds none), the space is empty after capacity.
        if (ctx.evaluations() == 0) {
          mapex::Mapspace::Cursor cursor(ctx.mapspace());
          mapex::Mapping first;
          if (!cursor.next(first)) return {true, mapex::kEmptyMapspace};
        }
        return {false, "no valid mapping in " + std::to_string(attempts_) + " draws"};
      }
      const std::uint64_t before = ctx.evaluations();
      const std::size_t trace_before = ctx.trace().size();
      const auto results = ctx.evaluate(batch);
      // Samples since the last improvement, in evaluation order.
      if (ctx.trace().size() > trace_before)
        streak = before + results.size() - ctx.trace().back().evaluation;
      else
        streak += results.size();
      if (results.size() < batch.size() || ctx.exhausted()) return {false, "budget"};
      if (victory_ && streak >= victory_) return {false, "victory condition"};
    }
  }

 private:
  std::size_t batch_size_;
  std::uint64_t victory_;
  int attempts_;
};

const mapex::ParamSpec kParams[] = {
    {"batch_size", mapex::ParamType::kInt, "256", "Samples drawn per parallel evaluation batch."},
    {"victory_condition", mapex::ParamType::kInt, "0",
     "Stop after this many consecutive samples without improvement (0: off)."},
    {"max_attempts", mapex::ParamType::kInt, "1000",
     "Draws per sample before giving up on finding a mapping that passes the constraints."},
};

mapex::Searcher* make(const mapex::Params& params) {
  for (const char* key : {"batch_size", "max_attempts"})
    if (params.get_int(key) < 1)
      throw mapex::InputError(mapex::SourceLocation{}, key,
                              "parameter of searcher 'random' must be at least 1");
  if (params.get_int("victory_condition") < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "victory_condition",
                            "parameter of searcher 'random' must be 0 (off) or positive");
  return new RandomSearch(params);
}

const mapex::PluginDescriptor kDescriptor{mapex::kPluginAbiVersion,
                                          MAPEX_BUILD_ID,
                                          mapex::PluginKind::kSearcher,
                                          "random",
                                          "1.0.0",
                                          "Seeded uniform sampling of the mapspace with a budget "
                                          "and a victory condition (Timeloop-style)",
                                          kParams,
                                          std::size(kParams),
                                          nullptr,
                                          &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
