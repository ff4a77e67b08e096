// Benchmarks of the hot paths. Run: build/bin/mapex_bench
// Report ratios measured in one run (machines here are shared and noisy):
// exhaustive at 2 threads over 1 thread; evaluation rate over the rate at
// which the mapspace streams mappings.

#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <mapex/generators.hpp>

#include "host/plugin_registry.hpp"
#include "host/runner.hpp"
#include "test_chips.hpp"

namespace mapex {
namespace {

// VGG16 conv3_1 (C128 K256 56x56 3x3 pad 1) on a Marvel P1-like chip:
// 168 PEs, 512 B L1, 108 KB L2.
const Operator& vgg_conv3_1() {
  static const Operator op =
      make_conv2d("conv3_1", Conv2dShape{1, 128, 256, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  return op;
}

const Architecture& p1() {
  static const Architecture arch =
      Architecture::make("p1", 200, 8, 1, 1,
                         {test::buffer("L1", 512, 1.68, 1.68), test::spatial("PEs", {12, 14}),
                          test::buffer("L2", 110592, 18.61, 18.61), test::dram(200)});
  return arch;
}

const host::PluginRegistry& registry() {
  static const host::PluginRegistry r = host::load_plugins();
  return r;
}

void BM_RooflineEvaluate(benchmark::State& state) {
  const auto model = registry().make_costmodel("roofline", {});
  const auto bound = model->bind(vgg_conv3_1(), p1());
  const Mapspace space(vgg_conv3_1(), p1());
  std::mt19937_64 rng(1);
  std::vector<Mapping> mappings;
  for (int i = 0; i < 256; ++i) mappings.push_back(*space.sample(rng));
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bound->evaluate(mappings[i++ % mappings.size()]));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_RooflineEvaluate);

void BM_MapspaceStream(benchmark::State& state) {
  const Mapspace space(vgg_conv3_1(), p1());
  Mapspace::Cursor cursor(space);
  Mapping m;
  std::uint64_t n = 0;
  for (auto _ : state) {
    if (!cursor.next(m)) cursor = Mapspace::Cursor(space);
    ++n;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(n));
}
BENCHMARK(BM_MapspaceStream);

void BM_ExhaustiveSearch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const auto searcher = registry().make_searcher("exhaustive", {});
  const auto model = registry().make_costmodel("roofline", {});
  host::SearchRequest r;
  r.op = &vgg_conv3_1();
  r.arch = &p1();
  r.searcher = searcher.get();
  r.costmodel = model.get();
  r.budget.max_evaluations = 20000;
  std::uint64_t evaluations = 0;
  tbb::task_arena arena(threads);
  for (auto _ : state) {
    host::JobResult result;
    arena.execute([&] { result = host::run_search(r); });
    evaluations += result.evaluations;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
}
BENCHMARK(BM_ExhaustiveSearch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace mapex

BENCHMARK_MAIN();
