#include "host/runner.hpp"

#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mapex/analysis.hpp>
#include <mapex/budget_requirement.hpp>
#include <mapex/layer_location.hpp>
#include <mutex>
#include <optional>
#include <thread>

#include "tsan_annotations.hpp"

namespace mapex::host {

std::string to_string(JobStatus status) {
  switch (status) {
    case JobStatus::kOk:
      return "ok";
    case JobStatus::kNoValidMapping:
      return "no_valid_mapping";
    case JobStatus::kFailed:
      return "failed";
  }
  return "failed";
}

JobResult run_search(const SearchRequest& r,
                     const std::function<void(std::uint64_t)>& on_evaluations) {
  JobResult result;
  result.objective = to_string(r.objective);
  const auto start = std::chrono::steady_clock::now();
  try {
    result.roofline_peak_cycles = roofline_peak(*r.op, *r.arch).cycles;
    const auto bound = r.costmodel->bind(*r.op, *r.arch);
    const Mapspace space(*r.op, *r.arch, resolve(r.mapspace, *r.op, *r.arch));
    SearchContext ctx(*r.op, *r.arch, space, *bound, r.objective, r.seed, r.budget);
    if (on_evaluations) ctx.set_progress_callback(on_evaluations);
    if (r.stop) ctx.set_stop_flag(r.stop);
    const SearchOutcome outcome = r.searcher->search(ctx);
    result.evaluations = ctx.evaluations();
    result.complete = outcome.complete;
    result.stop_reason = outcome.stop_reason;
    if (ctx.stopped() && !outcome.complete) {
      result.interrupted = true;
      result.stop_reason = "interrupted";
    }
    if (r.keep_trace) result.trace = ctx.trace();
    for (const auto& p : ctx.pareto())
      result.pareto.push_back(
          {p.evaluation, p.latency_cycles, p.energy_pj, p.mapping.summary(*r.op, *r.arch)});
    if (ctx.best_mapping()) {
      result.status = JobStatus::kOk;
      result.best = ctx.best_metrics();
      result.mapping_yaml = ctx.best_mapping()->to_yaml(*r.op, *r.arch);
      result.mapping_summary = ctx.best_mapping()->summary(*r.op, *r.arch);
    } else {
      result.status = JobStatus::kNoValidMapping;
      // A searcher that found its space empty says so; the message then
      // names the constraint that emptied it rather than the searcher's
      // symptom (nothing evaluated, or no sample drawn).
      std::optional<std::string> empty;
      if (ctx.evaluations() == 0 && outcome.stop_reason == kEmptyMapspace)
        empty = space.empty_reason();
      result.error = empty ? *empty
                     : ctx.evaluations() == 0
                         ? "no mapping was evaluated (" + outcome.stop_reason + ")"
                         : "none of " + std::to_string(ctx.evaluations()) + " mappings was valid";
    }
  } catch (const InputError& e) {
    result.status = JobStatus::kFailed;
    // A refusal that knows no file (a cost model's or searcher's, about the
    // layer it was given) is placed at the layer's entry in its workload.
    result.error = e.where().file.empty()
                       ? placed_at(e, layer_file_location(r.workload_path, r.op->name())).what()
                       : e.what();
    result.bad_input = true;
  } catch (const std::exception& e) {
    result.status = JobStatus::kFailed;
    result.error = e.what();
  } catch (...) {
    result.status = JobStatus::kFailed;
    result.error = "unknown exception";
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

PluginInstances instantiate(const Experiment& e, const PluginRegistry& registry) {
  PluginInstances p;
  // A plugin's own range checks (victory_condition: -1) know no file: the
  // entry's place in the experiment is added here.
  const auto at_entry = [](const PluginUse& use, const auto& make) {
    try {
      return make();
    } catch (const PluginError&) {
      throw;
    } catch (const InputError& err) {
      if (!err.where().file.empty()) throw;
      throw InputError(use.where, err.key(), err.problem());
    }
  };
  for (const auto& s : e.searchers) {
    p.searchers.push_back(at_entry(s, [&] { return registry.make_searcher(s.plugin, s.params); }));
    // A searcher that would never stop under the entry's budget is refused
    // now, at its entry, before anything runs or is written (issue 18).
    if (const auto* needs = dynamic_cast<const BudgetRequirement*>(p.searchers.back().get()))
      if (const auto why = needs->unbounded(s.budget)) throw InputError(s.where, "budget", *why);
  }
  for (const auto& c : e.costmodels)
    p.costmodels.push_back(
        at_entry(c, [&] { return registry.make_costmodel(c.plugin, c.params); }));
  return p;
}

namespace {

// Thrown from the progress callback to abandon a search after a stop.
struct Abandoned {};

// Finished results, handed from the workers to the consuming thread by
// value; nullopt marks the end. A mutex and a condition variable rather than
// TBB's concurrent queue: the traffic is one item per job, and
// ThreadSanitizer sees this hand-over, whereas Debian's libtbb is not
// instrumented and its queue's showed as a race.
class ResultChannel {
 public:
  // Notifies under the lock: once the consumer has taken the end marker it
  // may destroy the channel, and no producer may still be inside notify.
  void push(std::optional<JobResult> item) {
    const std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
    ready_.notify_one();
  }
  std::optional<JobResult> pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !items_.empty(); });
    return take();
  }
  /// Waits until `deadline` at most; false when nothing came.
  bool pop_until(std::chrono::steady_clock::time_point deadline, std::optional<JobResult>& out) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_until(lock, deadline, [&] { return !items_.empty(); })) return false;
    out = take();
    return true;
  }

 private:
  std::optional<JobResult> take() {
    std::optional<JobResult> item = std::move(items_.front());
    items_.pop_front();
    return item;
  }
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::optional<JobResult>> items_;
};

}  // namespace

RunSummary run_jobs(const Experiment& e, const PluginInstances& plugins,
                    const std::vector<Job>& jobs, const RunOptions& options) {
  ResultChannel finished;
  std::atomic<std::uint64_t> total_evaluations{0};
  std::atomic<std::size_t> abandoned{0};
  auto stopped = [&] { return options.stop && options.stop->load(std::memory_order_relaxed); };

  std::exception_ptr failure;
  std::thread workers([&] {
    try {
      const int threads =
          options.threads > 0 ? options.threads : tbb::this_task_arena::max_concurrency();
      tbb::task_arena arena(threads);
      MAPEX_TSAN_RELEASE(&jobs);
      arena.execute([&] {
        tbb::parallel_for_each(jobs.begin(), jobs.end(), [&](const Job& job) {
          MAPEX_TSAN_ACQUIRE(&jobs);
          if (stopped()) {
            ++abandoned;
            return;
          }
          const auto& w = e.workloads[static_cast<size_t>(job.workload)];
          const Operator& op = w.network.layers()[static_cast<size_t>(job.layer)].op;
          const auto& su = e.searchers[static_cast<size_t>(job.searcher)];
          const auto& au = e.architectures[static_cast<size_t>(job.architecture)];
          SearchRequest request;
          request.op = &op;
          request.arch = &au.arch;
          request.searcher = plugins.searchers[static_cast<size_t>(job.searcher)].get();
          request.costmodel = plugins.costmodels[static_cast<size_t>(job.costmodel)].get();
          request.objective = e.objective;
          request.mapspace = su.mapspace ? *su.mapspace : e.mapspace;
          request.budget = su.budget;
          request.seed = job.seed;
          request.keep_trace = options.keep_traces;
          request.workload_path = w.path;
          std::uint64_t reported = 0;
          bool abandon = false;
          JobResult r = run_search(request, [&](std::uint64_t n) {
            const std::uint64_t now = total_evaluations += n - reported;
            reported = n;
            if (options.on_evaluations) options.on_evaluations(now);
            if (stopped()) {
              // A searcher that swallows this still has its result dropped.
              abandon = true;
              throw Abandoned{};
            }
          });
          if (abandon) {
            ++abandoned;
            return;
          }
          r.job = job;
          r.workload = w.network.name();
          r.layer = op.name();
          r.architecture = au.arch.name();
          r.searcher = su.label;
          r.searcher_plugin = su.plugin;
          r.searcher_params = su.params;
          r.budget = su.budget;
          r.costmodel = e.costmodels[static_cast<size_t>(job.costmodel)].label;
          r.num_pes = au.arch.num_pes();
          r.clock_mhz = au.arch.clock_mhz();
          r.area_mm2 = au.cost.area_mm2;
          r.power_mw = au.cost.power_mw;
          finished.push(std::move(r));
        });
      });
    } catch (...) {
      failure = std::current_exception();
    }
    finished.push(std::nullopt);
  });

  // This thread is the single consumer: it hands batches to the writer.
  RunSummary summary;
  std::exception_ptr writer_failure;
  std::vector<JobResult> batch;
  bool end = false;
  while (!end) {
    std::optional<JobResult> item;
    if (options.on_wait) {
      while (!finished.pop_until(std::chrono::steady_clock::now() + options.wait_period, item))
        options.on_wait();
    } else {
      item = finished.pop();
    }
    batch.clear();
    if (item)
      batch.push_back(std::move(*item));
    else
      end = true;
    // Collect what else finishes within the batch window, so a run of many
    // small jobs writes and flushes once per window rather than per job
    // (an HDF5 flush costs several writes), while a slow job is still
    // flushed within the window of finishing.
    const auto deadline = std::chrono::steady_clock::now() + options.batch_window;
    while (!end && batch.size() < 4096) {
      std::optional<JobResult> more;
      if (!finished.pop_until(deadline, more)) break;
      if (!more) {
        end = true;
        break;
      }
      batch.push_back(std::move(*more));
    }
    for (const auto& r : batch) summary.failed += r.status == JobStatus::kFailed;
    summary.finished += batch.size();
    if (!batch.empty() && !writer_failure && options.on_results) {
      try {
        options.on_results(batch);
      } catch (...) {
        writer_failure = std::current_exception();
      }
    }
  }
  workers.join();
  summary.abandoned = abandoned.load();
  if (writer_failure) std::rethrow_exception(writer_failure);
  if (failure) std::rethrow_exception(failure);
  return summary;
}

}  // namespace mapex::host
