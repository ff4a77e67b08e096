// Unit tests of the framework side of searching: the batch evaluation owns
// the budget, returns results in order, keeps the earliest of equal bests,
// and traces improvements; the results do not depend on the thread count.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <limits>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/search.hpp>

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

}  // namespace
}  // namespace mapex
