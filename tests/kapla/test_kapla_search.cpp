// The kapla searcher (KAPLA §IV-C, Algorithm 1) against the paper's
// baselines on the same mapspace and the same tensor_centric model:
// exhaustive search (S) finds the optimum of small spaces, random search
// (R) samples them. Quality bounds here are loose regression guards on
// tiny spaces; the measured overheads are in docs/results/kapla.md.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <mapex/directives.hpp>
#include <mapex/generators.hpp>

#include "host/plugin_registry.hpp"
#include "host/runner.hpp"
#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex::host {
namespace {

using test::registry;

JobResult solve(const std::string& searcher, const Operator& op, const Architecture& arch,
                Objective objective, Budget budget = {},
                std::map<std::string, std::string> params = {}, std::uint64_t seed = 3) {
  const auto s = registry().make_searcher(searcher, params);
  const auto model = registry().make_costmodel("tensor_centric", {});
  SearchRequest r;
  r.op = &op;
  r.arch = &arch;
  r.searcher = s.get();
  r.costmodel = model.get();
  r.objective = objective;
  r.budget = budget;
  r.seed = seed;
  JobResult out;
  tbb::task_arena arena(2);
  arena.execute([&] { out = run_search(r); });
  return out;
}

double value(const JobResult& r, Objective o) { return objective_value(r.best, o); }

/// L1 (64 B) / 4 x 4 PEs with forwarding / L2 (2 KB) / DRAM, KAPLA-like
/// energies: a chip small enough for exhaustive search in a unit test.
Architecture small_chip() {
  Level pes = test::spatial("PEs", {4, 4});
  pes.noc.forwarding = true;
  pes.noc.hop_energy_pj = 0.5;
  return Architecture::make(
      "small", 500, 16, 1, 1,
      {test::buffer("L1", 64, 0.2, 0.2), pes, test::buffer("L2", 2048, 6, 6), test::dram(128)});
}

TEST(KaplaSearch, CloseToExhaustiveWithFarFewerEvaluations) {
  const Architecture arch = small_chip();
  const Operator op = make_fc("fc", 2, 8, 16);
  for (Objective o : {Objective::kEnergy, Objective::kLatency}) {
    SCOPED_TRACE(to_string(o));
    const JobResult s = solve("exhaustive", op, arch, o);
    const JobResult k = solve("kapla", op, arch, o);
    ASSERT_EQ(s.status, JobStatus::kOk) << s.error;
    ASSERT_EQ(k.status, JobStatus::kOk) << k.error;
    EXPECT_TRUE(s.complete);
    EXPECT_EQ(k.stop_reason, "solved");
    EXPECT_GE(value(k, o), value(s, o));
    EXPECT_LE(value(k, o), 1.25 * value(s, o));
    EXPECT_LT(k.evaluations * 20, s.evaluations);
  }
}

TEST(KaplaSearch, NotWorseThanRandomWithTheSameEvaluations) {
  const Architecture arch = small_chip();
  const Operator op = make_conv2d("c", Conv2dShape{1, 16, 8, 8, 8, 3, 3});
  const JobResult k = solve("kapla", op, arch, Objective::kEnergy);
  ASSERT_EQ(k.status, JobStatus::kOk) << k.error;
  const JobResult r = solve("random", op, arch, Objective::kEnergy, Budget{k.evaluations, 0});
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_LE(value(k, Objective::kEnergy), value(r, Objective::kEnergy));
}

// The 1x1 convolution of experiments/workloads/kapla_small.yaml on the
// multi-node chip: without the refinement the solver ended 2.4% above
// random search with 2,000 samples (docs/results/kapla.md before it).
/// kapla solves the layer in fewer than `max_evaluations` evaluations and
/// ends no worse than random search with 2,000 samples for any of four seeds.
void expect_not_worse_than_random(const Operator& op, const Architecture& arch,
                                  std::uint64_t max_evaluations) {
  SCOPED_TRACE(op.name());
  const JobResult k = solve("kapla", op, arch, Objective::kEnergy);
  ASSERT_EQ(k.status, JobStatus::kOk) << k.error;
  EXPECT_EQ(k.stop_reason, "solved");
  EXPECT_LT(k.evaluations, max_evaluations);
  for (std::uint64_t seed : {1, 2, 3, 2023}) {
    SCOPED_TRACE(seed);
    const JobResult r = solve("random", op, arch, Objective::kEnergy, Budget{2000, 0}, {}, seed);
    ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
    EXPECT_LE(value(k, Objective::kEnergy), value(r, Objective::kEnergy));
  }
}

TEST(KaplaSearch, RefinedNotWorseThanRandomWith2000SamplesOnThePaperChip) {
  const Architecture arch = Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) +
                                               "/architectures/kapla_multinode.yaml");
  expect_not_worse_than_random(make_conv2d("conv1x1", Conv2dShape{1, 4, 16, 4, 4, 1, 1}), arch,
                               1000);
}

/// The layers of experiments/workloads/kapla_small.yaml.
std::vector<Operator> kapla_small_layers() {
  return {make_conv2d("conv1x1", Conv2dShape{1, 4, 16, 4, 4, 1, 1}), make_fc("fc1", 4, 64, 32),
          make_fc("fc2", 4, 32, 64)};
}

// The refinement starts from the solver's best and only accepts a lower
// cost, so it is never worse than the solver alone; it is deterministic.
TEST(KaplaSearch, RefinementNeverWorseThanWithout) {
  const std::string dir = MAPEX_EXPERIMENTS_DIR;
  const std::vector<Operator> ops = kapla_small_layers();
  bool improved = false;
  for (const char* chip : {"kapla_multinode", "kapla_edge"}) {
    const Architecture arch = Architecture::load(dir + "/architectures/" + chip + ".yaml");
    for (const Operator& op : ops)
      for (Objective o : {Objective::kEnergy, Objective::kLatency}) {
        SCOPED_TRACE(std::string(chip) + " " + op.name() + " " + to_string(o));
        const JobResult plain = solve("kapla", op, arch, o, {}, {{"refine", "false"}});
        const JobResult refined = solve("kapla", op, arch, o);
        ASSERT_EQ(plain.status, JobStatus::kOk) << plain.error;
        ASSERT_EQ(refined.status, JobStatus::kOk) << refined.error;
        EXPECT_LE(value(refined, o), value(plain, o));
        EXPECT_GE(refined.evaluations, plain.evaluations);
        improved = improved || value(refined, o) < value(plain, o);
        const JobResult again = solve("kapla", op, arch, o);
        EXPECT_EQ(again.mapping_yaml, refined.mapping_yaml);
        EXPECT_EQ(again.evaluations, refined.evaluations);
      }
  }
  EXPECT_TRUE(improved);
}

// The fc layers of experiments/workloads/kapla_small.yaml on the edge chip:
// with stacking first at every level the solver and its refinement ended
// 0.08% above random search with 2,000 samples (3.541e5 against 3.538e5 pJ);
// caching alone at the innermost level reaches the exhaustive optimum with
// fewer evaluations than before (346 then, 339 now).
TEST(KaplaSearch, EdgeFcLayersNotWorseThanRandomWith2000Samples) {
  const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/kapla_edge.yaml");
  for (const Operator& op : {make_fc("fc1", 4, 64, 32), make_fc("fc2", 4, 32, 64)})
    expect_not_worse_than_random(op, arch, 400);
}

// Caching alone only adds candidates at the innermost level: on the layers
// of experiments/kapla/ it is never worse than stacking first everywhere, it
// is better on the edge fc layers, and it adds few evaluations.
TEST(KaplaSearch, CachingAloneNeverWorseOnThePaperChips) {
  const std::string dir = MAPEX_EXPERIMENTS_DIR;
  const std::vector<Operator> ops = kapla_small_layers();
  bool improved = false;
  for (const char* chip : {"kapla_multinode", "kapla_edge"}) {
    const Architecture arch = Architecture::load(dir + "/architectures/" + chip + ".yaml");
    for (const Operator& op : ops) {
      SCOPED_TRACE(std::string(chip) + " " + op.name());
      const JobResult stacked =
          solve("kapla", op, arch, Objective::kEnergy, {}, {{"cache_alone", "false"}});
      const JobResult k = solve("kapla", op, arch, Objective::kEnergy);
      ASSERT_EQ(stacked.status, JobStatus::kOk) << stacked.error;
      ASSERT_EQ(k.status, JobStatus::kOk) << k.error;
      EXPECT_LE(value(k, Objective::kEnergy), value(stacked, Objective::kEnergy));
      EXPECT_LT(k.evaluations, stacked.evaluations * 3 / 2);
      improved = improved || value(k, Objective::kEnergy) < value(stacked, Objective::kEnergy);
    }
  }
  EXPECT_TRUE(improved);
}

// A budget cut during the refinement keeps the best so far.
TEST(KaplaSearch, RefinementHonoursTheBudget) {
  const Architecture arch = small_chip();
  const Operator op = make_conv2d("c", Conv2dShape{1, 16, 8, 8, 8, 3, 3});
  const JobResult full = solve("kapla", op, arch, Objective::kEnergy);
  ASSERT_EQ(full.status, JobStatus::kOk) << full.error;
  const JobResult cut =
      solve("kapla", op, arch, Objective::kEnergy, Budget{full.evaluations - 1, 0});
  ASSERT_EQ(cut.status, JobStatus::kOk) << cut.error;
  EXPECT_EQ(cut.stop_reason, "budget");
  EXPECT_LE(cut.evaluations, full.evaluations - 1);
}

TEST(KaplaSearch, SolvesALayerOnBothPaperChips) {
  const std::string dir = MAPEX_EXPERIMENTS_DIR;
  const Operator op = make_conv2d("conv3", Conv2dShape{1, 64, 64, 28, 28, 3, 3, 1, 1, 1, 1});
  for (const char* chip : {"kapla_multinode", "kapla_edge"}) {
    SCOPED_TRACE(chip);
    const Architecture arch = Architecture::load(dir + "/architectures/" + chip + ".yaml");
    const JobResult k = solve("kapla", op, arch, Objective::kEnergy);
    ASSERT_EQ(k.status, JobStatus::kOk) << k.error;
    EXPECT_GT(k.best.utilization, 0.05);
    // The result prints as directives and reads back.
    const Mapping m = Mapping::parse(k.mapping_yaml, "best.yaml", op, arch);
    const std::string text = format_directives(to_directives(op, arch, m), op);
    const auto parsed = parse_directives(text, "best.kd", {&op}, arch);
    EXPECT_EQ(to_mapping(parsed.front(), op, arch, "best.kd"), normalise_orders(m, op, arch));
  }
}

}  // namespace
}  // namespace mapex::host
