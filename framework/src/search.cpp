#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <mapex/error.hpp>
#include <mapex/search.hpp>
#include <mutex>
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

/// One chunk of a sweep: its place in enumeration order, how far its worker
/// got (published for the budget of the chunks after it) and, once done,
/// what it found.
struct ChunkSlot {
  ChunkSlot(std::size_t i, Mapspace::Chunk c) : index(i), chunk(std::move(c)) {}
  std::size_t index;
  Mapspace::Chunk chunk;
  std::atomic<std::uint64_t> progress{0};
  ChunkResult r;
};

/// Hands the chunks of a sweep to the workers in enumeration order, one at
/// a time as each worker becomes free: no rounds, so no worker waits for
/// another's chunk to end (with rounds, 2 threads gave 1.36x over 1). It
/// keeps every chunk taken for the merge, which the calling thread does in
/// order, and it bounds from below the mappings the chunks before a chunk
/// evaluate, so that with an evaluation budget a worker stops where the
/// budget must already have ended.
class ChunkFeed {
 public:
  static constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();

  /// `wanted`: how many chunks to cut at first (kAll: all of them); twice
  /// as many whenever a worker runs out (the same chunks in the same order).
  ChunkFeed(const Mapspace& space, std::size_t min_chunks, std::size_t wanted)
      : space_(space),
        min_chunks_(min_chunks),
        wanted_(wanted),
        chunks_(space.chunks(min_chunks, wanted)) {}

  /// The next chunk in enumeration order, or nothing when the space has no
  /// more or the sweep needs none after the ones taken.
  ChunkSlot* take() {
    const std::lock_guard lock(mutex_);
    const std::size_t i = slots_.size();
    if (i >= end_.load(std::memory_order_relaxed)) return nullptr;
    if (i >= chunks_.size()) {
      if (chunks_.size() < wanted_) return nullptr;  // all of them already
      wanted_ *= 2;
      chunks_ = space_.chunks(min_chunks_, wanted_);
      if (i >= chunks_.size()) return nullptr;
    }
    return &slots_.emplace_back(i, chunks_[i]);
  }

  /// At least as many mappings as the chunks before `slot` will evaluate:
  /// the finished ones' counts and the others' progress so far.
  std::uint64_t evaluated_before(const ChunkSlot& slot) {
    const std::lock_guard lock(mutex_);
    std::uint64_t n = prefix_total_;
    for (std::size_t i = prefix_; i < slot.index; ++i)
      n += slots_[i].progress.load(std::memory_order_relaxed);
    return n;
  }

  /// `slot`'s worker is done with it (its result is final).
  void finish(ChunkSlot& slot) {
    const std::lock_guard lock(mutex_);
    done_.resize(std::max(done_.size(), slot.index + 1), false);
    done_[slot.index] = true;
    while (prefix_ < done_.size() && done_[prefix_]) prefix_total_ += slots_[prefix_++].r.evaluated;
  }

  /// The chunk at `i` in enumeration order once its worker is done with
  /// it, else nothing.
  ChunkSlot* done(std::size_t i) {
    const std::lock_guard lock(mutex_);
    return i < prefix_ ? &slots_[i] : nullptr;
  }

  /// No chunk after the one at `i` is needed (the budget or the time ends
  /// in it): none is handed out, and the ones running may stop.
  void end_after(std::size_t i) {
    std::size_t end = end_.load(std::memory_order_relaxed);
    while (i + 1 < end && !end_.compare_exchange_weak(end, i + 1, std::memory_order_relaxed)) {
    }
  }
  /// Nothing more is needed at all (an error or an abandoned search).
  void abandon() { end_.store(0, std::memory_order_relaxed); }
  bool needed(const ChunkSlot& slot) const {
    return slot.index < end_.load(std::memory_order_relaxed);
  }

 private:
  const Mapspace& space_;
  std::size_t min_chunks_;
  std::size_t wanted_;
  std::vector<Mapspace::Chunk> chunks_;
  std::mutex mutex_;
  std::deque<ChunkSlot> slots_;  ///< every chunk taken; a deque keeps their addresses
  std::vector<bool> done_;
  std::size_t prefix_ = 0;  ///< slots_[0, prefix_) are done
  std::uint64_t prefix_total_ = 0;
  std::atomic<std::size_t> end_{kAll};  ///< chunks from here on are not needed
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
  // dozen, then twice as many whenever they run out (cutting a large space
  // into thousands of chunks for a budget inside the first of them cost
  // more than the evaluations).
  ChunkFeed feed(space, min_chunks, budget_.max_evaluations ? 32 * workers : ChunkFeed::kAll);
  // A space other than the job's (a searcher's sub-space) may not hold the
  // job's factor bounds and pinned loops: its mappings are checked.
  const bool gate = &space != space_ && space_->has_limits_or_pins();
  constexpr auto kNoLimit = std::numeric_limits<std::uint64_t>::max();

  // A chunk being streamed: its cursor and what it found so far.
  struct Run {
    Run(const Mapspace& s, const Mapspace::Chunk& chunk, ChunkResult& result)
        : cursor(s, chunk), r(result) {}
    Mapspace::Cursor cursor;
    Mapping m;  ///< the cursor's last mapping: it rewrites only what moves
    /// What moved since the mapping the model last scored in this chunk,
    /// and the model's state along the chunk.
    MappingChange since_scored;
    std::unique_ptr<StreamState> model_state;
    ChunkResult& r;
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
      if (!run.cursor.next(m, step)) {
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

  // Streams one chunk to its end, to where the budget must have ended, or
  // until it is no longer needed. Every 256 mappings it publishes its
  // progress (the later chunks' budget reads it) and reads the earlier
  // chunks': with a slow model (mdc, microseconds per mapping) a longer
  // period let a worker run far past the end of the budget, and the lock
  // it takes costs a fast one (roofline) well under 1%.
  constexpr std::uint64_t kPublish = 256;
  auto stream = [&](ChunkSlot& slot) {
    Run run(space, slot.chunk, slot.r);
    for (;;) {
      std::uint64_t limit = kNoLimit;
      if (budget_.max_evaluations) {
        const std::uint64_t before = feed.evaluated_before(slot);
        limit = before >= budget_.max_evaluations ? 0 : budget_.max_evaluations - before;
      }
      advance(run, std::min(limit, run.r.evaluated + kPublish));
      slot.progress.store(run.r.evaluated, std::memory_order_relaxed);
      if (run.done) break;  // the chunk ended, or the time did
      if (run.r.evaluated >= limit) {
        // The budget ends in this chunk: it is cut unless it ends here too.
        Mapping probe;
        run.r.finished = !run.cursor.next(probe);
        break;
      }
      if (!feed.needed(slot)) break;  // an earlier chunk holds the end
    }
    if (!run.r.finished) feed.end_after(slot.index);
  };

  // The merge, in enumeration order, on the calling thread (the progress
  // callback runs there and may throw): the chunks done so far, up to the
  // first one cut by the budget or the time (`cut`: nothing after it).
  std::size_t merged = 0;
  bool cut = false;
  auto merge_done = [&] {
    const std::uint64_t before = evaluations_;
    while (!cut) {
      ChunkSlot* slot = feed.done(merged);
      if (!slot) break;
      ++merged;
      ChunkResult& r = slot->r;
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
        ChunkResult again_result;
        Run again(space, slot->chunk, again_result);
        advance(again, allowed);
        r.front = std::move(again_result.front);
      }
      for (auto& p : r.front)
        if (p.evaluation <= allowed) {
          p.evaluation += evaluations_;
          add_to_front(pareto_, std::move(p));
        }
      evaluations_ += allowed;
      sweep.evaluated += allowed;
      // Out of time, stopped, or the budget ends here: nothing after it.
      cut = allowed < r.evaluated || !r.finished;
      r = ChunkResult{};  // merged: its mappings are no longer needed
    }
    if (evaluations_ != before && progress_) progress_(evaluations_);
  };

  // Every worker takes the next chunk as soon as it is free. The calling
  // thread works too and merges after each of its chunks; the other
  // workers' tasks only stream. Results do not depend on which worker
  // streams which chunk: every chunk is streamed alone, and merged in order.
  auto work = [&](bool merges) {
    while (ChunkSlot* slot = feed.take()) {
      stream(*slot);
      feed.finish(*slot);
      if (merges) merge_done();
    }
  };
  tbb::task_group helpers;
  int join_edge = 0;
  MAPEX_TSAN_RELEASE(&tsan_spawn_edge);
  for (std::size_t w = 1; w < workers; ++w)
    helpers.run([&] {
      MAPEX_TSAN_ACQUIRE(&tsan_spawn_edge);
      try {
        work(false);
      } catch (...) {
        feed.abandon();
        MAPEX_TSAN_RELEASE(&join_edge);
        throw;
      }
      MAPEX_TSAN_RELEASE(&join_edge);
    });
  try {
    work(true);
  } catch (...) {
    // The progress callback abandoned the search, or a model threw: the
    // helpers stop at their next check; their errors give way to this one.
    feed.abandon();
    try {
      helpers.wait();
    } catch (...) {
    }
    throw;
  }
  helpers.wait();
  MAPEX_TSAN_ACQUIRE(&join_edge);
  merge_done();
  sort_front();
  sweep.complete = !cut;
  return sweep;
}

void SearchContext::sort_front() {
  std::sort(pareto_.begin(), pareto_.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    return a.latency_cycles < b.latency_cycles ||
           (a.latency_cycles == b.latency_cycles && a.evaluation < b.evaluation);
  });
}

}  // namespace mapex
