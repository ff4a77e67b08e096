// Template searcher: steepest descent over loop orders from random starts.
//
// A mapping's loop order at each buffer level decides which tensor stays
// put while the others stream (the stationarity of MAESTRO §II and
// Timeloop's permutations), so two mappings with the same tiles can differ
// by several times in traffic. This searcher draws a start uniformly from
// the mapspace, then repeatedly evaluates every neighbour that swaps two
// loops of one level (loops with one trip are skipped: swapping them moves
// nothing) and moves to the best one while it improves; at a local optimum
// it restarts from a new draw. Neighbours the job's constraints forbid
// (fixed orders, pinned innermost loops) are dropped with the mapspace's
// own membership test, so the search stays inside the job's space.
//
// It shows what a searcher needs: a seeded generator (the same seed gives
// the same result at any thread count, because candidates are made on the
// searching thread in a fixed order and `evaluate` returns results in
// order), batches handed to the framework, which owns the budget and the
// best-so-far, and an honest stop reason.
//
// Copy this folder to start a searcher: keep one descriptor and one
// MAPEX_PLUGIN line per shared object, include only <mapex/...> headers,
// and build with mapex_add_plugin (see ../../README.md).

#include <mapex/plugin.hpp>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace {

class OrderDescent final : public mapex::Searcher {
 public:
  explicit OrderDescent(const mapex::Params& params)
      : restarts_(static_cast<std::uint64_t>(params.get_int("restarts"))) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const mapex::Mapspace& space = ctx.mapspace();
    if (space.size() == 0) return {true, mapex::kEmptyMapspace};
    std::mt19937_64 rng(ctx.seed());
    for (std::uint64_t start = 0; start < restarts_; ++start) {
      if (ctx.exhausted()) return {false, "budget"};
      std::optional<mapex::Mapping> current = space.sample(rng);
      if (!current) return {false, "no start drawn from the mapspace"};
      const std::vector<mapex::Metrics> first = ctx.evaluate(std::span(&*current, 1));
      if (first.empty()) return {false, "budget"};
      double value = mapex::objective_value(first.front(), ctx.objective());
      // Descend while some neighbour is strictly better.
      for (;;) {
        const std::vector<mapex::Mapping> moves = neighbours(ctx, *current);
        if (moves.empty()) break;
        const std::vector<mapex::Metrics> metrics = ctx.evaluate(moves);
        std::optional<std::size_t> best;
        double best_value = value;
        for (std::size_t i = 0; i < metrics.size(); ++i) {
          const double v = mapex::objective_value(metrics[i], ctx.objective());
          if (v < best_value) best_value = v, best = i;
        }
        if (!best) break;  // a local optimum (or the budget cut the batch short)
        current = moves[*best];
        value = best_value;
      }
    }
    return {false, "restarts done"};
  }

 private:
  std::uint64_t restarts_;

  // Every mapping that swaps two loops of one buffer or DRAM level's order,
  // both with more than one trip there, and that the job's space admits.
  static std::vector<mapex::Mapping> neighbours(const mapex::SearchContext& ctx,
                                                const mapex::Mapping& at) {
    const mapex::Operator& op = ctx.op();
    const mapex::Architecture& arch = ctx.arch();
    std::vector<mapex::Mapping> out;
    std::vector<std::int64_t> below(static_cast<std::size_t>(op.num_dims()), 1);
    for (int l = 0; l < arch.num_levels(); ++l) {
      const std::vector<std::int64_t> span = at.span(op, arch, l);
      const mapex::LevelMapping& lm = at.level(l);
      // A spatial level's order places its splits on the array; it is not
      // a loop order.
      if (arch.levels()[static_cast<std::size_t>(l)].kind != mapex::LevelKind::kSpatial) {
        for (std::size_t i = 0; i < lm.order.size(); ++i) {
          for (std::size_t j = i + 1; j < lm.order.size(); ++j) {
            if (!has_trips(span, below, lm.order[i]) || !has_trips(span, below, lm.order[j]))
              continue;
            mapex::Mapping next = at;
            std::swap(next.level(l).order[i], next.level(l).order[j]);
            if (!ctx.mapspace().reject_reason(next)) out.push_back(std::move(next));
          }
        }
      }
      below = span;
    }
    return out;
  }

  // A loop of a level runs span / span-below trips (rounded up: edge tiles).
  static bool has_trips(const std::vector<std::int64_t>& span,
                        const std::vector<std::int64_t>& below, mapex::DimId d) {
    const auto i = static_cast<std::size_t>(d);
    return span[i] > below[i];
  }
};

const mapex::ParamSpec kParams[] = {
    {"restarts", mapex::ParamType::kInt, "8",
     "Random starts, each followed by steepest descent over loop-order swaps."},
};

mapex::Searcher* make(const mapex::Params& params) {
  if (params.get_int("restarts") < 1)
    throw mapex::InputError(mapex::SourceLocation{}, "restarts",
                            "searcher 'order_descent' needs restarts >= 1");
  return new OrderDescent(params);
}

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "order_descent",
    "1.0.0",
    "Steepest descent over loop-order swaps from random starts (template searcher)",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
