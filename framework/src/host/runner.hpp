#pragma once
// Runs jobs: one search per job, jobs in parallel and evaluations in
// parallel inside a job, all in one TBB task arena (DESIGN.md, Experiment).
// Results go to one consumer on one thread (the result writer): workers
// never touch HDF5.

#include <cstdint>
#include <functional>
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
  std::string searcher;   ///< label
  std::string costmodel;  ///< label
  std::string objective;
  JobStatus status = JobStatus::kFailed;
  std::string error;         ///< why it failed, or why no mapping was valid
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
  /// Convergence: every improvement of the best-so-far (evaluation index,
  /// objective value), as kept by the framework for every searcher.
  std::vector<TracePoint> trace;
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
  /// Called on the caller's thread for every finished job, in completion
  /// order (the writer). May throw to abort the run.
  std::function<void(const JobResult&)> on_result;
  /// Evaluations done so far, summed over jobs; called from worker threads.
  std::function<void(std::uint64_t)> on_evaluations;
};

/// Runs the jobs and returns their results in job order.
std::vector<JobResult> run_jobs(const Experiment& experiment, const PluginInstances& plugins,
                                const std::vector<Job>& jobs, const RunOptions& options);

}  // namespace mapex::host
