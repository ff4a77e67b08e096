// Unit tests of the framework side of searching: the batch evaluation owns
// the budget, returns results in order, keeps the earliest of equal bests,
// and traces improvements; the results do not depend on the thread count.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <limits>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/search.hpp>
#include <set>
#include <stdexcept>

#include "test_chips.hpp"

namespace mapex {
namespace {

using test::chip;

// Latency = the L1 tile of M (so several mappings tie), energy = 1; a
// mapping with an L1 tile of N equal to 2 is invalid.
class FakeModel final : public BoundCostModel {
 public:
  Metrics evaluate(const Mapping& m) const override {
    if (m.level(0).tile[1] == 2) return Metrics::invalid("N tile of 2");
    Metrics out;
    out.valid = true;
    out.latency_cycles = static_cast<double>(m.level(0).tile[0]);
    out.energy_pj = 1;
    return out;
  }
};

Mapping with_l1(const Operator& op, const Architecture& arch, std::int64_t m_tile,
                std::int64_t n_tile) {
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {m_tile, n_tile, 1};
  m.level(2).tile = {m_tile, n_tile, 1};
  return m;
}

TEST(SearchContext, ResultsInOrderBestIsEarliestOfEquals) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({4});
  const Mapspace space(op, arch);
  FakeModel model;
  SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{});
  const std::vector<Mapping> batch{with_l1(op, arch, 4, 1), with_l1(op, arch, 2, 1),
                                   with_l1(op, arch, 2, 4), with_l1(op, arch, 1, 2)};
  const auto results = ctx.evaluate(batch);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].latency_cycles, 4);
  EXPECT_EQ(results[1].latency_cycles, 2);
  EXPECT_FALSE(results[3].valid);  // latency 1 but invalid: never the best
  ASSERT_TRUE(ctx.best_mapping());
  EXPECT_EQ(*ctx.best_mapping(), batch[1]);  // ties with batch[2]; the earlier wins
  ASSERT_EQ(ctx.trace().size(), 2u);
  EXPECT_EQ(ctx.trace()[0].evaluation, 1u);
  EXPECT_EQ(ctx.trace()[1].evaluation, 2u);
  EXPECT_EQ(ctx.trace()[1].value, 2);
  EXPECT_EQ(ctx.evaluations(), 4u);
}

// Factor bounds hold for every evaluated mapping, also those a searcher
// builds outside the mapspace or streams from a space of its own: at most
// (or at least) M's L1 trip count, here the L1 tile of M.
TEST(SearchContext, MappingsOutsideFactorLimitsAreInvalid) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({4});
  auto bounded = [&](bool at_most, std::int64_t v) {
    ConstraintSpec spec;
    LevelConstraintSpec l1;
    l1.level = "L1";
    (at_most ? l1.max_factor : l1.min_factor)["M"] = FactorLimitSpec{v, {}};
    spec.levels.push_back(l1);
    return resolve(spec, op, arch);
  };
  const Mapspace space(op, arch, bounded(true, 2));
  FakeModel model;
  SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{});
  const std::vector<Mapping> batch{with_l1(op, arch, 4, 1), with_l1(op, arch, 2, 1)};
  const auto results = ctx.evaluate(batch);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].valid);
  EXPECT_EQ(results[0].invalid_reason,
            "outside the constraints: limit: L1 loops over M 4 times, outside its factor bounds");
  EXPECT_TRUE(results[1].valid);
  // A sweep of an unconstrained space under a job that wants M's L1 tile
  // at least 4: the best (smallest tile) is 4, not 1.
  const Mapspace at_least(op, arch, bounded(false, 4));
  const Mapspace free_space(op, arch);
  SearchContext sweep(op, arch, at_least, model, Objective::kLatency, 1, Budget{});
  sweep.evaluate_space(free_space);
  ASSERT_TRUE(sweep.best_mapping());
  EXPECT_EQ(sweep.best_metrics().latency_cycles, 4);
}

TEST(SearchContext, BudgetTruncatesTheBatch) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({4});
  const Mapspace space(op, arch);
  FakeModel model;
  SearchContext ctx(op, arch, space, model, Objective::kEnergy, 1, Budget{3, 0});
  const std::vector<Mapping> batch(5, with_l1(op, arch, 1, 1));
  EXPECT_EQ(ctx.evaluate(batch).size(), 3u);
  EXPECT_TRUE(ctx.exhausted());
  EXPECT_TRUE(ctx.evaluate(batch).empty());
  EXPECT_EQ(ctx.evaluations(), 3u);
}

TEST(SearchContext, StructurallyBrokenMappingIsInvalidNotFatal) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const Architecture arch = chip({4});
  const Mapspace space(op, arch);
  FakeModel model;
  SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{});
  Mapping broken = Mapping::trivial(op, arch);
  broken.level(1).split = {8, 1, 1};  // more children than the fan-out of 4
  const auto results = ctx.evaluate(std::vector<Mapping>{broken});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].valid);
  EXPECT_NE(results[0].invalid_reason.find("PEs"), std::string::npos) << results[0].invalid_reason;
  EXPECT_FALSE(ctx.best_mapping());
  EXPECT_EQ(ctx.best_value(), std::numeric_limits<double>::infinity());
}

TEST(SearchContext, SameResultsAtAnyThreadCount) {
  const Operator op = make_gemm("g", 8, 8, 8);
  const Architecture arch = chip({4});
  const Mapspace space(op, arch);
  FakeModel model;
  std::vector<Mapping> batch;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) batch.push_back(*space.sample(rng));
  auto run = [&](int threads) {
    tbb::task_arena arena(threads);
    SearchContext ctx(op, arch, space, model, Objective::kEdp, 1, Budget{});
    std::vector<Metrics> out;
    arena.execute([&] { out = ctx.evaluate(batch); });
    return std::make_pair(out, *ctx.best_mapping());
  };
  const auto [one, best_one] = run(1);
  const auto [two, best_two] = run(2);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].latency_cycles, two[i].latency_cycles);
  EXPECT_EQ(best_one, best_two);
}

TEST(Objective, ParsesAndScores) {
  EXPECT_EQ(parse_objective("edp"), Objective::kEdp);
  EXPECT_THROW(parse_objective("speed"), InputError);
  Metrics m;
  m.valid = true;
  m.latency_cycles = 3;
  m.energy_pj = 5;
  EXPECT_EQ(objective_value(m, Objective::kLatency), 3);
  EXPECT_EQ(objective_value(m, Objective::kEnergy), 5);
  EXPECT_EQ(objective_value(m, Objective::kEdp), 15);
  m.valid = false;
  EXPECT_EQ(objective_value(m, Objective::kLatency), std::numeric_limits<double>::infinity());
}

// A model with a genuine latency-energy trade-off and many ties, so the
// best, the trace and the front depend on the order of evaluation.
class TradeOffModel final : public BoundCostModel {
 public:
  Metrics evaluate(const Mapping& m) const override {
    Metrics out;
    out.valid = true;
    const double a = static_cast<double>(m.level(0).tile[0] * m.level(0).tile[2]);
    const double b = static_cast<double>(m.level(2).tile[1] + m.level(1).split[0]);
    out.latency_cycles = 100 / a + b;
    out.energy_pj = a + 3 * b / (1 + m.level(2).order.back());
    return out;
  }
};

/// The reference: every mapping in cursor order, one thread, no chunks.
struct Serial {
  std::vector<Mapping> mappings;
  std::vector<Metrics> metrics;
};
Serial serial(const Mapspace& space, const BoundCostModel& model) {
  Serial s;
  Mapspace::Cursor cursor(space);
  Mapping m;
  while (cursor.next(m)) {
    s.mappings.push_back(m);
    s.metrics.push_back(model.evaluate(m));
  }
  return s;
}

TEST(SearchContext, SpaceSweepEqualsSerialEvaluationAtAnyThreadCount) {
  const Operator op = make_gemm("g", 4, 6, 2);
  const Architecture arch = chip({2, 2}, 64);
  const Mapspace space(op, arch);
  TradeOffModel model;
  const Serial ref = serial(space, model);
  ASSERT_GT(ref.mappings.size(), 1000u);
  for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{777}}) {
    const std::size_t n = budget ? budget : ref.mappings.size();
    // Serial best among the first n (earliest of equals), and the front.
    std::size_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (ref.metrics[i].latency_cycles < ref.metrics[best].latency_cycles) best = i;
    std::vector<std::size_t> front;
    for (std::size_t i = 0; i < n; ++i) {
      bool dominated = false;
      for (std::size_t j = 0; j < n && !dominated; ++j) {
        const auto &a = ref.metrics[j], &b = ref.metrics[i];
        const bool le = a.latency_cycles <= b.latency_cycles && a.energy_pj <= b.energy_pj;
        const bool equal = a.latency_cycles == b.latency_cycles && a.energy_pj == b.energy_pj;
        dominated = le && (!equal || j < i);
      }
      if (!dominated) front.push_back(i);
    }
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE("budget " + std::to_string(budget) + ", threads " + std::to_string(threads));
      tbb::task_arena arena(threads);
      arena.execute([&] {
        SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{budget, 0});
        const auto sweep = ctx.evaluate_space(space, /*pareto=*/true);
        EXPECT_EQ(sweep.complete, budget == 0);
        EXPECT_EQ(ctx.evaluations(), n);
        ASSERT_TRUE(ctx.best_mapping());
        EXPECT_EQ(*ctx.best_mapping(), ref.mappings[best]);
        ASSERT_FALSE(ctx.trace().empty());
        EXPECT_EQ(ctx.trace().back().evaluation, best + 1);
        ASSERT_EQ(ctx.pareto().size(), front.size());
        std::set<std::uint64_t> got;
        for (const auto& p : ctx.pareto()) {
          got.insert(p.evaluation - 1);
          EXPECT_EQ(p.mapping, ref.mappings[p.evaluation - 1]);
        }
        EXPECT_EQ(got, std::set<std::uint64_t>(front.begin(), front.end()));
      });
    }
  }
}

// Budgets that end inside a chunk, at the last mapping, one short of it and
// beyond it, at more threads than a round of chunks once held: the workers
// take chunks as they become free and stop where the budget must have
// ended, and the merge keeps exactly the first `budget` mappings.
TEST(SearchContext, BudgetEndsWhereItShouldAtAnyThreadCount) {
  const Operator op = make_gemm("g", 4, 6, 2);
  const Architecture arch = chip({2, 2}, 64);
  const Mapspace space(op, arch);
  TradeOffModel model;
  const Serial ref = serial(space, model);
  const std::uint64_t size = ref.mappings.size();
  for (const std::uint64_t budget :
       {std::uint64_t{1}, std::uint64_t{2049}, size / 2 + 7, size - 1, size, size + 5}) {
    const std::uint64_t n = std::min(budget, size);
    std::size_t best = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (ref.metrics[i].latency_cycles < ref.metrics[best].latency_cycles) best = i;
    for (int threads : {1, 2, 4}) {
      SCOPED_TRACE("budget " + std::to_string(budget) + ", threads " + std::to_string(threads));
      tbb::task_arena arena(threads);
      arena.execute([&] {
        SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{budget, 0});
        const auto sweep = ctx.evaluate_space(space);
        EXPECT_EQ(sweep.complete, budget >= size);
        EXPECT_EQ(sweep.evaluated, n);
        EXPECT_EQ(ctx.evaluations(), n);
        ASSERT_TRUE(ctx.best_mapping());
        EXPECT_EQ(*ctx.best_mapping(), ref.mappings[best]);
        EXPECT_EQ(ctx.trace().back().evaluation, best + 1);
      });
    }
  }
}

// A progress callback that throws (the host abandons a job that way) ends
// the sweep with its exception while other workers still stream chunks.
TEST(SearchContext, SweepRethrowsWhatTheProgressCallbackThrows) {
  const Operator op = make_gemm("g", 4, 6, 2);
  const Architecture arch = chip({2, 2}, 64);
  const Mapspace space(op, arch);
  TradeOffModel model;
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      SearchContext ctx(op, arch, space, model, Objective::kLatency, 1, Budget{});
      int calls = 0;
      ctx.set_progress_callback([&](std::uint64_t) {
        ++calls;
        throw std::runtime_error("abandoned");
      });
      EXPECT_THROW(ctx.evaluate_space(space), std::runtime_error);
      EXPECT_EQ(calls, 1);
    });
  }
}

}  // namespace
}  // namespace mapex
