#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <mapex/error.hpp>
#include <mapex/search.hpp>
#include <optional>

#include "tsan_annotations.hpp"

namespace mapex {

std::string to_string(Objective objective) {
  switch (objective) {
    case Objective::kLatency:
      return "latency";
    case Objective::kEnergy:
      return "energy";
    case Objective::kEdp:
      return "edp";
  }
  return "latency";
}

Objective parse_objective(const std::string& text) {
  if (text == "latency") return Objective::kLatency;
  if (text == "energy") return Objective::kEnergy;
  if (text == "edp") return Objective::kEdp;
  throw InputError(SourceLocation{}, "objective",
                   "expected latency, energy or edp, got '" + text + "'");
}

double objective_value(const Score& s, Objective objective) {
  if (!s.valid) return std::numeric_limits<double>::infinity();
  switch (objective) {
    case Objective::kLatency:
      return s.latency_cycles;
    case Objective::kEnergy:
      return s.energy_pj;
    case Objective::kEdp:
      return s.latency_cycles * s.energy_pj;
  }
  return s.latency_cycles;
}

double objective_value(const Metrics& m, Objective objective) {
  return objective_value(Score{m.valid, m.latency_cycles, m.energy_pj}, objective);
}

namespace {

/// A new best mapping's metrics are kept and printed: a non-finite figure
/// there is an error naming the layer and architecture whose inputs caused
/// it (README, bad input), not a result.
void require_finite(const Metrics& m, const Operator& op, const Architecture& arch) {
  if (auto bad = non_finite_metric(m))
    throw InputError("layer '" + op.name() + "' on architecture '" + arch.name() +
                     "': the cost model gives " + *bad +
                     "; an energy, bandwidth or clock of the architecture, or a cost-model "
                     "parameter, is out of range");
}

}  // namespace

SearchContext::SearchContext(const Operator& op, const Architecture& arch, const Mapspace& space,
                             const BoundCostModel& model, Objective objective, std::uint64_t seed,
                             Budget budget)
    : op_(&op),
      arch_(&arch),
      space_(&space),
      model_(&model),
      objective_(objective),
      seed_(seed),
      budget_(budget),
      start_(std::chrono::steady_clock::now()) {}

SearchContext::~SearchContext() = default;

double SearchContext::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

bool SearchContext::exhausted() const {
  if (budget_.max_evaluations && evaluations_ >= budget_.max_evaluations) return true;
  return out_of_time();
}

// The time budget, or a stop asked for from outside (SIGINT).
bool SearchContext::out_of_time() const {
  if (stopped()) return true;
  return budget_.max_seconds > 0 && elapsed_seconds() >= budget_.max_seconds;
}

void SearchContext::set_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }

bool SearchContext::stopped() const { return stop_ && stop_->load(std::memory_order_relaxed); }

double SearchContext::best_value() const {
  return best_mapping_ ? objective_value(best_metrics_, objective_)
                       : std::numeric_limits<double>::infinity();
}

void SearchContext::set_progress_callback(std::function<void(std::uint64_t)> callback) {
  progress_ = std::move(callback);
}

std::vector<Metrics> SearchContext::evaluate(std::span<const Mapping> batch) {
  std::size_t allowed = exhausted() ? 0 : batch.size();
  if (budget_.max_evaluations)
    allowed = std::min<std::size_t>(allowed, budget_.max_evaluations - evaluations_);
  std::vector<Metrics> out(allowed);
  // Factor bounds and pinned loops hold for every mapping a searcher
  // evaluates, also those it built outside the mapspace (README, "Mapspace
  // constraints"): the mapping is invalid with the rule it breaks.
  const bool gate = space_->has_limits_or_pins();
  // Each element is written by exactly one task, so the order of results
  // (and everything derived from it below) does not depend on scheduling.
  int spawn_edge = 0, join_edge = 0;
  MAPEX_TSAN_RELEASE(&spawn_edge);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, allowed, 16),
                    [&](const tbb::blocked_range<std::size_t>& range) {
                      MAPEX_TSAN_ACQUIRE(&spawn_edge);
                      for (std::size_t i = range.begin(); i != range.end(); ++i) {
                        const Mapping& m = batch[i];
                        if (auto error = m.structural_error(*op_, *arch_))
                          out[i] = Metrics::invalid(*error);
                        else if (auto why = gate ? space_->limit_reject_reason(m) : std::nullopt)
                          out[i] = Metrics::invalid("outside the constraints: " + *why);
                        else if (auto reason = model_->precheck(m))
                          out[i] = Metrics::invalid(*reason);
                        else
                          out[i] = model_->evaluate(m);
                      }
                      MAPEX_TSAN_RELEASE(&join_edge);
                    });
  MAPEX_TSAN_ACQUIRE(&join_edge);
  double best = best_value();
  for (std::size_t i = 0; i < allowed; ++i) {
    const double value = objective_value(out[i], objective_);
    if (value < best) {  // strict: ties keep the earlier mapping
      best = value;
      best_mapping_ = batch[i];
      require_finite(out[i], *op_, *arch_);
      best_metrics_ = out[i];
      trace_.push_back(TracePoint{evaluations_ + i + 1, value});
    }
  }
  evaluations_ += allowed;
  if (progress_) progress_(evaluations_);
  return out;
}

namespace {

/// The happens-before edge from a spawning thread to the TBB tasks it starts
/// (tsan_annotations.hpp); only its address matters.
[[maybe_unused]] int tsan_spawn_edge = 0;

/// Adds a point to a front unless an earlier point dominates or equals it;
/// drops the points it dominates.
void add_to_front(std::vector<ParetoPoint>& front, ParetoPoint point) {
  // A non-finite figure is never kept (the best mapping's metrics are
  // checked by require_finite; a front point carries only the two figures).
  if (!std::isfinite(point.latency_cycles) || !std::isfinite(point.energy_pj)) return;
  for (const auto& p : front)
    if (p.latency_cycles <= point.latency_cycles && p.energy_pj <= point.energy_pj) return;
  std::erase_if(front, [&](const ParetoPoint& p) {
    return point.latency_cycles <= p.latency_cycles && point.energy_pj <= p.energy_pj;
  });
  front.push_back(std::move(point));
}

/// What one worker found in one chunk, indices local to the chunk.
struct ChunkResult {
  std::uint64_t evaluated = 0;
  bool finished = false;  ///< the chunk was streamed to its end
  struct Improvement {
    std::uint64_t index;  ///< 0-based within the chunk
    double value;
    Metrics metrics;
    Mapping mapping;
  };
  std::vector<Improvement> improvements;  ///< each better than all before it
  std::vector<ParetoPoint> front;         ///< evaluation = local index + 1
};

}  // namespace

SpaceSweep SearchContext::evaluate_space(const Mapspace& space, bool pareto) {
  SpaceSweep sweep;
  const std::size_t workers =
      static_cast<std::size_t>(std::max(1, tbb::this_task_arena::max_concurrency()));
  // Chunks are merged in enumeration order, so a budget smaller than the
  // first chunk would leave every other worker's chunk unused: with a budget,
  // cut the space finely enough that the budget spans many chunks.
  std::size_t min_chunks = 16 * workers;
  if (budget_.max_evaluations) {
    // Chunks of about budget / (16 x workers) mappings (chunks() aims at a
    // quarter of size / min_chunks), at most 2^12 of them requested.
    const BigInt wanted = 4 * static_cast<BigInt>(workers) * space.size() / budget_.max_evaluations;
    min_chunks =
        std::max(min_chunks, std::min<BigInt>(wanted, BigInt{1} << 12).convert_to<std::size_t>());
  }
  // With a budget only the chunks the sweep reaches are cut: the first few
  // dozen, then twice as many whenever the window runs out (the same chunks
  // in the same order; cutting a large space into thousands of chunks for a
  // budget inside the first of them cost more than the evaluations).
  constexpr auto kAll = std::numeric_limits<std::size_t>::max();
  std::size_t wanted_chunks = budget_.max_evaluations ? 32 * workers : kAll;
  auto chunks = space.chunks(min_chunks, wanted_chunks);
  auto more_chunks = [&] {
    if (chunks.size() < wanted_chunks) return false;  // all of them already
    wanted_chunks *= 2;
    chunks = space.chunks(min_chunks, wanted_chunks);
    return true;
  };
  // A space other than the job's (a searcher's sub-space) may not hold the
  // job's factor bounds and pinned loops: its mappings are checked.
  const bool gate = &space != space_ && space_->has_limits_or_pins();
  constexpr auto kNoLimit = std::numeric_limits<std::uint64_t>::max();

  // A chunk being streamed: its cursor and what it found so far.
  struct Run {
    std::size_t chunk = 0;
    std::optional<Mapspace::Cursor> cursor;
    Mapping m;  ///< the cursor's last mapping: it rewrites only what moves
    /// What moved since the mapping the model last scored in this chunk,
    /// and the model's state along the chunk.
    MappingChange since_scored;
    std::unique_ptr<StreamState> model_state;
    ChunkResult r;
    double best = std::numeric_limits<double>::infinity();
    bool done = false;
  };
  // Streams `run` until it has evaluated `limit` mappings in all, its chunk
  // ends, or the time budget runs out.
  auto advance = [&](Run& run, std::uint64_t limit) {
    ChunkResult& r = run.r;
    Mapping& m = run.m;
    MappingChange& since_scored = run.since_scored;
    MappingChange step;
    while (r.evaluated < limit) {
      if (!run.cursor->next(m, step)) {
        r.finished = true;
        run.done = true;
        return;
      }
      if ((r.evaluated & 1023) == 1023 && out_of_time()) {
        run.done = true;  // not finished
        return;
      }
      // The lean score ranks; full metrics only for a new best (a handful
      // per chunk), so the accounts are not assembled for every mapping.
      since_scored.merge(step);
      Score score;
      if (!(gate && space_->limit_reject_reason(m))) {
        score = model_->precheck_and_score(m, since_scored, run.model_state);
        since_scored = MappingChange{false, false, std::numeric_limits<int>::max()};
      }
      const double value = objective_value(score, objective_);
      if (value < run.best) {
        run.best = value;
        r.improvements.push_back({r.evaluated, value, model_->evaluate(m), m});
      }
      if (pareto && score.valid)
        add_to_front(r.front,
                     ParetoPoint{r.evaluated + 1, score.latency_cycles, score.energy_pj, m});
      ++r.evaluated;
    }
  };
  auto start = [&](std::size_t c) {
    Run run;
    run.chunk = c;
    run.cursor.emplace(space, chunks[c]);
    return run;
  };

  // A window of chunks is streamed in rounds; a round advances each chunk
  // by a slice, so the workers get equal shares of work per round (a round
  // waits for its slowest chunk) and progress is reported between rounds.
  // With an evaluation budget the slice shrinks with the budget left, so the
  // sweep stops soon after the budget is reached in enumeration order while
  // a round still holds enough work to outweigh the cost of starting it.
  // Finished chunks leave the window from the front and are merged in order;
  // the slices decide only how much work is wasted past the budget, never
  // the result. Four chunks per worker: chunks differ in size, and with one
  // per worker a worker whose chunk ended waited idle for the round's
  // slowest; with several, TBB hands it the next. A budget below sixteen
  // minimal slices per worker keeps one chunk per worker: a round of
  // minimal slices on four would run past such a budget by up to twice it.
  constexpr std::uint64_t kMinSlice = 1024, kMaxSlice = std::uint64_t{1} << 18;
  const bool small_budget =
      budget_.max_evaluations && budget_.max_evaluations < 16 * kMinSlice * workers;
  const std::size_t width = small_budget ? workers : 4 * workers;
  std::deque<Run> window;
  std::size_t next = 0;
  for (;;) {
    while (window.size() < width && (next < chunks.size() || more_chunks()))
      if (next < chunks.size()) window.push_back(start(next++));
    if (window.empty()) break;
    const std::uint64_t remaining =
        budget_.max_evaluations ? budget_.max_evaluations - evaluations_ : kNoLimit;
    const std::uint64_t slice =
        budget_.max_evaluations
            ? std::clamp<std::uint64_t>(remaining / (4 * width), kMinSlice, kMaxSlice)
            : kMaxSlice;
    int join_edge = 0;
    // TBB reads this body through a reference to the spawner's stack: the
    // edge is published after the body exists and taken before it is read
    // (on a static address, so taking it reads nothing of the body).
    const auto body = [&](std::size_t i) {
      MAPEX_TSAN_ACQUIRE(&tsan_spawn_edge);
      Run& run = window[i];
      if (!run.done) {
        const std::uint64_t limit = std::min(remaining, run.r.evaluated + slice);
        advance(run, limit);
        // No chunk needs more than the budget left: capped, it is done.
        if (!run.done && run.r.evaluated >= remaining) {
          Mapping probe;
          run.r.finished = !run.cursor->next(probe);
          run.done = true;
        }
      }
      MAPEX_TSAN_RELEASE(&join_edge);
    };
    MAPEX_TSAN_RELEASE(&tsan_spawn_edge);
    tbb::parallel_for(std::size_t{0}, window.size(), body);
    MAPEX_TSAN_ACQUIRE(&join_edge);

    while (!window.empty() && window.front().done) {
      Run& run = window.front();
      ChunkResult& r = run.r;
      const std::uint64_t allowed =
          budget_.max_evaluations ? std::min(r.evaluated, budget_.max_evaluations - evaluations_)
                                  : r.evaluated;
      double best = best_value();
      for (auto& imp : r.improvements) {
        if (imp.index >= allowed) break;
        if (imp.value < best) {
          best = imp.value;
          best_mapping_ = std::move(imp.mapping);
          require_finite(imp.metrics, *op_, *arch_);
          best_metrics_ = std::move(imp.metrics);
          trace_.push_back(TracePoint{evaluations_ + imp.index + 1, imp.value});
        }
      }
      // A front cut short by the budget must not have lost points to
      // mappings beyond the cut: recompute it up to the cut.
      if (pareto && allowed < r.evaluated) {
        Run again = start(run.chunk);
        advance(again, allowed);
        r.front = std::move(again.r.front);
      }
      for (auto& p : r.front)
        if (p.evaluation <= allowed) {
          p.evaluation += evaluations_;
          add_to_front(pareto_, std::move(p));
        }
      evaluations_ += allowed;
      sweep.evaluated += allowed;
      const bool cut = allowed < r.evaluated || !r.finished;
      window.pop_front();
      if (cut) {
        sort_front();
        if (progress_) progress_(evaluations_);
        return sweep;
      }
    }
    if (progress_) progress_(evaluations_);
    if (out_of_time() && !window.empty()) {
      // Out of time (or stopped) with chunks still open: merge nothing more.
      sort_front();
      return sweep;
    }
  }
  sort_front();
  sweep.complete = true;
  return sweep;
}

void SearchContext::sort_front() {
  std::sort(pareto_.begin(), pareto_.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    return a.latency_cycles < b.latency_cycles ||
           (a.latency_cycles == b.latency_cycles && a.evaluation < b.evaluation);
  });
}

}  // namespace mapex
