// A genetic algorithm over the mapspace in the manner of GAMMA (Kao and
// Krishna, ICCAD 2020, §III-IV), which evolves MAESTRO mappings: a
// population of mappings, elitism, parents chosen by tournament, a
// crossover that takes each dimension's genes (its tile at every buffer
// level and its split at every spatial level) and each level's loop order
// from one parent or the other, and a mutation that makes one move
// (mapex/moves.hpp: one tile or split to the nearest admitted value, or a
// swap of two running loops). GAMMA's genome also reorders and grows
// levels; in mapex the chip fixes the levels, so those operators have no
// counterpart. Every child is a member of the job's space (the moves and
// the crossover ask the space), so no repair step is needed: a child the
// space refuses is replaced by a mutation of its first parent, or by a
// fresh uniform draw. A child that was evaluated before is moved again, or
// replaced by a fresh draw: without this the population fills with copies
// of its elites and the budget goes to evaluating them again.
//
// Each generation's children are made on the searching thread with the
// job's seed and evaluated together through the framework, which returns
// results in order, so a seed gives the same result at any thread count.

#include <algorithm>
#include <limits>
#include <mapex/moves.hpp>
#include <mapex/plugin.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

struct Settings {
  std::size_t population;
  std::uint64_t generations;
  double elite;
  double crossover_rate;
  double mutation_rate;
  std::size_t tournament;
};

struct Member {
  mapex::Mapping mapping;
  double value;
};

class Genetic final : public mapex::Searcher {
 public:
  explicit Genetic(Settings s) : s_(s) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    const mapex::Mapspace& space = ctx.mapspace();
    if (space.size() == 0) return {true, mapex::kEmptyMapspace};
    const mapex::MapspaceMoves moves(space);
    std::mt19937_64 rng(ctx.seed());

    mapex::VisitedMappings visited(space);
    std::vector<mapex::Mapping> draws;
    for (std::size_t i = 0; i < s_.population; ++i)
      if (auto m = space.sample(rng)) {
        visited.insert(*m);
        draws.push_back(std::move(*m));
      }
    if (draws.empty()) return stop(ctx, "no mapping drawn from the space");
    std::vector<Member> population = evaluated(ctx, std::move(draws));
    if (population.empty()) return stop(ctx, "budget");

    const auto elites = std::max<std::size_t>(
        1, static_cast<std::size_t>(s_.elite * static_cast<double>(s_.population)));
    const std::uint64_t generations = generation_count(ctx, elites);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::uint64_t g = 0; g < generations; ++g) {
      if (ctx.exhausted()) return stop(ctx, "budget");
      // Best first; ties keep their earlier place (stable), so the order
      // depends only on the values.
      std::stable_sort(population.begin(), population.end(),
                       [](const Member& a, const Member& b) { return a.value < b.value; });
      std::vector<mapex::Mapping> children;
      while (children.size() + std::min(elites, population.size()) < s_.population) {
        const Member& a = pick(population, rng);
        const Member& b = pick(population, rng);
        std::optional<mapex::Mapping> child;
        if (unit(rng) < s_.crossover_rate) child = moves.crossover(a.mapping, b.mapping, rng);
        if (!child) child = a.mapping;
        if (unit(rng) < s_.mutation_rate || *child == a.mapping || *child == b.mapping)
          if (auto m = moves.random_neighbour(*child, rng)) child = std::move(*m);
        // A child evaluated before (a parent, an earlier child) spends
        // budget for nothing: move it again, else draw a fresh one, which
        // also keeps the population diverse.
        for (int i = 0; i < kRetries && visited.contains(*child); ++i)
          if (auto m = moves.random_neighbour(*child, rng)) child = std::move(*m);
        if (visited.contains(*child))
          if (auto m = space.sample(rng)) child = std::move(*m);
        visited.insert(*child);
        children.push_back(std::move(*child));
      }
      std::vector<Member> next(
          population.begin(),
          population.begin() + static_cast<std::ptrdiff_t>(std::min(elites, population.size())));
      const std::size_t asked = children.size();
      std::vector<Member> born = evaluated(ctx, std::move(children));
      const bool cut = born.size() < asked;
      for (auto& m : born) next.push_back(std::move(m));
      population = std::move(next);
      if (cut) return stop(ctx, "budget");
    }
    return stop(ctx, "generations done");
  }

 private:
  /// Moves tried on a child already evaluated before a fresh draw.
  static constexpr int kRetries = 4;
  Settings s_;

  // Generations the budget pays for: the first population, then the
  // children of each generation (the elites are not evaluated again).
  std::uint64_t generation_count(const mapex::SearchContext& ctx, std::size_t elites) const {
    if (s_.generations > 0) return s_.generations;
    const std::uint64_t budget = ctx.budget().max_evaluations;
    const std::uint64_t born = s_.population - std::min(elites, s_.population - 1);
    if (budget > s_.population) return (budget - s_.population + born - 1) / born;
    if (budget > 0) return 1;
    return 100;
  }

  // Tournament selection: the best of `tournament` members drawn with
  // replacement.
  const Member& pick(const std::vector<Member>& population, std::mt19937_64& rng) const {
    std::uniform_int_distribution<std::size_t> any(0, population.size() - 1);
    std::size_t best = any(rng);
    for (std::size_t i = 1; i < s_.tournament; ++i) {
      const std::size_t other = any(rng);
      if (population[other].value < population[best].value) best = other;
    }
    return population[best];
  }

  // The members the budget allowed to evaluate, with their objective.
  static std::vector<Member> evaluated(mapex::SearchContext& ctx,
                                       std::vector<mapex::Mapping> mappings) {
    const std::vector<mapex::Metrics> metrics = ctx.evaluate(mappings);
    std::vector<Member> out;
    for (std::size_t i = 0; i < metrics.size(); ++i)
      out.push_back({std::move(mappings[i]), mapex::objective_value(metrics[i], ctx.objective())});
    return out;
  }

  static mapex::SearchOutcome stop(const mapex::SearchContext& ctx, const std::string& why) {
    return {false, ctx.exhausted() ? std::string("budget") : why};
  }
};

const mapex::ParamSpec kParams[] = {
    {"population", mapex::ParamType::kInt, "32", "Mappings per generation."},
    {"generations", mapex::ParamType::kInt, "0",
     "Generations; 0: as many as the evaluation budget pays for, or 100 without one."},
    {"elite", mapex::ParamType::kDouble, "0.25",
     "Fraction of the population kept unchanged into the next generation (at least one)."},
    {"crossover_rate", mapex::ParamType::kDouble, "0.8",
     "Probability that a child is a crossover of its two parents (else a copy of the first)."},
    {"mutation_rate", mapex::ParamType::kDouble, "0.3",
     "Probability that a child is then moved once (always when it equals a parent)."},
    {"tournament", mapex::ParamType::kInt, "3", "Members drawn per parent selection."},
};

double fraction(const mapex::Params& params, const char* key) {
  const double v = params.get_double(key);
  if (!(v >= 0 && v <= 1))
    throw mapex::InputError(mapex::SourceLocation{}, key,
                            std::string("searcher 'genetic' needs ") + key + " in [0, 1]");
  return v;
}

// Below one, so that every generation has a child.
double elite_fraction(const mapex::Params& params) {
  const double v = fraction(params, "elite");
  if (v >= 1)
    throw mapex::InputError(mapex::SourceLocation{}, "elite",
                            "searcher 'genetic' needs elite below 1 (no child would be born)");
  return v;
}

mapex::Searcher* make(const mapex::Params& params) {
  const std::int64_t population = params.get_int("population"),
                     generations = params.get_int("generations"),
                     tournament = params.get_int("tournament");
  if (population < 2 || population > 65536)
    throw mapex::InputError(mapex::SourceLocation{}, "population",
                            "searcher 'genetic' needs population in [2, 65536]");
  if (generations < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "generations",
                            "searcher 'genetic' needs generations >= 0 (0: from the budget)");
  if (tournament < 1 || tournament > population)
    throw mapex::InputError(mapex::SourceLocation{}, "tournament",
                            "searcher 'genetic' needs tournament in [1, population]");
  return new Genetic(Settings{static_cast<std::size_t>(population),
                              static_cast<std::uint64_t>(generations), elite_fraction(params),
                              fraction(params, "crossover_rate"), fraction(params, "mutation_rate"),
                              static_cast<std::size_t>(tournament)});
}

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "genetic",
    "1.0.0",
    "Genetic algorithm over mapspace moves in the manner of GAMMA (ICCAD 2020)",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
