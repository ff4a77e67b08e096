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

// A repeated workload or architecture entry: the second entry's line.
TEST(FuzzFindings, IdenticalJobsArePlacedAtTheRepeatedEntry) {
  const std::string tail =
      "searchers:\n  - plugin: random\n    budget: {evaluations: 10}\ncostmodels: [roofline]\n";
  const std::string workloads = write(
      "twice_workload.yaml",
      "name: twice\nworkloads:\n  - " + kData + "/tiny_net.yaml\n  - {file: " + kData +
          "/tiny_net.yaml, layers: [fc]}\narchitectures: [" + kData + "/tiny_arch.yaml]\n" + tail);
  EXPECT_HAS(expect_one_line({"run", workloads, "-o", workloads + ".h5"}),
             "fuzz_twice_workload.yaml:4:5: two jobs are identical");
  // The same chip under another name is another design point, but its jobs
  // are the same as the first file's.
  const std::string copy = write("tiny_arch_copy.yaml", test::slurp(kData + "/tiny_arch.yaml"));
  const std::string archs =
      write("twice_arch.yaml", "name: twice\nworkloads: [" + kData +
                                   "/tiny_net.yaml]\narchitectures:\n  - " + kData +
                                   "/tiny_arch.yaml\n  - " + copy + "\n" + tail);
  const auto r = run_cli({"run", archs, "-o", archs + ".h5"});
  // Either refusal is at the second entry's line (5).
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "fuzz_twice_arch.yaml:5:5: ");
}

// Directive errors about the chip: at the layer's section, or at the stack
// that goes past the fan-out.
TEST(FuzzFindings, DirectiveErrorsAboutTheChipHaveALine) {
  const std::string fan = write(
      "fan.kd",
      "conv:\n  L1:\n    tensor{Input}(N=1, C=1, P=1, Q=1, R=3, S=3)\n"
      "    tensor{Weight}(K=1, C=1, R=3, S=3)\n    tensor{Output}(N=1, K=1, P=1, Q=1)\n"
      "    stack(K+=1, 8)\n    update(Q+=1)\n    update(P+=1)\n    update(C+=1)\n  L2:\n"
      "    tensor{Input}(N=1, C=4, P=2, Q=2, R=3, S=3)\n    tensor{Weight}(K=8, C=4, R=3, S=3)\n"
      "    tensor{Output}(N=1, K=8, P=2, Q=2)\n    update(Q+=2)\n    update(P+=2)\n"
      "    update(K+=8)\n");
  const std::vector<std::string> layer{"--workload", kData + "/tiny_net.yaml", "--layer", "conv"};
  auto args = [&](const std::string& arch, const std::string& directives) {
    std::vector<std::string> a{"directives"};
    a.insert(a.end(), layer.begin(), layer.end());
    a.insert(a.end(), {"--arch", arch, "--directives", directives});
    return a;
  };
  EXPECT_HAS(expect_one_line(args(kData + "/tiny_arch.yaml", fan)),
             "fuzz_fan.kd:6:5: key 'repl': stacks at level 'L1' use more units than the 4 of "
             "level 'PEs'");
  // A repl past int64 once multiplied is refused the same way, not wrapped.
  std::string huge = test::slurp(fan);
  huge.replace(huge.find("K+=1, 8"), 7, "K+=1, 4611686018427387904");
  EXPECT_HAS(expect_one_line(args(kData + "/tiny_arch.yaml", write("huge.kd", huge))),
             "fuzz_huge.kd:6:5: key 'repl'");
  const std::string spatial_first = write(
      "spatial_first.yaml",
      "name: t\nclock_mhz: 100\nword_bits: 8\nmac: {energy_pj: 1}\nlevels:\n"
      "  - {name: PEs, kind: spatial, shape: [4], noc: {bandwidth_gbps: 1}}\n"
      "  - {name: L2, kind: buffer, size_bytes: 2048, read_energy_pj: 1, write_energy_pj: 1}\n"
      "  - {name: DRAM, kind: dram, bandwidth_gbps: 1, read_energy_pj: 2, write_energy_pj: 2}\n");
  const std::string section =
      write("section.kd", "conv:\n  L2:\n    tensor{Input}(N=1, C=4, P=2, Q=2, R=3, S=3)\n");
  EXPECT_HAS(expect_one_line(args(spatial_first, section)),
             "fuzz_section.kd:1:1: key 'PEs': directives need a buffer below every spatial level");
}

// A mapping's tile or split beyond the bound or fan-out, and a searcher
// parameter out of range in an experiment: file, line and column.
TEST(FuzzFindings, MappingAndSearcherParameterErrorsHaveALine) {
  std::string mapping = test::slurp(kData + "/tiny_conv_mapping.yaml");
  mapping.replace(mapping.find("tile: {K: 4, C: 4"), 17, "tile: {K: 40, C: 4");
  const std::string tile = write("tile.yaml", mapping);
  const std::vector<std::string> conv{"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer",
                                      "conv",     "--arch",     kData + "/tiny_arch.yaml"};
  auto with = [&](const std::string& path) {
    auto a = conv;
    a.insert(a.end(), {"--mapping", path});
    return a;
  };
  EXPECT_HAS(expect_one_line(with(tile)), "fuzz_tile.yaml:");
  EXPECT_HAS(expect_one_line(with(tile)), ": key 'tile': level 'L2': tile of K is 40");
  mapping = test::slurp(kData + "/tiny_conv_mapping.yaml");
  mapping.replace(mapping.find("split: {K: 4}"), 13, "split: {K: 4, C: 4}");
  const std::string split = write("split.yaml", mapping);
  EXPECT_HAS(expect_one_line(with(split)), "splits use 16 children, fan-out is 4");
  EXPECT_NE(expect_one_line(with(split)).find("fuzz_split.yaml:"), std::string::npos);
  const std::string exp =
      write("victory.yaml", "name: v\nworkloads: [" + kData + "/tiny_net.yaml]\narchitectures: [" +
                                kData +
                                "/tiny_arch.yaml]\nsearchers:\n  - plugin: random\n"
                                "    params: {victory_condition: -1}\ncostmodels: [roofline]\n");
  EXPECT_HAS(expect_one_line({"run", exp, "-o", exp + ".h5"}),
             "fuzz_victory.yaml:5:5: key 'victory_condition': parameter of searcher 'random' "
             "must be 0 (off) or positive");
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
  // At the layer's entry (the mapspace knows no file; the operator does).
  EXPECT_HAS(e,
             "fuzz_wide_edge.yaml:3:5: key 'M': layer 'w': dimension 'M' (bound 2147483648) "
             "has more than 2000000 tile chains");
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

TEST(FuzzFindings, OptimalSearchWithEdgeTilesReturnsInsteadOfEnumeratingAWideLevel) {
  // 256^3 tile combinations at one level: the branch and bound used to
  // enumerate them all before its first evaluation, whatever the budget.
  const auto r =
      run_cli({"search", "--workload", kExperiments + "/workloads/flash_gemm256.yaml", "--arch",
               kExperiments + "/architectures/flash_edge.yaml", "--edge-tiles", "--searcher",
               "optimal", "--costmodel", "mdc", "--max-evaluations", "100000", "-j", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "value combinations, which the search does not enumerate; gap");
}

}  // namespace
}  // namespace mapex
