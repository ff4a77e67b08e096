#pragma once
// The HDF5 result file (DESIGN.md, Result store; layout in README.md):
//   /            attributes: experiment_yaml, experiment_path, experiment_name,
//                mapex_version, plugin_abi, created
//   /jobs        one compound row per finished job, appended and flushed as
//                jobs finish (so a killed run keeps every finished job)
//   /traces/<job id>  the job's convergence trace: (evaluation, value) at
//                every improvement of the best-so-far
//   /pareto/<job id>  the latency-energy Pareto front, when kept:
//                (evaluation, latency_cycles, energy_pj, mapping)
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
};

class ResultWriter {
 public:
  /// Creates (truncates) the file, writes the attributes and an empty
  /// /jobs, and flushes. Throws InputError when the file cannot be created.
  ResultWriter(const std::string& path, const std::map<std::string, std::string>& attributes);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// Appends one row and flushes the file.
  void append(const JobResult& result);
  std::uint64_t rows() const { return rows_; }

 private:
  void write_trace(const JobResult& result);
  void write_pareto(const JobResult& result);
  std::string path_;
  std::unique_ptr<H5::H5File> file_;
  std::unique_ptr<H5::DataSet> jobs_;
  std::unique_ptr<H5::Group> traces_, pareto_;
  std::uint64_t rows_ = 0;
};

struct ResultFile {
  std::map<std::string, std::string> attributes;
  std::vector<JobRow> jobs;  ///< sorted by job_index
};

/// Reads a result file. Throws InputError if it is missing or not one.
ResultFile read_results(const std::string& path);

/// Reads the convergence trace of one job (empty if it has none).
std::vector<TracePoint> read_trace(const std::string& path, const std::string& job_id);

}  // namespace mapex::host
