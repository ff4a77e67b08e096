#pragma once
// Runs jobs: one search per job, jobs in parallel and evaluations in
// parallel inside a job, all in one TBB task arena (docs/design.md, The flow of a job).
// Results go to one consumer on one thread (the result writer): workers
// never touch HDF5.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mapex/metrics.hpp>
#include <mapex/search.hpp>
#include <memory>
#include <string>
#include <vector>

#include "host/experiment.hpp"
#include "host/plugin_registry.hpp"

namespace mapex::host {

enum class JobStatus { kOk, kNoValidMapping, kFailed };
std::string to_string(JobStatus status);

struct JobResult {
  Job job;
  std::string workload;  ///< network name
  std::string layer;
  std::string architecture;
  std::string searcher;  ///< label
  std::string searcher_plugin;
  std::map<std::string, std::string> searcher_params;
  Budget budget;          ///< the searcher's, as run
  std::string costmodel;  ///< label
  std::string objective;
  JobStatus status = JobStatus::kFailed;
  std::string error;  ///< why it failed, or why no mapping was valid
  /// The failure was bad input (an InputError: e.g. an operator or chip the
  /// searcher cannot map), so a single search exits 2, not 1.
  bool bad_input = false;
  Metrics best;              ///< valid when status is kOk
  std::string mapping_yaml;  ///< best mapping, canonical YAML
  std::string mapping_summary;
  /// The mapping-independent roofline peak of the layer on the chip.
  double roofline_peak_cycles = 0;
  std::uint64_t evaluations = 0;
  double wall_seconds = 0;
  bool complete = false;  ///< the searcher covered its whole space
  std::string stop_reason;
  /// Latency-energy Pareto front, when the searcher kept one.
  struct FrontPoint {
    std::uint64_t evaluation = 0;
    double latency_cycles = 0;
    double energy_pj = 0;
    std::string mapping_summary;
  };
  std::vector<FrontPoint> pareto;
  // The design point (DSE): filled by the runner from the architecture.
  std::int64_t num_pes = 0;
  double clock_mhz = 0;
  double area_mm2 = 0;
  double power_mw = 0;
  /// Improvements of the best-so-far; kept only when traces are asked for.
  std::vector<TracePoint> trace;
  /// The stop flag ended the search (SearchRequest::stop): `best` is the
  /// best found until then.
  bool interrupted = false;
};

/// Everything one search needs, resolved.
struct SearchRequest {
  const Operator* op = nullptr;
  const Architecture* arch = nullptr;
  const Searcher* searcher = nullptr;
  const CostModel* costmodel = nullptr;
  Objective objective = Objective::kLatency;
  ConstraintSpec mapspace;  ///< resolved against the operator and architecture
  Budget budget;
  std::uint64_t seed = 0;
  bool keep_trace = false;
  /// When set and true, the search ends at its next batch keeping its best
  /// so far (SearchContext::set_stop_flag).
  const std::atomic<bool>* stop = nullptr;
  /// The workload file the operator was read from: a refusal that names no
  /// file (the mapspace's, a cost model's or searcher's) is placed at the
  /// layer's entry there (issue 18).
  std::string workload_path;
};

/// Runs one search on the calling thread (evaluations fan out to TBB).
/// Never throws: a failure becomes a kFailed result with the message.
JobResult run_search(const SearchRequest& request,
                     const std::function<void(std::uint64_t)>& on_evaluations = {});

/// Instantiates the plugins an experiment uses.
struct PluginInstances {
  std::vector<std::unique_ptr<Searcher>> searchers;
  std::vector<std::unique_ptr<CostModel>> costmodels;
};
PluginInstances instantiate(const Experiment& experiment, const PluginRegistry& registry);

struct RunOptions {
  int threads = 0;  ///< 0: all cores
  /// Called on the caller's thread (the writer) with every job finished
  /// since the last call, in completion order: a batch of one when jobs
  /// finish slowly, more when they finish faster than it writes. May throw
  /// to abort the run.
  std::function<void(std::vector<JobResult>&)> on_results;
  /// Evaluations done so far, summed over jobs; called from worker threads.
  std::function<void(std::uint64_t)> on_evaluations;
  /// When it becomes true (e.g. from a signal handler), no further job
  /// starts and running searches are abandoned at their next batch; their
  /// results are not delivered, so a resume runs them again.
  const std::atomic<bool>* stop = nullptr;
  bool keep_traces = false;
  /// How long the writer keeps collecting finished jobs before it hands
  /// them over (one append and one flush per batch).
  std::chrono::milliseconds batch_window{20};
  /// Called on the caller's thread every `wait_period` while no job
  /// finishes, so the writer can commit rows it held back
  /// (ResultWriter::commit_if_due).
  std::function<void()> on_wait;
  std::chrono::milliseconds wait_period{100};
};

struct RunSummary {
  std::size_t finished = 0;   ///< delivered to on_results
  std::size_t failed = 0;     ///< of which status kFailed
  std::size_t abandoned = 0;  ///< not started or abandoned after a stop
};

/// Runs the jobs (indices into the experiment's expansion are in each Job).
RunSummary run_jobs(const Experiment& experiment, const PluginInstances& plugins,
                    const std::vector<Job>& jobs, const RunOptions& options);

}  // namespace mapex::host
