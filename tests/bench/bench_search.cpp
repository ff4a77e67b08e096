// Benchmarks of the hot paths. Run: build/bin/mapex_bench
// Report ratios measured in one run (machines here are shared and noisy):
// exhaustive at 2 threads over 1 thread; evaluation rate over the rate at
// which the mapspace streams mappings.

#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <mapex/generators.hpp>
#include <mapex/search.hpp>

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

// 256 mappings sampled from conv3_1's space on P1, the same every run.
const std::vector<Mapping>& sampled_mappings() {
  static const std::vector<Mapping> mappings = [] {
    const Mapspace space(vgg_conv3_1(), p1());
    std::mt19937_64 rng(1);
    std::vector<Mapping> out;
    for (int i = 0; i < 256; ++i) out.push_back(*space.sample(rng));
    return out;
  }();
  return mappings;
}

// Roofline per mapping: the full evaluate (metrics with per-level accounts)
// and the lean score sweeps rank by, on the same mappings; report the ratio.
template <bool kLean>
void BM_Roofline(benchmark::State& state) {
  const auto model = registry().make_costmodel("roofline", {});
  const auto bound = model->bind(vgg_conv3_1(), p1());
  const auto& mappings = sampled_mappings();
  std::size_t i = 0;
  for (auto _ : state) {
    const Mapping& m = mappings[i++ % mappings.size()];
    if constexpr (kLean)
      benchmark::DoNotOptimize(bound->score(m));
    else
      benchmark::DoNotOptimize(bound->evaluate(m));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_Roofline<false>)->Name("BM_RooflineEvaluate");
BENCHMARK(BM_Roofline<true>)->Name("BM_RooflineScore");

// Roofline per mapping along the enumeration stream, as a sweep scores it:
// precheck_and_score told by the cursor what moved since the previous
// mapping (MappingChange), with the stream's own state, so the analysis is
// redone only from the lowest level whose order moved (most mappings: DRAM's
// order alone) and a new tiling only now and then. Target: at most 200 ns.
void BM_RooflineIncremental(benchmark::State& state) {
  const auto model = registry().make_costmodel("roofline", {});
  const auto bound = model->bind(vgg_conv3_1(), p1());
  struct Step {
    Mapping m;
    MappingChange change;
  };
  static const std::vector<Step> stream = [&] {
    const Mapspace space(vgg_conv3_1(), p1());
    Mapspace::Cursor cursor(space);
    std::vector<Step> out;
    Step step;
    while (out.size() < 65536 && cursor.next(step.m, step.change)) out.push_back(step);
    out.front().change = MappingChange{};  // after the last one: everything may move
    return out;
  }();
  std::unique_ptr<StreamState> stream_state;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        bound->precheck_and_score(stream[i].m, stream[i].change, stream_state));
    i = i + 1 == stream.size() ? 0 : i + 1;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_RooflineIncremental);

// The cost of one mdc evaluation of a canonical mapping (Algorithm 1 then
// the analysis), on the mappings a sweep visits first; compare with
// BM_SweepMdc for the framework's overhead per mapping.
void BM_MdcEvaluate(benchmark::State& state) {
  const auto model = registry().make_costmodel("mdc", {});
  const auto bound = model->bind(vgg_conv3_1(), p1());
  const Mapspace space(vgg_conv3_1(), p1());
  Mapspace::Cursor cursor(space);
  std::vector<Mapping> mappings(4096);
  for (auto& m : mappings) cursor.next(m);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(bound->evaluate(mappings[i++ % mappings.size()]));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_MdcEvaluate);

void BM_SweepMdc(benchmark::State& state) {
  const auto model = registry().make_costmodel("mdc", {});
  const auto bound = model->bind(vgg_conv3_1(), p1());
  const Mapspace space(vgg_conv3_1(), p1());
  std::uint64_t evaluations = 0;
  tbb::task_arena arena(1);
  for (auto _ : state) {
    arena.execute([&] {
      SearchContext ctx(vgg_conv3_1(), p1(), space, *bound, Objective::kLatency, 1,
                        Budget{4096, 0});
      ctx.evaluate_space(space);
      evaluations += ctx.evaluations();
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
}
BENCHMARK(BM_SweepMdc)->Unit(benchmark::kMillisecond);

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

// Exact counting of a ResNet-50 layer's space (res3a_branch2b: C128 K128
// 28x28 3x3 pad 1) on Marvel's P2 (1024 PEs), without enumeration: the
// structural space (dynamic programme only) and the space after capacity
// (the capacity-pruned walk over tilings).
const Operator& resnet_layer() {
  static const Operator op =
      make_conv2d("res3a_branch2b", Conv2dShape{1, 128, 128, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  return op;
}
const Architecture& p2() {
  static const Architecture arch =
      Architecture::make("p2", 200, 8, 1, 1,
                         {test::buffer("L1", 512, 1.68, 1.68), test::spatial("PEs", {32, 32}),
                          test::buffer("L2", 110592, 18.61, 18.61), test::dram(200)});
  return arch;
}

void BM_CountResnetLayer(benchmark::State& state) {
  for (auto _ : state) {
    const Mapspace space(resnet_layer(), p2());
    benchmark::DoNotOptimize(space.size());
  }
}
BENCHMARK(BM_CountResnetLayer)->Unit(benchmark::kMillisecond);

void BM_CountResnetLayerValid(benchmark::State& state) {
  const Mapspace space(resnet_layer(), p2());
  for (auto _ : state) benchmark::DoNotOptimize(space.count_valid());
}
BENCHMARK(BM_CountResnetLayerValid)->Unit(benchmark::kMillisecond);

// A cost model that costs nearly nothing: what is left is the framework's
// own work per mapping (enumeration, chunking, merging).
class NullModel final : public BoundCostModel {
 public:
  Metrics evaluate(const Mapping& m) const override {
    Metrics out;
    out.valid = true;
    out.latency_cycles = static_cast<double>(m.level(0).tile[1] + m.level(2).order[0]);
    out.energy_pj = 1;
    return out;
  }
};

// A complete exhaustive sweep of a small layer's whole valid space (C4 K8
// 6x6 3x3 on 2x2 PEs, 64 B L1, 2 KB L2: 18,562,744 mappings), at 1 and 2
// threads, with the null model (enumeration throughput) and with roofline
// (budget 400k).
const Operator& small_conv() {
  static const Operator op = make_conv2d("c", Conv2dShape{1, 4, 8, 6, 6, 3, 3});
  return op;
}
const Architecture& small_chip() {
  static const Architecture arch =
      Architecture::make("c", 100, 8, 1, 1,
                         {test::buffer("L1", 64), test::spatial("PEs", {2, 2}),
                          test::buffer("L2", 2048), test::dram()});
  return arch;
}

void BM_SweepNullModel(benchmark::State& state) {
  const Mapspace space(small_conv(), small_chip());
  NullModel model;
  std::uint64_t evaluations = 0;
  tbb::task_arena arena(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    arena.execute([&] {
      SearchContext ctx(small_conv(), small_chip(), space, model, Objective::kLatency, 1, {});
      ctx.evaluate_space(space);
      evaluations += ctx.evaluations();
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
}
BENCHMARK(BM_SweepNullModel)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SweepRoofline(benchmark::State& state) {
  const Mapspace space(small_conv(), small_chip());
  const auto model = registry().make_costmodel("roofline", {});
  const auto bound = model->bind(small_conv(), small_chip());
  std::uint64_t evaluations = 0;
  tbb::task_arena arena(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    arena.execute([&] {
      SearchContext ctx(small_conv(), small_chip(), space, *bound, Objective::kLatency, 1,
                        Budget{400000, 0});
      ctx.evaluate_space(space);
      evaluations += ctx.evaluations();
    });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
}
// CPU time of the whole process (both workers), to set against the real
// time: on a loaded machine the real time says little about the sweep.
BENCHMARK(BM_SweepRoofline)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// KAPLA's comparison (docs/results/kapla.md): the kapla searcher and the
// exhaustive one on the edge chip's fc1 (experiments/kapla/inference.yaml),
// tensor_centric, energy, 2 threads; report the ratio of the two times.
const Operator& kapla_fc1() {
  static const Operator op = make_fc("fc1", 4, 64, 32);
  return op;
}
const Architecture& kapla_edge() {
  static const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/kapla_edge.yaml");
  return arch;
}

void BM_KaplaEdgeFc1(benchmark::State& state, const char* searcher_name) {
  const auto searcher = registry().make_searcher(searcher_name, {});
  const auto model = registry().make_costmodel("tensor_centric", {});
  host::SearchRequest r;
  r.op = &kapla_fc1();
  r.arch = &kapla_edge();
  r.searcher = searcher.get();
  r.costmodel = model.get();
  r.objective = Objective::kEnergy;  // factors-only tiles by default, as the experiment
  std::uint64_t evaluations = 0;
  tbb::task_arena arena(2);
  for (auto _ : state) {
    host::JobResult result;
    arena.execute([&] { result = host::run_search(r); });
    evaluations += result.evaluations;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(evaluations));
}
BENCHMARK_CAPTURE(BM_KaplaEdgeFc1, kapla, "kapla")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KaplaEdgeFc1, exhaustive, "exhaustive")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace mapex

BENCHMARK_MAIN();
