// Bad sweeps, DSE settings, resumes, shards and merges: exit status 2, one
// line naming the file, line and column, the key and what was expected, and
// an existing result file left exactly as it was.

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
  return test::write_work_file(name, text);
}

// Line 6 is the architecture entry, line 8 its first swept key.
std::string with_arch_sweep(const std::string& sweep_body, const std::string& extra = "") {
  return "name: sweepbad\n"
         "budget: {evaluations: 10}\n"
         "workloads: [" +
         kData +
         "/tiny_net.yaml]\n"
         "searchers: [random]\n"
         "architectures:\n"
         "  - file: " +
         kData +
         "/tiny_arch.yaml\n"
         "    sweep:\n" +
         sweep_body + "costmodels: [roofline]\n" + extra;
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

class BadSweep : public ::testing::Test {
 protected:
  // One guard per test: ctest runs these tests as parallel processes, and a
  // shared guard being rewritten by one test reads as damaged in another.
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    guard_ = write("sweep_guard_" + test + ".h5", "results that must survive");
  }
  std::string run_bad(const std::string& name, const std::string& experiment,
                      std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"run", write(name, experiment), "-o", guard_};
    args.insert(args.end(), extra.begin(), extra.end());
    return expect_bad(args);
  }
  std::string expect_bad(const std::vector<std::string>& args) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(slurp(guard_), "results that must survive");
    return r.err;
  }
  std::string guard_;
};

TEST_F(BadSweep, KeyNamingNoParameter) {
  const std::string e =
      run_bad("nokey.yaml", with_arch_sweep("      product: {L3.size_bytes: [1024]}\n"));
  EXPECT_HAS(e, "nokey.yaml:8:17: key 'L3.size_bytes': names no parameter of architecture 'tiny'");
  EXPECT_HAS(e, "L1, PEs, L2, DRAM");
}

TEST_F(BadSweep, FieldTheLevelDoesNotHave) {
  const std::string e =
      run_bad("kind.yaml", with_arch_sweep("      product: {PEs.size_bytes: [1024]}\n"));
  EXPECT_HAS(e, "key 'PEs.size_bytes': level 'PEs' is a spatial level: it has no 'size_bytes'");
}

TEST_F(BadSweep, EmptyListAndEmptySweep) {
  EXPECT_HAS(run_bad("empty.yaml", with_arch_sweep("      product: {L2.size_bytes: []}\n")),
             "key 'L2.size_bytes': expected a non-empty list of values to sweep");
  EXPECT_HAS(run_bad("empty2.yaml", with_arch_sweep("      {}\n")),
             "key 'sweep': expected 'product' or 'zip' with at least one parameter");
}

TEST_F(BadSweep, ZippedListsOfDifferentLengths) {
  const std::string e =
      run_bad("zip.yaml",
              with_arch_sweep("      zip: {L2.size_bytes: [1024, 2048], L1.size_bytes: [64]}\n"));
  EXPECT_HAS(e, "zip.yaml:8:");
  EXPECT_HAS(e, "key 'L1.size_bytes': zipped lists must have the same length: expected 2 values");
}

TEST_F(BadSweep, BadValue) {
  const std::string e =
      run_bad("value.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048, 0]}\n"));
  EXPECT_HAS(e, "value.yaml:8:39: key 'L2.size_bytes'");
  EXPECT_HAS(e, "positive");
}

TEST_F(BadSweep, FilterSyntaxUnknownNameAndNothingLeft) {
  EXPECT_HAS(run_bad("f1.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"
                                                "      filter: \"num_pes <<= 3\"\n")),
             "f1.yaml:9:15: key 'filter': expected an expression like");
  EXPECT_HAS(run_bad("f2.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"
                                                "      filter: \"L9.size_bytes > 3\"\n")),
             "key 'filter': 'L9.size_bytes' in 'L9.size_bytes > 3' names no parameter");
  EXPECT_HAS(run_bad("f3.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"
                                                "      filter: \"L2.size_bytes < 100\"\n")),
             "key 'filter': the filters remove every design point of the sweep");
}

TEST_F(BadSweep, EveryDesignPointAboveTheCaps) {
  const std::string e =
      run_bad("caps.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048, 4096]}\n",
                                           "dse: {caps: {area_mm2: 0.000001}}\n"));
  EXPECT_HAS(e, "key 'architectures': all 2 design points are above the area or power caps");
}

TEST_F(BadSweep, BadDseSettings) {
  EXPECT_HAS(run_bad("dse1.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n",
                                                  "dse: {pareto: [speed]}\n")),
             "key 'pareto': expected metrics among latency, energy, edp, area, power, got 'speed'");
  EXPECT_HAS(run_bad("dse2.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n",
                                                  "dse: {caps: {area: 3}}\n")),
             "key 'area': unknown key in caps; expected one of: area_mm2, power_mw");
}

TEST_F(BadSweep, SearcherAndWorkloadSweepKeys) {
  const std::string base = "name: s\nbudget: {evaluations: 10}\nworkloads: [" + kData +
                           "/tiny_net.yaml]\narchitectures: [" + kData +
                           "/tiny_arch.yaml]\ncostmodels: [roofline]\n";
  EXPECT_HAS(run_bad("s1.yaml", base + "searchers:\n  - plugin: random\n    sweep:\n"
                                       "      product: {victory_condition: [1, 2]}\n"),
             "s1.yaml:9:17: key 'victory_condition': names no searcher parameter; expected "
             "params.<name>");
  EXPECT_HAS(run_bad("s2.yaml", base + "searchers:\n  - plugin: random\n    sweep:\n"
                                       "      product: {params.warmth: [1, 2]}\n"),
             "key 'warmth': unknown parameter of searcher 'random'");
  const std::string w = "name: w\nbudget: {evaluations: 10}\narchitectures: [" + kData +
                        "/tiny_arch.yaml]\nsearchers: [random]\ncostmodels: [roofline]\n"
                        "workloads:\n  - file: " +
                        kData + "/tiny_net.yaml\n    sweep: {product: {layers: [1]}}\n";
  EXPECT_HAS(run_bad("w1.yaml", w),
             "key 'layers': names no workload parameter; expected batch or training");
}

TEST_F(BadSweep, BadShard) {
  const std::string exp =
      write("shard.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"));
  EXPECT_HAS(expect_bad({"run", exp, "-o", guard_, "--shard", "3/2"}),
             "key '--shard': expected i/N with N >= 1 and 0 <= i < N, got '3/2'");
  EXPECT_HAS(expect_bad({"run", exp, "-o", guard_, "--shard", "x"}), "expected i/N");
}

TEST_F(BadSweep, ResumeRefusals) {
  // Not a result file at all.
  const std::string exp =
      write("resume.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"));
  EXPECT_HAS(expect_bad({"run", exp, "-o", guard_, "--resume"}),
             "cannot read as a mapex result file");

  // A real result file: from another experiment, or from this one before
  // its seed changed; neither is touched.
  const std::string done = kWork + "/resume_done.h5";
  ASSERT_EQ(run_cli({"run", exp, "-o", done, "-q"}).status, 0);
  const std::string before = slurp(done);
  auto refused = [&](const std::string& name, const std::string& text) {
    const auto r = run_cli({"run", write(name, text), "-o", done, "--resume"});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(slurp(done), before);
    return r.err;
  };
  std::string other = slurp(exp);
  other.replace(0, 14, "name: otherexp");
  EXPECT_HAS(
      refused("other.yaml", other),
      "resume_done.h5: key '--resume': holds results of experiment 'sweepbad', not of 'otherexp'");
  EXPECT_HAS(refused("seeded.yaml", "seed: 99\n" + slurp(exp)),
             "the experiment changed in a way that changes job ids");

  // Growing the experiment keeps the old jobs and runs only the new ones.
  std::string grown = slurp(exp);
  grown.replace(grown.find("[2048]"), 6, "[2048, 4096]");
  const auto r = run_cli({"run", write("grown.yaml", grown), "-o", done, "--resume"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.err, "resuming: 2 jobs kept, 2 to run");
}

TEST_F(BadSweep, MergeOfDifferentExperiments) {
  const std::string a = kWork + "/merge_a.h5", b = kWork + "/merge_b.h5";
  const std::string ea =
      write("ma.yaml", with_arch_sweep("      product: {L2.size_bytes: [2048]}\n"));
  std::string other = slurp(ea);
  other.replace(0, 14, "name: mergeb  ");
  ASSERT_EQ(run_cli({"run", ea, "-o", a, "-q"}).status, 0);
  ASSERT_EQ(run_cli({"run", write("mb.yaml", other), "-o", b, "-q"}).status, 0);
  EXPECT_HAS(expect_bad({"merge", a, b, "-o", guard_}),
             "merge_b.h5: holds results of experiment 'mergeb', but");
  EXPECT_HAS(expect_bad({"merge", a, kWork + "/nothing.h5", "-o", guard_}),
             "nothing.h5: result file does not exist");
}

}  // namespace
}  // namespace mapex
