#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <mapex/error.hpp>
#include <mapex/search.hpp>

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

double objective_value(const Metrics& m, Objective objective) {
  if (!m.valid) return std::numeric_limits<double>::infinity();
  switch (objective) {
    case Objective::kLatency:
      return m.latency_cycles;
    case Objective::kEnergy:
      return m.energy_pj;
    case Objective::kEdp:
      return m.edp();
  }
  return m.latency_cycles;
}

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
  if (budget_.max_seconds > 0 && elapsed_seconds() >= budget_.max_seconds) return true;
  return false;
}

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
      best_metrics_ = out[i];
      trace_.push_back(TracePoint{evaluations_ + i + 1, value});
    }
  }
  evaluations_ += allowed;
  if (progress_) progress_(evaluations_);
  return out;
}

}  // namespace mapex
