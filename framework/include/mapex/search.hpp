#pragma once
/// \file
/// The searcher plugin interface and the context the framework hands it
/// (docs/design.md, Searcher). The framework owns the budget, the parallelism,
/// the best-so-far and its trace: a searcher proposes batches and calls
/// `evaluate`, which runs them in parallel (TBB) and returns the metrics in
/// order, so a seed gives the same result at any thread count.

#include <atomic>
#include <boost/config.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mapex/architecture.hpp>
#include <mapex/costmodel.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mapspace.hpp>
#include <mapex/metrics.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mapex {

enum class Objective { kLatency, kEnergy, kEdp };
std::string to_string(Objective objective);
/// Parses latency|energy|edp; throws InputError otherwise.
Objective parse_objective(const std::string& text);
/// The value to minimise; +infinity for an invalid mapping.
double objective_value(const Metrics& metrics, Objective objective);
double objective_value(const Score& score, Objective objective);

/// Limits on one search; 0 means unlimited.
struct Budget {
  std::uint64_t max_evaluations = 0;
  double max_seconds = 0;
};

/// One improvement of the best-so-far.
struct TracePoint {
  std::uint64_t evaluation = 0;  ///< 1-based index of the evaluation that improved
  double value = 0;
};

/// A mapping on the latency-energy Pareto front.
struct ParetoPoint {
  std::uint64_t evaluation = 0;  ///< 1-based index of its evaluation
  double latency_cycles = 0;
  double energy_pj = 0;
  Mapping mapping;
};

/// What `SearchContext::evaluate_space` did.
struct SpaceSweep {
  bool complete = false;  ///< every mapping of the space was evaluated
  std::uint64_t evaluated = 0;
};

/// The stop reason of a searcher that found no valid mapping in its space
/// at all (exact count, or enumeration, gave zero); the framework then
/// reports which constraint emptied the space (Mapspace::empty_reason).
inline constexpr const char* kEmptyMapspace = "empty mapspace";

/// What a searcher reports when it returns.
struct SearchOutcome {
  /// True when the searcher covered its whole space (exhaustive finished).
  bool complete = false;
  /// Why it stopped: "space exhausted", "budget", "victory condition", ...
  std::string stop_reason;
};

/// The searcher's view of one job. Created by the framework; one per job;
/// used from the thread that runs `Searcher::search`.
class BOOST_SYMBOL_VISIBLE SearchContext {
 public:
  SearchContext(const Operator& op, const Architecture& arch, const Mapspace& space,
                const BoundCostModel& model, Objective objective, std::uint64_t seed,
                Budget budget);
  ~SearchContext();
  SearchContext(const SearchContext&) = delete;
  SearchContext& operator=(const SearchContext&) = delete;

  const Operator& op() const { return *op_; }
  const Architecture& arch() const { return *arch_; }
  const Mapspace& mapspace() const { return *space_; }
  Objective objective() const { return objective_; }
  std::uint64_t seed() const { return seed_; }
  const Budget& budget() const { return budget_; }
  /// The job's cost model, bound to its operator and architecture. For
  /// searchers tied to one model (they dynamic_cast it to that model's
  /// interface); evaluate through `evaluate`, which counts and records.
  const BoundCostModel& model() const { return *model_; }

  /// Evaluates the mappings in parallel and returns their metrics in the
  /// same order. When the budget runs out part way, only the first ones are
  /// evaluated and the result is shorter than the batch. Updates the
  /// best-so-far (ties go to the earlier evaluation) and the trace.
  std::vector<Metrics> evaluate(std::span<const Mapping> batch);
  /// Evaluates a whole mapspace, or its first mappings in enumeration order
  /// up to the evaluation budget: disjoint chunks of the space are streamed
  /// and evaluated by TBB workers in place (nothing is materialised), and
  /// the chunks' results are merged in enumeration order, so the best (ties
  /// to the earlier mapping), the trace and the Pareto front are the same at
  /// any thread count. With a time budget the cut-off point depends on the
  /// machine; with an evaluation budget it does not. With `pareto`, also
  /// keeps the latency-energy Pareto front (`pareto()`).
  SpaceSweep evaluate_space(const Mapspace& space, bool pareto = false);
  /// The Pareto front kept by `evaluate_space`, by increasing latency.
  const std::vector<ParetoPoint>& pareto() const { return pareto_; }

  /// True when no further evaluation is allowed.
  bool exhausted() const;
  std::uint64_t evaluations() const { return evaluations_; }
  double elapsed_seconds() const;

  /// Best so far, if any valid mapping was seen.
  const std::optional<Mapping>& best_mapping() const { return best_mapping_; }
  const Metrics& best_metrics() const { return best_metrics_; }
  double best_value() const;
  const std::vector<TracePoint>& trace() const { return trace_; }

  /// Called after every batch with the running evaluation count.
  void set_progress_callback(std::function<void(std::uint64_t)> callback);
  /// Once `*stop` is true the context is exhausted, as if its budget had
  /// run out, so the searcher ends at its next batch and keeps its best so
  /// far (`mapex search` on SIGINT). Not owned; may be set from a signal
  /// handler.
  void set_stop_flag(const std::atomic<bool>* stop);
  /// True when the stop flag has ended (or will end) the search.
  bool stopped() const;

 private:
  const Operator* op_;
  const Architecture* arch_;
  const Mapspace* space_;
  const BoundCostModel* model_;
  Objective objective_;
  std::uint64_t seed_;
  Budget budget_;
  std::chrono::steady_clock::time_point start_;
  std::uint64_t evaluations_ = 0;
  std::optional<Mapping> best_mapping_;
  Metrics best_metrics_;
  std::vector<TracePoint> trace_;
  std::vector<ParetoPoint> pareto_;
  std::function<void(std::uint64_t)> progress_;
  void sort_front();
  bool out_of_time() const;
  const std::atomic<bool>* stop_ = nullptr;
};

class BOOST_SYMBOL_VISIBLE Searcher {
 public:
  virtual ~Searcher();
  /// Runs the search for one job on the calling thread, proposing mappings
  /// through `ctx.evaluate`. May be called concurrently on one instance for
  /// different jobs: keep per-search state local. Throws on failure; the
  /// framework records the job as failed with the message.
  virtual SearchOutcome search(SearchContext& ctx) const = 0;
};

}  // namespace mapex
