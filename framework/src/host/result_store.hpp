#pragma once
// The HDF5 result file (docs/design.md, The flow of a job; layout in README.md):
//   /            attributes: experiment_yaml, experiment_path, experiment_name,
//                mapex_version, plugin_abi, created
//   /jobs        one compound row per finished job, appended and flushed as
//                jobs finish (so a killed run keeps every finished job)
//   /traces      convergence traces (job_id, evaluation, value), appended
//                with their rows; empty unless the experiment asks for them
// A thin RAII layer over the HDF5 C++ API; used from one thread only.

#include <H5Cpp.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/runner.hpp"

namespace mapex::host {

/// One row of /jobs as read back.
struct JobRow {
  std::uint64_t job_index = 0;
  std::string job_id;
  std::string workload;
  std::string layer;
  std::string architecture;
  std::string searcher;
  std::string costmodel;
  std::string objective;
  std::string status;
  std::string error;
  double latency_cycles = 0;
  double energy_pj = 0;
  double edp = 0;
  double utilization = 0;
  double macs = 0;
  double roofline_peak_cycles = 0;
  std::uint64_t evaluations = 0;
  double wall_seconds = 0;
  std::int32_t complete = 0;
  std::string stop_reason;
  std::uint64_t seed = 0;
  std::string best_mapping;  ///< YAML
  std::string mapping_summary;
  // Design point (hardware DSE).
  std::int64_t num_pes = 0;
  double area_mm2 = 0;
  double power_mw = 0;
  double latency_seconds = 0;
  double throughput_gmacs = 0;  ///< MACs per second / 1e9
  std::int32_t pareto = 0;      ///< 1 on the Pareto set of its group
  /// Not a column: the job's rows of /traces.
  std::vector<TracePoint> trace;
  /// Not a column: the row's position in the file (read_results).
  std::uint64_t file_row = 0;
};

/// The row a finished job becomes.
JobRow to_row(const JobResult& result);

class ResultWriter {
 public:
  /// Creates (truncates) the file, writes the attributes and an empty
  /// /jobs, and flushes. Throws InputError when the file cannot be created.
  ResultWriter(const std::string& path, const std::map<std::string, std::string>& attributes);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// Appends rows (and their traces) and flushes the file once.
  void append(const std::vector<JobRow>& rows);
  void append(const JobRow& row) { append(std::vector<JobRow>{row}); }
  /// Sets the pareto column of the rows at these file positions to 1.
  void mark_pareto(const std::vector<std::uint64_t>& file_rows);
  std::uint64_t rows() const { return rows_; }
  void flush();

 private:
  std::string path_;
  std::unique_ptr<H5::H5File> file_;
  std::unique_ptr<H5::DataSet> jobs_;
  std::unique_ptr<H5::DataSet> traces_;
  std::uint64_t rows_ = 0;
  std::uint64_t trace_rows_ = 0;
};

struct ResultFile {
  std::map<std::string, std::string> attributes;
  std::vector<JobRow> jobs;  ///< sorted by job_index, traces attached
};

/// Reads a result file. Throws InputError if it is missing or not one.
ResultFile read_results(const std::string& path);

/// True when `path` is an HDF5 file holding a /jobs table, i.e. something
/// mapex wrote (a run, a merge or a schedule); false for anything else,
/// including a missing or unreadable file.
bool is_result_file(const std::string& path);

/// Refuses an output path (`-o`) that would destroy something that is not a
/// mapex result: one of the command's own input files (`inputs`, e.g. the
/// experiment YAML) or any existing file that is not a result file
/// (is_result_file). A directory is always refused. `force` (`--force`)
/// allows replacing files. Throws InputError naming the path; nothing is
/// touched. Called before any output is opened.
void check_output_target(const std::string& output, const std::vector<std::string>& inputs,
                         bool force);

}  // namespace mapex::host
