// Inputs a fuzzing campaign found to crash or mislead: integers past int64,
// sizes whose products overflow, energies that make a metric infinite, and
// `-o` naming a file that is not a result file. Each one exits 2 with one
// located line (README, bad input) and leaves existing files as they were.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
using test::slurp;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file("robust_" + name, text);
}

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

// Exit 2, one line starting "mapex: error: ", no crash text, nothing
// non-finite printed.
std::string expect_bad(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("stoll"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  return r.err;
}

std::string experiment(const std::string& workload, const std::string& arch) {
  return "name: robust\nworkloads: [" + workload + "]\narchitectures: [" + arch +
         "]\nbudget: {evaluations: 10}\nsearchers: [random]\ncostmodels: [roofline]\n";
}

const std::string kGemm =
    "Network n {\nLayer L {\nType: GEMM\nDimensions { M: 4, N: 4, K: 4 }\n"
    "Dataflow { SpatialMap(1,1) M; TemporalMap(4,4) N; TemporalMap(4,4) K; }\n}\n}\n";
const std::string kHw = "num_pes: 4\nl1_size_cstr: 64\nl2_size_cstr: 1024\n";

TEST(RobustInput, MaestroHardwareIntegerPastInt64) {
  const std::string mapping = write("gemm.m", kGemm);
  const std::string hw = write("huge_hw.m", "num_pes: 99999999999999999999\n");
  const std::string e = expect_bad({"evaluate", "--maestro", mapping, "--hw", hw});
  EXPECT_HAS(e,
             "robust_huge_hw.m:1:10: key 'num_pes': expected a positive integer of at most "
             "9223372036854775807, got '99999999999999999999'");
}

TEST(RobustInput, MaestroDimensionPastInt64AndMacsPastInt64) {
  const std::string hw = write("hw.m", kHw);
  std::string text = kGemm;
  text.replace(text.find("K: 4 }"), 6, "K: 99999999999999999999 }");
  std::string e = expect_bad({"evaluate", "--maestro", write("huge_dim.m", text), "--hw", hw});
  EXPECT_HAS(e,
             "robust_huge_dim.m:4:29: key 'dimension size': expected a positive dimension size "
             "of at most 9223372036854775807, got '99999999999999999999'");
  // Each dimension fits; M x N x K does not.
  text = kGemm;
  text.replace(text.find("M: 4,"), 5, "M: 4611686018427387904,");
  e = expect_bad({"evaluate", "--maestro", write("huge_macs.m", text), "--hw", hw});
  EXPECT_HAS(e, "robust_huge_macs.m:2:1: key 'Dimensions': layer 'L': its number of MACs exceeds");
}

TEST(RobustInput, LoopnestCoefficientPastInt64) {
  const std::string net =
      write("nest.yaml",
            "network: n\nlayers:\n  - name: nest\n    type: loopnest\n"
            "    dims: {X: 4, Y: 4}\n    tensors:\n"
            "      - {name: In, role: input, subscripts: [X*99999999999999999999]}\n"
            "      - {name: Out, role: output, subscripts: [Y]}\n");
  const std::string e = expect_bad({"check", "--workload", net});
  EXPECT_HAS(e,
             "robust_nest.yaml:7:46: key 'subscripts': subscript 'X*99999999999999999999': "
             "expected a number of at most 9223372036854775807");
}

TEST(RobustInput, FcLayerWhoseMacsOverflowIsRefusedBeforeTheResultFile) {
  // 2^62 input channels x 4 outputs: 2^64 MACs wrapped to `macs 0`.
  const std::string net = write("fc.yaml",
                                "network: n\nlayers:\n"
                                "  - {name: fc, type: fc, C: 4611686018427387904, K: 4}\n");
  const std::string guard = write("fc_guard.h5", "results that must survive");
  const std::string exp = write("fc_exp.yaml", experiment(net, kData + "/tiny_arch.yaml"));
  const std::string e = expect_bad({"run", exp, "-o", guard});
  EXPECT_HAS(e, "robust_fc.yaml:3:5:");
  EXPECT_HAS(e, "the product of the loop bounds (the number of MACs) exceeds");
  EXPECT_EQ(slurp(guard), "results that must survive");
}

std::vector<std::string> evaluate_conv(const std::string& arch) {
  return {"evaluate", "--workload", kData + "/tiny_net.yaml",         "--layer", "conv", "--arch",
          arch,       "--mapping",  kData + "/tiny_conv_mapping.yaml"};
}

TEST(RobustInput, EnergyThatWouldPrintInfIsRefusedAtItsKey) {
  std::string arch = slurp(kData + "/tiny_arch.yaml");
  arch.replace(arch.find("read_energy_pj: 200"), 19, "read_energy_pj: 1e308");
  const std::string e = expect_bad(evaluate_conv(write("inf_arch.yaml", arch)));
  EXPECT_HAS(e,
             "robust_inf_arch.yaml:28:21: key 'read_energy_pj': expected a number from 0 to "
             "1e+09, got '1e308'");
}

TEST(RobustInput, TinyBandwidthAndHugeClockAreRefusedAtTheirKeys) {
  std::string arch = slurp(kData + "/tiny_arch.yaml");
  arch.replace(arch.find("bandwidth_gbps: 0.4"), 19, "bandwidth_gbps: 1e-300");
  std::string e = expect_bad(evaluate_conv(write("slow_arch.yaml", arch)));
  EXPECT_HAS(e,
             "robust_slow_arch.yaml:27:21: key 'bandwidth_gbps': expected a number from "
             "1e-06 to 1e+15");
  arch = slurp(kData + "/tiny_arch.yaml");
  arch.replace(arch.find("clock_mhz: 100"), 14, "clock_mhz: 1e300");
  e = expect_bad(evaluate_conv(write("fast_arch.yaml", arch)));
  EXPECT_HAS(e, "robust_fast_arch.yaml:3:12: key 'clock_mhz'");
}

TEST(RobustInput, SweptEnergyOutOfRangeIsRefusedAtTheValue) {
  const std::string exp = write("sweep_exp.yaml",
                                "name: sweep\nbudget: {evaluations: 10}\n"
                                "workloads: [" +
                                    kData +
                                    "/tiny_net.yaml]\n"
                                    "architectures:\n"
                                    "  - file: " +
                                    kData +
                                    "/tiny_arch.yaml\n"
                                    "    sweep:\n"
                                    "      product: {DRAM.read_energy_pj: [200, 1e308]}\n"
                                    "searchers: [random]\ncostmodels: [roofline]\n");
  const std::string guard = write("sweep_guard.h5", "results that must survive");
  const std::string e = expect_bad({"run", exp, "-o", guard});
  EXPECT_HAS(e, "robust_sweep_exp.yaml:7:");
  EXPECT_HAS(e, "key 'DRAM.read_energy_pj': expected a number from 0 to 1e+09, got '1e308'");
  EXPECT_EQ(slurp(guard), "results that must survive");
}

// ---- -o never replaces what is not a result file ----

class OutputGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    exp_text_ = experiment(kData + "/tiny_net.yaml", kData + "/tiny_arch.yaml");
    exp_ = write(test + "_exp.yaml", exp_text_);
    notes_ = write(test + "_notes.txt", "my notes\n");
  }
  std::string exp_text_, exp_, notes_;
};

TEST_F(OutputGuard, RunRefusesTheExperimentFileItself) {
  const std::string e = expect_bad({"run", exp_, "-o", exp_, "-j", "1", "--quiet"});
  EXPECT_HAS(e, exp_ + ": is an input of this command");
  EXPECT_EQ(slurp(exp_), exp_text_);
}

TEST_F(OutputGuard, RunRefusesAnExistingFileThatIsNotAResultFile) {
  const std::string e = expect_bad({"run", exp_, "-o", notes_, "-j", "1", "--quiet"});
  EXPECT_HAS(e, notes_ + ": exists and is not a mapex result file; -o refuses to replace it");
  EXPECT_EQ(slurp(notes_), "my notes\n");
  // --resume into it is refused as well.
  expect_bad({"run", exp_, "-o", notes_, "--resume", "-j", "1", "--quiet"});
  EXPECT_EQ(slurp(notes_), "my notes\n");
}

TEST_F(OutputGuard, RunReplacesAResultFileAndWithForceAnyFile) {
  const std::string out = kWork + "/robust_run_out.h5";
  std::remove(out.c_str());
  auto r = run_cli({"run", exp_, "-o", out, "-j", "1", "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"run", exp_, "-o", out, "-j", "1", "--quiet"});  // a result file: replaced
  EXPECT_EQ(r.status, 0) << r.err;
  r = run_cli({"run", exp_, "-o", notes_, "-j", "1", "--quiet", "--force"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(slurp(notes_), "my notes\n");
}

TEST_F(OutputGuard, MergeRefusesAnExistingFileThatIsNotAResultFile) {
  const std::string shard = kWork + "/robust_merge_in.h5";
  std::remove(shard.c_str());
  ASSERT_EQ(run_cli({"run", exp_, "-o", shard, "-j", "1", "--quiet"}).status, 0);
  const std::string e = expect_bad({"merge", shard, "-o", notes_});
  EXPECT_HAS(e, notes_ + ": exists and is not a mapex result file");
  EXPECT_EQ(slurp(notes_), "my notes\n");
  EXPECT_HAS(expect_bad({"merge", shard, "-o", exp_}), "not a mapex result file");
  EXPECT_EQ(slurp(exp_), exp_text_);
  EXPECT_EQ(run_cli({"merge", shard, "-o", notes_, "--force"}).status, 0);
}

TEST_F(OutputGuard, ScheduleRefusesItsInputsAndOtherFiles) {
  const std::string net = kData + "/kapla_chain.yaml";
  const std::string net_text = slurp(net);
  const std::vector<std::string> base{"schedule", "--workload", net, "--arch",
                                      kData + "/kapla_chip4.yaml"};
  auto args = base;
  args.insert(args.end(), {"-o", notes_});
  EXPECT_HAS(expect_bad(args), notes_ + ": exists and is not a mapex result file");
  EXPECT_EQ(slurp(notes_), "my notes\n");
  args = base;
  args.insert(args.end(), {"-o", net});
  EXPECT_HAS(expect_bad(args), net + ": is an input of this command");
  EXPECT_EQ(slurp(net), net_text);
}

TEST_F(OutputGuard, ImportRefusesAFileWhereItsFolderGoes) {
  // Refused before the result is read, so any existing file stands for it.
  const std::string e =
      expect_bad({"import", "nn_dataflow", kData + "/tiny_net.yaml", "--workload",
                  kData + "/tiny_net.yaml", "--arch", kData + "/tiny_arch.yaml", "-o", notes_});
  EXPECT_HAS(e, notes_ + ": key '-o': exists and is not a directory");
  EXPECT_EQ(slurp(notes_), "my notes\n");
}

}  // namespace
}  // namespace mapex
