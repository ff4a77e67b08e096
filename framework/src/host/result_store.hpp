#pragma once
// The result file (docs/design.md, The flow of a job; layout in README.md,
// Result files). Format 2: mapex's checked journal of the rows, then an HDF5
// file (result_format.hpp) with
//   /            attributes: format_version, experiment_yaml, experiment_path,
//                experiment_name, mapex_version, plugin_abi, created, ...
//   /jobs        a group, one dataset per column, a row per finished job
//   /traces      a group: job_id, evaluation, value; one row per improvement
// Every commit writes the whole file under another name and renames it over
// the path, so the path always holds a complete, checked file. Format 1 (a
// compound /jobs, no journal) is still read. Used from one thread only.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host/result_format.hpp"
#include "host/runner.hpp"

namespace mapex::host {

/// The row a finished job becomes.
JobRow to_row(const JobResult& result);

/// An advisory lock (flock) on `<path>.lock`, held while a command writes
/// `path`, so a second writer of the same file is refused instead of
/// silently replacing the first one's rows. Released (and the lock file
/// removed) on destruction.
class OutputLock {
 public:
  /// Throws InputError naming `path` when another process holds it.
  explicit OutputLock(const std::string& path);
  ~OutputLock();
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&&) = delete;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

class ResultWriter {
 public:
  /// Takes the lock of `path` (OutputLock, unless `lock` is given), then
  /// writes the attributes and `rows` as the whole file. Throws InputError
  /// when the file cannot be written or another writer holds it.
  ResultWriter(const std::string& path, const std::map<std::string, std::string>& attributes,
               const std::vector<JobRow>& rows = {});
  ResultWriter(const std::string& path, const std::map<std::string, std::string>& attributes,
               const std::vector<JobRow>& rows, OutputLock lock);
  /// Commits what is not yet in the file.
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// Appends rows (and their traces). The file is rewritten at once, or,
  /// when commits have become slow (a large file), once the last commit's
  /// time has passed twice over (append or commit_if_due), so a run spends
  /// at most about a third of its writer's time writing.
  void append(const std::vector<JobRow>& rows);
  void append(const JobRow& row) { append(std::vector<JobRow>{row}); }
  /// Sets the pareto column of the rows at these file positions to 1 and
  /// commits.
  void mark_pareto(const std::vector<std::uint64_t>& file_rows);
  std::uint64_t rows() const { return rows_.size(); }
  /// Commits now if anything is pending.
  void flush();
  /// Commits if anything is pending and the last commit was long enough
  /// ago; called while the writer waits for jobs.
  void commit_if_due();

 private:
  void commit();
  std::string path_;
  OutputLock lock_;
  std::map<std::string, std::string> attributes_;
  std::vector<JobRow> rows_;
  bool pending_ = false;
  std::chrono::steady_clock::time_point next_commit_{};
};

struct ResultFile {
  std::map<std::string, std::string> attributes;
  std::vector<JobRow> jobs;  ///< sorted by job_index, traces attached
  /// Read from a format-1 file: checked only for what its rows must satisfy
  /// (check_format1), since such files carry no checksums.
  bool format1 = false;
};

/// The one-line warning a command prints after reading a format-1 file:
/// it carries no checksums, and `mapex merge` converts it to format 2.
std::string format1_warning(const std::string& path);

/// Reads a result file. Throws InputError if it is missing, not one, or
/// damaged ("damaged at byte N (...)"); libhdf5 never sees a format-2 file.
ResultFile read_results(const std::string& path);

/// As read_results, but a damaged format-2 file gives the rows whose
/// checksums hold (and attributes only if theirs holds), with `damage` set
/// to where it is damaged; `damage` is empty for an intact file.
ResultFile salvage_results(const std::string& path, std::string& damage);

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
