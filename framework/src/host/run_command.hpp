#pragma once
// `mapex run` and `mapex merge`: experiments into result files, with
// resume after an interruption, shards for array jobs, and MPI ranks
// (README, "Running at scale").

#include <atomic>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "host/experiment.hpp"
#include "host/plugin_registry.hpp"
#include "host/result_store.hpp"
#include "host/runner.hpp"

namespace mapex::host {

int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int merge_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// A shard of the expansion: jobs whose index is `index` modulo `count`.
struct Shard {
  int index = 0;
  int count = 1;
  bool active() const { return count > 1; }
  std::string text() const;
};
/// Parses "i/N" with 0 <= i < N; InputError otherwise.
Shard parse_shard(const std::string& text);

/// An experiment loaded, checked and expanded: everything a run needs
/// before its result file is touched.
struct PreparedRun {
  Experiment experiment;
  std::unique_ptr<PluginRegistry> registry;
  PluginInstances plugins;
  std::vector<Job> jobs;  ///< this shard's jobs
};
PreparedRun prepare_run(const std::string& experiment_path, const Shard& shard);

/// The result file opened for a run: fresh, or (resume) rewritten with the
/// rows of the previous run, and the jobs still to run.
struct OpenedOutput {
  std::unique_ptr<ResultWriter> writer;
  std::vector<Job> todo;
  std::size_t previous_rows = 0;
};
/// Refuses (InputError) an output that is the experiment file or an
/// existing file that is not a result file, unless `force`
/// (check_output_target); and a resume file that is unreadable, from another
/// experiment or shard, or holding jobs that this experiment no longer has.
/// The existing file is then left as it was.
OpenedOutput open_output(const PreparedRun& run, const std::string& output, bool resume, bool force,
                         const Shard& shard, std::ostream& err);

/// Marks the Pareto set in the file and returns it read back.
ResultFile finish_output(ResultWriter& writer, const std::string& output,
                         const Experiment& experiment);

/// Prints the report of a finished (or interrupted) run and returns its
/// exit status: 128 + signal, 1 when a job failed, else 0.
int conclude_run(const ResultFile& file, std::size_t total_jobs, const std::string& output,
                 int signal, std::ostream& out, std::ostream& err);
std::string default_output(const Experiment& experiment, const Shard& shard);

/// Set by SIGINT/SIGTERM while a run is going (async-signal-safe).
std::atomic<bool>& stop_flag();
/// The signal that set the stop flag (0 if none).
int stop_signal();

/// Installs SIGINT/SIGTERM handlers for its lifetime; the handlers only set
/// the stop flag, and a second signal gets the default action.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
};

/// Pareto set of each group (same workload, layer, searcher, cost model and
/// objective; the architecture varies): the file rows of the jobs that no
/// other ok job of the group beats on every metric (and strictly on one).
std::vector<std::uint64_t> pareto_rows(const std::vector<JobRow>& rows,
                                       const std::vector<std::string>& metrics);

}  // namespace mapex::host
