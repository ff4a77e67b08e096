// End-to-end tests of `mapex evaluate --maestro` and `mapex check`: real
// MAESTRO inputs from refdata, and every bad-input path (exit 2, one line
// naming the file, line and what was expected).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;
const std::string kCase =
    std::string(MAPEX_MAESTRO_REFDATA) + "/cases/A__resnet_3x3_s2__ckp_ws__hw256";

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file(name, text);
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

// Every number of the CSV is the text `%.15g` gives (what MAESTRO's own CSV
// carries), whichever of the three conversions wrote it: on ResNet-50 under
// xp_ws, 1,517 whole numbers, and 133 fractions such as energies and
// average delays, most of them read back exactly from 15 digits or fewer.
// A fraction printed in the other notation, or with more or fewer digits,
// reads back as a double whose `%.15g` text differs.
TEST(CliMaestro, CsvNumbersAreTheirPrintfG15Text) {
  const std::string net = std::string(MAPEX_MAESTRO_REFDATA) + "/cases/N__Resnet50_xp_ws__acc1";
  const auto r = run_cli(
      {"evaluate", "--maestro", net + "/mapping.m", "--hw", net + "/hw.m", "--format", "csv"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream rows(r.out);
  std::string row;
  std::getline(rows, row);  // the header
  int numbers = 0, fractions = 0;
  while (std::getline(rows, row)) {
    std::istringstream fields(row);
    std::string field;
    std::getline(fields, field, ',');  // the layer name
    while (std::getline(fields, field, ',')) {
      const double v = std::strtod(field.c_str(), nullptr);
      char g15[64];
      std::snprintf(g15, sizeof g15, "%.15g", v);
      EXPECT_EQ(field, g15) << row;
      ++numbers;
      fractions += v != static_cast<double>(static_cast<long long>(v)) ? 1 : 0;
    }
  }
  EXPECT_EQ(numbers, 66 * 25);
  EXPECT_GT(fractions, 100);
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

// The switches reach `mapex evaluate --costmodel mdc` from the architecture
// file: MAESTRO's KC-P on VGG16 conv2 (experiments/maestro) costs more
// energy without multicast and reduction, at the same MACs; spatial levels
// that disagree on a switch are refused when the model is bound.
TEST(CliMaestro, NocSwitchesFromTheArchitectureFile) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  std::ifstream in(exp + "/architectures/maestro_hw256.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string unicast = text.str();
  const std::string bw = "      bandwidth_gbps: 64\n";
  const auto at = unicast.find(bw);
  ASSERT_NE(at, std::string::npos);
  unicast.insert(at + bw.size(), "      multicast: false\n      reduction: false\n");
  const std::string arch = write("hw256_unicast.yaml", unicast);
  auto energy = [&](const std::string& arch_file) {
    const auto r =
        run_cli({"evaluate", "--workload", exp + "/workloads/vgg16.yaml", "--layer", "conv1_2",
                 "--arch", arch_file, "--mapping", exp + "/maestro/vgg16_conv1_2_kcp.yaml",
                 "--costmodel", "mdc", "--format", "json"});
    EXPECT_EQ(r.status, 0) << r.err;
    const auto k = r.out.find("\"energy_pj\": ");
    return k == std::string::npos ? 0.0 : std::stod(r.out.substr(k + 13));
  };
  const double on = energy(exp + "/architectures/maestro_hw256.yaml");
  const double off = energy(arch);
  ASSERT_GT(on, 0);
  EXPECT_GT(off / on, 1.5) << on << " " << off;

  const std::string mixed = write(
      "mixed_switches.yaml",
      "name: mixed\nclock_mhz: 100\nword_bits: 8\nmac: {energy_pj: 1}\n"
      "levels:\n"
      "  - {name: L1, kind: buffer, size_bytes: 64}\n"
      "  - {name: PEs, kind: spatial, shape: [4], noc: {bandwidth_gbps: 1}}\n"
      "  - {name: L2, kind: buffer, size_bytes: 2048}\n"
      "  - {name: nodes, kind: spatial, shape: [2], noc: {bandwidth_gbps: 1, multicast: false}}\n"
      "  - {name: DRAM, kind: dram, bandwidth_gbps: 1}\n");
  const auto r =
      run_cli({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
               mixed, "--mapping", kData + "/tiny_conv_mapping.yaml", "--costmodel", "mdc"});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("levels.nodes.noc.multicast"), std::string::npos) << r.err;
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
  EXPECT_NE(e.find("clusters of 512 PEs exceed the 256 PEs"), std::string::npos) << e;
  const std::string badhw = write("bad_hw.m", "num_pes: 16\nnoc_bandwidth: 4\n");
  e = expect_bad({"evaluate", "--maestro", kCase + "/mapping.m", "--hw", badhw});
  EXPECT_NE(e.find("bad_hw.m:2:"), std::string::npos) << e;
  e = expect_bad({"evaluate", "--maestro", kCase + "/mapping.m"});
  EXPECT_NE(e.find("--maestro and --hw go together"), std::string::npos) << e;
  e = expect_bad(
      {"evaluate", "--maestro", kCase + "/mapping.m", "--hw", hw, "--costmodel", "roofline"});
  EXPECT_NE(e.find("cannot evaluate MAESTRO directives"), std::string::npos) << e;
}

TEST(CliMaestro, MalformedFilesNameFileLineAndExpectation) {
  const std::string hw = kCase + "/hw.m";
  struct Bad {
    const char* file;
    std::string text;
    const char* where;     // file:line
    const char* expected;  // what the message says was expected
  };
  const std::string conv = "Network n {\nLayer l {\nType: CONV\n";
  const std::string dims = "Dimensions { K: 4, C: 4, R: 3, S: 3, Y: 8, X: 8 }\n";
  const std::string tail = "}\n}\n}\n";
  const Bad cases[] = {
      {"type.m", "Network n {\nLayer l {\nType: CONV3D\n" + dims + "Dataflow {\n" + tail,
       ":3:", "unknown layer type 'CONV3D'; expected CONV, DSCONV, NGCONV, TRCONV or GEMM"},
      {"nodims.m", conv + "}\n}\n", ":2:", "layer 'l' has no Dimensions"},
      {"nodims_flow.m", conv + "Dataflow {\nSpatialMap(1,1) K;\n" + tail,
       ":4:", "Dimensions must come before Dataflow"},
      {"unknown_dim.m",
       conv + dims + "Dataflow {\nSpatialMap(1,1) K;\nTemporalMap(1,1) Q;\n" + tail,
       ":7:", "directive on unknown dimension 'Q'"},
      {"zero_size.m", conv + dims + "Dataflow {\nSpatialMap(0,1) K;\n" + tail,
       ":6:", "expected a positive size, got 0"},
      {"zero_offset.m", conv + dims + "Dataflow {\nSpatialMap(1,0) K;\n" + tail,
       ":6:", "expected a positive offset, got 0"},
      {"negative_size.m",
       conv + dims + "Dataflow {\nSpatialMap(1,1) K;\nTemporalMap(-2,1) C;\n" + tail,
       ":7:", "expected a positive size, got -2"},
      {"negative_offset.m", conv + dims + "Dataflow {\nSpatialMap(1, -1) K;\n" + tail,
       ":6:", "expected a positive offset, got -1"},
      {"negative_dim.m", conv + "Dimensions { K: -4, C: 4, R: 3, S: 3, Y: 8, X: 8 }\n" + tail,
       ":4:", "expected a positive dimension size, got -4"},
      {"third_spatial.m",
       conv + dims + "Dataflow {\nSpatialMap(1,1) K;\nSpatialMap(1,1) C;\nSpatialMap(3,1) Y;\n" +
           tail,
       ":8:", "a third SpatialMap in cluster level 0; expected one or two per level"},
      {"big_cluster.m",
       conv + dims + "Dataflow {\nSpatialMap(1,1) K;\nCluster(512, P);\nSpatialMap(1,1) C;\n" +
           tail,
       ":7:", "clusters of 512 PEs exceed the 256 PEs of the hardware"},
  };
  for (const auto& b : cases) {
    const std::string path = write(b.file, b.text);
    const std::string e = expect_bad({"evaluate", "--maestro", path, "--hw", hw});
    EXPECT_NE(e.find(std::string(b.file) + b.where), std::string::npos) << b.file << ": " << e;
    EXPECT_NE(e.find(b.expected), std::string::npos) << b.file << ": " << e;
  }
}

TEST(CliMaestro, CasesMaestroCrashesOnOrRejectsGiveErrorOrTrueNumbers) {
  // Every reference case MAESTRO did not complete (refdata cases.csv: SIGFPE,
  // "Invalid mapping", DSCONV with a K directive, a cluster larger than the
  // PEs): mapex answers with exit 2 and a message naming the mapping file and
  // line, or with finite numbers whose MAC count is the layer's; never a
  // crash or NaN.
  std::ifstream in(std::string(MAPEX_MAESTRO_REFDATA) + "/cases.csv");
  std::string line;
  std::getline(in, line);
  int cases = 0;
  while (std::getline(in, line)) {
    const std::string id = line.substr(0, line.find(','));
    if (line.find(",ok,") != std::string::npos) continue;
    ++cases;
    const std::string dir = std::string(MAPEX_MAESTRO_REFDATA) + "/cases/" + id;
    const auto r = run_cli(
        {"evaluate", "--maestro", dir + "/mapping.m", "--hw", dir + "/hw.m", "--format", "csv"});
    ASSERT_TRUE(r.status == 0 || r.status == 2) << id << ": exit " << r.status << " " << r.err;
    if (r.status == 2) {
      EXPECT_EQ(r.err.rfind("mapex: error: " + dir + "/mapping.m:", 0), 0u) << id << ": " << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << id << ": " << r.err;
      continue;
    }
    EXPECT_EQ(r.out.find("nan"), std::string::npos) << id;
    EXPECT_EQ(r.out.find("inf"), std::string::npos) << id;
    std::istringstream rows(r.out);
    std::string row;
    std::getline(rows, row);  // header: layer_name,num_macs,...,true_macs at column 21
    while (std::getline(rows, row)) {
      std::vector<std::string> cells;
      std::istringstream cs(row);
      for (std::string c; std::getline(cs, c, ',');) cells.push_back(c);
      ASSERT_GT(cells.size(), 21u) << id << ": " << row;
      EXPECT_EQ(cells[1], cells[21]) << id << ": MACs differ from the layer's: " << row;
      EXPECT_GT(std::stod(cells[2]), 0) << id << ": " << row;
    }
  }
  EXPECT_EQ(cases, 7);
}

TEST(CliMaestro, CompatFlagReproducesMaestrosStridedMacCount) {
  // yxp_os on a stride-2 layer: MAESTRO counts 202309632 MACs, the layer
  // has 115605504 (refdata index.csv, num_macs vs num_macs_expected).
  const std::string dir =
      std::string(MAPEX_MAESTRO_REFDATA) + "/cases/A__resnet_3x3_s2__yxp_os__hw256";
  const std::vector<std::string> args = {
      "evaluate", "--maestro", dir + "/mapping.m", "--hw", dir + "/hw.m", "--format", "csv"};
  auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resnet_3x3_s2,115605504,"), std::string::npos) << r.out;
  auto compat = args;
  compat.push_back("--maestro-compat");
  r = run_cli(compat);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resnet_3x3_s2,202309632,1261579,"), std::string::npos) << r.out;
  compat.back() = "--param";
  compat.push_back("maestro_compat=true");
  r = run_cli(compat);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resnet_3x3_s2,202309632,"), std::string::npos) << r.out;
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
