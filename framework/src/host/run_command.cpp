#include "host/run_command.hpp"

#include <signal.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <mapex/version.hpp>
#include <set>
#include <sstream>

#include "host/cli_args.hpp"
#include "host/progress.hpp"
#include "host/report.hpp"
#ifdef MAPEX_HAVE_MPI
#include "host/mpi_run.hpp"
#endif

namespace mapex::host {
namespace po = boost::program_options;
namespace fs = boost::filesystem;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "set from a signal handler: lock-free atomics only");

extern "C" void mapex_on_signal(int sig) {
  // Only async-signal-safe work: two stores. SA_RESETHAND restores the
  // default action, so a second Ctrl-C ends the process at once.
  g_signal.store(sig, std::memory_order_relaxed);
  g_stop.store(true, std::memory_order_relaxed);
}

struct sigaction g_old_int, g_old_term;

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buffer;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

po::variables_map parse_args(const po::options_description& desc,
                             const po::positional_options_description& positional,
                             const std::vector<std::string>& args) {
  return parse_command_line(desc, &positional, args, "\n" + options_text(desc));
}

std::map<std::string, std::string> attributes_of(const Experiment& e, const Shard& shard) {
  return {{"experiment_yaml", e.text},
          {"experiment_path", e.path},
          {"experiment_name", e.name},
          {"mapex_version", version()},
          {"plugin_abi", std::to_string(kPluginAbiVersion)},
          {"created", now_utc()},
          {"shard", shard.text()},
          {"pareto_metrics", join(e.dse.pareto, ",")},
          {"design_points", std::to_string(e.design_points)},
          {"design_points_over_caps", std::to_string(e.design_points_over_caps)}};
}

std::string describe_row(const JobRow& j) {
  return "job " + j.job_id + ": " + j.workload + "/" + j.layer + " on " + j.architecture + " by " +
         j.searcher + " under " + j.costmodel;
}

}  // namespace

std::atomic<bool>& stop_flag() { return g_stop; }
int stop_signal() { return g_signal.load(); }

SignalGuard::SignalGuard() {
  g_stop.store(false);
  g_signal.store(0);
  struct sigaction action {};
  action.sa_handler = mapex_on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, &g_old_int);
  sigaction(SIGTERM, &action, &g_old_term);
}

SignalGuard::~SignalGuard() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

std::string Shard::text() const {
  return active() ? std::to_string(index) + "/" + std::to_string(count) : "";
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard s;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    s.index = std::stoi(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    const std::string count = text.substr(slash + 1);
    s.count = std::stoi(count, &used);
    if (used != count.size()) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw InputError(SourceLocation{}, "--shard", "expected i/N (e.g. 0/4), got '" + text + "'");
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError(SourceLocation{}, "--shard",
                     "expected i/N with N >= 1 and 0 <= i < N, got '" + text + "'");
  return s;
}

PreparedRun prepare_run(const std::string& experiment_path, const Shard& shard) {
  if (!fs::exists(experiment_path))
    throw InputError(SourceLocation{experiment_path, 0, 0}, "", "experiment file does not exist");
  PreparedRun run;
  run.experiment = load_experiment(experiment_path);
  run.registry = std::make_unique<PluginRegistry>(load_plugins(run.experiment.plugin_paths));
  check_plugins(run.experiment, *run.registry);
  run.plugins = instantiate(run.experiment, *run.registry);
  std::vector<Job> all = expand_jobs(run.experiment);
  std::map<std::string, const Job*> ids;
  for (const auto& j : all)
    if (const auto [it, fresh] = ids.emplace(j.id, &j); !fresh) {
      // The entry that repeats an earlier one: the workload, architecture,
      // searcher or cost model entry where the two jobs differ (the later
      // one), else the experiment's first line.
      const Job& first = *it->second;
      SourceLocation where{experiment_path, 1, 1};
      if (first.workload != j.workload)
        where = run.experiment.workloads[static_cast<std::size_t>(j.workload)].where;
      else if (first.architecture != j.architecture)
        where = run.experiment.architectures[static_cast<std::size_t>(j.architecture)].where;
      else if (first.searcher != j.searcher)
        where = run.experiment.searchers[static_cast<std::size_t>(j.searcher)].where;
      else if (first.costmodel != j.costmodel)
        where = run.experiment.costmodels[static_cast<std::size_t>(j.costmodel)].where;
      throw InputError(where, "",
                       "two jobs are identical (job id " + j.id +
                           "): give repeated entries different labels or parameters");
    }
  // Round-robin shards: neighbouring jobs (often of similar cost) spread
  // over the shards.
  for (const auto& j : all)
    if (!shard.active() ||
        j.index % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index))
      run.jobs.push_back(j);
  return run;
}

OpenedOutput open_output(const PreparedRun& run, const std::string& output, bool resume, bool force,
                         const Shard& shard, std::ostream& err) {
  const Experiment& e = run.experiment;
  // Taken before the file is read or checked: a second writer is refused
  // before it looks at the file.
  OutputLock lock(output);
  // A resume reads the file first and refuses what is not a result file
  // (read_results) with its own message.
  if (!resume) check_output_target(output, {e.path}, force);
  OpenedOutput opened;
  auto attributes = attributes_of(e, shard);
  if (!resume || !fs::exists(output)) {
    if (resume) err << "mapex: " << output << " does not exist yet: starting the run afresh\n";
    // The writer writes every version of the file under another name and
    // renames it: a run killed while creating it never leaves half a file.
    opened.writer =
        std::make_unique<ResultWriter>(output, attributes, std::vector<JobRow>{}, std::move(lock));
    opened.todo = run.jobs;
    return opened;
  }
  std::string damage;
  ResultFile old = salvage_results(output, damage);
  if (old.format1) err << format1_warning(output);
  const SourceLocation where{output, 0, 0};
  if (!damage.empty())
    err << "mapex: warning: " << output << ": damaged at " << damage << "; keeping its "
        << old.jobs.size() << " intact jobs, the others run again\n";
  // A damaged file may have lost its attributes; its intact rows are still
  // checked against this experiment's job ids below.
  const bool have_attributes = !old.attributes.empty();
  const std::string old_name =
      old.attributes.count("experiment_name") ? old.attributes.at("experiment_name") : "";
  if (have_attributes && old_name != e.name)
    throw InputError(where, "--resume",
                     "holds results of experiment '" + old_name + "', not of '" + e.name +
                         "'; refusing to resume into it");
  const std::string old_shard = old.attributes.count("shard") ? old.attributes.at("shard") : "";
  if (have_attributes && old_shard != shard.text())
    throw InputError(where, "--resume",
                     "holds shard '" + (old_shard.empty() ? std::string("none") : old_shard) +
                         "', not '" + (shard.active() ? shard.text() : std::string("none")) +
                         "'; refusing to resume into it");
  std::map<std::string, const Job*> by_id;
  for (const auto& j : run.jobs) by_id[j.id] = &j;
  std::size_t foreign = 0;
  const JobRow* first_foreign = nullptr;
  std::set<std::string> done;
  for (auto& row : old.jobs) {
    const auto it = by_id.find(row.job_id);
    if (it == by_id.end()) {
      if (!first_foreign) first_foreign = &row;
      ++foreign;
      continue;
    }
    // Jobs keep their ids when the experiment grows; their positions may move.
    row.job_index = it->second->index;
    row.pareto = 0;
    done.insert(row.job_id);
  }
  if (foreign > 0)
    throw InputError(where, "--resume",
                     std::to_string(foreign) + " of its " + std::to_string(old.jobs.size()) +
                         " jobs are not jobs of this experiment (" + describe_row(*first_foreign) +
                         "): the experiment changed in a way that changes job ids (its seed, "
                         "objective, budget, mapspace, or a workload, architecture, searcher or "
                         "cost model); run without --resume to start over");
  if (old.attributes.count("created")) attributes["created"] = old.attributes.at("created");
  attributes["resumed"] = std::to_string(old.jobs.size()) + " jobs kept from an earlier run";
  // The kept rows are written as a new file that replaces the old one in
  // one rename: at every moment the path holds a complete, readable file.
  opened.writer = std::make_unique<ResultWriter>(output, attributes, old.jobs, std::move(lock));
  opened.previous_rows = old.jobs.size();
  for (const auto& j : run.jobs)
    if (!done.count(j.id)) opened.todo.push_back(j);
  return opened;
}

std::vector<std::uint64_t> pareto_rows(const std::vector<JobRow>& rows,
                                       const std::vector<std::string>& metrics) {
  std::map<std::string, std::vector<const JobRow*>> groups;
  for (const auto& r : rows)
    if (r.status == "ok")
      groups[r.workload + "\n" + r.layer + "\n" + r.searcher + "\n" + r.costmodel + "\n" +
             r.objective]
          .push_back(&r);
  auto values = [&](const JobRow& r) {
    std::vector<double> v;
    // Seconds, not cycles: design points may differ in clock.
    const double latency = r.latency_seconds > 0 ? r.latency_seconds : r.latency_cycles;
    for (const auto& m : metrics) {
      if (m == "latency") v.push_back(latency);
      if (m == "energy") v.push_back(r.energy_pj);
      if (m == "edp") v.push_back(r.energy_pj * latency);
      if (m == "area") v.push_back(r.area_mm2);
      if (m == "power") v.push_back(r.power_mw);
    }
    return v;
  };
  std::vector<std::uint64_t> out;
  for (const auto& [key, members] : groups) {
    std::vector<std::vector<double>> v;
    for (const auto* m : members) v.push_back(values(*m));
    for (size_t i = 0; i < members.size(); ++i) {
      bool dominated = false;
      for (size_t j = 0; j < members.size() && !dominated; ++j) {
        if (i == j) continue;
        bool no_worse = true, better = false;
        for (size_t k = 0; k < v[i].size(); ++k) {
          no_worse = no_worse && v[j][k] <= v[i][k];
          better = better || v[j][k] < v[i][k];
        }
        dominated = no_worse && better;
      }
      if (!dominated) out.push_back(members[i]->file_row);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

ResultFile finish_output(ResultWriter& writer, const std::string& output,
                         const Experiment& experiment) {
  writer.flush();
  ResultFile file = read_results(output);
  const auto front = pareto_rows(file.jobs, experiment.dse.pareto);
  writer.mark_pareto(front);
  const std::set<std::uint64_t> marked(front.begin(), front.end());
  for (auto& j : file.jobs) j.pareto = marked.count(j.file_row) ? 1 : 0;
  return file;
}

int run_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mapex run");
  std::string experiment_path, output, shard_text;
  int threads = 0;
  bool quiet = false, resume = false, force = false;
  desc.add_options()("help,h", "show this help")(
      "experiment", po::value(&experiment_path)->required(), "experiment YAML")(
      "output,o", po::value(&output), "result file (default results/<name>.h5)")(
      "force", po::bool_switch(&force),
      "let -o replace an existing file that is not a mapex result file")(
      "threads,j", po::value(&threads), "worker threads (0: all cores)")(
      "resume", po::bool_switch(&resume),
      "keep the finished jobs of the result file, run the rest")(
      "shard", po::value(&shard_text), "run only shard i of N (i/N): jobs with index % N == i")(
      "quiet,q", po::bool_switch(&quiet), "no progress output");
  po::positional_options_description positional;
  positional.add("experiment", 1);
  const auto vm = parse_args(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  if (threads < 0) throw InputError("-j expects 0 (all cores) or a positive number");
  const Shard shard = shard_text.empty() ? Shard{} : parse_shard(shard_text);
#ifdef MAPEX_HAVE_MPI
  MpiSession session;
  if (session.size() > 1)
    return run_mpi(session,
                   MpiRunArgs{experiment_path, output, threads, quiet, resume, force, shard}, out,
                   err);
#endif
  // Everything that can be wrong with the input is checked before the
  // result file is touched.
  PreparedRun run = prepare_run(experiment_path, shard);
  const Experiment& e = run.experiment;
  if (output.empty())
    output =
        "results/" + e.name + (shard.active() ? "." + std::to_string(shard.index) : "") + ".h5";
  if (fs::path(output).has_parent_path()) {
    boost::system::error_code ec;
    fs::create_directories(fs::path(output).parent_path(), ec);
  }
  OpenedOutput opened = open_output(run, output, resume, force, shard, err);
  if (e.design_points_over_caps > 0 && !quiet)
    err << "mapex: " << e.design_points_over_caps << " of " << e.design_points
        << " design points are above the area/power caps and are not run\n";
  if (opened.previous_rows > 0 && !quiet)
    err << "mapex: resuming: " << opened.previous_rows << " jobs kept, " << opened.todo.size()
        << " to run\n";

  Progress progress(opened.todo.size(), Progress::pick_mode(stderr, quiet));
  RunOptions options;
  options.threads = threads;
  options.keep_traces = e.traces;
  options.stop = &stop_flag();
  options.on_results = [&](std::vector<JobResult>& batch) {
    std::vector<JobRow> rows;
    rows.reserve(batch.size());
    for (const auto& r : batch) rows.push_back(to_row(r));
    opened.writer->append(rows);
    for (const auto& r : rows) progress.job_finished(r);
  };
  options.on_evaluations = [&](std::uint64_t n) { progress.evaluations(n); };
  options.on_wait = [&] { opened.writer->commit_if_due(); };
  RunSummary summary;
  {
    SignalGuard guard;
    summary = run_jobs(e, run.plugins, opened.todo, options);
  }
  progress.finish();
  const ResultFile file = finish_output(*opened.writer, output, e);
  opened.writer.reset();

  return conclude_run(file, run.jobs.size(), output, stop_signal(), out, err);
}

int conclude_run(const ResultFile& file, std::size_t total_jobs, const std::string& output,
                 int signal, std::ostream& out, std::ostream& err) {
  if (signal != 0) {
    err << "mapex: interrupted by " << (signal == SIGINT ? "SIGINT" : "SIGTERM") << ": "
        << file.jobs.size() << " of " << total_jobs << " jobs are saved in " << output
        << "; run again with --resume to finish the rest\n";
    return 128 + signal;
  }
  std::size_t failed = 0;
  for (const auto& j : file.jobs) failed += j.status == "failed";
  // The table comes from the file, so what is printed is what was stored.
  // A sweep of thousands of jobs prints its summary only: a table nobody
  // reads on a terminal would cost more than the jobs' own bookkeeping.
  constexpr std::size_t kMaxPrintedJobs = 200;
  if (file.jobs.size() <= kMaxPrintedJobs) {
    print_report(file, TableFormat::kMarkdown, out);
  } else {
    ReportOptions summary;
    summary.table = "summary";
    print_report(file, TableFormat::kMarkdown, out, summary);
    out << "\n(" << file.jobs.size() << " jobs: `mapex report " << output
        << "` prints the table of every job)\n";
  }
  out << "\n"
      << file.jobs.size() << " jobs, " << failed << " failed; results in " << output << "\n";
  if (failed) err << "mapex: " << failed << " of " << file.jobs.size() << " jobs failed\n";
  return failed ? kExitFailed : kExitOk;
}

std::string default_output(const Experiment& e, const Shard& shard) {
  return "results/" + e.name + (shard.active() ? "." + std::to_string(shard.index) : "") + ".h5";
}

int merge_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("mapex merge");
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;
  desc.add_options()("help,h", "show this help")("inputs", po::value(&inputs)->required(),
                                                 "result files (HDF5) of one experiment")(
      "output,o", po::value(&output)->required(), "merged result file")(
      "force", po::bool_switch(&force),
      "let -o replace an existing file that is not a mapex result file");
  po::positional_options_description positional;
  positional.add("inputs", -1);
  const auto vm = parse_args(desc, positional, args);
  if (vm.count("help")) {
    out << desc;
    return kExitOk;
  }
  for (const auto& in : inputs)
    if (!fs::exists(in))
      throw InputError(SourceLocation{in, 0, 0}, "", "result file does not exist");
  std::vector<ResultFile> files;
  for (const auto& in : inputs) files.push_back(read_results(in));
  const auto name_of = [](const ResultFile& f) {
    return f.attributes.count("experiment_name") ? f.attributes.at("experiment_name") : "";
  };
  for (size_t i = 1; i < files.size(); ++i)
    if (name_of(files[i]) != name_of(files[0]))
      throw InputError(SourceLocation{inputs[i], 0, 0}, "",
                       "holds results of experiment '" + name_of(files[i]) + "', but " + inputs[0] +
                           " of '" + name_of(files[0]) + "'; refusing to merge");
  // An input as output is fine (a result file, read before the merged
  // file replaces it); anything else that exists must be a result file.
  check_output_target(output, {}, force);
  std::vector<JobRow> rows;
  std::set<std::string> seen;
  std::size_t duplicates = 0;
  for (auto& f : files)
    for (auto& j : f.jobs) {
      if (!seen.insert(j.job_id).second) {
        ++duplicates;  // the same job in two files: deterministic, keep one
        continue;
      }
      j.pareto = 0;
      rows.push_back(std::move(j));
    }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const JobRow& a, const JobRow& b) { return a.job_index < b.job_index; });
  auto attributes = files[0].attributes;
  attributes["shard"] = "";
  attributes["merged_from"] = join(inputs, ",");
  {
    // An input named as output was read above; the writer replaces it in
    // one rename.
    ResultWriter writer(output, attributes);
    writer.append(rows);
    for (size_t i = 0; i < rows.size(); ++i) rows[i].file_row = i;
    const auto metrics = split(
        attributes.count("pareto_metrics") ? attributes["pareto_metrics"] : "latency,energy", ',');
    writer.mark_pareto(pareto_rows(rows, metrics));
  }
  out << "merged " << rows.size() << " jobs from " << inputs.size() << " files into " << output;
  if (duplicates) out << " (" << duplicates << " duplicate rows dropped)";
  out << "\n";
  (void)err;
  return kExitOk;
}

}  // namespace mapex::host
