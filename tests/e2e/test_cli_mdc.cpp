// End-to-end tests of `mapex evaluate --maestro` and `mapex check`: real
// MAESTRO inputs from refdata, and every bad-input path (exit 2, one line
// naming the file, line and what was expected).

#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;
const std::string kCase =
    std::string(MAPEX_MAESTRO_REFDATA) + "/cases/A__resnet_3x3_s2__ckp_ws__hw256";

std::string write(const std::string& name, const std::string& text) {
  const std::string path = kWork + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CliMaestro, CsvRowMatchesMaestro) {
  const auto r = run_cli(
      {"evaluate", "--maestro", kCase + "/mapping.m", "--hw", kCase + "/hw.m", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("layer_name,num_macs,runtime_cycles,energy_total_macunits,", 0), 0u);
  // MAESTRO's own numbers for this case (index.csv): 115605504 MACs,
  // 1806387 cycles, L2 requirement 4808.
  EXPECT_NE(r.out.find("resnet_3x3_s2,115605504,1806387,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",4808,"), std::string::npos) << r.out;
}

TEST(CliMaestro, TableAndJson) {
  auto r = run_cli({"evaluate", "--maestro", kCase + "/mapping.m", "--hw", kCase + "/hw.m"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| resnet_3x3_s2 | 115605504 | 1806387 |"), std::string::npos) << r.out;
  r = run_cli(
      {"evaluate", "--maestro", kCase + "/mapping.m", "--hw", kCase + "/hw.m", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"runtime_cycles\": 1806387"), std::string::npos) << r.out;
}

TEST(CliMaestro, CanonicalMappingThroughAlgorithm1) {
  const auto r =
      run_cli({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
               kData + "/tiny_arch.yaml", "--mapping", kData + "/tiny_conv_mapping.yaml",
               "--costmodel", "mdc", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("conv,1,"), std::string::npos) << r.out;
}

std::string expect_bad(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  return r.err;
}

const std::string kHeader =
    "Network n {\nLayer l {\nType: CONV\nDimensions { K: 4, C: 4, R: 3, S: 3, Y: 8, X: 8 }\n"
    "Dataflow {\n";

TEST(CliMaestro, BadInputExitsTwoWithFileAndLine) {
  const std::string hw = kCase + "/hw.m";
  std::string e = expect_bad({"evaluate", "--maestro", kWork + "/missing.m", "--hw", hw});
  EXPECT_NE(e.find("missing.m: mapping file does not exist"), std::string::npos) << e;
  const std::string syntax =
      write("syntax.m", kHeader + "SpatialMap(1,1) K;\nTemporalMap(x,1) C;\n}\n}\n}\n");
  e = expect_bad({"evaluate", "--maestro", syntax, "--hw", hw});
  EXPECT_NE(e.find("syntax.m:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a positive integer"), std::string::npos) << e;
  const std::string directive =
      write("directive.m", kHeader + "SpatialMap(1,1) K;\nSlideMap(1,1) C;\n}\n}\n}\n");
  e = expect_bad({"evaluate", "--maestro", directive, "--hw", hw});
  EXPECT_NE(e.find("directive.m:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown directive 'SlideMap'"), std::string::npos) << e;
  const std::string dim =
      write("dim.m", kHeader + "SpatialMap(1,1) K;\nTemporalMap(1,1) W;\n}\n}\n}\n");
  e = expect_bad({"evaluate", "--maestro", dim, "--hw", hw});
  EXPECT_NE(e.find("dim.m:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown dimension 'W'"), std::string::npos) << e;
  const std::string cluster = write(
      "cluster.m", kHeader + "SpatialMap(1,1) K;\nCluster(512, P);\nSpatialMap(1,1) C;\n}\n}\n}\n");
  e = expect_bad({"evaluate", "--maestro", cluster, "--hw", hw});
  EXPECT_NE(e.find("cluster.m:7:"), std::string::npos) << e;
  const std::string badhw = write("bad_hw.m", "num_pes: 16\nnoc_bandwidth: 4\n");
  e = expect_bad({"evaluate", "--maestro", kCase + "/mapping.m", "--hw", badhw});
  EXPECT_NE(e.find("bad_hw.m:2:"), std::string::npos) << e;
  e = expect_bad({"evaluate", "--maestro", kCase + "/mapping.m"});
  EXPECT_NE(e.find("--maestro and --hw go together"), std::string::npos) << e;
  e = expect_bad(
      {"evaluate", "--maestro", kCase + "/mapping.m", "--hw", hw, "--costmodel", "roofline"});
  EXPECT_NE(e.find("cannot evaluate MAESTRO directives"), std::string::npos) << e;
}

TEST(CliCheck, ConformableAndNot) {
  auto r = run_cli({"check", "--workload", kData + "/tiny_net.yaml"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("conv: conformable"), std::string::npos) << r.out;
  const std::string bad =
      write("diag.yaml",
            "network: d\nlayers:\n  - name: windows\n    type: loopnest\n"
            "    dims: {I: 8, J: 8}\n    tensors:\n"
            "      - {name: A, role: input, subscripts: [I + J, I + J*2]}\n"
            "      - {name: B, role: output, reduction: sum, subscripts: [I, J]}\n");
  r = run_cli({"check", "--workload", bad});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.out.find("windows: not conformable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rule 3"), std::string::npos) << r.out;
  const std::string e =
      expect_bad({"check", "--workload", kData + "/tiny_net.yaml", "--layer", "nope"});
  EXPECT_NE(e.find("no layer 'nope'"), std::string::npos) << e;
  expect_bad({"check", "--workload", kWork + "/none.yaml"});
}

}  // namespace
}  // namespace mapex
