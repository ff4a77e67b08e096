// Experiments at scale, end to end: sweeps and their names, DSE columns and
// the Pareto set; SIGTERM and SIGKILL in the middle of a run, then
// --resume, against an uninterrupted run; --shard + merge and MPI ranks
// against a single process.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "cli_runner.hpp"
#include "host/experiment.hpp"
#include "host/hardware_cost.hpp"
#include "host/result_store.hpp"

namespace mapex::host {
namespace {

using test::run_cli;
using test::slurp;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;
const std::string kSweep = kData + "/sweep_experiment.yaml";
constexpr std::size_t kSweepJobs = 24;

// Starts `mapex` without waiting; output goes to files.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<std::string> all{MAPEX_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (!freopen(log.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(127);
    execv(MAPEX_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

int wait_status(pid_t pid, int* signal = nullptr) {
  int raw = 0;
  waitpid(pid, &raw, 0);
  if (signal) *signal = WIFSIGNALED(raw) ? WTERMSIG(raw) : 0;
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

// Everything but the wall time must match, job for job (rows sorted by
// job_index), traces included.
void expect_same_jobs(const ResultFile& a, const ResultFile& b) {
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    const JobRow &x = a.jobs[i], &y = b.jobs[i];
    SCOPED_TRACE(x.job_id);
    EXPECT_EQ(x.job_index, y.job_index);
    EXPECT_EQ(x.job_id, y.job_id);
    EXPECT_EQ(x.architecture, y.architecture);
    EXPECT_EQ(x.searcher, y.searcher);
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.latency_cycles, y.latency_cycles);
    EXPECT_EQ(x.energy_pj, y.energy_pj);
    EXPECT_EQ(x.evaluations, y.evaluations);
    EXPECT_EQ(x.seed, y.seed);
    EXPECT_EQ(x.best_mapping, y.best_mapping);
    EXPECT_EQ(x.area_mm2, y.area_mm2);
    EXPECT_EQ(x.power_mw, y.power_mw);
    EXPECT_EQ(x.throughput_gmacs, y.throughput_gmacs);
    EXPECT_EQ(x.pareto, y.pareto);
    ASSERT_EQ(x.trace.size(), y.trace.size());
    for (size_t t = 0; t < x.trace.size(); ++t) {
      EXPECT_EQ(x.trace[t].evaluation, y.trace[t].evaluation);
      EXPECT_EQ(x.trace[t].value, y.trace[t].value);
    }
  }
}

// ctest runs every test in its own process, in parallel: each process
// makes its own reference file.
const std::string& reference_file() {
  static const std::string path = kWork + "/sweep_reference_" + std::to_string(::getpid()) + ".h5";
  return path;
}

const ResultFile& reference() {
  static const ResultFile ref = [] {
    const std::string& out = reference_file();
    const auto r = run_cli({"run", kSweep, "-o", out, "-j", "2", "--quiet"});
    EXPECT_EQ(r.status, 0) << r.err;
    return read_results(out);
  }();
  return ref;
}

TEST(Sweep, NamesDesignPointsAndVariants) {
  const ResultFile& f = reference();
  ASSERT_EQ(f.jobs.size(), kSweepJobs);
  std::set<std::string> archs, searchers;
  for (const auto& j : f.jobs) {
    archs.insert(j.architecture);
    searchers.insert(j.searcher);
    EXPECT_EQ(j.status, "ok") << j.error;
  }
  EXPECT_EQ(archs.size(), 6u);
  EXPECT_TRUE(archs.count("tiny[PEs.shape=4x4,PEs.noc.bandwidth_gbps=3.2,DRAM.bandwidth_gbps=1.6]"))
      << *archs.begin();
  EXPECT_TRUE(archs.count("tiny[PEs.shape=8,PEs.noc.bandwidth_gbps=0.8,DRAM.bandwidth_gbps=0.4]"));
  EXPECT_EQ(searchers, (std::set<std::string>{"random[victory_condition=1000]",
                                              "random[victory_condition=0]"}));
}

TEST(Sweep, BatchSizesBudgetsFlagsAndFilters) {
  const std::string exp = kWork + "/kinds.yaml";
  std::ofstream(exp) << "name: kinds\nseed: 3\nworkloads:\n  - file: " << kData
                     << "/tiny_net.yaml\n    layers: [fc]\n    sweep: {product: {batch: [1, 2]}}\n"
                     << "architectures:\n  - file: " << kData << "/tiny_arch.yaml\n"
                     << "    sweep:\n      zip: {PEs.noc.multicast: [true, false], "
                        "PEs.noc.reduction: [true, false]}\n"
                     << "      product: {L2.size_bytes: [1024, 2048, 4096]}\n"
                     << "      filter: \"(L2.size_bytes > 1024 or PEs.noc.multicast) and not "
                        "L2.size_bytes == 4096\"\n"
                     << "searchers:\n  - plugin: random\n    sweep:\n"
                     << "      product: {budget.evaluations: [10, 40]}\ncostmodels: [roofline]\n";
  const std::string out = kWork + "/kinds.h5";
  const auto r = run_cli({"run", exp, "-o", out, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultFile f = read_results(out);
  // 2 batches x 3 kept points (of 2 x 3: the filter drops the 4096 ones
  // and the 1024 one without multicast) x 2 budgets.
  ASSERT_EQ(f.jobs.size(), 12u);
  std::map<std::string, double> macs;
  std::set<std::string> archs;
  for (const auto& j : f.jobs) {
    archs.insert(j.architecture);
    macs[j.workload] = j.macs;
    EXPECT_LE(j.evaluations, j.searcher == "random[budget.evaluations=10]" ? 10u : 40u)
        << j.searcher;
  }
  // Product keys first, then zipped ones, whatever the YAML order.
  EXPECT_EQ(archs,
            (std::set<std::string>{
                "tiny[L2.size_bytes=1024,PEs.noc.multicast=true,PEs.noc.reduction=true]",
                "tiny[L2.size_bytes=2048,PEs.noc.multicast=true,PEs.noc.reduction=true]",
                "tiny[L2.size_bytes=2048,PEs.noc.multicast=false,PEs.noc.reduction=false]"}));
  ASSERT_EQ(macs.size(), 2u);
  EXPECT_DOUBLE_EQ(macs.at("tiny[batch=2]"), 2 * macs.at("tiny[batch=1]"));
}

// `operators:` keeps a searcher to the layers it is built for: FLASH-like
// GEMM searchers beside whole-network ones, a row-stationary style only on
// convolutions (its constraint would be bad input on the FC layer).
TEST(Experiment, SearchersRunOnlyOnTheirOperatorKinds) {
  const std::string exp = kWork + "/operator_kinds.yaml";
  std::ofstream(exp) << "name: kinds\nseed: 3\nbudget: {evaluations: 10}\nworkloads: [" << kData
                     << "/tiny_net.yaml]\narchitectures: [" << kData << "/tiny_arch.yaml]\n"
                     << "searchers:\n  - random\n  - plugin: random\n    label: fc_only\n"
                     << "    operators: [fc, gemm]\n  - plugin: random\n    label: rs\n"
                     << "    operators: [conv2d]\n    mapspace: {style: row_stationary}\n"
                     << "costmodels: [roofline]\n";
  const Experiment e = load_experiment(exp);
  std::multiset<std::string> runs;
  std::set<std::string> ids;
  for (const Job& j : expand_jobs(e)) {
    const auto& layer =
        e.workloads[static_cast<size_t>(j.workload)].network.layers()[static_cast<size_t>(j.layer)];
    runs.insert(e.searchers[static_cast<size_t>(j.searcher)].label + "/" + layer.op.name());
    ids.insert(j.id);
  }
  EXPECT_EQ(runs,
            (std::multiset<std::string>{"random/conv", "random/fc", "fc_only/fc", "rs/conv"}));
  EXPECT_EQ(ids.size(), 4u);
  // The summaries then compare searchers within a workload only.
  const auto r = run_cli({"run", exp, "-o", kWork + "/operator_kinds.h5", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("per workload, since the searchers cover different layers"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| workload | architecture | searcher | costmodel | ok  | geomean_latency"),
            std::string::npos)
      << r.out;
  // The restriction does not enter a job's id: the jobs that remain keep
  // the ids they have without it (results stay comparable and resumable).
  std::ofstream(exp) << "name: kinds\nseed: 3\nbudget: {evaluations: 10}\nworkloads: [" << kData
                     << "/tiny_net.yaml]\narchitectures: [" << kData << "/tiny_arch.yaml]\n"
                     << "searchers:\n  - plugin: random\n    label: fc_only\n"
                     << "costmodels: [roofline]\n";
  for (const Job& j : expand_jobs(load_experiment(exp)))
    if (e.workloads[0].network.layers()[static_cast<size_t>(j.layer)].op.name() == "fc") {
      EXPECT_TRUE(ids.count(j.id)) << j.id;
    }
}

TEST(Sweep, JobIdsAreStableAcrossRuns) {
  const std::string out = kWork + "/sweep_again.h5";
  ASSERT_EQ(run_cli({"run", kSweep, "-o", out, "-j", "1", "--quiet"}).status, 0);
  // Also proves -j 1 gives what -j 2 gave.
  expect_same_jobs(reference(), read_results(out));
}

TEST(Sweep, DesignPointColumnsAndParetoSet) {
  const ResultFile& f = reference();
  std::map<std::string, std::vector<const JobRow*>> groups;
  for (const auto& j : f.jobs) {
    EXPECT_GT(j.area_mm2, 0);
    EXPECT_GT(j.power_mw, 0);
    EXPECT_GT(j.num_pes, 0);
    // tiny_arch runs at 100 MHz.
    EXPECT_DOUBLE_EQ(j.latency_seconds, j.latency_cycles / 100e6);
    EXPECT_DOUBLE_EQ(j.throughput_gmacs, j.macs / j.latency_seconds / 1e9);
    groups[j.layer + "/" + j.searcher].push_back(&j);
  }
  // More PEs cost more area.
  std::map<std::int64_t, double> area_by_pes;
  for (const auto& j : f.jobs)
    if (j.architecture.find("bandwidth_gbps=0.8") != std::string::npos) {
      area_by_pes[j.num_pes] = j.area_mm2;
    }
  ASSERT_EQ(area_by_pes.size(), 3u);
  EXPECT_LT(area_by_pes[4], area_by_pes[8]);
  EXPECT_LT(area_by_pes[8], area_by_pes[16]);
  // In every group: each marked point is beaten by no other point, and
  // each unmarked point is beaten by a marked one.
  for (const auto& [key, rows] : groups) {
    SCOPED_TRACE(key);
    auto beats = [](const JobRow* a, const JobRow* b) {
      return a->latency_seconds <= b->latency_seconds && a->energy_pj <= b->energy_pj &&
             (a->latency_seconds < b->latency_seconds || a->energy_pj < b->energy_pj);
    };
    int marked = 0;
    for (const auto* r : rows) {
      bool beaten = false, beaten_by_marked = false;
      for (const auto* o : rows)
        if (o != r && beats(o, r)) {
          beaten = true;
          beaten_by_marked = beaten_by_marked || o->pareto;
        }
      EXPECT_EQ(r->pareto, beaten ? 0 : 1);
      if (beaten) {
        EXPECT_TRUE(beaten_by_marked);
      }
      marked += r->pareto;
    }
    EXPECT_GE(marked, 1);
  }
}

TEST(Sweep, TracesAreStoredAndMonotone) {
  for (const auto& j : reference().jobs) {
    ASSERT_FALSE(j.trace.empty()) << j.job_id;
    for (size_t t = 1; t < j.trace.size(); ++t) {
      EXPECT_GT(j.trace[t].evaluation, j.trace[t - 1].evaluation);
      EXPECT_LT(j.trace[t].value, j.trace[t - 1].value);
    }
    EXPECT_LE(j.trace.back().evaluation, j.evaluations);
    EXPECT_EQ(j.trace.back().value, j.latency_cycles);  // objective: latency
  }
}

TEST(HardwareCost, BuildingBlocksScaleAsTheModelSays) {
  auto chip = [](std::int64_t pes, std::int64_t l2_bytes, double noc_gbps) {
    std::vector<Level> levels(4);
    levels[0] = Level{};
    levels[0].name = "L1";
    levels[0].size_bytes = 512;
    levels[0].read_energy_pj = 0.5;
    levels[1].name = "PEs";
    levels[1].kind = LevelKind::kSpatial;
    levels[1].shape = {pes};
    levels[1].noc.bandwidth_gbps = noc_gbps;
    levels[2].name = "L2";
    levels[2].size_bytes = l2_bytes;
    levels[2].read_energy_pj = 6;
    levels[3].name = "DRAM";
    levels[3].kind = LevelKind::kDram;
    levels[3].bandwidth_gbps = 16;
    return Architecture::make("c", 1000, 8, 0.15, 1, levels);
  };
  const Technology t;
  auto part = [](const HardwareCost& c, const std::string& name) {
    for (const auto& p : c.parts)
      if (p.part == name) return p;
    ADD_FAILURE() << "no part " << name;
    return CostPart{};
  };
  const HardwareCost small = estimate_cost(chip(64, 65536, 16), t);
  const HardwareCost big = estimate_cost(chip(128, 65536, 16), t);
  const HardwareCost wide = estimate_cost(chip(64, 65536, 32), t);
  // MACs and L1s linear in PEs, the arbiter quadratic (MAESTRO case study II).
  EXPECT_DOUBLE_EQ(part(big, "MACs").area_mm2, 2 * part(small, "MACs").area_mm2);
  EXPECT_DOUBLE_EQ(part(big, "L1").area_mm2, 2 * part(small, "L1").area_mm2);
  EXPECT_DOUBLE_EQ(part(big, "PEs arbiter").area_mm2, 4 * part(small, "PEs arbiter").area_mm2);
  // The bus linear in PEs and in width; the arbiter does not see the width.
  EXPECT_DOUBLE_EQ(part(big, "PEs bus").area_mm2, 2 * part(small, "PEs bus").area_mm2);
  EXPECT_DOUBLE_EQ(part(wide, "PEs bus").area_mm2, 2 * part(small, "PEs bus").area_mm2);
  EXPECT_DOUBLE_EQ(part(wide, "PEs arbiter").area_mm2, part(small, "PEs arbiter").area_mm2);
  // 64 KiB of SRAM at 2 um^2/byte; a 512 B L1 is a register file (8 um^2/byte).
  EXPECT_DOUBLE_EQ(part(small, "L2").area_mm2, 65536 * 2.0 * 1e-6);
  EXPECT_DOUBLE_EQ(part(small, "L1").area_mm2, 64 * 512 * 8.0 * 1e-6);
  // Peak MAC power: 64 MACs x 0.15 pJ at 1 GHz.
  EXPECT_DOUBLE_EQ(part(small, "MACs").power_mw, 64 * 0.15);
  double area = 0, power = 0;
  for (const auto& p : small.parts) {
    area += p.area_mm2;
    power += p.power_mw;
  }
  EXPECT_DOUBLE_EQ(small.area_mm2, area);
  EXPECT_DOUBLE_EQ(small.power_mw, power);
}

void expect_capped_case_study_2(const std::string& file) {
  const Experiment e = load_experiment(std::string(MAPEX_EXPERIMENTS_DIR) + "/maestro/" + file);
  // 5 x 3 x 3 x 4 = 180 points; the L2 >= PEs x L1 filter keeps 132, plus
  // the 5 x 4 points with a 1 TB/s off-chip link (L1 1 KiB, L2 1 MiB);
  // the 16 mm^2 / 450 mW caps drop the 1024-PE points and some 512-PE ones.
  EXPECT_EQ(e.design_points, 152u) << file;
  EXPECT_EQ(e.design_points_over_caps + e.architectures.size(), 152u) << file;
  EXPECT_GT(e.design_points_over_caps, 0u) << file;
  for (const auto& a : e.architectures) {
    EXPECT_LE(a.cost.area_mm2, 16.0) << a.arch.name();
    EXPECT_LE(a.cost.power_mw, 450.0) << a.arch.name();
    EXPECT_LT(a.arch.num_pes(), 1024) << a.arch.name();
    EXPECT_EQ(a.arch.name().rfind("maestro_dse[PE_array.shape=", 0), 0u);
  }
  // Two layers x two styles (KC-P, YR-P) per design point.
  EXPECT_EQ(expand_jobs(e).size(), 4 * e.architectures.size()) << file;
}

TEST(MaestroCaseStudy, ExperimentExpandsIntoTheCappedDesignSpace) {
  expect_capped_case_study_2("case_study_2.yaml");        // tiles searched per point
  expect_capped_case_study_2("case_study_2_fixed.yaml");  // one mapping per style
}

TEST(MaestroCaseStudy, CaseStudyOneAndFig4dExpand) {
  const std::string dir = std::string(MAPEX_EXPERIMENTS_DIR) + "/maestro/";
  // Case study I: the convolutions of VGG16 (13), ResNet50 (53) and
  // MobileNetV2 (52) under five styles on one chip.
  EXPECT_EQ(expand_jobs(load_experiment(dir + "case_study_1.yaml")).size(), 5u * (13 + 53 + 52));
  // Fig. 4(d): 4 PE counts x multicast x reduction, and 4 NoC x 2 off-chip
  // bandwidths, each with the fixed and the searched KC-P.
  EXPECT_EQ(expand_jobs(load_experiment(dir + "fig4d_multicast.yaml")).size(), 2u * (16 + 8));
}

TEST(Report, GeometricMeansBaselineRatiosAndDesignPoints) {
  reference();
  const std::string file = reference_file();
  const auto md = run_cli({"report", file, "--baseline", "searcher=random[victory_condition=0]"});
  ASSERT_EQ(md.status, 0) << md.err;
  EXPECT_NE(md.out.find("Geometric means over layers"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("latency_vs_random[victory_condition=0]"), std::string::npos);
  EXPECT_NE(md.out.find("Design points, fastest first"), std::string::npos);

  // The baseline's own groups have ratio 1; the summary is one row per
  // architecture x searcher x cost model.
  const auto csv = run_cli({"report", file, "--format", "csv", "--table", "summary", "--baseline",
                            "searcher=random[victory_condition=0]"});
  ASSERT_EQ(csv.status, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line,
            "architecture,searcher,costmodel,ok,geomean_latency,geomean_vs_peak,geomean_energy,"
            "latency_vs_random[victory_condition=0],energy_vs_random[victory_condition=0]");
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    if (line.find(",random[victory_condition=0],") != std::string::npos) {
      EXPECT_EQ(line.substr(line.size() - 4), ",1,1") << line;
    }
  }
  EXPECT_EQ(rows, 12);

  const auto dse = run_cli({"report", file, "--format", "csv", "--table", "dse"});
  ASSERT_EQ(dse.status, 0) << dse.err;
  EXPECT_EQ(dse.out.rfind("layer,searcher,costmodel,architecture,num_pes,area_mm2,power_mw,", 0),
            0u);
  EXPECT_EQ(std::count(dse.out.begin(), dse.out.end(), '\n'), 25);

  for (const auto& bad :
       std::vector<std::vector<std::string>>{{"report", file, "--baseline", "searcher=annealing"},
                                             {"report", file, "--baseline", "layer=conv"},
                                             {"report", file, "--table", "everything"}}) {
    const auto r = run_cli(bad);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(r.err.rfind("mapex: error: key '--", 0), 0u) << r.err;
  }
}

TEST(Sweep, CapsDropDesignPoints) {
  const std::string exp = kWork + "/capped.yaml";
  std::string text = slurp(kSweep);
  // The 16-PE points are the largest; a cap between sizes removes them.
  const double cap = [] {
    double small = 1e9, large = 0;
    for (const auto& j : reference().jobs) {
      if (j.num_pes == 16) small = std::min(small, j.area_mm2);
      if (j.num_pes == 8) large = std::max(large, j.area_mm2);
    }
    return (small + large) / 2;
  }();
  text.replace(text.find("area_mm2: 16"), 12, "area_mm2: " + std::to_string(cap));
  std::ofstream(exp) << text;
  // Relative file names resolve against the experiment's folder.
  std::ofstream(kWork + "/tiny_net.yaml") << slurp(kData + "/tiny_net.yaml");
  std::ofstream(kWork + "/tiny_arch.yaml") << slurp(kData + "/tiny_arch.yaml");
  const std::string out = kWork + "/capped.h5";
  const auto r = run_cli({"run", exp, "-o", out, "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  const ResultFile f = read_results(out);
  EXPECT_EQ(f.jobs.size(), kSweepJobs - 8);
  for (const auto& j : f.jobs) EXPECT_NE(j.num_pes, 16);
  EXPECT_EQ(f.attributes.at("design_points"), "6");
  EXPECT_EQ(f.attributes.at("design_points_over_caps"), "2");
}

// SIGINT (Ctrl-C) and SIGTERM (a scheduler's stop) both stop taking jobs,
// keep every finished one and exit 128 + the signal number.
struct StopSignal {
  int number;
  const char* name;
  int exit_status;
};

class Interrupt : public ::testing::TestWithParam<StopSignal> {};

TEST_P(Interrupt, SavesFinishedJobsAndResumeCompletesThem) {
  const StopSignal sig = GetParam();
  const std::string out = kWork + "/" + sig.name + ".h5";
  const std::string log_file = kWork + "/" + sig.name + ".log";
  std::remove(out.c_str());
  // The child opens the log only after the fork: the last run's log must be
  // gone first, or its "[3/" line makes this run stop before it starts.
  std::remove(log_file.c_str());
  const pid_t pid = spawn_cli({"run", kSweep, "-o", out, "-j", "2"}, log_file);
  // Wait until some jobs are in the file, then interrupt.
  for (int i = 0; i < 3000; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (slurp(log_file).find("[3/") != std::string::npos) break;
  }
  kill(pid, sig.number);
  const int status = wait_status(pid);
  const std::string log = slurp(log_file);
  const ResultFile partial = read_results(out);
  if (partial.jobs.size() == kSweepJobs) GTEST_SKIP() << "the run finished before the signal";
  EXPECT_EQ(status, sig.exit_status) << log;
  EXPECT_NE(log.find(std::string("interrupted by ") + sig.name), std::string::npos) << log;
  EXPECT_NE(log.find("--resume"), std::string::npos) << log;
  EXPECT_GE(partial.jobs.size(), 3u);

  const auto resumed = run_cli({"run", kSweep, "-o", out, "--resume", "-j", "2"});
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resuming: " + std::to_string(partial.jobs.size()) + " jobs kept"),
            std::string::npos)
      << resumed.err;
  expect_same_jobs(reference(), read_results(out));
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupt,
                         ::testing::Values(StopSignal{SIGTERM, "SIGTERM", 143},
                                           StopSignal{SIGINT, "SIGINT", 130}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Sigkill, AtRandomMomentsKeepsFlushedJobs) {
  const std::string out = kWork + "/sigkill.h5";
  std::remove(out.c_str());
  std::mt19937 rng(12345);
  std::size_t before = 0;
  for (int kill_round = 0; kill_round < 3; ++kill_round) {
    const pid_t pid =
        spawn_cli({"run", kSweep, "-o", out, "-j", "2", "--resume"}, kWork + "/sigkill.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 500));
    kill(pid, SIGKILL);
    int signal = 0;
    wait_status(pid, &signal);
    // Killed before the file was made (a loaded machine): nothing to check.
    if (!std::ifstream(out)) continue;
    ResultFile f;
    ASSERT_NO_THROW(f = read_results(out)) << "round " << kill_round;
    // Rows kept from earlier rounds survive; rows are whole.
    EXPECT_GE(f.jobs.size(), before);
    for (const auto& j : f.jobs) {
      EXPECT_EQ(j.job_id.size(), 16u);
      EXPECT_EQ(j.status, "ok");
      EXPECT_FALSE(j.best_mapping.empty());
    }
    before = f.jobs.size();
  }
  const auto resumed = run_cli({"run", kSweep, "-o", out, "--resume", "-q"});
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  expect_same_jobs(reference(), read_results(out));
  // A finished file resumes to itself.
  const auto again = run_cli({"run", kSweep, "-o", out, "--resume", "-q"});
  ASSERT_EQ(again.status, 0) << again.err;
  expect_same_jobs(reference(), read_results(out));
}

TEST(Shards, MergedShardsEqualOneRun) {
  std::vector<std::string> parts;
  for (int i = 0; i < 3; ++i) {
    parts.push_back(kWork + "/shard" + std::to_string(i) + ".h5");
    const auto r =
        run_cli({"run", kSweep, "--shard", std::to_string(i) + "/3", "-o", parts.back(), "-q"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(read_results(parts.back()).jobs.size(), kSweepJobs / 3);
  }
  const std::string all = kWork + "/merged.h5";
  const auto m = run_cli({"merge", parts[0], parts[1], parts[2], "-o", all});
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_NE(m.out.find("merged 24 jobs from 3 files"), std::string::npos) << m.out;
  expect_same_jobs(reference(), read_results(all));
}

#ifdef MAPEX_MPIEXEC
TEST(Mpi, FourRanksGiveTheSingleProcessResults) {
  const std::string out = kWork + "/mpi4.h5";
  std::remove(out.c_str());
  const auto r = run_cli(
      {"-n", "4", "--oversubscribe", MAPEX_BINARY, "run", kSweep, "-o", out, "-j", "1", "-q"},
      {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
       "ASAN_OPTIONS=detect_leaks=0", "OMPI_MCA_rmaps_base_oversubscribe=1"},
      MAPEX_MPIEXEC);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expect_same_jobs(reference(), read_results(out));
}

TEST(Mpi, BadInputOnEveryRankIsExitTwoAndOneMessage) {
  const std::string guard = kWork + "/mpi_guard.h5";
  std::ofstream(guard) << "results that must survive";
  const auto r = run_cli(
      {"-n", "2", "--oversubscribe", MAPEX_BINARY, "run", kSweep, "-o", guard, "--resume", "-q"},
      {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
       "ASAN_OPTIONS=detect_leaks=0"},
      MAPEX_MPIEXEC);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("mapex: error: " + guard + ": cannot read as a mapex result file"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(slurp(guard), "results that must survive");
  const auto unwritable = run_cli({"-n", "2", "--oversubscribe", MAPEX_BINARY, "run", kSweep, "-o",
                                   "/proc/no/such/dir/out.h5", "-q"},
                                  {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
                                   "ASAN_OPTIONS=detect_leaks=0"},
                                  MAPEX_MPIEXEC);
  EXPECT_EQ(unwritable.status, 2);
  EXPECT_NE(unwritable.err.find("cannot create the result file"), std::string::npos)
      << unwritable.err;
}
#endif

}  // namespace
}  // namespace mapex::host
