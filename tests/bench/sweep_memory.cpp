// Peak memory of an exhaustive sweep over 10^9 mappings (the mapspace
// target: under 100 MB, flat in the size of the space). The cost model is
// nearly free, so the run measures the framework: enumeration in chunks,
// merging, the best-so-far. Prints mappings, seconds, mappings per second
// and the peak resident set. Run: build/bin/mapex_sweep_memory [N]

#include <sys/resource.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mapex/generators.hpp>
#include <mapex/search.hpp>

#include "test_chips.hpp"

namespace {

class NullModel final : public mapex::BoundCostModel {
 public:
  mapex::Metrics evaluate(const mapex::Mapping& m) const override {
    mapex::Metrics out;
    out.valid = true;
    out.latency_cycles = static_cast<double>(m.level(0).tile[1] + m.level(2).order[0]);
    out.energy_pj = 1;
    return out;
  }
};

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000000ull;
  // VGG16 conv3_1 on a Marvel P1-like chip: about 10^11 valid mappings.
  const mapex::Operator op = mapex::make_conv2d(
      "conv3_1", mapex::Conv2dShape{1, 128, 256, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const mapex::Architecture arch = mapex::Architecture::make(
      "p1", 200, 8, 1, 1,
      {mapex::test::buffer("L1", 512), mapex::test::spatial("PEs", {12, 14}),
       mapex::test::buffer("L2", 110592), mapex::test::dram()});
  const double before = peak_rss_mb();
  const mapex::Mapspace space(op, arch);
  NullModel model;
  const auto start = std::chrono::steady_clock::now();
  mapex::SearchContext ctx(op, arch, space, model, mapex::Objective::kLatency, 1,
                           mapex::Budget{n, 0});
  ctx.evaluate_space(space);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("mappings %llu  seconds %.1f  mappings/s %.3g  peak RSS %.1f MB (%.1f MB before)\n",
              static_cast<unsigned long long>(ctx.evaluations()), seconds,
              static_cast<double>(ctx.evaluations()) / seconds, peak_rss_mb(), before);
  return 0;
}
