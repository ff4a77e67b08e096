// Simulated annealing over the mapspace (Kirkpatrick, Gelatt and Vecchi,
// Science 1983), the black-box baseline mapper studies put beside the
// seed searchers, with a final local search.
//
// The start is the best of `initial_samples` uniform draws (5% of an
// evaluation budget by default), so the chain begins where random sampling
// would have got with that many. Each step proposes `batch_size` random
// neighbours of the current mapping that were not evaluated before
// (mapex/moves.hpp: one tile or split moved to the s-th nearest admitted
// value, s up to `max_stride`, or two running loops swapped; a
// `transfer_share` of them one or two factors of a trip count moved
// between levels; a `graft_share` the splits of a fresh draw), evaluates
// them together, and moves to one of them or stays, drawn with heat-bath
// weights exp(-delta / T) (staying weighs 1), where delta is the
// difference of the objective's logarithms to the current value (so the
// schedule means the same on any layer: at T = 0.1 a move 10% worse weighs
// about two fifths of staying). T falls geometrically from
// `initial_temperature` to `final_temperature` over the steps: `steps`
// when given, else as many as the evaluation budget allows after the start
// and the final descent, else 1,000. A chain that has not improved its
// best for `patience` steps, or has no new move, goes back to the best
// mapping found so far.
//
// The last `descent_share` of an evaluation budget is a steepest descent
// over every neighbour of the best mapping (MapspaceMoves::neighbours, and
// with transfers in use MapspaceMoves::transfers), taking the best
// improving one until none improves; the rest of the budget then goes to
// iterated local search (Lourenco, Martin and Stuetzle, Handbook of
// Metaheuristics 2003): a kick from the best (about every other one the
// splits of a fresh draw, else a few long random moves) and a descent from
// there. Annealing finds the right region; the descent settles the last
// tile and split of it, which random moves in a batch of 16 find only by
// chance; the grafted kicks compare other uses of the PE array, each at
// its own local minimum (on a compute-bound layer a chain settles on one
// use of the array, every neighbour ties or is worse, and a graft is worse
// until its tiles are settled). Without an evaluation budget the search
// ends at the first local minimum; with `descent_share` 0 there is no
// descent.
//
// Candidates are drawn on the searching thread with the job's seed and
// evaluated through the framework, which returns them in order, so a seed
// gives the same result at any thread count.

#include <algorithm>
#include <cmath>
#include <limits>
#include <mapex/moves.hpp>
#include <mapex/plugin.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

struct Settings {
  std::size_t batch_size;
  double initial_temperature;
  double final_temperature;
  std::uint64_t steps;
  std::uint64_t initial_samples;
  int max_stride;
  std::uint64_t patience;
  double descent_share;
  double transfer_share;
  double graft_share;
};

/// A mapping and its objective value.
struct Point {
  mapex::Mapping mapping;
  double value;
};

class Annealing final : public mapex::Searcher {
 public:
  explicit Annealing(Settings s) : s_(s) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const mapex::Mapspace& space = ctx.mapspace();
    if (space.size() == 0) return {true, mapex::kEmptyMapspace};
    const mapex::MapspaceMoves moves(space);
    mapex::VisitedMappings visited(space);
    std::mt19937_64 rng(ctx.seed());
    // The start: the best of `initial_samples` uniform draws, so the chain
    // begins where random sampling would have got with that many.
    std::optional<Point> current = best_of_draws(ctx, rng, start_samples(ctx), visited);
    if (!current) return stop(ctx, "no mapping drawn from the space");
    if (!anneal(ctx, moves, visited, rng, *current)) return stop(ctx, "budget");
    if (s_.descent_share <= 0) return stop(ctx, "schedule done");
    return descend(ctx, moves, visited, rng);
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  Settings s_;

  /// The annealing steps; false when the budget ran out during them.
  bool anneal(mapex::SearchContext& ctx, const mapex::MapspaceMoves& moves,
              mapex::VisitedMappings& visited, std::mt19937_64& rng, Point& current) const {
    const std::uint64_t steps = schedule_length(ctx);
    const std::uint64_t stop_at = annealing_budget(ctx);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    double chain_best = current.value;
    std::uint64_t since_improvement = 0;
    bool fresh_from_best = false;
    for (std::uint64_t k = 0; k < steps; ++k) {
      if (ctx.exhausted()) return false;
      if (stop_at > 0 && ctx.evaluations() >= stop_at) break;
      const std::vector<mapex::Mapping> batch =
          new_neighbours(moves, visited, rng, current.mapping);
      // No new move from here, or a chain that stopped improving: go back
      // to the best found so far (once in a row: a best without new moves
      // ends the annealing).
      if (batch.empty() || (s_.patience > 0 && since_improvement >= s_.patience)) {
        if (batch.empty() && fresh_from_best) break;
        if (ctx.best_mapping()) current = {*ctx.best_mapping(), ctx.best_value()};
        chain_best = current.value;
        since_improvement = 0;
        fresh_from_best = true;
        continue;
      }
      fresh_from_best = false;
      const std::vector<mapex::Metrics> metrics = ctx.evaluate(batch);
      // Drawn every step, used or not, so the stream of draws does not
      // depend on the outcomes.
      const double u = unit(rng);
      if (auto next = heat_bath(ctx, batch, metrics, current.value, temperature(k, steps), u))
        current = std::move(*next);
      if (current.value < chain_best) {
        chain_best = current.value;
        since_improvement = 0;
      } else {
        ++since_improvement;
      }
      if (metrics.size() < batch.size()) return false;
    }
    return true;
  }

  /// Steepest descent from the best mapping, then (with an evaluation
  /// budget) iterated local search until the budget is spent.
  mapex::SearchOutcome descend(mapex::SearchContext& ctx, const mapex::MapspaceMoves& moves,
                               mapex::VisitedMappings& visited, std::mt19937_64& rng) const {
    if (!ctx.best_mapping()) return stop(ctx, "no valid mapping found");
    Point at{*ctx.best_mapping(), ctx.best_value()};
    for (;;) {
      if (ctx.exhausted()) return stop(ctx, "budget");
      std::vector<mapex::Mapping> batch;
      for (auto& n : neighbourhood(moves, at.mapping))
        if (visited.insert(n)) batch.push_back(std::move(n));
      if (!batch.empty()) {
        const std::vector<mapex::Metrics> metrics = ctx.evaluate(batch);
        const std::optional<Point> best = best_of(ctx, batch, metrics);
        if (best && best->value < at.value) {
          at = *best;
          continue;
        }
        if (metrics.size() < batch.size()) return stop(ctx, "budget");
      }
      // A local minimum. Without an evaluation budget the search ends
      // here; with one, a perturbation of the best restarts the descent.
      if (ctx.budget().max_evaluations == 0) return stop(ctx, "local minimum");
      const std::optional<Point> kicked = kick(ctx, moves, visited, rng);
      if (!kicked) return stop(ctx, "local minimum");
      at = *kicked;
    }
  }

  /// A new mapping near the best, evaluated: the best moved by three long
  /// random moves (more after repeated tries that land on mappings already
  /// evaluated), else a fresh uniform draw. Nothing when none comes of a
  /// few tries of each or the budget is spent.
  std::optional<Point> kick(mapex::SearchContext& ctx, const mapex::MapspaceMoves& moves,
                            mapex::VisitedMappings& visited, std::mt19937_64& rng) const {
    constexpr int kTries = 16;
    std::optional<mapex::Mapping> fresh;
    // With grafts in use, every other kick (on average) takes the splits of
    // a fresh draw: the descent then settles another use of the PE array.
    const bool graft = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < 0.5;
    for (int attempt = 0; attempt < kTries && !fresh && graft && s_.graft_share > 0; ++attempt)
      if (const auto draw = ctx.mapspace().sample(rng))
        if (auto m = moves.graft_splits(*ctx.best_mapping(), *draw); m && visited.insert(*m))
          fresh = std::move(*m);
    for (int attempt = 0; attempt < kTries && !fresh; ++attempt) {
      mapex::Mapping m = *ctx.best_mapping();
      for (int i = 0; i < 3 + attempt / 2; ++i)
        if (auto n = moves.random_neighbour(m, rng, 64, s_.max_stride)) m = std::move(*n);
      if (visited.insert(m)) fresh = std::move(m);
    }
    for (int attempt = 0; attempt < kTries && !fresh; ++attempt)
      if (auto m = ctx.mapspace().sample(rng); m && visited.insert(*m)) fresh = std::move(*m);
    if (!fresh) return std::nullopt;
    const std::vector<mapex::Mapping> one{*fresh};
    const std::vector<mapex::Metrics> metrics = ctx.evaluate(one);
    if (metrics.empty()) return std::nullopt;
    return Point{std::move(*fresh), mapex::objective_value(metrics[0], ctx.objective())};
  }

  /// Up to `batch_size` random neighbours of `from` not evaluated before:
  /// a `transfer_share` of them compound moves (one or two factors moved
  /// between levels, MapspaceMoves::random_transfer), the others one-value
  /// moves or swaps.
  std::vector<mapex::Mapping> new_neighbours(const mapex::MapspaceMoves& moves,
                                             mapex::VisitedMappings& visited, std::mt19937_64& rng,
                                             const mapex::Mapping& from) const {
    std::vector<mapex::Mapping> batch;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::size_t i = 0; i < 4 * s_.batch_size && batch.size() < s_.batch_size; ++i) {
      // Drawn for every proposal, so the stream of draws is the same
      // whatever the moves return.
      const double kind = unit(rng);
      std::optional<mapex::Mapping> n;
      if (kind < s_.graft_share) {
        if (const auto draw = moves.space().sample(rng)) n = moves.graft_splits(from, *draw);
      } else if (kind < s_.graft_share + s_.transfer_share) {
        const bool one = kind < s_.graft_share + s_.transfer_share / 2;
        n = moves.random_transfer(from, rng, one ? 1 : 2);
      } else {
        n = moves.random_neighbour(from, rng, 64, s_.max_stride);
      }
      if (n && visited.insert(*n)) batch.push_back(std::move(*n));
    }
    return batch;
  }

  /// The descent's neighbourhood: every one-value move and swap, and with
  /// compound moves in use every single-factor transfer.
  std::vector<mapex::Mapping> neighbourhood(const mapex::MapspaceMoves& moves,
                                            const mapex::Mapping& at) const {
    std::vector<mapex::Mapping> out = moves.neighbours(at);
    if (s_.transfer_share > 0)
      for (auto& n : moves.transfers(at)) out.push_back(std::move(n));
    return out;
  }

  /// The best valid result of a batch, if any (ties to the first).
  static std::optional<Point> best_of(const mapex::SearchContext& ctx,
                                      const std::vector<mapex::Mapping>& batch,
                                      const std::vector<mapex::Metrics>& metrics) {
    std::optional<Point> out;
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      const double v = mapex::objective_value(metrics[i], ctx.objective());
      if (std::isfinite(v) && (!out || v < out->value)) out = Point{batch[i], v};
    }
    return out;
  }

  // Draws for the start: the parameter, else 5% of an evaluation budget
  // (at least one batch), else 256.
  std::uint64_t start_samples(const mapex::SearchContext& ctx) const {
    if (s_.initial_samples > 0) return s_.initial_samples;
    const std::uint64_t budget = ctx.budget().max_evaluations;
    if (budget > 0) return std::max<std::uint64_t>(s_.batch_size, budget / 20);
    return 256;
  }

  // Evaluations before the descent: all but its share of the budget (0:
  // no evaluation budget, the steps decide).
  std::uint64_t annealing_budget(const mapex::SearchContext& ctx) const {
    const std::uint64_t budget = ctx.budget().max_evaluations;
    return budget - static_cast<std::uint64_t>(s_.descent_share * static_cast<double>(budget));
  }

  // Steps: the parameter, else what the annealing budget leaves after the
  // start, else 1,000.
  std::uint64_t schedule_length(const mapex::SearchContext& ctx) const {
    if (s_.steps > 0) return s_.steps;
    const std::uint64_t budget = annealing_budget(ctx);
    const std::uint64_t start = start_samples(ctx);
    if (budget > start) return (budget - start + s_.batch_size - 1) / s_.batch_size;
    if (ctx.budget().max_evaluations > 0) return 1;
    return 1000;
  }

  double temperature(std::uint64_t k, std::uint64_t steps) const {
    const double f = steps > 1 ? static_cast<double>(k) / static_cast<double>(steps - 1) : 1.0;
    return s_.initial_temperature * std::pow(s_.final_temperature / s_.initial_temperature, f);
  }

  // The next state among the batch and staying put, drawn with heat-bath
  // weights exp(-delta / T) (delta: the difference of the objective's
  // logarithms to the current value; staying weighs 1), with `u` uniform in
  // [0, 1). Unlike taking the best of the batch, a worse move can win over
  // moves of equal value: on a plateau (a compute-bound use of the PE
  // array, where most neighbours tie) the best of a batch is always another
  // tie and the chain never climbs out. Nothing: stay. An invalid current
  // mapping (value +inf, or a value of 0 that has no logarithm) takes the
  // best valid proposal.
  static std::optional<Point> heat_bath(const mapex::SearchContext& ctx,
                                        const std::vector<mapex::Mapping>& batch,
                                        const std::vector<mapex::Metrics>& metrics, double current,
                                        double t, double u) {
    if (!std::isfinite(current) || !(current > 0)) return best_of(ctx, batch, metrics);
    std::vector<double> log_weight(metrics.size(), -kInf);
    double top = 0;  // staying: log weight 0
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      const double v = mapex::objective_value(metrics[i], ctx.objective());
      if (!std::isfinite(v) || !(v > 0)) continue;
      log_weight[i] = -(std::log(v) - std::log(current)) / t;
      top = std::max(top, log_weight[i]);
    }
    double total = std::exp(-top);
    for (double w : log_weight) total += std::exp(w - top);
    double target = u * total - std::exp(-top);
    if (target < 0) return std::nullopt;
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      target -= std::exp(log_weight[i] - top);
      if (target < 0 && std::isfinite(log_weight[i]))
        return Point{batch[i], mapex::objective_value(metrics[i], ctx.objective())};
    }
    return std::nullopt;
  }

  // The best of `count` uniform draws, evaluated a batch at a time (an
  // invalid one only when no draw is valid). Nothing when the space yields
  // no draw at all or the budget ran out before the first batch.
  std::optional<Point> best_of_draws(mapex::SearchContext& ctx, std::mt19937_64& rng,
                                     std::uint64_t count, mapex::VisitedMappings& visited) const {
    std::optional<Point> out;
    std::vector<mapex::Mapping> draws;
    for (std::uint64_t done = 0; done < count && !ctx.exhausted();) {
      draws.clear();
      for (std::size_t i = 0; i < s_.batch_size && done < count; ++i, ++done)
        if (auto m = ctx.mapspace().sample(rng)) draws.push_back(std::move(*m));
      if (draws.empty()) break;
      const std::vector<mapex::Metrics> metrics = ctx.evaluate(draws);
      for (std::size_t i = 0; i < metrics.size(); ++i) {
        visited.insert(draws[i]);
        const double v = mapex::objective_value(metrics[i], ctx.objective());
        if (!out || v < out->value) out = Point{draws[i], v};
      }
    }
    return out;
  }

  static mapex::SearchOutcome stop(const mapex::SearchContext& ctx, const std::string& why) {
    return {false, ctx.exhausted() ? std::string("budget") : why};
  }
};

const mapex::ParamSpec kParams[] = {
    {"batch_size", mapex::ParamType::kInt, "16",
     "Neighbours proposed per step, evaluated together; the best is the proposal."},
    {"initial_temperature", mapex::ParamType::kDouble, "0.1",
     "Temperature of the first step, in units of the objective's natural logarithm."},
    {"final_temperature", mapex::ParamType::kDouble, "0.001",
     "Temperature of the last step (geometric cooling between the two)."},
    {"steps", mapex::ParamType::kInt, "0",
     "Annealing steps; 0: what the evaluation budget leaves after the start / batch_size, or "
     "1000 without one."},
    {"initial_samples", mapex::ParamType::kInt, "0",
     "Uniform draws whose best is the start; 0: 5% of the evaluation budget, or 256."},
    {"max_stride", mapex::ParamType::kInt, "4",
     "A tile or split moves to the s-th nearest admitted value, s uniform in [1, max_stride]."},
    {"patience", mapex::ParamType::kInt, "100",
     "Steps without improving the chain's best before it goes back to the best found; 0: never."},
    {"descent_share", mapex::ParamType::kDouble, "0.25",
     "Share of an evaluation budget kept for the final steepest descent and iterated local "
     "search from the best mapping; 0: no descent (annealing alone)."},
    {"transfer_share", mapex::ParamType::kDouble, "0.5",
     "Share of the proposals that move a factor of a dimension's trip count between two levels "
     "(one or two at once, keeping the product), which stay valid on a nearly full PE array "
     "where one-value moves are refused; the descent then tries every single transfer too. 0: "
     "one-value moves and swaps only."},
    {"graft_share", mapex::ParamType::kDouble, "0.1",
     "Share of the proposals that take the splits of a fresh uniform draw (with the tiles of the "
     "dimensions it splits differently, MapspaceMoves::graft_splits): a jump to another use of "
     "the PE array; 0: none."},
};

mapex::Searcher* make(const mapex::Params& params) {
  const std::int64_t batch = params.get_int("batch_size"), steps = params.get_int("steps");
  const double t0 = params.get_double("initial_temperature"),
               t1 = params.get_double("final_temperature");
  if (batch < 1 || batch > 65536)
    throw mapex::InputError(mapex::SourceLocation{}, "batch_size",
                            "searcher 'annealing' needs batch_size in [1, 65536]");
  if (steps < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "steps",
                            "searcher 'annealing' needs steps >= 0 (0: from the budget)");
  if (!(t0 > 0) || !std::isfinite(t0))
    throw mapex::InputError(mapex::SourceLocation{}, "initial_temperature",
                            "searcher 'annealing' needs a finite initial_temperature > 0");
  if (!(t1 > 0) || !(t1 <= t0))
    throw mapex::InputError(mapex::SourceLocation{}, "final_temperature",
                            "searcher 'annealing' needs 0 < final_temperature <= "
                            "initial_temperature");
  const std::int64_t samples = params.get_int("initial_samples"),
                     stride = params.get_int("max_stride"), patience = params.get_int("patience");
  if (samples < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "initial_samples",
                            "searcher 'annealing' needs initial_samples >= 0 (0: from the budget)");
  if (stride < 1 || stride > 1024)
    throw mapex::InputError(mapex::SourceLocation{}, "max_stride",
                            "searcher 'annealing' needs max_stride in [1, 1024]");
  if (patience < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "patience",
                            "searcher 'annealing' needs patience >= 0 (0: never restart)");
  const double share = params.get_double("descent_share");
  if (!(share >= 0 && share < 1))
    throw mapex::InputError(mapex::SourceLocation{}, "descent_share",
                            "searcher 'annealing' needs descent_share in [0, 1)");
  const double transfers = params.get_double("transfer_share");
  const double grafts = params.get_double("graft_share");
  if (!(transfers >= 0 && transfers <= 1))
    throw mapex::InputError(mapex::SourceLocation{}, "transfer_share",
                            "searcher 'annealing' needs transfer_share in [0, 1]");
  if (!(grafts >= 0 && grafts + transfers <= 1))
    throw mapex::InputError(mapex::SourceLocation{}, "graft_share",
                            "searcher 'annealing' needs graft_share >= 0 and graft_share + "
                            "transfer_share <= 1");
  return new Annealing(Settings{static_cast<std::size_t>(batch), t0, t1,
                                static_cast<std::uint64_t>(steps),
                                static_cast<std::uint64_t>(samples), static_cast<int>(stride),
                                static_cast<std::uint64_t>(patience), share, transfers, grafts});
}

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "annealing",
    "1.0.0",
    "Simulated annealing over mapspace moves, with a seeded geometric schedule",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
