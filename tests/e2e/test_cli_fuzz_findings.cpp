// Issue 18 regressions beside the fuzz replays (tests/fuzz): messages of
// text inputs located at file:line:column (line 1 for an empty file), with
// control characters escaped on one line; mapspaces whose bounds are huge;
// a random search with edge tiles that must return within its budget.

#include <gtest/gtest.h>

#include <algorithm>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file("fuzz_" + name, text);
}

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

// Exit 2 and exactly one line, without a raw control character.
std::string expect_one_line(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (std::size_t i = 0; i + 1 < r.err.size(); ++i)
    EXPECT_GE(static_cast<unsigned char>(r.err[i]), 0x20) << "control character at " << i;
  return r.err;
}

TEST(FuzzFindings, EmptyWorkloadFileIsLocatedAtLineOneColumnOne) {
  const std::string w = write("empty.yaml", "");
  const std::string e = expect_one_line(
      {"mapspace", "--workload", w, "--arch", kData + "/tiny_arch.yaml", "--no-valid-count"});
  EXPECT_HAS(e, "fuzz_empty.yaml:1:1: ");
}

TEST(FuzzFindings, ArchitectureOfOnlyCommentsIsLocatedAtLineOneColumnOne) {
  const std::string a = write("comments.yaml", "# nothing here\n# nor here\n");
  const std::string e = expect_one_line(
      {"mapspace", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch", a});
  EXPECT_HAS(e, "fuzz_comments.yaml:1:1: ");
}

TEST(FuzzFindings, ControlCharactersInAKeyAreEscaped) {
  // A vertical tab and a form feed inside an unknown key.
  const std::string w = write("vt.yaml",
                              "network: n\nlayers:\n  - {name: f, type: fc, C: 4, K: 4}\n"
                              "la\vy\fers: 1\n");
  const std::string e = expect_one_line(
      {"mapspace", "--workload", w, "--arch", kData + "/tiny_arch.yaml", "--no-valid-count"});
  EXPECT_HAS(e, "fuzz_vt.yaml:4:1: ");
  EXPECT_HAS(e, "la\\x0by\\x0cers");
}

TEST(FuzzFindings, MaestroMessagesCarryAColumn) {
  const std::string gemm =
      "Network n {\nLayer L {\nType: GEMM\nDimensions { M: 4, N: 4, K: 4 }\n"
      "Dataflow { SpatialMap(1,1) M; TemporalMap(4,4) N; TemporalMap(4,4) ";
  const std::string ok = write("gemm_ok.m", gemm + "K; }\n}\n}\n");
  const std::string bad = write("gemm.m", gemm + "Q; }\n}\n}\n");
  const std::string hw = write("hw.m", "num_pes:   0\n");
  const std::string hw_ok = write("hw_ok.m", "num_pes: 4\n");
  // The value starts in column 12.
  EXPECT_HAS(expect_one_line({"evaluate", "--maestro", ok, "--hw", hw}),
             "fuzz_hw.m:1:12: key 'num_pes'");
  // Q, the unknown dimension, is the 68th character of line 5.
  EXPECT_HAS(expect_one_line({"evaluate", "--maestro", bad, "--hw", hw_ok}),
             "fuzz_gemm.m:5:68: key 'Dataflow'");
}

TEST(FuzzFindings, MapspaceOfAnInputWidthOfTwoToThe31IsBuiltFromDivisors) {
  // A scan up to the bound took minutes in Mapspace::Impl::add_chains.
  const std::string w = write("wide.yaml",
                              "network: wide\nlayers:\n  - {name: w, type: conv2d, C: 3, K: 8, "
                              "H: 3, W: 2147483648, R: 1, S: 1}\n");
  const auto r = run_cli({"mapspace", "--workload", w, "--arch",
                          kExperiments + "/architectures/eyeriss_like.yaml", "--no-valid-count"});
  ASSERT_EQ(r.status, 0) << r.err;
  // 2^31 has 32 divisors; Q = W (no padding, S = 1).
  EXPECT_HAS(r.out, "Q = 2147483648: 3384 tile chains");
}

TEST(FuzzFindings, EdgeTilesOnAHugeBoundAreRefusedNotEnumerated) {
  const std::string w = write("wide_edge.yaml",
                              "network: wide\nlayers:\n  - {name: w, type: gemm, M: 2147483648, "
                              "N: 1, K: 1}\n");
  const std::string e =
      expect_one_line({"mapspace", "--workload", w, "--arch", kData + "/tiny_arch.yaml",
                       "--edge-tiles", "--no-valid-count"});
  EXPECT_HAS(e, "dimension 'M' (bound 2147483648) has more than 2000000 tile chains");
}

TEST(FuzzFindings, RandomSearchWithEdgeTilesReturnsWithinItsEvaluationBudget) {
  // Nearly every draw overflows a buffer here; the search used to draw a
  // whole batch of 256 samples of up to 1000 draws each, 11 ms a draw.
  const auto r =
      run_cli({"search", "--workload", kExperiments + "/workloads/vgg16.yaml", "--layer", "conv3_1",
               "--arch", kExperiments + "/architectures/eyeriss_like.yaml", "--edge-tiles",
               "--searcher", "random", "--max-evaluations", "10", "-j", "1"});
  EXPECT_HAS(r.out + r.err, "stopped: ");
}

}  // namespace
}  // namespace mapex
