// Speed of the search over nn_dataflow's space (mapex::ndf::search)
// against nn_dataflow's own search on the single-layer reference runs
// (refdata/nn_dataflow/layers.csv; nn_dataflow is not run here). Per
// layer: the CPU time of the whole search (every network-input layout
// nn_dataflow tries, every partition, pass and loop blocking), the median
// of --runs repetitions, against the run's recorded `cpu_s` (the tool's
// process CPU time, Python start-up and the tiny trailing layer included)
// and `search_elapsed_s` (the search's wall time as the tool measured it,
// without start-up). Ratios against figures recorded in another run on a
// shared machine, not a same-run comparison. A figure, not a test.
//
// usage: mapex_bench_nndf_search [--runs N] (default 7)

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mapex/nn_dataflow_search.hpp>
#include <vector>

#include "nndf_reference.hpp"

namespace {

namespace fs = std::filesystem;
namespace ref = mapex::ndf::reference;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 7;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::max(1, std::atoi(argv[i + 1]));
  const fs::path refdata = MAPEX_NNDF_REFDATA;
  std::printf(
      "| layer | nn_dataflow L_cost | mapex best | ratio | nn_dataflow cpu_s | nn_dataflow "
      "search_elapsed_s | mapex cpu_ms (median of %d) | speedup vs cpu_s | speedup vs elapsed "
      "|\n|---|---|---|---|---|---|---|---|---|\n",
      runs);
  double min_speedup = 1e300;
  for (const auto& row : ref::read_layers(refdata)) {
    ref::Setup s;
    if (auto why = ref::load(refdata, MAPEX_TEST_DATA_DIR,
                             fs::path(MAPEX_EXPERIMENTS_DIR) / "architectures", row, s)) {
      std::printf("| %s | excluded: %s |||||||\n", row.at("id").c_str(), why->c_str());
      continue;
    }
    const auto& pr = s.problem;
    std::vector<double> times;
    mapex::ndf::SearchOutput out;
    for (int r = 0; r < runs; ++r) {
      const double t0 = cpu_seconds();
      out = mapex::ndf::search(pr.layer, pr.hw, pr.options, s.layouts, s.options);
      times.push_back(cpu_seconds() - t0);
    }
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    const double best = out.tops.empty() ? 0 : out.tops.front().cost / s.scale;
    const double elapsed = std::stod(row.at("search_elapsed_s"));
    min_speedup = std::min(min_speedup, s.ref_cpu_s / t);
    std::printf("| %s | %.6g | %.6g | %.6f | %.2f | %.2f | %.3f | %.0fx | %.0fx |\n", s.id.c_str(),
                s.ref_cost, best, best / s.ref_cost, s.ref_cpu_s, elapsed, t * 1e3, s.ref_cpu_s / t,
                elapsed / t);
    std::fflush(stdout);
  }
  std::printf("\nleast speedup vs cpu_s: %.0fx (target 100x)\n", min_speedup);
  return 0;
}
