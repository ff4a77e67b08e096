#include "host/runner.hpp"

#include <tbb/concurrent_queue.h>
#include <tbb/parallel_for_each.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mapex/analysis.hpp>
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
    const SearchOutcome outcome = r.searcher->search(ctx);
    result.evaluations = ctx.evaluations();
    result.complete = outcome.complete;
    result.stop_reason = outcome.stop_reason;
    result.trace = ctx.trace();
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
      result.error = ctx.evaluations() == 0
                         ? "no mapping was evaluated (" + outcome.stop_reason + ")"
                         : "none of " + std::to_string(ctx.evaluations()) + " mappings was valid";
    }
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
  for (const auto& s : e.searchers)
    p.searchers.push_back(registry.make_searcher(s.plugin, s.params));
  for (const auto& c : e.costmodels)
    p.costmodels.push_back(registry.make_costmodel(c.plugin, c.params));
  return p;
}

std::vector<JobResult> run_jobs(const Experiment& e, const PluginInstances& plugins,
                                const std::vector<Job>& jobs, const RunOptions& options) {
  std::vector<JobResult> results(jobs.size());
  tbb::concurrent_bounded_queue<std::optional<std::size_t>> finished;
  std::atomic<std::uint64_t> total_evaluations{0};

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
          const auto& w = e.workloads[static_cast<size_t>(job.workload)];
          const Operator& op = w.network.layers()[static_cast<size_t>(job.layer)].op;
          const auto& su = e.searchers[static_cast<size_t>(job.searcher)];
          SearchRequest request;
          request.op = &op;
          request.arch = &e.architectures[static_cast<size_t>(job.architecture)].arch;
          request.searcher = plugins.searchers[static_cast<size_t>(job.searcher)].get();
          request.costmodel = plugins.costmodels[static_cast<size_t>(job.costmodel)].get();
          request.objective = e.objective;
          request.mapspace = su.mapspace ? *su.mapspace : e.mapspace;
          request.budget = su.budget;
          request.seed = job.seed;
          std::uint64_t reported = 0;
          JobResult r = run_search(request, [&](std::uint64_t n) {
            const std::uint64_t now = total_evaluations += n - reported;
            reported = n;
            if (options.on_evaluations) options.on_evaluations(now);
          });
          r.job = job;
          r.workload = w.network.name();
          r.layer = op.name();
          r.architecture = request.arch->name();
          r.searcher = su.label;
          r.costmodel = e.costmodels[static_cast<size_t>(job.costmodel)].label;
          const auto position = static_cast<std::size_t>(&job - jobs.data());
          results[position] = std::move(r);
          MAPEX_TSAN_RELEASE(&results[position]);
          finished.push(position);
        });
      });
    } catch (...) {
      failure = std::current_exception();
    }
    finished.push(std::nullopt);
  });

  // This thread is the single consumer: it hands results to the writer.
  std::exception_ptr writer_failure;
  for (;;) {
    std::optional<std::size_t> index;
    finished.pop(index);
    if (!index) break;
    MAPEX_TSAN_ACQUIRE(&results[*index]);
    if (writer_failure || !options.on_result) continue;
    try {
      options.on_result(results[*index]);
    } catch (...) {
      writer_failure = std::current_exception();
    }
  }
  workers.join();
  if (writer_failure) std::rethrow_exception(writer_failure);
  if (failure) std::rethrow_exception(failure);
  return results;
}

}  // namespace mapex::host
