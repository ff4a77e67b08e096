#include "host/mpi_run.hpp"

#include <mpi.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "host/progress.hpp"

namespace mapex::host {
namespace {

constexpr int kTagRequest = 1;  // worker -> 0: finished rows, "give me work"
constexpr int kTagAssign = 2;   // 0 -> worker: job indices; none = stop
constexpr int kTagError = 3;    // a failing rank's message to rank 0

// A flat byte encoding of rows; both ends are the same build.
class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
  }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<char>& bytes() { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <typename T>
  void get(T& v) {
    check(sizeof v);
    std::memcpy(&v, bytes_.data() + pos_, sizeof v);
    pos_ += sizeof v;
  }
  void get(std::string& s) {
    std::uint64_t n = 0;
    get(n);
    check(n);
    s.assign(bytes_.data() + pos_, n);
    pos_ += n;
  }

 private:
  void check(std::size_t n) const {
    if (pos_ + n > bytes_.size()) throw Error("malformed message between MPI ranks");
  }
  const std::vector<char>& bytes_;
  std::size_t pos_ = 0;
};

void encode(Writer& w, const JobRow& r) {
  w.put(r.job_index);
  for (const std::string* s :
       {&r.job_id, &r.workload, &r.layer, &r.architecture, &r.searcher, &r.costmodel, &r.objective,
        &r.status, &r.error, &r.stop_reason, &r.best_mapping, &r.mapping_summary})
    w.put(*s);
  for (double d :
       {r.latency_cycles, r.energy_pj, r.edp, r.utilization, r.macs, r.roofline_peak_cycles,
        r.wall_seconds, r.area_mm2, r.power_mw, r.latency_seconds, r.throughput_gmacs})
    w.put(d);
  w.put(r.evaluations);
  w.put(r.complete);
  w.put(r.seed);
  w.put(r.num_pes);
  w.put(static_cast<std::uint64_t>(r.trace.size()));
  for (const auto& t : r.trace) {
    w.put(t.evaluation);
    w.put(t.value);
  }
}

JobRow decode(Reader& in) {
  JobRow r;
  in.get(r.job_index);
  for (std::string* s :
       {&r.job_id, &r.workload, &r.layer, &r.architecture, &r.searcher, &r.costmodel, &r.objective,
        &r.status, &r.error, &r.stop_reason, &r.best_mapping, &r.mapping_summary})
    in.get(*s);
  for (double* d :
       {&r.latency_cycles, &r.energy_pj, &r.edp, &r.utilization, &r.macs, &r.roofline_peak_cycles,
        &r.wall_seconds, &r.area_mm2, &r.power_mw, &r.latency_seconds, &r.throughput_gmacs})
    in.get(*d);
  in.get(r.evaluations);
  in.get(r.complete);
  in.get(r.seed);
  in.get(r.num_pes);
  std::uint64_t n = 0;
  in.get(n);
  r.trace.resize(n);
  for (auto& t : r.trace) {
    in.get(t.evaluation);
    in.get(t.value);
  }
  return r;
}

// Waits for a message without spinning at full speed: ranks may share
// cores (oversubscribed), and a busy wait would steal them from the workers.
MPI_Status wait_for(int source, int tag) {
  MPI_Status status;
  int flag = 0;
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
    if (flag) return status;
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(2000)) pause *= 2;
  }
}

std::vector<char> receive_bytes(int source, int tag, int* from = nullptr) {
  const MPI_Status status = wait_for(source, tag);
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::vector<char> bytes(static_cast<size_t>(count));
  MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, tag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  if (from) *from = status.MPI_SOURCE;
  return bytes;
}

void send_bytes(std::vector<char>& bytes, int dest, int tag) {
  MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD);
}

// Agrees on failure across ranks: the lowest failing rank's message reaches
// rank 0, which prints it. Returns true when any rank failed.
bool any_failed(const MpiSession& s, const std::string& error, std::ostream& err) {
  struct {
    int failed;
    int rank;
  } local{error.empty() ? 0 : 1, s.rank()}, global{};
  // MAXLOC picks the lowest rank among those with the maximum (failed = 1).
  MPI_Allreduce(&local, &global, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
  if (!global.failed) return false;
  if (global.rank == s.rank() && s.rank() != 0) {
    std::vector<char> bytes(error.begin(), error.end());
    send_bytes(bytes, 0, kTagError);
  }
  if (s.rank() == 0) {
    std::string message = error;
    if (global.rank != 0) {
      const auto bytes = receive_bytes(global.rank, kTagError);
      message =
          "rank " + std::to_string(global.rank) + ": " + std::string(bytes.begin(), bytes.end());
    }
    err << "mapex: error: " << message << "\n";
  }
  return true;
}

std::uint64_t fingerprint(const std::vector<Job>& jobs) {
  std::string ids;
  for (const auto& j : jobs) ids += j.id;
  return stable_hash(ids);
}

}  // namespace

bool mpi_launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name)) return true;
  return false;
}

MpiSession::MpiSession() {
  if (!mpi_launched()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  active_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (active_) MPI_Finalize();
}

int run_mpi(const MpiSession& session, const MpiRunArgs& args, std::ostream& out,
            std::ostream& err) {
  const int rank = session.rank();
  // 1. Every rank loads and expands the experiment; the paths must be
  // readable on every machine.
  std::string error;
  PreparedRun run;
  try {
    run = prepare_run(args.experiment, args.shard);
  } catch (const InputError& e) {
    error = e.what();
  }
  if (any_failed(session, error, err)) return 2;
  std::uint64_t mine = fingerprint(run.jobs), low = 0, high = 0;
  MPI_Allreduce(&mine, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (low != high) {
    if (rank == 0)
      err << "mapex: error: the ranks expanded " << args.experiment
          << " into different jobs: every machine must see the same experiment, workload and "
             "architecture files and the same plugins\n";
    return 2;
  }
  const Experiment& e = run.experiment;

  // 2. Rank 0 opens the result file (fresh or resumed); it alone writes.
  std::string output = args.output.empty() ? default_output(e, args.shard) : args.output;
  OpenedOutput opened;
  error.clear();
  if (rank == 0) {
    try {
      namespace fs = boost::filesystem;
      if (fs::path(output).has_parent_path()) {
        boost::system::error_code ec;
        fs::create_directories(fs::path(output).parent_path(), ec);
      }
      opened = open_output(run, output, args.resume, args.force, args.shard, err);
    } catch (const InputError& x) {
      error = x.what();
    }
  }
  if (any_failed(session, error, err)) return 2;

  SignalGuard guard;
  if (rank != 0) {
    // 3a. A worker: ask for work, run it, send the rows with the next ask.
    std::map<std::uint64_t, Job> by_index;
    for (const auto& j : run.jobs) by_index[j.index] = j;
    const int threads = args.threads > 0
                            ? args.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<JobRow> rows;
    for (;;) {
      Writer w;
      w.put(static_cast<std::uint8_t>(stop_flag().load() ? 1 : 0));
      w.put(static_cast<std::uint32_t>(threads));
      w.put(static_cast<std::uint64_t>(rows.size()));
      for (const auto& r : rows) encode(w, r);
      send_bytes(w.bytes(), 0, kTagRequest);
      rows.clear();
      const auto bytes = receive_bytes(0, kTagAssign);
      const std::size_t n = bytes.size() / sizeof(std::uint64_t);
      if (n == 0) break;
      std::vector<Job> chunk;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t index = 0;
        std::memcpy(&index, bytes.data() + i * sizeof index, sizeof index);
        chunk.push_back(by_index.at(index));
      }
      RunOptions options;
      options.threads = threads;
      options.keep_traces = e.traces;
      options.stop = &stop_flag();
      options.on_results = [&](std::vector<JobResult>& batch) {
        for (const auto& r : batch) rows.push_back(to_row(r));
      };
      run_jobs(e, run.plugins, chunk, options);
    }
    return stop_signal() ? 128 + stop_signal() : 0;
  }

  // 3b. Rank 0: hand out chunks (guided: large while much is left, single
  // jobs at the end, so jobs of very different cost balance), write rows.
  Progress progress(opened.todo.size(), Progress::pick_mode(stderr, args.quiet));
  std::size_t next = 0;
  int active = session.size() - 1;
  int worker_signal = 0;
  bool halt = false;  // a worker was interrupted: the whole run stops
  while (active > 0) {
    int from = 0;
    const auto bytes = receive_bytes(MPI_ANY_SOURCE, kTagRequest, &from);
    Reader in(bytes);
    std::uint8_t stopping = 0;
    std::uint32_t threads = 1;
    std::uint64_t n = 0;
    in.get(stopping);
    in.get(threads);
    in.get(n);
    std::vector<JobRow> rows;
    for (std::uint64_t i = 0; i < n; ++i) rows.push_back(decode(in));
    if (!rows.empty()) {
      // Rank 0 blocks in receive between batches, so it commits every
      // batch rather than hold rows back (ResultWriter::append).
      opened.writer->append(rows);
      opened.writer->flush();
      for (const auto& r : rows) progress.job_finished(r);
    }
    if (stopping) {
      worker_signal = SIGTERM;
      halt = true;
    }
    std::vector<std::uint64_t> assign;
    if (!stop_flag().load() && !halt && next < opened.todo.size()) {
      const std::size_t left = opened.todo.size() - next;
      const std::size_t workers = static_cast<std::size_t>(session.size() - 1);
      const std::size_t chunk =
          std::max<std::size_t>(1, std::min<std::size_t>(2 * threads, left / (2 * workers)));
      for (std::size_t i = 0; i < chunk && next < opened.todo.size(); ++i)
        assign.push_back(opened.todo[next++].index);
    }
    if (assign.empty()) --active;
    std::vector<char> reply(assign.size() * sizeof(std::uint64_t));
    if (!assign.empty()) std::memcpy(reply.data(), assign.data(), reply.size());
    send_bytes(reply, from, kTagAssign);
  }
  progress.finish();
  const ResultFile file = finish_output(*opened.writer, output, e);
  opened.writer.reset();
  const int signal = stop_signal() ? stop_signal() : worker_signal;
  return conclude_run(file, run.jobs.size(), output, signal, out, err);
}

}  // namespace mapex::host
