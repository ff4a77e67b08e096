// Contradictory constraints are bad input (exit 2, file, line, key and
// why), and a consistent but empty space is said to be empty, naming the
// constraint that emptied it (issue "Mapspace at full strength", Bad input),
// for `mapex mapspace` and for the exhaustive and random searchers.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;

/// Writes a constraints file into the test work directory; returns its path.
std::string constraints_file(const std::string& name, const std::string& text) {
  const std::string path = std::string(MAPEX_TEST_WORK_DIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::vector<std::string> tiny(const std::string& command, const std::string& layer,
                              std::vector<std::string> extra) {
  std::vector<std::string> args{command, "--workload", kData + "/tiny_net.yaml", "--layer",
                                layer,   "--arch",     kData + "/tiny_arch.yaml"};
  if (command == "search") extra.insert(extra.end(), {"--searcher", "exhaustive"});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

struct Contradiction {
  std::string name;
  std::string yaml;
  std::string where;  ///< file:line of the offending entry
  std::string why;    ///< what the message must say
  std::string layer = "conv";
};

// The tiny chip: L1 (64 B) | PEs (2 x 2) | L2 (2 KB) | DRAM; conv has
// K = 8, C = 4, P = Q = 4, R = S = 3.
const std::vector<Contradiction> kContradictions = {
    {"fanout.yaml", "levels:\n  PEs: {fixed: {K: 4, C: 2}}\n",
     "fanout.yaml:2:", "need 8 children, more than its fan-out of 4"},
    {"parallel.yaml", "max_parallel_dims: 1\nlevels:\n  PEs: {fixed: {K: 2, C: 2}}\n",
     "parallel.yaml:3:", "must split 2 dimensions (K=2 x C=2) but may split at most 1"},
    {"tile_divides.yaml", "levels:\n  L1: {fixed: {K: 3}}\n",
     "tile_divides.yaml:2:", "tile 3 of 'K' on 'L1' does not divide the bound 8"},
    {"split_divides.yaml", "levels:\n  PEs: {fixed: {C: 3}}\n",
     "split_divides.yaml:2:", "split 3 of 'C' on 'PEs' does not divide the bound 4"},
    {"split_span.yaml", "levels:\n  L1: {fixed: {C: 2}}\n  PEs: {fixed: {C: 4}}\n",
     "split_span.yaml:3:", "spans 8, which does not divide the bound 4"},
    {"l1_over_l2.yaml", "levels:\n  L1: {fixed: {K: 4}}\n  L2: {fixed: {K: 2}}\n",
     "l1_over_l2.yaml:3:",
     "tile 2 of 'K' on 'L2' is smaller than the 4 it must hold (tile 4 on 'L1')"},
    // fc: K = 6; 3 divides it but is not a multiple of the L1 tile 2.
    {"l2_multiple.yaml", "levels:\n  L1: {fixed: {K: 2}}\n  L2: {fixed: {K: 3}}\n",
     "l2_multiple.yaml:3:", "tile 3 of 'K' on 'L2' is not a multiple of the 2 it holds", "fc"},
    {"utilization.yaml", "min_utilization: 1.5\n",
     "utilization.yaml:1:", "expected a fraction of the PEs in [0, 1]"},
    // Factor bounds and pinned innermost loops: each entry's own line.
    {"limit_zero.yaml", "levels:\n  L2: {max_factor: {K: 0}}\n",
     "limit_zero.yaml:2:", "key 'max_factor': a factor bound is at least 1, got 0 for 'K'"},
    {"limit_dim.yaml", "levels:\n  L2:\n    max_factor: {Z: 2}\n",
     "limit_dim.yaml:3:", "key 'max_factor': operator 'conv' has no dimension 'Z'"},
    {"limit_fixed.yaml", "levels:\n  PEs:\n    fixed: {K: 2}\n    max_factor:\n      K: 1\n",
     "limit_fixed.yaml:5:7:",
     "max_factor 1 of 'K' on 'PEs' contradicts its factor 2 (its fixed split)"},
    {"limit_above.yaml", "levels:\n  L2:\n    max_factor: {K: 2}\n    min_factor: {K: 4}\n",
     "limit_above.yaml:4:", "min_factor 4 of 'K' on 'L2' is above its max_factor 2"},
    {"pin_twice.yaml", "levels:\n  DRAM:\n    innermost: [K, C,\n      K]\n",
     "pin_twice.yaml:4:7:", "key 'innermost': 'K' is pinned twice on 'DRAM'"},
    {"pin_spatial.yaml", "levels:\n  PEs: {innermost: [K]}\n",
     "pin_spatial.yaml:2:", "level 'PEs' is spatial and has no loop order"},
};

TEST(CliConstraints, ContradictionsExitTwoWithFileKeyAndWhy) {
  for (const auto& c : kContradictions) {
    const std::string path = constraints_file(c.name, c.yaml);
    for (const std::string command : {"mapspace", "search"}) {
      const auto r = run_cli(tiny(command, c.layer, {"--constraints", path}));
      EXPECT_EQ(r.status, 2) << command << " " << c.name << "\n" << r.out << r.err;
      EXPECT_NE(r.err.find(c.where), std::string::npos) << command << " " << r.err;
      EXPECT_NE(r.err.find(c.why), std::string::npos) << command << " " << r.err;
      EXPECT_EQ(r.out, "") << command << " " << c.name;
    }
  }
}

/// A one-layer GEMM workload in the test work directory.
std::string gemm_workload(const std::string& name, int m, int n, int k) {
  return constraints_file(name, "network: " + name.substr(0, name.find('.')) +
                                    "\nlayers:\n  - {name: g, type: gemm, M: " + std::to_string(m) +
                                    ", N: " + std::to_string(n) + ", K: " + std::to_string(k) +
                                    ", inputs: []}\n");
}

nlohmann::json mapspace_json(const std::string& workload, const std::string& constraints) {
  std::vector<std::string> args{
      "mapspace", "--workload", workload, "--arch", kData + "/tiny_arch.yaml", "--format", "json"};
  if (!constraints.empty()) args.insert(args.end(), {"--constraints", constraints});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  return nlohmann::json::parse(r.out);
}

// M = 4 alone on the tiny chip (a flat array of 4, so splits 1, 2, 4):
// (L1 tile, split, L2 tile) is one of (1,1,1) (1,1,2) (1,1,4) (1,2,2)
// (1,2,4) (1,4,4) (2,1,2) (2,1,4) (2,2,4) (4,1,4): 10. L2 looping once and
// DRAM at least twice leaves (1,1,1) (1,2,2) (2,1,2): 3.
TEST(CliConstraints, FactorLimitsCountExactly) {
  const std::string w = gemm_workload("gemm_m4.yaml", 4, 1, 1);
  EXPECT_EQ(mapspace_json(w, "")["size"], "10");
  const std::string c = constraints_file(
      "limits_m4.yaml", "levels:\n  L2: {max_factor: {M: 1}}\n  DRAM: {min_factor: {M: 2}}\n");
  const auto j = mapspace_json(w, c);
  EXPECT_EQ(j["size"], "3");
  EXPECT_EQ(j["valid"], "3");
  bool step = false;
  for (const auto& s : j["steps"])
    step = step || (s["rule"] == "factor limits (max_factor, min_factor)" && s["mappings"] == "3");
  EXPECT_TRUE(step) << j.dump();
}

// M = N = K = 2 with every tile and split at 1: DRAM's three loops in any
// order (6); K pinned innermost leaves M and N free outside it (2). The
// exhaustive searcher evaluates exactly those.
TEST(CliConstraints, PinnedInnermostLoopsCountAndSearchExactly) {
  const std::string w = gemm_workload("gemm_222.yaml", 2, 2, 2);
  const std::string ones = "{fixed: {M: 1, N: 1, K: 1}}";
  const std::string fixed =
      "levels:\n  L1: " + ones + "\n  PEs: " + ones + "\n  L2: " + ones + "\n";
  EXPECT_EQ(mapspace_json(w, constraints_file("ones.yaml", fixed))["size"], "6");
  const std::string pinned = constraints_file("pin_k.yaml", fixed + "  DRAM: {innermost: [K]}\n");
  EXPECT_EQ(mapspace_json(w, pinned)["valid"], "2");
  const auto r = run_cli({"search", "--workload", w, "--arch", kData + "/tiny_arch.yaml",
                          "--searcher", "exhaustive", "--constraints", pinned, "--format", "json"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 2) << r.out;
}

// Searchers that walk the mapspace and kapla, which builds its own
// mappings, return a best mapping within DRAM's bounds and pins: K loops
// at least twice at DRAM (the L2 tile of K at most 4 of 8), and DRAM's
// loops of more than one trip end with those of K, C that run there.
TEST(CliConstraints, SearchersReturnMappingsWithinBoundsAndPins) {
  const std::string c = constraints_file(
      "dram_bounds.yaml", "levels:\n  DRAM: {min_factor: {K: 2}, innermost: [K, C]}\n");
  const std::map<std::string, int> bounds{{"N", 1}, {"K", 8}, {"C", 4}, {"P", 4},
                                          {"Q", 4}, {"R", 3}, {"S", 3}};
  for (const std::string searcher : {"exhaustive", "random", "kapla"}) {
    auto args = tiny("mapspace", "conv",
                     {"--constraints", c, "--searcher", searcher, "--costmodel", "mdc",
                      "--max-evaluations", "3000", "--format", "json"});
    args[0] = "search";
    const auto r = run_cli(args);
    ASSERT_EQ(r.status, 0) << searcher << "\n" << r.out << r.err;
    const auto m = nlohmann::json::parse(r.out)["mapping"];
    EXPECT_LE(m["L2"]["tile"]["K"].get<int>(), 4) << searcher << " " << m.dump();
    std::vector<std::string> loops, pinned;
    for (const auto& d : m["DRAM"]["order"]) {
      const std::string name = d.get<std::string>();
      if (bounds.at(name) / m["L2"]["tile"][name].get<int>() > 1) loops.push_back(name);
    }
    for (const std::string name : {"K", "C"})
      if (std::count(loops.begin(), loops.end(), name)) pinned.push_back(name);
    ASSERT_GE(loops.size(), pinned.size());
    EXPECT_EQ(std::vector<std::string>(loops.end() - static_cast<std::ptrdiff_t>(pinned.size()),
                                       loops.end()),
              pinned)
        << searcher << " " << m.dump();
  }
}

// flash builds FLASH's candidates itself, outside the mapspace: the
// framework's check of every evaluation keeps its result within the
// bounds. On layer VI (M = 512) its best MAERI mapping holds less than 256
// of M in S2 (more than 2 trips at DRAM); with DRAM looping over M at most
// twice it holds 256 or more.
TEST(CliConstraints, FlashCandidatesOutsideTheBoundsAreNotReturned) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  auto s2_m_tile = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"search",
                                  "--workload",
                                  exp + "/workloads/flash_table3.yaml",
                                  "--layer",
                                  "VI",
                                  "--arch",
                                  exp + "/architectures/flash_edge.yaml",
                                  "--searcher",
                                  "flash",
                                  "--param",
                                  "style=maeri",
                                  "--costmodel",
                                  "mdc",
                                  "--format",
                                  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out)["mapping"]["S2"]["tile"]["M"].get<int>();
  };
  EXPECT_LT(s2_m_tile({}), 256);
  const std::string c =
      constraints_file("flash_dram_m.yaml", "levels:\n  DRAM: {max_factor: {M: 2}}\n");
  EXPECT_GE(s2_m_tile({"--constraints", c}), 256);
}

// The rules flash's own candidates would not respect (fixed tiles, allowed
// orders, parallel dimensions, a style, ...) are refused by name, exit 2,
// never silently dropped; factor limits and pins are checked per mapping
// (above), so they are accepted.
TEST(CliConstraints, FlashRefusesTheRulesItsCandidatesCannotHonour) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  auto search = [&](const std::string& name, const std::string& yaml) {
    return run_cli({"search", "--workload", exp + "/workloads/flash_table3.yaml", "--layer", "VI",
                    "--arch", exp + "/architectures/flash_edge.yaml", "--searcher", "flash",
                    "--param", "style=maeri", "--costmodel", "mdc", "--constraints",
                    constraints_file(name, yaml)});
  };
  const auto fixed = search("flash_fixed.yaml", "levels:\n  S2: {fixed: {M: 64}}\n");
  EXPECT_EQ(fixed.status, 2) << fixed.out << fixed.err;
  EXPECT_NE(fixed.err.find("cannot honour the job's mapspace rule level 'S2': fixed"),
            std::string::npos)
      << fixed.err;
  const auto orders = search("flash_orders.yaml", "levels:\n  DRAM: {orders: [[M, N, K]]}\n");
  EXPECT_EQ(orders.status, 2);
  EXPECT_NE(orders.err.find("level 'DRAM': orders"), std::string::npos) << orders.err;
  const auto style = search("flash_style.yaml", "style: weight_stationary\n");
  EXPECT_EQ(style.status, 2);
  EXPECT_NE(style.err.find("style 'weight_stationary'"), std::string::npos) << style.err;
  EXPECT_EQ(search("flash_pin.yaml", "levels:\n  DRAM: {innermost: [K]}\n").status, 0);
}

TEST(CliConstraints, EdgeTilesMakeANonDividingTileConsistent) {
  // The same fixed tile is fine once edge tiles are allowed.
  const std::string path = constraints_file("tile_divides_edge.yaml", kContradictions[3].yaml);
  const auto r = run_cli(tiny("mapspace", "conv", {"--constraints", path, "--edge-tiles"}));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

TEST(CliConstraints, ConsistentFixedValuesAreAccepted) {
  // L1 tile 2 inside L2 tile 4 with a split of 2 between: consistent.
  const std::string path =
      constraints_file("consistent.yaml",
                       "levels:\n  L1: {fixed: {K: 2}}\n  PEs: {fixed: {K: 2}}\n  L2: "
                       "{fixed: {K: 4}}\n");
  const auto r = run_cli(tiny("mapspace", "conv", {"--constraints", path, "--no-valid-count"}));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

// fc with K = 6 split over K only (dMazeRunner-like) uses at most 3 of the
// 4 PEs: asking for all 4 is consistent but leaves nothing.
const std::vector<std::string> kUtilisationEmpty = {"--style", "dmazerunner", "--min-utilization",
                                                    "1"};
const std::string kUtilisationWhy =
    "the mapspace is empty after constraints: no mapping is left once 'PE utilisation >= 1' is "
    "applied";
// fc with a whole C = 128 row of weights in L1 (64 B) fits no mapping: the
// space is empty after buffer capacity only.
const std::string kCapacityYaml = "levels:\n  L1: {fixed: {C: 128}}\n";
const std::string kCapacityWhy =
    "the mapspace is empty after constraints: no mapping is left once 'buffer capacity";

TEST(CliConstraints, EmptyMapspaceNamesTheRuleThatEmptiedIt) {
  const auto r = run_cli(tiny("mapspace", "fc", kUtilisationEmpty));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(kUtilisationWhy), std::string::npos) << r.out;
  const std::string path = constraints_file("capacity_empty.yaml", kCapacityYaml);
  const auto c = run_cli(tiny("mapspace", "fc", {"--constraints", path, "--format", "json"}));
  EXPECT_EQ(c.status, 1) << c.out << c.err;
  const auto j = nlohmann::json::parse(c.out);
  EXPECT_EQ(j["valid"], "0");
  EXPECT_NE(j["empty"].get<std::string>().find(kCapacityWhy), std::string::npos) << c.out;
}

TEST(CliConstraints, SearchersSayTheMapspaceIsEmpty) {
  const std::string path = constraints_file("capacity_empty_search.yaml", kCapacityYaml);
  // The per-level random search (KAPLA §V) too: its keep rule must not mask
  // an empty space as "no mapping kept".
  for (const std::string searcher : {"exhaustive", "random", "random level_probability=0.5"}) {
    for (const auto& [extra, why] :
         {std::make_pair(kUtilisationEmpty, kUtilisationWhy),
          std::make_pair(std::vector<std::string>{"--constraints", path}, kCapacityWhy)}) {
      auto args = tiny("mapspace", "fc", extra);
      args[0] = "search";
      const auto space = searcher.find(' ');
      args.insert(args.end(), {"--searcher", searcher.substr(0, space), "--max-evaluations", "100",
                               "--format", "json"});
      if (space != std::string::npos)
        args.insert(args.end(), {"--param", searcher.substr(space + 1)});
      const auto r = run_cli(args);
      EXPECT_EQ(r.status, 1) << searcher << "\n" << r.out << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["status"], "no_valid_mapping") << searcher;
      EXPECT_EQ(j["evaluations"], 0) << searcher;
      EXPECT_EQ(j["stop_reason"], "empty mapspace") << searcher;
      EXPECT_NE(j["error"].get<std::string>().find(why), std::string::npos)
          << searcher << ": " << j["error"];
      EXPECT_EQ(j["error"].get<std::string>().find("no mapping was evaluated"), std::string::npos);
      EXPECT_EQ(j["error"].get<std::string>().find("draws"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace mapex
