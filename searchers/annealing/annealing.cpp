// Simulated annealing over the mapspace (Kirkpatrick, Gelatt and Vecchi,
// Science 1983), the black-box baseline mapper studies put beside the
// seed searchers.
//
// The start is the best of `initial_samples` uniform draws (5% of an
// evaluation budget by default), so the chain begins where random sampling
// would have got with that many. Each step proposes `batch_size` random
// neighbours of the current mapping (mapex/moves.hpp: one tile or split
// moved to the s-th nearest admitted value, s up to `max_stride`, or two
// running loops swapped), evaluates them together, and takes the
// best of them as the proposal; the proposal replaces the current mapping
// when it is better, or with probability exp(-delta / T) when it is worse,
// where delta is the difference of the objective's logarithms (so the
// schedule means the same on any layer: at T = 0.1 a move 10% worse is
// taken about two times in five). T falls geometrically from
// `initial_temperature` to `final_temperature` over the steps: `steps`
// when given, else as many as the evaluation budget allows, else 1,000. A
// chain that has not improved its best for `patience` steps, or has no
// admitted move, restarts from the best of a fresh batch.
//
// Candidates are drawn on the searching thread with the job's seed and
// evaluated through the framework, which returns them in order, so a seed
// gives the same result at any thread count.

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
};

class Annealing final : public mapex::Searcher {
 public:
  explicit Annealing(Settings s) : s_(s) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const mapex::Mapspace& space = ctx.mapspace();
    if (space.size() == 0) return {true, mapex::kEmptyMapspace};
    const mapex::MapspaceMoves moves(space);
    std::mt19937_64 rng(ctx.seed());
    const std::uint64_t steps = schedule_length(ctx);

    std::optional<mapex::Mapping> current;
    double value = kInf;
    // The start: the best of `initial_samples` uniform draws, so the chain
    // begins where random sampling would have got with that many.
    if (!restart(ctx, rng, start_samples(ctx), current, value))
      return stop(ctx, "no mapping drawn from the space");
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<mapex::Mapping> batch;
    double chain_best = value;
    std::uint64_t since_improvement = 0;
    for (std::uint64_t k = 0; k < steps; ++k) {
      if (ctx.exhausted()) return stop(ctx, "budget");
      const double t = temperature(k, steps);
      batch.clear();
      for (std::size_t i = 0; i < s_.batch_size; ++i)
        if (auto n = moves.random_neighbour(*current, rng, 64, s_.max_stride))
          batch.push_back(std::move(*n));
      // No admitted move from here, or a chain that stopped improving:
      // start again from a fresh batch.
      if (batch.empty() || (s_.patience > 0 && since_improvement >= s_.patience)) {
        if (!restart(ctx, rng, s_.batch_size, current, value))
          return stop(ctx, "no mapping drawn from the space");
        chain_best = value;
        since_improvement = 0;
        continue;
      }
      const std::vector<mapex::Metrics> metrics = ctx.evaluate(batch);
      std::size_t best = 0;
      double best_value = kInf;
      for (std::size_t i = 0; i < metrics.size(); ++i) {
        const double v = mapex::objective_value(metrics[i], ctx.objective());
        if (v < best_value) best_value = v, best = i;
      }
      // Drawn every step, used or not, so the stream of draws does not
      // depend on the outcomes' order of arrival.
      const double u = unit(rng);
      if (accept(value, best_value, t, u)) {
        current = batch[best];
        value = best_value;
      }
      if (value < chain_best) {
        chain_best = value;
        since_improvement = 0;
      } else {
        ++since_improvement;
      }
      if (metrics.size() < batch.size()) return stop(ctx, "budget");
    }
    return stop(ctx, "schedule done");
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  Settings s_;

  // Draws for the start: the parameter, else 5% of an evaluation budget
  // (at least one batch), else 256.
  std::uint64_t start_samples(const mapex::SearchContext& ctx) const {
    if (s_.initial_samples > 0) return s_.initial_samples;
    const std::uint64_t budget = ctx.budget().max_evaluations;
    if (budget > 0) return std::max<std::uint64_t>(s_.batch_size, budget / 20);
    return 256;
  }

  // Steps: the parameter, else what the evaluation budget leaves after the
  // start, else 1,000.
  std::uint64_t schedule_length(const mapex::SearchContext& ctx) const {
    if (s_.steps > 0) return s_.steps;
    const std::uint64_t budget = ctx.budget().max_evaluations;
    const std::uint64_t start = start_samples(ctx);
    if (budget > start) return (budget - start + s_.batch_size - 1) / s_.batch_size;
    if (budget > 0) return 1;
    return 1000;
  }

  double temperature(std::uint64_t k, std::uint64_t steps) const {
    const double f = steps > 1 ? static_cast<double>(k) / static_cast<double>(steps - 1) : 1.0;
    return s_.initial_temperature * std::pow(s_.final_temperature / s_.initial_temperature, f);
  }

  // Metropolis on the logarithm of the objective. An invalid current
  // mapping (value +inf) takes any valid proposal; an invalid proposal is
  // never taken.
  static bool accept(double current, double proposal, double t, double u) {
    if (!std::isfinite(proposal)) return false;
    if (!std::isfinite(current) || proposal <= current) return true;
    const double delta = std::log(proposal) - std::log(current);
    return u < std::exp(-delta / t);
  }

  // A fresh start: the best valid mapping of `count` uniform draws,
  // evaluated a batch at a time. False when the space yields no draw at
  // all or the budget ran out before the first batch.
  bool restart(mapex::SearchContext& ctx, std::mt19937_64& rng, std::uint64_t count,
               std::optional<mapex::Mapping>& current, double& value) const {
    bool any = false;
    value = kInf;
    std::vector<mapex::Mapping> draws;
    for (std::uint64_t done = 0; done < count && !ctx.exhausted();) {
      draws.clear();
      for (std::size_t i = 0; i < s_.batch_size && done < count; ++i, ++done)
        if (auto m = ctx.mapspace().sample(rng)) draws.push_back(std::move(*m));
      if (draws.empty()) break;
      const std::vector<mapex::Metrics> metrics = ctx.evaluate(draws);
      for (std::size_t i = 0; i < metrics.size(); ++i) {
        const double v = mapex::objective_value(metrics[i], ctx.objective());
        if (!any || v < value) current = draws[i], value = v, any = true;
      }
    }
    return any;
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
     "Steps without improving the chain's best before a restart from a fresh batch; 0: never."},
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
  return new Annealing(Settings{static_cast<std::size_t>(batch), t0, t1,
                                static_cast<std::uint64_t>(steps),
                                static_cast<std::uint64_t>(samples), static_cast<int>(stride),
                                static_cast<std::uint64_t>(patience)});
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
