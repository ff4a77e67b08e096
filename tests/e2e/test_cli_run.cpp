// `mapex run` end to end: YAML in, HDF5 out, table printed, the file read
// back; the same seed gives the same results with -j 1 and -j 2; a job
// whose plugin throws is recorded as failed while the others go on.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mapex/generators.hpp>
#include <mapex/network.hpp>

#include "cli_runner.hpp"
#include "host/result_store.hpp"

namespace mapex::host {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;

TEST(CliRun, ClusterLevelsFromTheMapspaceAreStoredAndReadBackWhole) {
  // A mapspace constraint turns the PEs' cluster level on with 2 units per
  // cluster along K: every mapping searched has a cluster level, and the
  // best one must come back from the HDF5 file complete (split, T^out and
  // cluster order), as the same YAML.
  const std::string exp = kWork + "/cluster_run.yaml";
  std::ofstream(exp) << "name: cluster\nseed: 3\nobjective: latency\n"
                        "budget: {evaluations: 1500}\n"
                        "mapspace: {levels: {PEs: {cluster: {split: {K: 2}}}}}\n"
                        "workloads:\n  - {file: "
                     << kData << "/tiny_net.yaml, layers: [fc]}\n"
                     << "architectures: [" << kData << "/tiny_arch.yaml]\n"
                     << "searchers: [random, exhaustive]\ncostmodels: [roofline]\n";
  const std::string out = kWork + "/cluster_run.h5";
  const auto r = run_cli({"run", exp, "-o", out, "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultFile f = read_results(out);
  ASSERT_EQ(f.jobs.size(), 2u);
  const Network net = Network::load(kData + "/tiny_net.yaml");
  const Architecture arch = Architecture::load(kData + "/tiny_arch.yaml");
  const Operator& op = net.layers()[static_cast<size_t>(net.find_layer("fc"))].op;
  for (const JobRow& j : f.jobs) {
    ASSERT_EQ(j.status, "ok") << j.error;
    const Mapping m = Mapping::parse(j.best_mapping, "stored mapping", op, arch);
    const ClusterMapping& c = m.level(1).cluster;
    ASSERT_TRUE(c.active()) << j.best_mapping;
    EXPECT_EQ(c.split[static_cast<size_t>(op.find_dim("K"))], 2) << j.best_mapping;
    EXPECT_EQ(c.order.size(), static_cast<size_t>(op.num_dims()));
    EXPECT_EQ(m.to_yaml(op, arch), j.best_mapping);
  }
}

TEST(CliRun, WritesResultsAndPrintsTheTable) {
  const std::string out = kWork + "/run_basic.h5";
  const auto r = run_cli({"run", kData + "/e2e_experiment.yaml", "-o", out, "-j", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("| job_id"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exhaustive-2k"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Totals over layers"), std::string::npos) << r.out;
  // Not a terminal: one progress line per finished job.
  EXPECT_NE(r.err.find("[4/4]"), std::string::npos) << r.err;

  const ResultFile f = read_results(out);
  EXPECT_EQ(f.attributes.at("experiment_name"), "e2e");
  EXPECT_NE(f.attributes.at("experiment_yaml").find("name: e2e"), std::string::npos);
  EXPECT_FALSE(f.attributes.at("mapex_version").empty());
  ASSERT_EQ(f.jobs.size(), 4u);
  const Network net = Network::load(kData + "/tiny_net.yaml");
  const Architecture arch = Architecture::load(kData + "/tiny_arch.yaml");
  for (size_t i = 0; i < f.jobs.size(); ++i) {
    const JobRow& j = f.jobs[i];
    EXPECT_EQ(j.job_index, i);
    EXPECT_EQ(j.status, "ok") << j.error;
    EXPECT_EQ(j.job_id.size(), 16u);
    EXPECT_GT(j.latency_cycles, 0);
    EXPECT_GT(j.energy_pj, 0);
    EXPECT_DOUBLE_EQ(j.edp, j.latency_cycles * j.energy_pj);
    EXPECT_LE(j.evaluations, j.searcher == "random" ? 4000u : 2000u);
    // The stored mapping is a valid mapping of its layer.
    const Operator& op = net.layers()[static_cast<size_t>(net.find_layer(j.layer))].op;
    EXPECT_NO_THROW(Mapping::parse(j.best_mapping, "stored mapping", op, arch)) << j.best_mapping;
    // The convergence trace improves strictly and ends at the best found.
    const auto& trace = j.trace;  // the experiment sets traces: true
    ASSERT_FALSE(trace.empty());
    for (size_t k = 1; k < trace.size(); ++k) {
      EXPECT_GT(trace[k].evaluation, trace[k - 1].evaluation);
      EXPECT_LT(trace[k].value, trace[k - 1].value);
    }
    EXPECT_LE(trace.back().evaluation, j.evaluations);
    EXPECT_EQ(trace.back().value, j.latency_cycles);
  }
  // `mapex report` reads the same file.
  const auto report = run_cli({"report", out, "--format", "csv"});
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(report.out.rfind("job_id,workload,layer", 0), 0u) << report.out;
  EXPECT_NE(report.out.find(f.jobs[0].job_id), std::string::npos);
}

TEST(CliRun, SameResultsWithOneAndTwoThreads) {
  const std::string one = kWork + "/run_j1.h5", two = kWork + "/run_j2.h5";
  ASSERT_EQ(
      run_cli({"run", kData + "/e2e_experiment.yaml", "-o", one, "-j", "1", "--quiet"}).status, 0);
  ASSERT_EQ(
      run_cli({"run", kData + "/e2e_experiment.yaml", "-o", two, "-j", "2", "--quiet"}).status, 0);
  const ResultFile a = read_results(one), b = read_results(two);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].job_id, b.jobs[i].job_id);
    EXPECT_EQ(a.jobs[i].seed, b.jobs[i].seed);
    EXPECT_EQ(a.jobs[i].latency_cycles, b.jobs[i].latency_cycles);
    EXPECT_EQ(a.jobs[i].energy_pj, b.jobs[i].energy_pj);
    EXPECT_EQ(a.jobs[i].evaluations, b.jobs[i].evaluations);
    EXPECT_EQ(a.jobs[i].best_mapping, b.jobs[i].best_mapping);
    const auto &ta = a.jobs[i].trace, &tb = b.jobs[i].trace;
    ASSERT_EQ(ta.size(), tb.size());
    for (size_t k = 0; k < ta.size(); ++k) {
      EXPECT_EQ(ta[k].evaluation, tb[k].evaluation);
      EXPECT_EQ(ta[k].value, tb[k].value);
    }
  }
}

TEST(CliRun, QuietPrintsNoProgress) {
  const auto r =
      run_cli({"run", kData + "/e2e_experiment.yaml", "-o", kWork + "/quiet.h5", "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliRun, OnATerminalDrawsALiveBar) {
  // util-linux's `script` gives the run a pseudo-terminal, as a user's shell
  // would; the bar redraws in place with jobs, evaluation rate and ETA.
  const std::string out = kWork + "/bar.h5";
  const std::string command =
      std::string(MAPEX_BINARY) + " run " + kData + "/e2e_experiment.yaml -o " + out + " -j 1";
  const auto r = run_cli({"-qec", command, "/dev/null"}, {}, "/usr/bin/script");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\r["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("] 4/4 jobs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" eval/s  elapsed "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ETA 00:00"), std::string::npos) << r.out;
  // The bar replaces the per-job lines.
  EXPECT_EQ(r.out.find("[4/4] "), std::string::npos) << r.out;
}

TEST(CliRun, AFailingJobIsRecordedAndTheOthersFinish) {
  const std::string exp = kWork + "/failing.yaml";
  {
    std::ofstream f(exp);
    f << "name: failing\nworkloads: [" << kData << "/tiny_net.yaml]\narchitectures: [" << kData
      << "/tiny_arch.yaml]\nplugin_paths: [" << MAPEX_TEST_PLUGIN_DIR << "/failing]\n"
      << "budget: {evaluations: 200}\nsearchers: [failing, random]\ncostmodels: [roofline]\n";
  }
  const std::string out = kWork + "/failing.h5";
  const auto r = run_cli({"run", exp, "-o", out, "--quiet"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("2 of 4 jobs failed"), std::string::npos) << r.err;
  const ResultFile f = read_results(out);
  ASSERT_EQ(f.jobs.size(), 4u);
  for (const auto& j : f.jobs) {
    if (j.searcher == "failing") {
      EXPECT_EQ(j.status, "failed");
      EXPECT_NE(j.error.find("gave up on purpose"), std::string::npos) << j.error;
    } else {
      EXPECT_EQ(j.status, "ok") << j.error;
    }
  }
}

}  // namespace
}  // namespace mapex::host
