#pragma once
// Progress of a run on stderr (docs/design.md, Command line): a live bar on a terminal
// (jobs done/total, evaluations per second, elapsed, ETA), one line per
// finished job otherwise, nothing when quiet.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "host/result_store.hpp"

namespace mapex::host {

class Progress {
 public:
  enum class Mode { kBar, kLines, kQuiet };
  /// kBar when `stream` is a terminal, kLines otherwise; kQuiet if quiet.
  static Mode pick_mode(std::FILE* stream, bool quiet);

  Progress(std::size_t total_jobs, Mode mode, std::FILE* stream = stderr);
  /// From the result thread.
  void job_finished(const JobRow& row);
  /// From worker threads; throttled.
  void evaluations(std::uint64_t total);
  /// Ends the bar's line.
  void finish();

 private:
  void draw_bar();
  double elapsed() const;
  std::size_t total_;
  std::size_t done_ = 0;
  std::uint64_t evaluations_ = 0;
  Mode mode_;
  std::FILE* stream_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mutex_;
};

}  // namespace mapex::host
