// The nn_dataflow searcher plugin as a job runs it: it refuses any model
// but tensor_centric's model=nn_dataflow and any bypass or sharing setting
// other than the model's, and returns the search's best scheme as the job's
// mapping (or, when the canonical form cannot carry that scheme, the best
// one it can carry, saying so).

#include <gtest/gtest.h>

#include <filesystem>
#include <mapex/error.hpp>
#include <mapex/network.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>

#include "host/plugin_registry.hpp"
#include "host/runner.hpp"
#include "plugin_fixture.hpp"

namespace mapex::host {
namespace {

namespace fs = std::filesystem;
using Params = std::map<std::string, std::string>;

using test::registry;

const fs::path kData = fs::path(MAPEX_TEST_DATA_DIR) / "nn_dataflow";
const fs::path kArchs = fs::path(MAPEX_EXPERIMENTS_DIR) / "architectures";

/// A reference layer's workload, its layer, and its chip.
struct Job {
  Network net;
  Architecture arch;
  const Operator& op() const { return net.layers()[0].op; }
};

Job job(const std::string& id) {
  return Job{Network::load((kData / (id + ".yaml")).string()),
             Architecture::load(id.rfind("mn_", 0) == 0 ? (kArchs / "kapla_multinode.yaml").string()
                                                        : (kData / "sm4.yaml").string())};
}

JobResult run(const Job& j, const Params& searcher_params, const std::string& model,
              const Params& model_params, const ConstraintSpec& mapspace = {}) {
  const auto searcher = registry().make_searcher("nn_dataflow", searcher_params);
  const auto cm = registry().make_costmodel(model, model_params);
  SearchRequest r;
  r.op = &j.op();
  r.arch = &j.arch;
  r.searcher = searcher.get();
  r.costmodel = cm.get();
  r.objective = Objective::kEnergy;
  r.mapspace = mapspace;
  return run_search(r);
}

const Params kHybrid{
    {"hybrid_partition", "true"}, {"batch_partition", "true"}, {"ifmaps_partition", "true"}};
const Params kNnDataflowShared{{"model", "nn_dataflow"}, {"gbuf_bypass", ""}, {"forwarding", "on"}};

TEST(NnDataflowSearcher, RefusesAnotherCostModel) {
  const JobResult r = run(job("sm4_df_conv_64_64_e56_r3_b1"), {}, "roofline", {});
  EXPECT_EQ(r.status, JobStatus::kFailed);
  EXPECT_NE(r.error.find("use the cost model tensor_centric with model=nn_dataflow"),
            std::string::npos)
      << r.error;
}

TEST(NnDataflowSearcher, RefusesBypassOrSharingOtherThanTheModels) {
  const Job j = job("sm4_df_conv_64_64_e56_r3_b1");
  const JobResult bypass = run(j, {{"gbuf_bypass", "io"}}, "tensor_centric", kNnDataflowShared);
  EXPECT_EQ(bypass.status, JobStatus::kFailed);
  EXPECT_NE(bypass.error.find("gbuf_bypass=io but the cost model lets none bypass"),
            std::string::npos)
      << bypass.error;
  const JobResult sharing = run(j, {{"gbuf_sharing", "off"}}, "tensor_centric", kNnDataflowShared);
  EXPECT_EQ(sharing.status, JobStatus::kFailed);
  EXPECT_NE(sharing.error.find("gbuf_sharing=off but the cost model has it on"), std::string::npos)
      << sharing.error;
  // The same settings, said explicitly, are accepted.
  Params same = kHybrid;
  same["gbuf_bypass"] = "";
  same["gbuf_sharing"] = "on";
  EXPECT_EQ(run(j, same, "tensor_centric", kNnDataflowShared).status, JobStatus::kOk);
}

// nn_dataflow's schemes are its own space: a job's rule they would not
// respect (here fixed GBUF tiles) fails the job by name, never silently.
TEST(NnDataflowSearcher, RefusesMapspaceRulesItsSchemesCannotHonour) {
  const Job j = job("sm4_df_conv_64_64_e56_r3_b1");
  const std::string gbuf = j.arch.levels()[2].name;
  ConstraintSpec fixed_k;
  fixed_k.levels.emplace_back();
  fixed_k.levels.back().level = gbuf;
  fixed_k.levels.back().fixed["K"] = 1;
  const JobResult refused = run(j, kHybrid, "tensor_centric", kNnDataflowShared, fixed_k);
  EXPECT_EQ(refused.status, JobStatus::kFailed);
  EXPECT_NE(refused.error.find("cannot honour the job's mapspace rule level '" + gbuf + "': fixed"),
            std::string::npos)
      << refused.error;
}

TEST(NnDataflowSearcher, RefusesParametersNnDataflowRefuses) {
  for (const Params& bad :
       {Params{{"ifmaps_partition", "true"}}, Params{{"ntops", "0"}},
        Params{{"gbuf_sharing", "maybe"}}, Params{{"gbuf_bypass", "x"}},
        Params{{"loop_blocking", "greedy"}}, Params{{"keep_probability", "0"}},
        Params{{"keep_probability", "1.5"}}, Params{{"keep_per", "layer"}},
        Params{{"keep_probability", "0.5"}, {"loop_blocking", "kapla"}},
        Params{{"keep_draw", "sometimes"}},
        Params{{"keep_draw", "gap"}, {"keep_per", "memory_level"}},
        Params{{"keep_draw", "gap"}, {"keep_per", "factorization"}},
        Params{{"partition_probability", "0"}}, Params{{"partition_probability", "1.5"}},
        Params{{"loop_blocking", "kapla"}, {"partition_probability", "0.5"}}}) {
    EXPECT_THROW(registry().make_searcher("nn_dataflow", bad), InputError) << bad.begin()->first;
  }
}

TEST(NnDataflowSearcher, ReturnsTheSearchsBestScheme) {
  const Job j = job("sm4_ex_conv_64_64_e56_r3_b1");
  const JobResult r = run(j, kHybrid, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.evaluations, 1u);
  EXPECT_NE(r.stop_reason.find("space exhausted; nn_dataflow space: hybrid_partition=1 "
                               "batch_partition=1 ifmaps_partition=1 ntops=1 gbuf_bypass=none "
                               "gbuf_sharing=on"),
            std::string::npos)
      << r.stop_reason;
  ndf::Problem pr;
  ASSERT_FALSE(ndf::make_problem(j.op(), j.arch, "", "", "on", pr));
  ndf::SearchOptions so;
  so.hybrid = so.batch = so.ifmaps = true;
  const auto out = ndf::search(pr.layer, pr.hw, pr.options, {pr.ifmaps}, so);
  ASSERT_FALSE(out.tops.empty());
  EXPECT_DOUBLE_EQ(r.best.energy_pj, out.tops.front().cost);
  EXPECT_DOUBLE_EQ(r.best.latency_cycles, out.tops.front().time);
}

TEST(NnDataflowSearcher, KaplaLoopBlockingReturnsTheCostDescendingSearchsBest) {
  // loop_blocking=kapla: KAPLA's blocking solver in the same space; the
  // plugin returns what the framework's search with it finds, never below
  // the exhaustive blocking's best on this layer.
  const Job j = job("sm4_ex_conv_64_64_e56_r3_b1");
  Params kapla = kHybrid;
  kapla["loop_blocking"] = "kapla";
  const JobResult r = run(j, kapla, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_NE(r.stop_reason.find("gbuf_sharing=on loop_blocking=kapla keep_probability=1;"),
            std::string::npos)
      << r.stop_reason;
  ndf::Problem pr;
  ASSERT_FALSE(ndf::make_problem(j.op(), j.arch, "", "", "on", pr));
  ndf::SearchOptions so;
  so.hybrid = so.batch = so.ifmaps = true;
  so.blocking = ndf::BlockingSolver::kCostDescending;
  const auto k = ndf::search(pr.layer, pr.hw, pr.options, {pr.ifmaps}, so);
  ASSERT_FALSE(k.tops.empty());
  EXPECT_DOUBLE_EQ(r.best.energy_pj, k.tops.front().cost);
  const JobResult b = run(j, kHybrid, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(b.status, JobStatus::kOk) << b.error;
  EXPECT_GE(r.best.energy_pj, b.best.energy_pj);
}

TEST(NnDataflowSearcher, KeepProbabilitySamplesTheExhaustiveSearch) {
  // KAPLA's R through the plugin: the job's seed picks what is kept, the
  // stop reason says how much was left out, and the best is in B's space.
  const Job j = job("sm4_ex_conv_64_64_e56_r3_b1");
  Params sampled = kHybrid;
  sampled["keep_probability"] = "0.1";
  const JobResult r = run(j, sampled, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_NE(r.stop_reason.find("keep_probability=0.1;"), std::string::npos) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("partitions and blockings left out by sampling"), std::string::npos)
      << r.stop_reason;
  const JobResult b = run(j, kHybrid, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(b.status, JobStatus::kOk) << b.error;
  EXPECT_GE(r.best.energy_pj, b.best.energy_pj);
  EXPECT_EQ(b.stop_reason.find("left out by sampling"), std::string::npos) << b.stop_reason;
}

TEST(NnDataflowSearcher, KeepDrawGapIsRecordedInTheStopReason) {
  // keep_draw=gap keeps other blockings than the default for a seed: the
  // result says which draw chose them; the best is still in B's space.
  const Job j = job("sm4_ex_conv_64_64_e56_r3_b1");
  Params sampled = kHybrid;
  sampled["keep_probability"] = "0.1";
  sampled["keep_draw"] = "gap";
  const JobResult r = run(j, sampled, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_NE(r.stop_reason.find("keep_probability=0.1 keep_draw=gap;"), std::string::npos)
      << r.stop_reason;
  const JobResult b = run(j, kHybrid, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(b.status, JobStatus::kOk) << b.error;
  EXPECT_GE(r.best.energy_pj, b.best.energy_pj);
  EXPECT_EQ(b.stop_reason.find("keep_draw"), std::string::npos) << b.stop_reason;
}

TEST(NnDataflowSearcher, KeepPerFactorizationIsRecordedInTheStopReason) {
  // KAPLA's released R: the stop reason names the draw and its
  // probabilities and says how many factorisations were kept; the best is
  // in B's space.
  const Job j = job("sm4_ex_conv_64_64_e56_r3_b1");
  Params sampled = kHybrid;
  sampled["keep_probability"] = "0.1";
  sampled["keep_per"] = "factorization";
  sampled["partition_probability"] = "0.04";
  sampled["keep_at_least_one"] = "true";
  const JobResult r = run(j, sampled, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.error;
  EXPECT_NE(r.stop_reason.find("keep_probability=0.1 keep_per=factorization "
                               "partition_probability=0.04 keep_at_least_one=1;"),
            std::string::npos)
      << r.stop_reason;
  EXPECT_NE(r.stop_reason.find(" factorisations kept)"), std::string::npos) << r.stop_reason;
  const JobResult b = run(j, kHybrid, "tensor_centric", kNnDataflowShared);
  ASSERT_EQ(b.status, JobStatus::kOk) << b.error;
  EXPECT_GE(r.best.energy_pj, b.best.energy_pj);
  EXPECT_EQ(b.stop_reason.find("factorisations"), std::string::npos) << b.stop_reason;
}

TEST(NnDataflowSearcher, SaysWhenNoSchemeHasACanonicalMapping) {
  // nn_dataflow's naive FC partition (its only one on this chip) splits
  // 1000 output channels over 256 nodes: 4 per node leaves 6 nodes idle,
  // which a canonical split cannot say.
  const Job j = job("mn_df_fc_784_1000_b64");
  const JobResult r =
      run(j, {}, "tensor_centric",
          {{"model", "nn_dataflow"}, {"gbuf_bypass", "ifo"}, {"forwarding", "off"}});
  EXPECT_EQ(r.status, JobStatus::kNoValidMapping) << r.error;
  EXPECT_NE(r.stop_reason.find("1 partitions"), std::string::npos) << r.stop_reason;
  EXPECT_NE(r.stop_reason.find("schemes has a canonical mapping (first: the canonical form cannot "
                               "carry it: level 'node_array': split of K is 256"),
            std::string::npos)
      << r.stop_reason;
}

}  // namespace
}  // namespace mapex::host
