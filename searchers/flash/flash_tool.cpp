// mapex-flash: FLASH's numbers that are not a search result.
//
//   mapex-flash count [--n 256] [--alpha 512] [--beta 102400]
//       §5.2's pruning factor: the unpruned tile-size combinations by the
//       paper's rule, and what Eq. 3-4 leave.
//   mapex-flash candidates --workload W [--layer L] --arch A --style S
//       [--order o] [--space pruned|full|non_tiled] [--tiles pow2|all|largest] [--costmodel mdc]
//       [-j N] [--csv no] [--directives yes]
//       Every candidate of Algorithm 2 evaluated, one CSV row each (for
//       Fig. 7's histogram), and on standard error the time generation and
//       evaluation took. --directives yes adds the MAESTRO directives the
//       candidate lowers to (Table 2's form), to run them through MAESTRO.
//
// Exit status: 0 success, 2 bad usage or bad input.

#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>
#include <string>
#include <vector>

#include "flash_algebra.hpp"
#include "host/plugin_registry.hpp"

namespace {

namespace fl = mapex::flash;
using Clock = std::chrono::steady_clock;

const char* const kUsage =
    "usage: mapex-flash count [--n N] [--alpha WORDS] [--beta WORDS]\n"
    "       mapex-flash candidates --workload W [--layer L] --arch A --style S [--order o]\n"
    "                              [--space pruned|full|non_tiled] [--tiles pow2|all|largest]\n"
    "                              [--costmodel NAME] [-j N]\n"
    "                              [--csv no] [--directives yes]\n";

std::map<std::string, std::string> parse_flags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 2; i < argc; ++i) {
    const std::string key = argv[i];
    if (key.rfind("-", 0) != 0 || i + 1 >= argc)
      throw mapex::InputError("expected --flag value pairs, got '" + key + "'\n" + kUsage);
    flags[key] = argv[++i];
  }
  return flags;
}

std::int64_t int_flag(const std::map<std::string, std::string>& flags, const std::string& key,
                      std::int64_t fallback) {
  const auto it = flags.find(key);
  if (it == flags.end()) return fallback;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(it->second, &used);
    if (used == it->second.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw mapex::InputError(key + " expects a positive integer, got '" + it->second + "'");
}

std::string need(const std::map<std::string, std::string>& flags, const std::string& key) {
  const auto it = flags.find(key);
  if (it == flags.end()) throw mapex::InputError(std::string("missing ") + key + "\n" + kUsage);
  return it->second;
}

int count(const std::map<std::string, std::string>& flags) {
  const std::int64_t n = int_flag(flags, "--n", 256), alpha = int_flag(flags, "--alpha", 512),
                     beta = int_flag(flags, "--beta", 102400);
  const auto start = Clock::now();
  const std::uint64_t base = fl::section52_baseline(n, alpha, beta);
  const std::uint64_t pruned = fl::section52_pruned(n, alpha, beta);
  const std::uint64_t ranges = fl::section52_range_product(n, alpha, beta);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  // P cancels out: one outer step covers T_N^out x (P / T_K^out) = N.
  std::printf("FLASH §5.2, %lld^3 GEMM, alpha = %lld, beta = %lld\n", static_cast<long long>(n),
              static_cast<long long>(alpha), static_cast<long long>(beta));
  std::printf("unpruned combinations (issue rule): %llu\n", static_cast<unsigned long long>(base));
  std::printf("pruned by Eq. 3-4 ranges, Eq. 1-2 held: %llu\n",
              static_cast<unsigned long long>(pruned));
  std::printf("pruning factor: %.2f\n",
              pruned ? static_cast<double>(base) / static_cast<double>(pruned) : 0.0);
  std::printf("product of the Eq. 3-4 ranges (Eq. 1-2 not held): %llu\n",
              static_cast<unsigned long long>(ranges));
  std::printf("paper: 7250826667 -> 14992384 (factor 483.63)\n");
  std::printf("counted in %.3f s\n", secs);
  return 0;
}

int candidates(const std::map<std::string, std::string>& flags) {
  const std::string workload = need(flags, "--workload"), arch_path = need(flags, "--arch");
  const auto style = fl::parse_style(need(flags, "--style"));
  if (!style) throw mapex::InputError("--style expects eyeriss, nvdla, tpu, shidiannao or maeri");
  std::vector<fl::LoopOrder> orders;
  if (flags.count("--order")) {
    const auto o = fl::parse_order(flags.at("--order"));
    if (!o) throw mapex::InputError("--order expects a permutation of m, n, k");
    orders.push_back(*o);
  }
  const std::string space = flags.count("--space") ? flags.at("--space") : "pruned";
  if (space != "pruned" && space != "full" && space != "non_tiled")
    throw mapex::InputError("--space expects pruned, full or non_tiled");
  const mapex::Network net = mapex::Network::load(workload);
  const mapex::Operator* op = nullptr;
  for (const auto& l : net.layers())
    if (!flags.count("--layer") || l.op.name() == flags.at("--layer")) {
      op = &l.op;
      break;
    }
  if (!op) throw mapex::InputError(workload + ": no layer '" + flags.at("--layer") + "'");
  const mapex::Architecture arch = mapex::Architecture::load(arch_path);
  const fl::Problem problem = fl::problem_from(*op);
  const fl::Chip chip = fl::chip_from(arch);
  const int threads = static_cast<int>(int_flag(flags, "-j", 2));
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));

  mapex::host::PluginRegistry registry;
  registry.scan(mapex::host::PluginRegistry::default_search_path());
  const auto model =
      registry.make_costmodel(flags.count("--costmodel") ? flags.at("--costmodel") : "mdc", {});
  const auto bound = model->bind(*op, arch);

  const auto t0 = Clock::now();
  const std::string tiles = flags.count("--tiles") ? flags.at("--tiles") : "pow2";
  if (tiles != "pow2" && tiles != "all" && tiles != "largest")
    throw mapex::InputError("--tiles expects pow2, all or largest");
  fl::Generation g = fl::generate(*style, problem, chip, space == "pruned", orders,
                                  tiles == "all"       ? fl::TileValues::kAll
                                  : tiles == "largest" ? fl::TileValues::kLargest
                                                       : fl::TileValues::kPow2,
                                  5'000'000);
  if (space == "non_tiled") {
    g.candidates.clear();
    for (const auto& flow : fl::dataflows(*style, problem, chip.pes)) {
      const auto c = fl::non_tiled(flow);
      if ((orders.empty() || flow.order == orders[0]) &&
          fl::non_tiled_cluster(flow, problem, chip.pes) && fl::fits(c, problem, chip))
        g.candidates.push_back(c);
    }
  }
  const fl::MappingBuilder builder(*op, arch);
  const auto t1 = Clock::now();
  std::vector<mapex::Metrics> metrics(g.candidates.size());
  tbb::parallel_for(std::size_t{0}, g.candidates.size(), [&](std::size_t i) {
    metrics[i] = bound->evaluate(builder.build(g.candidates[i]));
  });
  const auto t2 = Clock::now();

  const bool csv = !flags.count("--csv") || flags.at("--csv") != "no";
  const bool directives = flags.count("--directives") && flags.at("--directives") == "yes";
  if (csv)
    std::printf(
        "style,order,cluster_size,T_M_out,T_N_out,T_K_out,T_M_in,T_N_in,T_K_in,valid,"
        "latency_cycles,energy_pj,"
        "S1_A,S1_B,S1_C,S2_A,S2_B,S2_C,S1_reads,S1_writes,S2_reads,S2_writes%s\n",
        directives ? ",directives" : "");
  double best = 0;
  for (const auto& m : metrics)
    if (m.valid && (best == 0 || m.latency_cycles < best)) best = m.latency_cycles;
  for (std::size_t i = 0; csv && i < g.candidates.size(); ++i) {
    const auto& c = g.candidates[i];
    const auto& m = metrics[i];
    // Accesses per matrix: reads plus writes, S1 first, then S2.
    double acc[2][3] = {{0, 0, 0}, {0, 0, 0}};
    // Reads and writes of S1 and S2 over the three matrices: data reuse
    // can be read as S1 / S2 accesses (Fig. 8's caption) or as MAESTRO's
    // reuse factors (reads over writes), so both are printed.
    double rw[2][2] = {{0, 0}, {0, 0}};
    for (std::size_t lv = 0; lv < m.levels.size(); ++lv) {
      const int slot = m.levels[lv].level == arch.levels()[0].name   ? 0
                       : m.levels[lv].level == arch.levels()[2].name ? 1
                                                                     : -1;
      if (slot < 0) continue;
      for (std::size_t t = 0; t < m.levels[lv].tensors.size() && t < 3; ++t) {
        acc[slot][t] = m.levels[lv].tensors[t].reads + m.levels[lv].tensors[t].writes;
        rw[slot][0] += m.levels[lv].tensors[t].reads;
        rw[slot][1] += m.levels[lv].tensors[t].writes;
      }
    }
    std::printf(
        "%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%d,%.17g,%.17g,%g,%g,%g,%g,%g,%g,%g,%g,%g,%g",
        fl::to_string(c.flow.style).c_str(), fl::to_string(c.flow.order).c_str(),
        static_cast<long long>(c.flow.cluster_size), static_cast<long long>(c.outer[0]),
        static_cast<long long>(c.outer[1]), static_cast<long long>(c.outer[2]),
        static_cast<long long>(c.inner[0]), static_cast<long long>(c.inner[1]),
        static_cast<long long>(c.inner[2]), m.valid ? 1 : 0, m.latency_cycles, m.energy_pj,
        acc[0][0], acc[0][1], acc[0][2], acc[1][0], acc[1][1], acc[1][2], rw[0][0], rw[0][1],
        rw[1][0], rw[1][1]);
    if (directives) {
      // One field, directives separated by spaces (MAESTRO syntax).
      std::string d = mapex::mdc::format_dataflow(
          mapex::mdc::from_mapping(*op, arch, builder.build(c)).layer.dataflow);
      for (char& ch : d)
        if (ch == '\n') ch = ' ';
      std::printf(",\"%s\"", d.c_str());
    }
    std::printf("\n");
  }
  std::fprintf(stderr,
               "%s %s %s: %zu candidates (%.6g tile tuples before pruning); generation %.3f s, "
               "evaluation %.3f s on %d threads; best %.17g cycles\n",
               op->name().c_str(), fl::to_string(*style).c_str(), space.c_str(),
               g.candidates.size(), g.before_pruning,
               std::chrono::duration<double>(t1 - t0).count(),
               std::chrono::duration<double>(t2 - t1).count(), threads, best);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) throw mapex::InputError(std::string("no command given\n") + kUsage);
    const std::string command = argv[1];
    const auto flags = parse_flags(argc, argv);
    if (command == "count") return count(flags);
    if (command == "candidates") return candidates(flags);
    throw mapex::InputError("unknown command '" + command + "'\n" + kUsage);
  } catch (const mapex::InputError& e) {
    std::cerr << "mapex-flash: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "mapex-flash: error: " << e.what() << "\n";
    return 1;
  }
}
