#include "host/progress.hpp"

#include <unistd.h>

#include <string>

namespace mapex::host {
namespace {

std::string clock_text(double seconds) {
  if (seconds < 0 || seconds > 99 * 3600) return "--:--";
  const auto s = static_cast<long>(seconds + 0.5);
  char buffer[32];
  if (s >= 3600)
    std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buffer, sizeof buffer, "%02ld:%02ld", s / 60, s % 60);
  return buffer;
}

}  // namespace

Progress::Mode Progress::pick_mode(std::FILE* stream, bool quiet) {
  if (quiet) return Mode::kQuiet;
  return isatty(fileno(stream)) ? Mode::kBar : Mode::kLines;
}

Progress::Progress(std::size_t total_jobs, Mode mode, std::FILE* stream)
    : total_(total_jobs), mode_(mode), stream_(stream), start_(std::chrono::steady_clock::now()) {
  last_draw_ = start_;
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::draw_bar() {
  const int width = 30;
  const double fraction = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  const int filled = static_cast<int>(fraction * width);
  const double t = elapsed();
  const double rate = t > 0 ? static_cast<double>(evaluations_) / t : 0;
  const double eta =
      done_ > 0 ? t / static_cast<double>(done_) * static_cast<double>(total_ - done_) : -1;
  std::fprintf(stream_, "\r[%s%s] %zu/%zu jobs  %.0f eval/s  elapsed %s  ETA %s ",
               std::string(static_cast<size_t>(filled), '#').c_str(),
               std::string(static_cast<size_t>(width - filled), '.').c_str(), done_, total_, rate,
               clock_text(t).c_str(), clock_text(eta).c_str());
  std::fflush(stream_);
  last_draw_ = std::chrono::steady_clock::now();
}

void Progress::job_finished(const JobRow& r) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  if (mode_ == Mode::kBar) {
    draw_bar();
  } else if (mode_ == Mode::kLines) {
    std::fprintf(stream_, "[%zu/%zu] %s %s/%s on %s by %s (%s): %s", done_, total_,
                 r.job_id.c_str(), r.workload.c_str(), r.layer.c_str(), r.architecture.c_str(),
                 r.searcher.c_str(), r.costmodel.c_str(), r.status.c_str());
    if (r.status == "ok")
      std::fprintf(stream_, ", latency %.6g cycles, energy %.6g pJ, %llu evaluations, %.2f s\n",
                   r.latency_cycles, r.energy_pj, static_cast<unsigned long long>(r.evaluations),
                   r.wall_seconds);
    else
      std::fprintf(stream_, ": %s\n", r.error.c_str());
    std::fflush(stream_);
  }
}

void Progress::evaluations(std::uint64_t total) {
  if (mode_ != Mode::kBar) return;
  std::lock_guard<std::mutex> lock(mutex_);
  evaluations_ = total;
  if (std::chrono::steady_clock::now() - last_draw_ > std::chrono::milliseconds(100)) draw_bar();
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ == Mode::kBar) {
    draw_bar();
    std::fprintf(stream_, "\n");
  }
}

}  // namespace mapex::host
