// KAPLA's K against nn_dataflow's exhaustive B (KAPLA §V-VI), both in
// nn_dataflow's per-layer space and scored by its model (mapex::ndf, the
// model tensor_centric's model=nn_dataflow computes): B chooses each
// processing pass's loop blocking exhaustively, K with KAPLA's bottom-up
// greedy cost descending (§IV-C); partitions and PE mapping are the same
// enumeration for both. Per layer of every network of experiments/kapla
// and per scenario (Fig. 7 training and Fig. 9 inference on the multi-node
// chip at batch 64, Fig. 10 inference on the edge chip at batch 1), the
// energy-goal (and, for training, delay-goal: Fig. 8) results of both, and
// the in-process thread CPU time of each search, the median of --runs
// repetitions (one run for the delay goal, compared for quality only; one
// run for a search whose first run takes more than --long CPU seconds). Also every single-layer
// nn_dataflow reference run (refdata/nn_dataflow/layers.csv) with the tool's own best beside B.
// Writes one CSV row per (scenario, network, layer, goal). An experiment
// driver, not a test: scripts/kapla_fair runs it.
//
// usage: mapex_kapla_vs_nndf [--runs N] [--long S] [--networks a,b]
//                            [--scenarios s,t] [--max-seconds S] -o OUT.csv

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/network.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nndf_reference.hpp"

namespace {

namespace fs = std::filesystem;
namespace ndf = mapex::ndf;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; std::getline(in, w, sep);)
    if (!w.empty()) out.push_back(w);
  return out;
}

/// One search problem: a layer under one scenario and goal.
struct Job {
  std::string scenario, network, layer, goal;
  ndf::Problem problem;
  ndf::SearchOptions options;
  std::vector<ndf::Layout> layouts;
  double ref_cost = 0;   ///< nn_dataflow's own best (reference runs only), in mapex units
  double ref_cpu_s = 0;  ///< nn_dataflow's process CPU seconds for that run
  int copies = 1;        ///< identical layers it stands for (the groups of a grouped convolution)
  std::string as;        ///< what the layer was searched as, when rewritten
  std::string skipped;   ///< why the layer is outside the model (then nothing is searched)
};

/// What one solver found and how long it took.
struct Outcome {
  double cost = 0, time = 0, cpu_s = 0;
  int runs = 0;  ///< timed runs the median is taken over
  std::uint64_t blockings = 0;
  bool complete = false, found = false;
};

Outcome run_solver(const Job& job, ndf::BlockingSolver solver, int runs, double long_s) {
  ndf::SearchOptions so = job.options;
  so.blocking = solver;
  std::vector<double> times;
  ndf::SearchOutput out;
  for (int r = 0; r < runs; ++r) {
    const double t0 = thread_cpu_seconds();
    out = ndf::search(job.problem.layer, job.problem.hw, job.problem.options, job.layouts, so);
    times.push_back(thread_cpu_seconds() - t0);
    if (!out.complete) break;  // a search cut short is not timed again
    // A long search's CPU time varies little between runs: one is enough.
    if (long_s > 0 && times.back() > long_s) break;
  }
  std::sort(times.begin(), times.end());
  Outcome o;
  o.cpu_s = times[times.size() / 2];
  o.runs = static_cast<int>(times.size());
  o.blockings = out.stats.blockings;
  o.complete = out.complete;
  if (!out.tops.empty()) {
    o.found = true;
    o.cost = out.tops.front().cost;
    o.time = out.tops.front().time;
  }
  return o;
}

/// The network file with its batch set (and nothing else changed), as
/// experiments/kapla/networks.sh writes it.
mapex::Network load_with_batch(const fs::path& file, int batch) {
  std::ifstream in(file);
  std::string text, line;
  while (std::getline(in, line)) {
    if (line.rfind("batch:", 0) == 0 || line.rfind("training:", 0) == 0) continue;
    text += line + "\n";
    if (line.rfind("network:", 0) == 0) text += "batch: " + std::to_string(batch) + "\n";
  }
  return mapex::Network::parse(text, file.string());
}

/// The conv or FC layer nn_dataflow would schedule in place of `op`, and
/// how many of it (nn_dataflow's model takes forward conv, FC and depthwise
/// layers and local-region loop nests; KAPLA's fork adds backward layer
/// types that have no counterpart in it). Exact rewrites only, each the
/// same loop nest with the roles of its loops renamed:
/// - a grouped convolution (not depthwise): `groups` convolutions of C/G
///   to K/G channels (nn_dataflow's alex_net lists the halves as layers);
/// - FC error propagation dX[n][c] = sum_k dY[n][k] W[k][c]: an FC layer
///   of K inputs and C outputs;
/// - FC weight gradient dW[k][c] = sum_n dY[n][k] X[n][c]: an FC layer of
///   N inputs and K outputs over a "batch" of C;
/// - stride-1 convolution error propagation: a convolution of K to C
///   channels over the output-gradient map padded by R-1-pad, giving the
///   input-sized map;
/// - 1x1 convolution weight gradient: an FC layer (below);
/// - stride-1 convolution weight gradient dW[k][c][r][s] = sum_{n,p,q}
///   dY[n][k][p][q] X[n][c][r+p][s+q]: a convolution with batch C, N
///   input channels, K outputs, the padded input as the map and P x Q as
///   the filter, giving R x S.
/// Anything else (depthwise convolutions and loop nests, which the model
/// takes as they are; strided and depthwise backward layers, which it
/// refuses) stays as it is, and make_problem says why when it is outside
/// the model.
std::optional<std::pair<mapex::Operator, int>> nndf_layer(const mapex::Operator& op) {
  auto dim = [&](const char* d) -> std::int64_t {
    const auto id = op.find_dim(d);
    return id < 0 ? 0 : op.dims()[static_cast<size_t>(id)].bound;
  };
  auto attr = [&](const char* a, std::int64_t dflt) {
    const auto it = op.attributes().find(a);
    return it == op.attributes().end() ? dflt : it->second;
  };
  const std::string& kind = op.kind();
  const std::int64_t groups = attr("groups", 1);
  if (kind == "fc_bwd_data")
    return std::make_pair(mapex::make_fc(op.name(), dim("N"), dim("K"), dim("C")), 1);
  if (kind == "fc_bwd_weight")
    return std::make_pair(mapex::make_fc(op.name(), dim("C"), dim("N"), dim("K")), 1);
  if (kind == "conv2d") {
    // A regular convolution is taken as it is, and so is a depthwise one
    // (no G dimension: KAPLA's DepthwiseConvolutionLayer).
    if (groups == 1 || !dim("G")) return std::nullopt;
    mapex::Conv2dShape sh;
    sh.N = dim("N");
    sh.C = dim("C");  // per group: the G dimension holds the groups
    sh.K = dim("K");
    sh.R = dim("R");
    sh.S = dim("S");
    sh.stride_h = attr("stride_h", 1);
    sh.stride_w = attr("stride_w", 1);
    sh.padding_h = attr("padding_h", 0);
    sh.padding_w = attr("padding_w", 0);
    sh.H = (dim("P") - 1) * sh.stride_h + sh.R - 2 * sh.padding_h;
    sh.W = (dim("Q") - 1) * sh.stride_w + sh.S - 2 * sh.padding_w;
    return std::make_pair(mapex::make_conv2d(op.name(), sh), static_cast<int>(groups));
  }
  if (kind != "conv2d_bwd_data" && kind != "conv2d_bwd_weight") return std::nullopt;
  if (kind == "conv2d_bwd_weight" && groups == 1 && dim("R") == 1 && dim("S") == 1)
    // A 1x1 filter's gradient is a matrix product over every batch and
    // output position, whatever the stride: an FC layer of N*P*Q inputs
    // and K outputs over a "batch" of C.
    return std::make_pair(
        mapex::make_fc(op.name(), dim("C"), dim("N") * dim("P") * dim("Q"), dim("K")), 1);
  if (groups != 1 || attr("stride_h", 1) != 1 || attr("stride_w", 1) != 1 ||
      attr("dilation_h", 1) != 1 || attr("dilation_w", 1) != 1)
    return std::nullopt;
  const std::int64_t ph = attr("padding_h", 0), pw = attr("padding_w", 0);
  mapex::Conv2dShape sh;
  if (kind == "conv2d_bwd_data") {
    sh.N = dim("N");
    sh.C = dim("K");
    sh.K = dim("C");
    sh.H = dim("P");
    sh.W = dim("Q");
    sh.R = dim("R");
    sh.S = dim("S");
    sh.padding_h = sh.R - 1 - ph;
    sh.padding_w = sh.S - 1 - pw;
    if (sh.padding_h < 0 || sh.padding_w < 0) return std::nullopt;
    return std::make_pair(mapex::make_conv2d(op.name(), sh), 1);
  }
  if (kind == "conv2d_bwd_weight") {
    sh.N = dim("C");
    sh.C = dim("N");
    sh.K = dim("K");
    sh.H = dim("P") + dim("R") - 1;  // the padded input rows the forward read
    sh.W = dim("Q") + dim("S") - 1;
    sh.R = dim("P");
    sh.S = dim("Q");
    return std::make_pair(mapex::make_conv2d(op.name(), sh), 1);
  }
  return std::nullopt;
}

/// KAPLA's intra-layer options (kapla's option_training.json without
/// back-propagation flags): hybrid, batch and input-channel partitioning,
/// GBUF sharing, no GBUF bypass.
ndf::SearchOptions kapla_options(ndf::Goal goal) {
  ndf::SearchOptions so;
  so.hybrid = so.batch = so.ifmaps = true;
  so.goal = goal;
  return so;
}

void add_network_jobs(const std::string& scenario, const std::string& net_name,
                      std::vector<Job>& jobs) {
  const fs::path exp = MAPEX_EXPERIMENTS_DIR;
  const bool edge = scenario == "edge";
  const auto arch = mapex::Architecture::load(
      (exp / "architectures" / (edge ? "kapla_edge.yaml" : "kapla_multinode.yaml")).string());
  mapex::Network net = load_with_batch(exp / "workloads" / (net_name + ".yaml"), edge ? 1 : 64);
  if (scenario == "training") net = net.training();
  std::vector<std::string> goals{"energy"};
  if (scenario == "training") goals.push_back("delay");  // Fig. 8
  for (const auto& goal : goals) {
    // Layers of one shape are searched once per network (both solvers
    // alike; nn_dataflow and KAPLA cache per-layer searches the same way).
    std::map<std::string, bool> seen;
    for (const auto& l : net.layers()) {
      Job j;
      j.scenario = scenario;
      j.network = net_name;
      j.layer = l.op.name();
      j.goal = goal;
      j.options = kapla_options(goal == "delay" ? ndf::Goal::kDelay : ndf::Goal::kEnergy);
      const auto rewritten = nndf_layer(l.op);
      const mapex::Operator& op = rewritten ? rewritten->first : l.op;
      if (rewritten) {
        j.copies = rewritten->second;
        j.as = rewritten->second > 1 ? std::to_string(rewritten->second) + " groups"
                                     : "rewritten " + l.op.kind();
      }
      if (auto err = ndf::make_problem(op, arch, "", "", "on", j.problem)) {
        j.skipped = *err;
        jobs.push_back(std::move(j));
        continue;
      }
      const auto& y = j.problem.layer;
      std::ostringstream key;
      key << j.copies << ' ' << y.batch << ' ' << y.nifm << ' ' << y.nofm << ' ' << y.hofm << ' '
          << y.wofm << ' ' << y.hfil << ' ' << y.wfil << ' ' << y.htrd << ' ' << y.wtrd;
      if (seen[key.str()]) continue;
      seen[key.str()] = true;
      j.layouts = {j.problem.ifmaps};
      jobs.push_back(std::move(j));
    }
  }
}

void add_reference_jobs(std::vector<Job>& jobs) {
  namespace ref = ndf::reference;
  const fs::path refdata = MAPEX_NNDF_REFDATA;
  for (const auto& row : ref::read_layers(refdata)) {
    ref::Setup s;
    Job j;
    j.scenario = "nn_dataflow_ref";
    j.network = row.at("hw") + "_" + row.at("optset");
    j.layer = row.at("id");
    j.goal = "energy";
    if (auto why = ref::load(refdata, MAPEX_TEST_DATA_DIR,
                             fs::path(MAPEX_EXPERIMENTS_DIR) / "architectures", row, s)) {
      j.skipped = *why;
    } else {
      j.problem = s.problem;
      j.options = s.options;
      j.layouts = s.layouts;
      j.ref_cost = s.ref_cost * s.scale;
      j.ref_cpu_s = s.ref_cpu_s;
    }
    jobs.push_back(std::move(j));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  double long_s = 0;
  double max_seconds = 120;
  std::string out_path;
  std::vector<std::string> networks = {"alexnet",  "mobilenetv2", "vgg16",     "googlenet",
                                       "resnet50", "kapla_mlp",   "kapla_lstm"};
  std::vector<std::string> scenarios = {"training", "inference", "edge", "reference"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--runs")
      runs = std::max(1, std::atoi(v.c_str()));
    else if (a == "--long")
      long_s = std::atof(v.c_str());
    else if (a == "--networks")
      networks = split(v, ',');
    else if (a == "--scenarios")
      scenarios = split(v, ',');
    else if (a == "--max-seconds")
      max_seconds = std::atof(v.c_str());
    else if (a == "-o")
      out_path = v;
    else {
      std::cerr << "kapla_vs_nndf: unknown option " << a << "\n";
      return 2;
    }
  }
  if (out_path.empty()) {
    std::cerr << "kapla_vs_nndf: -o OUT.csv is required\n";
    return 2;
  }
  std::vector<Job> jobs;
  try {
    for (const auto& sc : scenarios) {
      if (sc == "reference") {
        add_reference_jobs(jobs);
        continue;
      }
      if (sc != "training" && sc != "inference" && sc != "edge") {
        std::cerr << "kapla_vs_nndf: unknown scenario " << sc << "\n";
        return 2;
      }
      for (const auto& n : networks) add_network_jobs(sc, n, jobs);
    }
  } catch (const std::exception& e) {
    std::cerr << "kapla_vs_nndf: " << e.what() << "\n";
    return 2;
  }
  for (auto& j : jobs) j.options.max_seconds = max_seconds;

  // Two workers (the machine's cores); each search is timed on its own
  // thread's CPU clock, so the workers do not disturb each other's figures.
  std::vector<std::pair<Outcome, Outcome>> results(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex log;
  auto worker = [&] {
    for (size_t i; (i = next++) < jobs.size();) {
      if (!jobs[i].skipped.empty()) continue;
      // The delay goal (Fig. 8) is compared for quality; one timed run.
      const int n = jobs[i].goal == "delay" ? 1 : runs;
      results[i].first = run_solver(jobs[i], ndf::BlockingSolver::kExhaustive, n, long_s);
      results[i].second = run_solver(jobs[i], ndf::BlockingSolver::kCostDescending, n, long_s);
      std::lock_guard<std::mutex> g(log);
      std::cerr << jobs[i].scenario << ' ' << jobs[i].network << ' ' << jobs[i].layer << ' '
                << jobs[i].goal << ": B " << results[i].first.cpu_s << " s, K "
                << results[i].second.cpu_s << " s\n";
    }
  };
  std::thread t1(worker), t2(worker);
  t1.join();
  t2.join();

  std::ofstream out(out_path);
  out << "scenario,network,layer,goal,copies,as,status,reason,ref_cost,ref_cpu_s,"
         "b_cost,b_time,b_cpu_s,b_blockings,b_complete,k_cost,k_time,k_cpu_s,k_blockings,b_runs,"
         "k_runs\n";
  out.precision(10);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const auto& [b, k] = results[i];
    std::string reason = j.skipped;
    std::replace(reason.begin(), reason.end(), ',', ';');
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    const std::string status = !j.skipped.empty() ? "outside_model"
                               : !b.found         ? "no_scheme"
                               : !k.found         ? "k_no_scheme"
                                                  : "ok";
    out << j.scenario << ',' << j.network << ',' << j.layer << ',' << j.goal << ',' << j.copies
        << ',' << j.as << ',' << status << ',' << reason << ',' << j.ref_cost << ',' << j.ref_cpu_s
        << ',' << b.cost << ',' << b.time << ',' << b.cpu_s << ',' << b.blockings << ','
        << (b.complete ? 1 : 0) << ',' << k.cost << ',' << k.time << ',' << k.cpu_s << ','
        << k.blockings << ',' << b.runs << ',' << k.runs << '\n';
  }
  return 0;
}
