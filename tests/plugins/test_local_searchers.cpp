// The annealing and genetic searchers beyond the shared searcher suite:
// every bad parameter is refused with its key, and with an evaluation
// budget each spends it all (its schedule or generation count comes from
// the budget when not given).

#include <gtest/gtest.h>

#include <map>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <string>

#include "host/runner.hpp"
#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex {
namespace {

using host::JobResult;
using host::JobStatus;
using test::registry;

std::string refused_key(const std::string& searcher, const std::map<std::string, std::string>& p) {
  try {
    registry().make_searcher(searcher, p);
  } catch (const InputError& e) {
    return e.key();
  }
  return "(accepted)";
}

TEST(LocalSearchers, BadParametersAreRefusedWithTheirKey) {
  EXPECT_EQ(refused_key("annealing", {{"batch_size", "0"}}), "batch_size");
  EXPECT_EQ(refused_key("annealing", {{"steps", "-1"}}), "steps");
  EXPECT_EQ(refused_key("annealing", {{"initial_temperature", "0"}}), "initial_temperature");
  EXPECT_EQ(refused_key("annealing", {{"initial_temperature", "inf"}}), "initial_temperature");
  EXPECT_EQ(refused_key("annealing", {{"final_temperature", "0.5"}}), "final_temperature");
  EXPECT_EQ(refused_key("annealing", {{"initial_samples", "-1"}}), "initial_samples");
  EXPECT_EQ(refused_key("annealing", {{"max_stride", "0"}}), "max_stride");
  EXPECT_EQ(refused_key("annealing", {{"patience", "-3"}}), "patience");
  EXPECT_EQ(refused_key("annealing", {{"descent_share", "1"}}), "descent_share");
  EXPECT_EQ(refused_key("annealing", {{"descent_share", "-0.1"}}), "descent_share");
  EXPECT_EQ(refused_key("genetic", {{"population", "1"}}), "population");
  EXPECT_EQ(refused_key("genetic", {{"generations", "-2"}}), "generations");
  EXPECT_EQ(refused_key("genetic", {{"elite", "1"}}), "elite");
  EXPECT_EQ(refused_key("genetic", {{"crossover_rate", "1.5"}}), "crossover_rate");
  EXPECT_EQ(refused_key("genetic", {{"mutation_rate", "-0.1"}}), "mutation_rate");
  EXPECT_EQ(refused_key("genetic", {{"tournament", "40"}}), "tournament");
  EXPECT_EQ(refused_key("genetic", {{"population", "8"}, {"tournament", "8"}}), "(accepted)");
}

JobResult run(const std::string& searcher, Budget budget,
              const std::map<std::string, std::string>& params = {}) {
  static const Operator op = make_conv2d("c", Conv2dShape{1, 16, 16, 8, 8, 3, 3});
  static const Architecture arch = test::chip({4, 4}, 256);
  const auto s = registry().make_searcher(searcher, params);
  const auto model = registry().make_costmodel("roofline", {});
  host::SearchRequest r;
  r.op = &op;
  r.arch = &arch;
  r.searcher = s.get();
  r.costmodel = model.get();
  r.budget = budget;
  r.seed = 4;
  return host::run_search(r);
}

TEST(LocalSearchers, AnEvaluationBudgetIsSpentInFull) {
  for (const char* searcher : {"annealing", "genetic"}) {
    const JobResult r = run(searcher, Budget{1000, 0});
    ASSERT_EQ(r.status, JobStatus::kOk) << searcher << ": " << r.error;
    EXPECT_EQ(r.evaluations, 1000u) << searcher;
    EXPECT_EQ(r.stop_reason, "budget") << searcher;
  }
}

TEST(LocalSearchers, AGivenScheduleEndsOnItsOwn) {
  // 4 start draws + 5 steps of 4 neighbours (no descent); 8 + 3
  // generations x 6 children.
  const std::map<std::string, std::string> schedule{
      {"steps", "5"}, {"batch_size", "4"}, {"initial_samples", "4"}};
  auto alone = schedule;
  alone["descent_share"] = "0";
  const JobResult a = run("annealing", Budget{}, alone);
  EXPECT_EQ(a.stop_reason, "schedule done");
  EXPECT_LE(a.evaluations, 4u + 5u * 4u);
  // With the descent (the default), the search goes on from the best to a
  // local minimum of the neighbourhood: more evaluations, never worse.
  const JobResult d = run("annealing", Budget{}, schedule);
  EXPECT_EQ(d.stop_reason, "local minimum");
  EXPECT_GT(d.evaluations, a.evaluations);
  ASSERT_TRUE(a.best.valid && d.best.valid);
  EXPECT_LE(d.best.latency_cycles, a.best.latency_cycles);
  const JobResult g = run("genetic", Budget{}, {{"generations", "3"}, {"population", "8"}});
  EXPECT_EQ(g.stop_reason, "generations done");
  EXPECT_EQ(g.evaluations, 8u + 3u * 6u);
}

}  // namespace
}  // namespace mapex
