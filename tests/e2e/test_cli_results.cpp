// Result files (README.md, Result files): format 2's checked journal, damage
// found before libhdf5 reads a byte, --resume keeping every intact job, the
// advisory lock against a second writer, format 1 still read, and import's
// -o refusing files it did not write. (The 300 seeded damaged copies are in
// damaged_results.py.)

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "host/result_store.hpp"

namespace mapex {
namespace {

using host::read_results;
using host::ResultFile;
using test::run_cli;
using test::slurp;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

std::string write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A fresh run of the four-job e2e experiment into `name` in the work folder.
std::string fresh_run(const std::string& name) {
  const std::string out = kWork + "/results_" + name + ".h5";
  std::remove(out.c_str());
  const auto r = run_cli({"run", kData + "/e2e_experiment.yaml", "-o", out, "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  return out;
}

// Rows that do not depend on when a job ran.
std::vector<std::string> results_of(const ResultFile& f) {
  std::vector<std::string> out;
  for (const auto& j : f.jobs)
    out.push_back(j.job_id + " " + j.status + " " + std::to_string(j.latency_cycles) + " " +
                  std::to_string(j.energy_pj) + " " + j.best_mapping);
  return out;
}

TEST(ResultFile, Format2RoundTripsEveryColumnAndTheSearcherAsRun) {
  const ResultFile f = read_results(fresh_run("roundtrip"));
  ASSERT_EQ(f.jobs.size(), 4u);
  EXPECT_EQ(f.attributes.at("format_version"), "2");
  EXPECT_EQ(f.attributes.at("experiment_name"), "e2e");
  for (const auto& j : f.jobs) {
    EXPECT_EQ(j.searcher_plugin, j.searcher == "random" ? "random" : "exhaustive");
    // Per-searcher budgets of tests/data/e2e_experiment.yaml.
    EXPECT_EQ(j.max_evaluations, j.searcher == "random" ? 4000u : 2000u);
    EXPECT_EQ(j.searcher_params,
              j.searcher == "random" ? R"({"batch_size":"128"})" : std::string("{}"));
    EXPECT_FALSE(j.trace.empty());  // the experiment keeps traces
  }
}

TEST(ResultFile, ADamagedRecordIsLocatedAndResumeKeepsTheOtherJobs) {
  const std::string out = fresh_run("damaged_record");
  const ResultFile intact = read_results(out);
  std::string bytes = slurp(out);
  // The second job's record: find its id in the journal (before the HDF5
  // part) and change a byte of it.
  const auto at = bytes.find(intact.jobs[1].job_id);
  ASSERT_NE(at, std::string::npos);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
  write_bytes(out, bytes);

  std::string damage;
  const ResultFile salvaged = host::salvage_results(out, damage);
  EXPECT_HAS(damage, "(record ");
  EXPECT_EQ(salvaged.jobs.size(), 3u);
  EXPECT_EQ(salvaged.attributes.at("experiment_name"), "e2e");

  auto r = run_cli({"report", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "mapex: error: " + out + ": damaged at " + damage +
                       "; `mapex run --resume` keeps its 3 intact jobs\n");
  r = run_cli({"merge", out, "-o", kWork + "/results_damaged_merge.h5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, "damaged at");

  r = run_cli({"run", kData + "/e2e_experiment.yaml", "-o", out, "--resume", "--quiet"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.err, out + ": damaged at " + damage + "; keeping its 3 intact jobs");
  const ResultFile resumed = read_results(out);
  EXPECT_EQ(results_of(resumed), results_of(intact));
  EXPECT_EQ(resumed.attributes.at("resumed"), "3 jobs kept from an earlier run");
}

TEST(ResultFile, ACutFileIsDamagedNotACrash) {
  const std::string out = fresh_run("cut");
  const std::string bytes = slurp(out);
  write_bytes(out, bytes.substr(0, bytes.size() / 2));
  const auto r = run_cli({"report", out});
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, "damaged at byte " + std::to_string(bytes.size() / 2) + " (the file is " +
                        std::to_string(bytes.size() / 2) + " bytes, its header says " +
                        std::to_string(bytes.size()) + ")");
}

TEST(ResultFile, Format1StillReads) {
  // Written by the previous mapex (a compound /jobs, no journal).
  const std::string old = kData + "/results_format1.h5";
  const ResultFile f = read_results(old);
  ASSERT_EQ(f.jobs.size(), 4u);
  EXPECT_EQ(f.attributes.count("format_version"), 0u);
  EXPECT_EQ(f.attributes.at("experiment_name"), "e2e");
  EXPECT_EQ(f.jobs[0].job_id, "99529aab5e3f45c3");
  EXPECT_EQ(f.jobs[0].latency_cycles, 1152);
  EXPECT_EQ(f.jobs[1].latency_cycles, 1536);
  EXPECT_EQ(f.jobs[0].searcher_params, "");  // not stored in format 1
  EXPECT_EQ(run_cli({"report", old}).status, 0);
  // --resume into a copy keeps its jobs and writes format 2.
  const std::string copy = kWork + "/results_format1_copy.h5";
  write_bytes(copy, slurp(old));
  const auto r = run_cli({"run", kData + "/e2e_experiment.yaml", "-o", copy, "--resume", "-q"});
  EXPECT_EQ(r.status, 0) << r.err;
  const ResultFile resumed = read_results(copy);
  EXPECT_EQ(resumed.attributes.at("format_version"), "2");
  EXPECT_EQ(resumed.attributes.at("resumed"), "4 jobs kept from an earlier run");
  EXPECT_EQ(results_of(resumed), results_of(f));
  for (size_t i = 0; i < f.jobs.size(); ++i)  // kept, not run again
    EXPECT_EQ(resumed.jobs[i].wall_seconds, f.jobs[i].wall_seconds);
}

TEST(ResultFile, ASecondWriterOfTheSameFileIsRefused) {
  const std::string out = fresh_run("locked");
  const std::string before = slurp(out);
  // Another process holding the lock: this test.
  const int fd = ::open((out + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", kData + "/e2e_experiment.yaml", "-o", out, "--quiet"},
           {"run", kData + "/e2e_experiment.yaml", "-o", out, "--resume", "--quiet"},
           {"merge", out, "-o", out}}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args[0];
    EXPECT_EQ(r.err, "mapex: error: " + out + ": is being written by another mapex (it holds " +
                         out + ".lock); wait for it to end or give another -o\n");
  }
  EXPECT_EQ(slurp(out), before);
  ::close(fd);
  EXPECT_EQ(run_cli({"merge", out, "-o", out}).status, 0);
}

TEST(ResultFile, TwoConcurrentRunsOfOneFile) {
  // A run of a few seconds, and a second one started while it writes.
  const std::string exp =
      test::write_work_file("results_slow.yaml",
                            "name: slow\nseed: 3\nbudget: {evaluations: 100000000, seconds: 3}\n"
                            "workloads: [" +
                                kData + "/tiny_net.yaml]\narchitectures: [" + kData +
                                "/tiny_arch.yaml]\nsearchers: [random]\ncostmodels: [roofline]\n");
  const std::string out = kWork + "/results_concurrent.h5";
  std::remove(out.c_str());
  const std::string log = kWork + "/results_concurrent_first.err";
  const std::string first = test::shell_quote(MAPEX_BINARY) + " run " + test::shell_quote(exp) +
                            " -o " + test::shell_quote(out) + " -j 1 --quiet >/dev/null 2>" +
                            test::shell_quote(log) + " & wait $!";
  std::thread runner([&] { EXPECT_EQ(std::system(first.c_str()), 0) << slurp(log); });
  for (int i = 0; i < 200 && !std::filesystem::exists(out + ".lock"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto second = run_cli({"run", exp, "-o", out, "-j", "1", "--quiet"});
  runner.join();
  EXPECT_EQ(second.status, 2);
  EXPECT_HAS(second.err, out + ": is being written by another mapex");
  // The first run's jobs are all there; its lock is gone.
  EXPECT_EQ(read_results(out).jobs.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(out + ".lock"));
}

TEST(ImportOutput, RefusesFilesItDidNotWriteUnlessForced) {
  const std::string dir = kWork + "/results_import";
  std::filesystem::remove_all(dir);
  const std::vector<std::string> args{
      "import",
      "nn_dataflow",
      std::string(MAPEX_NNDF_REFDATA) + "/mlp_m_b64_intra.json",
      "--workload",
      kData + "/nn_dataflow/mlp_m.yaml",
      "--arch",
      std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/kapla_multinode.yaml",
      "-o",
      dir};
  ASSERT_EQ(run_cli(args).status, 0);
  // Its own mappings are replaced on a second import.
  EXPECT_EQ(run_cli(args).status, 0);
  write_bytes(dir + "/fc2.mapping.yaml", "my notes\n");
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "mapex: error: " + dir +
                       "/fc2.mapping.yaml: key '-o': exists and is not a mapping mapex import "
                       "wrote; import refuses to replace it (remove it, give another -o, or "
                       "--force)\n");
  EXPECT_EQ(slurp(dir + "/fc2.mapping.yaml"), "my notes\n");
  auto forced = args;
  forced.push_back("--force");
  EXPECT_EQ(run_cli(forced).status, 0);
  EXPECT_NE(slurp(dir + "/fc2.mapping.yaml"), "my notes\n");
}

TEST(ImportOutput, OnnxRefusesTheModelAndForeignFilesBeforeImporting) {
  // Refused before the model is read, so any file stands for it.
  const std::string model = write_bytes(kWork + "/results_model.onnx", "not onnx\n");
  const std::string notes = write_bytes(kWork + "/results_onnx_notes.yaml", "my notes\n");
  auto r = run_cli({"import", "onnx", model, "-o", model});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "mapex: error: " + model +
                       ": key '-o': is the model being imported; refusing to write over it\n");
  r = run_cli({"import", "onnx", model, "-o", notes});
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, notes + ": key '-o': exists and was not written by mapex import onnx");
  EXPECT_EQ(slurp(model), "not onnx\n");
  EXPECT_EQ(slurp(notes), "my notes\n");
  // --force lets it try (and the importer then refuses the model itself).
  r = run_cli({"import", "onnx", model, "-o", notes, "--force"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.find("was not written by"), std::string::npos) << r.err;
}

TEST(ImportOutput, TimeloopImportAndExportRefuseTheirInputsAndForeignFiles) {
  const std::string tl = kData + "/timeloop/";
  const std::string dir = kWork + "/results_tl_import";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // An input named like a file the import writes, in the folder it writes to.
  const std::string arch = dir + "/arch.yaml";
  write_bytes(arch, slurp(tl + "ws16_arch.yaml"));
  const std::vector<std::string> args{
      "import", "timeloop", tl + "gemm_prob.yaml", arch, tl + "ws16_map.yaml", "-o", dir};
  auto r = run_cli(args);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "mapex: error: " + arch +
                       ": key '-o': is an input of this command; refusing to write over it\n");
  EXPECT_EQ(slurp(arch), slurp(tl + "ws16_arch.yaml"));
  // Into another folder: written, then replaced by a second import; a file
  // of the user's in its place is refused unless --force.
  const std::string out = kWork + "/results_tl_import_out";
  std::filesystem::remove_all(out);
  auto into = args;
  into.back() = out;
  ASSERT_EQ(run_cli(into).status, 0);
  EXPECT_EQ(run_cli(into).status, 0);
  write_bytes(out + "/mapping.yaml", "my notes\n");
  r = run_cli(into);
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, out + "/mapping.yaml: key '-o': exists and was not written by this command");
  EXPECT_EQ(slurp(out + "/mapping.yaml"), "my notes\n");
  into.push_back("--force");
  EXPECT_EQ(run_cli(into).status, 0);
  // export -o: never over its inputs; over a Timeloop mapping (an earlier
  // export) yes; over anything else only with --force.
  const std::vector<std::string> exp{
      "export", "timeloop",         "--workload", out + "/workload.yaml",
      "--arch", out + "/arch.yaml", "--mapping",  out + "/mapping.yaml",
      "-o"};
  auto over_input = exp;
  over_input.push_back(out + "/arch.yaml");
  r = run_cli(over_input);
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, "is an input of this command");
  const std::string exported = kWork + "/results_tl_exported.yaml";
  write_bytes(exported, "my notes\n");
  auto to_file = exp;
  to_file.push_back(exported);
  EXPECT_EQ(run_cli(to_file).status, 2);
  EXPECT_EQ(slurp(exported), "my notes\n");
  std::remove(exported.c_str());
  EXPECT_EQ(run_cli(to_file).status, 0);
  EXPECT_EQ(run_cli(to_file).status, 0);  // its own earlier export
}

}  // namespace
}  // namespace mapex

namespace mapex {
namespace {

// Starts `mapex ARGS` with stdout and stderr in files; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& out,
                const std::string& err) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> argv{const_cast<char*>(MAPEX_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(MAPEX_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

/// Whether process `pid` catches `sig` (Linux: its SigCgt mask in
/// /proc/<pid>/status), so that a signal sent now reaches its handler
/// rather than the default action.
bool catches(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigCgt:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1) & 1) != 0;
  return false;
}

TEST(SearchInterrupt, SigintPrintsTheBestMappingSoFarMarkedInterrupted) {
  // A random search with a minute of budget, interrupted after a second.
  const std::string out = kWork + "/search_sigint.out", err = kWork + "/search_sigint.err";
  for (const std::string format : {"table", "json"}) {
    const pid_t pid = spawn_cli({"search", "--workload", kData + "/tiny_net.yaml", "--layer",
                                 "conv", "--arch", kData + "/tiny_arch.yaml", "--searcher",
                                 "random", "--max-seconds", "60", "-j", "1", "--format", format},
                                out, err);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    // On a loaded machine the process may not have installed its handler
    // yet (plugins still loading): wait for it, so that SIGINT is handled.
    const auto spawned = std::chrono::steady_clock::now();
    while (!catches(pid, SIGINT) &&
           std::chrono::steady_clock::now() - spawned < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(catches(pid, SIGINT)) << "the search never installed its SIGINT handler";
    ASSERT_EQ(::kill(pid, SIGINT), 0);
    int status = 0;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 130);
    const std::string printed = slurp(out), said = slurp(err);
    EXPECT_HAS(said, "mapex: interrupted by SIGINT after ");
    EXPECT_HAS(said, "evaluations: printed the best mapping found so far");
    if (format == "table") {
      EXPECT_HAS(printed, "INTERRUPTED: the best mapping found until then");
      EXPECT_HAS(printed, "best: ");
      EXPECT_HAS(printed, "DRAM:");  // the mapping itself
    } else {
      EXPECT_HAS(printed, "\"interrupted\": true");
      EXPECT_HAS(printed, "\"stop_reason\": \"interrupted\"");
      EXPECT_HAS(printed, "\"mapping_yaml\"");
    }
  }
}

}  // namespace
}  // namespace mapex

namespace mapex {
namespace {

// A small file written in-process: two jobs with traces.
std::string small_result_file(const std::string& name) {
  // One file per test: ctest runs the tests in parallel.
  const std::string path = kWork + "/results_small_" + name + ".h5";
  std::remove(path.c_str());
  std::vector<host::JobRow> rows(2);
  rows[0].job_id = "0123456789abcdef";
  rows[0].status = "ok";
  rows[0].latency_cycles = 42;
  rows[0].trace = {{1, 50}, {3, 42}};
  rows[1].job_index = 1;
  rows[1].job_id = "fedcba9876543210";
  rows[1].status = "failed";
  rows[1].error = "a plugin threw";
  { host::ResultWriter writer(path, {{"experiment_name", "small"}, {"plugin_abi", "3"}}, rows); }
  return slurp(path);
}

TEST(ResultBytes, EveryChangeOfOneByteAnywhereIsFound) {
  const std::string bytes = small_result_file("every_byte");
  ASSERT_EQ(host::check_result_bytes(bytes).kind, host::FileKind::kIntact);
  ASSERT_EQ(host::check_result_bytes(bytes).rows.size(), 2u);
  // Header, records, padding and HDF5 part alike: no byte is unchecked.
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    for (const unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ flip);
      const auto checked = host::check_result_bytes(damaged);
      ASSERT_EQ(checked.kind, host::FileKind::kDamaged) << "byte " << at << " ^ " << int(flip);
      ASSERT_FALSE(checked.damage.empty());
    }
  }
  // Cut anywhere, or grown: damaged too.
  for (std::size_t size = 8; size < bytes.size(); size += 97)
    ASSERT_EQ(host::check_result_bytes(bytes.substr(0, size)).kind, host::FileKind::kDamaged)
        << size;
  EXPECT_EQ(host::check_result_bytes(bytes + "x").kind, host::FileKind::kDamaged);
}

TEST(ResultBytes, SalvageKeepsTheRecordsThatHold) {
  const std::string bytes = small_result_file("salvage");
  // The first job's record: its id is in it.
  std::string damaged = bytes;
  const auto at = damaged.find("0123456789abcdef");
  ASSERT_NE(at, std::string::npos);
  damaged[at + 3] = 'X';
  const auto checked = host::check_result_bytes(damaged);
  EXPECT_EQ(checked.kind, host::FileKind::kDamaged);
  EXPECT_EQ(checked.damage, "byte " + std::to_string(bytes.rfind("MXRC", at)) + " (record 2 of 3)");
  ASSERT_EQ(checked.rows.size(), 1u);
  EXPECT_EQ(checked.rows[0].error, "a plugin threw");
  ASSERT_TRUE(checked.attributes.has_value());
  EXPECT_EQ(checked.attributes->at("experiment_name"), "small");
  // Its signature gone: still recognised by its records, as damaged.
  damaged = bytes;
  damaged.replace(0, 8, "XXXXXXXX");
  EXPECT_EQ(host::check_result_bytes(damaged).kind, host::FileKind::kDamaged);
  EXPECT_EQ(host::check_result_bytes(damaged).rows.size(), 2u);
  // Text that is not ours is not a result file.
  EXPECT_EQ(host::check_result_bytes("name: e2e\nseed: 7\n").kind, host::FileKind::kNotResult);
}

}  // namespace
}  // namespace mapex
