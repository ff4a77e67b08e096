// End-to-end tests of the `flash` searcher through the real `mapex`
// binary: a search reports its counts and the non-tiled reference, is the
// same at any thread count, and every bad input exits 2 with a clear line.

#include <gtest/gtest.h>

#include "cli_runner.hpp"

using mapex::test::run_cli;

namespace {

const std::string kWorkloads = std::string(MAPEX_EXPERIMENTS_DIR) + "/workloads/";
const std::string kEdge = std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/flash_edge.yaml";

std::vector<std::string> search(std::vector<std::string> extra) {
  std::vector<std::string> args{"search",      "--workload", kWorkloads + "flash_table3.yaml",
                                "--layer",     "VI",         "--arch",
                                kEdge,         "--searcher", "flash",
                                "--costmodel", "mdc"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string best_line(const std::string& out) {
  const auto at = out.find("best: ");
  return at == std::string::npos ? "" : out.substr(at, out.find('\n', at) - at);
}

}  // namespace

TEST(FlashCli, SearchReportsPruningAndTheNonTiledReference) {
  const auto r = run_cli(search({"--param", "style=tpu", "-j", "2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("tile tuples before pruning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("candidates after"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("non-tiled reference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped: all candidates evaluated"), std::string::npos) << r.out;
  // The same best with one thread.
  const auto one = run_cli(search({"--param", "style=tpu", "-j", "1"}));
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(best_line(one.out), best_line(r.out));
  EXPECT_FALSE(best_line(r.out).empty());
}

TEST(FlashCli, MaeriWithOneOrderAndAnEnergyObjective) {
  const auto r = run_cli(search({"--param", "style=maeri", "--param", "order=kmn", "--objective",
                                 "energy", "--format", "json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  // MAESTRO-BLAS: S1 and S2 accesses per matrix A, B, C (FLASH Table 5).
  for (const char* level : {"\"name\": \"S1\"", "\"name\": \"S2\""}) {
    const auto at = r.out.find(level);
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string rest = r.out.substr(at, 1200);
    for (const char* m : {"\"A\": {", "\"B\": {", "\"C\": {"})
      EXPECT_NE(rest.find(m), std::string::npos) << level << " " << m << "\n" << rest;
  }
  EXPECT_NE(r.out.find("\"stop_reason\": \"all candidates evaluated; flash maeri kmn"),
            std::string::npos)
      << r.out;
}

TEST(FlashCli, BudgetStopsTheEvaluation) {
  const auto r = run_cli(search({"--param", "style=eyeriss", "--max-evaluations", "10"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("evaluations 10 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stopped: budget"), std::string::npos) << r.out;
}

TEST(FlashCli, NonGemmWorkloadExitsTwoNamingTheOperatorKind) {
  const auto r =
      run_cli({"search", "--workload", std::string(MAPEX_TEST_DATA_DIR) + "/tiny_net.yaml",
               "--layer", "conv", "--arch", kEdge, "--searcher", "flash", "--costmodel", "mdc"});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("GEMM only"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("conv2d"), std::string::npos) << r.err;
}

TEST(FlashCli, BuffersTooSmallForAnyTileSaySo) {
  const auto r = run_cli({"search", "--workload", kWorkloads + "flash_table3.yaml", "--layer", "VI",
                          "--arch", std::string(MAPEX_TEST_DATA_DIR) + "/flash_tiny_s1.yaml",
                          "--searcher", "flash", "--costmodel", "mdc"});
  // A chip without a valid mapping: exit 1 (no valid mapping) and the reason.
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("no tile of style 'all' fits the buffers: S1 holds 4"), std::string::npos)
      << r.out;
}

// (Under roofline, which takes the chip: mdc itself refuses KAPLA's chip,
// whose two networks differ.)
TEST(FlashCli, ChipWithoutTheS1S2ShapeIsRefused) {
  const auto r =
      run_cli({"search", "--workload", kWorkloads + "flash_table3.yaml", "--layer", "VI", "--arch",
               std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/kapla_multinode.yaml",
               "--searcher", "flash", "--costmodel", "roofline"});
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.err.find("FLASH needs an S1 buffer"), std::string::npos) << r.err;
}

TEST(FlashCli, BadParametersExitTwo) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"style=gpu", "expects eyeriss, nvdla"},
      {"order=mnn", "permutation of m, n, k"},
      {"space=some", "expects pruned, full or non_tiled"},
      {"tiles=big", "expects pow2, all or largest"},
      {"batch_size=0", "at least 1"}};
  for (const auto& [param, message] : cases) {
    const auto r = run_cli(search({"--param", param}));
    EXPECT_EQ(r.status, 2) << param;
    EXPECT_NE(r.err.find(message), std::string::npos) << param << ": " << r.err;
  }
  const auto fixed = run_cli(search({"--param", "style=nvdla", "--param", "order=mnk"}));
  EXPECT_EQ(fixed.status, 2);
  EXPECT_NE(fixed.err.find("fixed loop order nkm"), std::string::npos) << fixed.err;
}

TEST(FlashTool, CountPrintsTheSection52Numbers) {
  const auto r = run_cli({"count"}, {}, MAPEX_FLASH_BINARY);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("unpruned combinations (issue rule): 7250826667"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("pruned by Eq. 3-4 ranges, Eq. 1-2 held: 1491750"), std::string::npos)
      << r.out;
}

TEST(FlashTool, CandidatesAreCsvWithTimings) {
  const auto r = run_cli({"candidates", "--workload", kWorkloads + "flash_table3.yaml", "--layer",
                          "III", "--arch", kEdge, "--style", "shidiannao", "-j", "1"},
                         {}, MAPEX_FLASH_BINARY);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind(
                "style,order,cluster_size,T_M_out,T_N_out,T_K_out,T_M_in,T_N_in,T_K_in,valid,", 0),
            0u);
  EXPECT_NE(r.out.find("\nshidiannao,mnk,"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("generation"), std::string::npos) << r.err;
}

TEST(FlashTool, LargestTilesPrintTable5sTiledMappingWithItsDirectives) {
  // The paper's pick on workload VI, MAERI <m,n,k>: one candidate, Table
  // 5's tiles, and the directives of Table 2 with them (lambda 64).
  const auto r = run_cli({"candidates", "--workload", kWorkloads + "flash_table3.yaml", "--layer",
                          "VI", "--arch", kEdge, "--style", "maeri", "--order", "mnk", "--tiles",
                          "largest", "--directives", "yes", "-j", "1"},
                         {}, MAPEX_FLASH_BINARY);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(",S1_reads,S1_writes,S2_reads,S2_writes,directives\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nmaeri,mnk,64,64,64,64,8,8,1,1,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("TemporalMap(64,64) M; SpatialMap(64,64) N; TemporalMap(64,64) K; "
                       "Cluster(64,P); TemporalMap(8,8) M; TemporalMap(8,8) N; SpatialMap(1,1) K;"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find(": 1 candidates"), std::string::npos) << r.err;
  const auto bad = run_cli({"candidates", "--workload", kWorkloads + "flash_table3.yaml", "--arch",
                            kEdge, "--style", "tpu", "--tiles", "big"},
                           {}, MAPEX_FLASH_BINARY);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--tiles expects pow2, all or largest"), std::string::npos) << bad.err;
}

TEST(FlashTool, BadUsageExitsTwo) {
  EXPECT_EQ(run_cli({}, {}, MAPEX_FLASH_BINARY).status, 2);
  EXPECT_EQ(run_cli({"frobnicate"}, {}, MAPEX_FLASH_BINARY).status, 2);
  const auto n = run_cli({"count", "--n", "0"}, {}, MAPEX_FLASH_BINARY);
  EXPECT_EQ(n.status, 2);
  EXPECT_NE(n.err.find("--n expects a positive integer"), std::string::npos) << n.err;
  const auto style = run_cli({"candidates", "--workload", kWorkloads + "flash_table3.yaml",
                              "--arch", kEdge, "--style", "gpu"},
                             {}, MAPEX_FLASH_BINARY);
  EXPECT_EQ(style.status, 2);
  EXPECT_NE(style.err.find("--style expects"), std::string::npos) << style.err;
  const auto conv =
      run_cli({"candidates", "--workload", std::string(MAPEX_TEST_DATA_DIR) + "/tiny_net.yaml",
               "--layer", "conv", "--arch", kEdge, "--style", "tpu"},
              {}, MAPEX_FLASH_BINARY);
  EXPECT_EQ(conv.status, 2);
  EXPECT_NE(conv.err.find("conv2d"), std::string::npos) << conv.err;
}
