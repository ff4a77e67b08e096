// Random search in the manner of Timeloop's random mapper, in two modes.
//
// Uniform (level_probability 0, the default): draw mappings uniformly from
// the mapspace with a seeded generator, evaluate them in parallel batches
// through the framework, keep the best.
//
// Per level (level_probability p > 0): KAPLA's baseline R (§V, "Baseline
// solvers"), which evaluates candidates "at each level with a given
// probability". Each node of the level tree (level_keep.hpp: innermost
// level first) is kept with probability p, a mapping is evaluated iff its
// whole path is kept, and every kept mapping is evaluated. The Mapspace
// cursor streams mappings dimension by dimension (chains, then orders), not
// level by level, so whole subtrees cannot be skipped through it: the
// exhaustive stream is filtered by the path hash instead. Enumeration is
// cheap beside evaluation (the cost this mode saves), and since the rule
// hashes the path it keeps the same set as a level-nested walk would.
//
// Both modes stop at the budget (evaluations or seconds, owned by the
// framework) or at the victory condition: N consecutive evaluations without
// improvement. Candidates are produced on the searching thread in a fixed
// order, so a seed gives the same result at any thread count.

#include <algorithm>
#include <mapex/budget_requirement.hpp>
#include <mapex/plugin.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "level_keep.hpp"

namespace {

std::string format_probability(double p) {
  std::ostringstream out;
  out << p;
  return out.str();
}

class RandomSearch final : public mapex::Searcher, public mapex::BudgetRequirement {
 public:
  explicit RandomSearch(const mapex::Params& params)
      : batch_size_(static_cast<std::size_t>(params.get_int("batch_size"))),
        victory_(static_cast<std::uint64_t>(params.get_int("victory_condition"))),
        attempts_(static_cast<int>(params.get_int("max_attempts"))),
        level_probability_(params.get_double("level_probability")) {}

  /// Uniform sampling draws with replacement and never runs out; the
  /// per-level mode walks the space once and ends by itself.
  std::optional<std::string> unbounded(const mapex::Budget& budget) const override {
    if (level_probability_ > 0 || victory_ > 0) return std::nullopt;
    if (budget.max_evaluations > 0 || budget.max_seconds > 0) return std::nullopt;
    return "searcher 'random' needs a budget (evaluations or seconds) or a victory_condition, "
           "or it would never stop";
  }

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    if (level_probability_ > 0) return search_levels(ctx);
    if (const auto why = unbounded(ctx.budget()))
      throw mapex::InputError(mapex::SourceLocation{}, "budget", *why);
    // An empty space (exact count 0, Mapspace::size) has nothing to draw:
    // say so rather than fail every draw.
    if (ctx.mapspace().size() == 0) return {true, mapex::kEmptyMapspace};
    std::mt19937_64 rng(ctx.seed());
    Progress progress;
    std::vector<mapex::Mapping> batch;
    for (;;) {
      batch.clear();
      const std::size_t want = batch_want(ctx, progress);
      for (std::size_t i = 0; i < want; ++i) {
        auto m = draw(ctx, rng, progress);
        if (!m) break;
        batch.push_back(std::move(*m));
      }
      if (ctx.exhausted()) return {false, budget_reason(progress)};
      progress.rejected = 0;
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
      if (auto stop = evaluate(ctx, batch, progress)) return {false, *stop};
    }
  }

 private:
  /// Evaluations since the last improvement, in evaluation order, and the
  /// draws of the current batch rejected because a buffer overflows.
  struct Progress {
    std::uint64_t streak = 0;
    std::uint64_t rejected = 0;
  };

  /// Candidates for the next batch: never more than the victory condition
  /// or the evaluation budget still allow, so the search stops exactly at
  /// them and draws (each up to max_attempts) no sample it cannot evaluate.
  /// The samples drawn are a prefix of the full batch's, so the result is
  /// the same as when the evaluation cut the batch short.
  std::size_t batch_want(const mapex::SearchContext& ctx, const Progress& progress) const {
    std::uint64_t want = batch_size_;
    if (victory_) want = std::min<std::uint64_t>(want, victory_ - progress.streak);
    const std::uint64_t max_evaluations = ctx.budget().max_evaluations;
    if (max_evaluations)
      want = std::min<std::uint64_t>(
          want, max_evaluations - std::min(max_evaluations, ctx.evaluations()));
    return static_cast<std::size_t>(std::max<std::uint64_t>(want, 1));
  }

  /// One sample: up to max_attempts uniform draws, one at a time (the same
  /// draws as Mapspace::sample with that bound), so that a time budget also
  /// bounds a long run of draws that overflow a buffer, as in a space with
  /// edge tiles where nearly every draw does.
  std::optional<mapex::Mapping> draw(const mapex::SearchContext& ctx, std::mt19937_64& rng,
                                     Progress& progress) const {
    for (int attempt = 0; attempt < attempts_; ++attempt) {
      if (ctx.exhausted()) return std::nullopt;
      if (auto m = ctx.mapspace().sample(rng, 1)) return m;
      ++progress.rejected;
    }
    return std::nullopt;
  }

  /// The stop reason when the budget ran out while drawing a batch: says
  /// how many of its draws were rejected, which is where the time went.
  static std::string budget_reason(const Progress& progress) {
    if (progress.rejected == 0) return "budget";
    return "budget; ran out while drawing, after " + std::to_string(progress.rejected) +
           " rejected samples (a buffer overflows)";
  }

  /// Evaluates one batch; the stop reason when the search must end.
  std::optional<std::string> evaluate(mapex::SearchContext& ctx,
                                      const std::vector<mapex::Mapping>& batch,
                                      Progress& progress) const {
    const std::uint64_t before = ctx.evaluations();
    const std::size_t trace_before = ctx.trace().size();
    const auto results = ctx.evaluate(batch);
    if (ctx.trace().size() > trace_before)
      progress.streak = before + results.size() - ctx.trace().back().evaluation;
    else
      progress.streak += results.size();
    if (results.size() < batch.size() || ctx.exhausted()) return "budget";
    if (victory_ && progress.streak >= victory_) return "victory condition";
    return std::nullopt;
  }

  /// KAPLA's R (§V): every mapping whose path is kept level by level, in
  /// enumeration order. Without a budget it evaluates the whole kept set
  /// (about p^L of the space for L levels); with one, a budget cut keeps an
  /// enumeration-order prefix of that set, not a random part of it.
  mapex::SearchOutcome search_levels(mapex::SearchContext& ctx) const {
    if (ctx.mapspace().size() == 0) return {true, mapex::kEmptyMapspace};
    const mapex::level_sampling::LevelKeep rule(ctx.seed(), level_probability_);
    mapex::Mapspace::Cursor cursor(ctx.mapspace());
    mapex::Mapping m;
    Progress progress;
    std::uint64_t kept = 0;
    std::vector<mapex::Mapping> batch;
    for (;;) {
      batch.clear();
      const std::size_t want = batch_want(ctx, progress);
      bool streamed = false;
      while (batch.size() < want) {
        if (!cursor.next(m)) {
          streamed = true;
          break;
        }
        // A time budget must also bound a long stretch of the stream in
        // which little is kept.
        if ((cursor.visited() & 0xffff) == 0 && ctx.exhausted()) return {false, "budget"};
        if (rule.keep(m)) batch.push_back(m);
      }
      kept += batch.size();
      if (!batch.empty())
        if (auto stop = evaluate(ctx, batch, progress)) return {false, *stop};
      if (!streamed) continue;
      const std::uint64_t seen = cursor.visited();
      // Nothing fits any buffer: the space is empty after capacity.
      if (seen == 0) return {true, mapex::kEmptyMapspace};
      const std::string at = " at level_probability " + format_probability(level_probability_);
      // Distinct from an empty space: mappings exist, the rule cut them all.
      if (kept == 0) return {false, "no mapping kept" + at + " out of " + std::to_string(seen)};
      // Complete only when every mapping of the space was kept (p = 1).
      return {kept == seen, "every kept mapping evaluated: " + std::to_string(kept) + " of " +
                                std::to_string(seen) + at};
    }
  }

  std::size_t batch_size_;
  std::uint64_t victory_;
  int attempts_;
  double level_probability_;
};

const mapex::ParamSpec kParams[] = {
    {"batch_size", mapex::ParamType::kInt, "256", "Samples drawn per parallel evaluation batch."},
    {"victory_condition", mapex::ParamType::kInt, "0",
     "Stop after this many consecutive samples without improvement (0: off)."},
    {"max_attempts", mapex::ParamType::kInt, "1000",
     "Draws per sample before giving up on finding a mapping that passes the constraints "
     "(uniform mode)."},
    {"level_probability", mapex::ParamType::kDouble, "0",
     "0: uniform sampling. In (0, 1]: KAPLA's per-level random search R (§V): each node of the "
     "level tree, innermost level first, is kept with this probability and every mapping whose "
     "whole path is kept is evaluated."},
};

mapex::Searcher* make(const mapex::Params& params) {
  for (const char* key : {"batch_size", "max_attempts"})
    if (params.get_int(key) < 1)
      throw mapex::InputError(mapex::SourceLocation{}, key,
                              "parameter of searcher 'random' must be at least 1");
  if (params.get_int("victory_condition") < 0)
    throw mapex::InputError(mapex::SourceLocation{}, "victory_condition",
                            "parameter of searcher 'random' must be 0 (off) or positive");
  const double p = params.get_double("level_probability");
  if (!(p >= 0 && p <= 1))
    throw mapex::InputError(mapex::SourceLocation{}, "level_probability",
                            "parameter of searcher 'random' must be 0 (off, uniform sampling) or "
                            "a probability in (0, 1], got " +
                                format_probability(p));
  return new RandomSearch(params);
}

const mapex::PluginDescriptor kDescriptor{mapex::kPluginAbiVersion,
                                          MAPEX_BUILD_ID,
                                          mapex::PluginKind::kSearcher,
                                          "random",
                                          "1.1.0",
                                          "Seeded uniform sampling of the mapspace with a budget "
                                          "and a victory condition (Timeloop-style), or KAPLA's "
                                          "per-level random search R",
                                          kParams,
                                          std::size(kParams),
                                          nullptr,
                                          &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
