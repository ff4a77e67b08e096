// `mapex evaluate`, `search`, `mapspace`, `plugins`, `version` as scripts
// use them: JSON with units in the names, tables for people.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mapex/plugin.hpp>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "host/result_store.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> args{"--workload", kData + "/tiny_net.yaml", "--layer", "conv",
                                "--arch",     kData + "/tiny_arch.yaml"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> cmd(const std::string& command, std::vector<std::string> args) {
  args.insert(args.begin(), command);
  return args;
}

TEST(CliEvaluate, JsonCarriesMetricsWithUnits) {
  const auto r = run_cli(
      cmd("evaluate", tiny({"--mapping", kData + "/tiny_conv_mapping.yaml", "--format", "json"})));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layer"], "conv");
  EXPECT_EQ(j["costmodel"], "roofline");
  const auto& m = j["metrics"];
  EXPECT_TRUE(m["valid"].get<bool>());
  // 4608 MACs on 4 PEs with K split 4 ways: 1152 cycles of compute.
  EXPECT_EQ(m["macs"].get<double>(), 4608);
  EXPECT_EQ(m["compute_cycles"].get<double>(), 1152);
  EXPECT_GE(m["latency_cycles"].get<double>(), 1152);
  for (const char* key : {"energy_pj", "edp_pj_cycles", "utilization", "latency_seconds",
                          "energy_breakdown_pj", "levels"})
    EXPECT_TRUE(m.contains(key)) << key;
  EXPECT_EQ(j["mapping"]["PEs"]["split"]["K"], 4);
}

TEST(CliEvaluate, TableAndCsv) {
  const auto table =
      run_cli(cmd("evaluate", tiny({"--mapping", kData + "/tiny_conv_mapping.yaml"})));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("latency_cycles"), std::string::npos);
  EXPECT_NE(table.out.find("| L2 |"), std::string::npos) << table.out;
  const auto csv = run_cli(
      cmd("evaluate", tiny({"--mapping", kData + "/tiny_conv_mapping.yaml", "--format", "csv"})));
  ASSERT_EQ(csv.status, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("layer_name,valid,latency_cycles", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find("\nconv,1,"), std::string::npos) << csv.out;
}

TEST(CliSearch, JsonHasEvaluationsTimeAndMapping) {
  const auto r = run_cli(cmd("search", tiny({"--searcher", "random", "--max-evaluations", "300",
                                             "--seed", "3", "--format", "json"})));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 300);
  EXPECT_GE(j["wall_seconds"].get<double>(), 0);
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_TRUE(j["metrics"]["valid"].get<bool>());
  EXPECT_TRUE(j["mapping"].contains("DRAM"));
  EXPECT_NE(j["mapping_yaml"].get<std::string>().find("L1:"), std::string::npos);
  // Seeded: the same command gives the same mapping.
  const auto again = run_cli(cmd("search", tiny({"--searcher", "random", "--max-evaluations", "300",
                                                 "--seed", "3", "--format", "json", "-j", "1"})));
  EXPECT_EQ(nlohmann::json::parse(again.out)["mapping_yaml"], j["mapping_yaml"]);
}

TEST(CliSearch, ExhaustiveFindsNoWorseThanRandom) {
  // fc on the tiny chip is small enough to search completely.
  auto fc = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"search", "--workload", kData + "/tiny_net.yaml",  "--layer",
                                  "fc",     "--arch",     kData + "/tiny_arch.yaml", "--format",
                                  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const auto ex = run_cli(fc({"--searcher", "exhaustive"}));
  ASSERT_EQ(ex.status, 0) << ex.err;
  const auto rnd = run_cli(fc({"--searcher", "random", "--max-evaluations", "200"}));
  ASSERT_EQ(rnd.status, 0) << rnd.err;
  const auto e = nlohmann::json::parse(ex.out), r = nlohmann::json::parse(rnd.out);
  EXPECT_TRUE(e["complete"].get<bool>());
  EXPECT_LE(e["metrics"]["latency_cycles"].get<double>(),
            r["metrics"]["latency_cycles"].get<double>());
}

TEST(CliMapspace, PrintsTheExactSize) {
  const auto r = run_cli(cmd("mapspace", tiny({})));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("K = 8: 19 tile chains"), std::string::npos) << r.out;
  // 26,254,728 tilings x orders fit the fan-outs; 18,562,744 also fit L1 and L2.
  EXPECT_NE(r.out.find("26254728 (2.63e+07)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("18562744"), std::string::npos) << r.out;
}

TEST(CliSearch, ExhaustiveKeepsTheParetoFront) {
  const auto r = run_cli(cmd("search", tiny({"--searcher", "exhaustive", "--param", "pareto=true",
                                             "--style", "weight_stationary", "--format", "json"})));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["complete"].get<bool>());
  const auto& front = j["pareto"];
  ASSERT_FALSE(front.empty());
  // By increasing latency, so by decreasing energy; the fastest is the best.
  for (size_t i = 1; i < front.size(); ++i) {
    EXPECT_GT(front[i]["latency_cycles"].get<double>(),
              front[i - 1]["latency_cycles"].get<double>());
    EXPECT_LT(front[i]["energy_pj"].get<double>(), front[i - 1]["energy_pj"].get<double>());
  }
  EXPECT_EQ(front[0]["latency_cycles"].get<double>(), j["metrics"]["latency_cycles"].get<double>());
}

TEST(CliMapspace, ExplainsConstraintsAndSubspaces) {
  const auto r = run_cli(cmd("mapspace", tiny({"--constraints", kData + "/tiny_constraints.yaml",
                                               "--explain", "--subspaces", "--format", "json"})));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& steps = j["steps"];
  ASSERT_GE(steps.size(), 4u);
  // Each rule shrinks the space; the last step is the valid space.
  for (size_t i = 1; i < steps.size(); ++i)
    EXPECT_LE(std::stod(steps[i]["mappings"].get<std::string>()),
              std::stod(steps[i - 1]["mappings"].get<std::string>()));
  EXPECT_EQ(steps.back()["mappings"], j["valid"]);
  EXPECT_EQ(j["layouts"], "13824");  // a dimension order per rank-4 tensor: 4!^3
  EXPECT_TRUE(j.contains("onchip"));
  const auto table = run_cli(cmd("mapspace", tiny({"--style", "weight_stationary", "--explain"})));
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("rejected by it"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("loop-order rules"), std::string::npos) << table.out;
}

TEST(CliSearch, RandomStopsAtMaxSecondsWithReasonBudget) {
  // Neither an evaluation budget nor a victory condition: only --max-seconds
  // can end this search.
  const auto r = run_cli(
      cmd("search", tiny({"--searcher", "random", "--max-seconds", "0.3", "--format", "json"})));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // "budget; ran out while drawing, ..." when the clock ran out during draws.
  const std::string reason = j["stop_reason"];
  EXPECT_EQ(reason.substr(0, reason.find(';')), "budget");
  EXPECT_FALSE(j["complete"].get<bool>());
  EXPECT_GT(j["evaluations"].get<std::uint64_t>(), 0u);
  EXPECT_GE(j["wall_seconds"].get<double>(), 0.3);  // not before the budget is spent
}

TEST(CliMapspace, JsonNamesTheDimensionsInOrder) {
  // Scripts pin loop orders through a constraints file, which must name
  // every dimension: the JSON says which, in the operator's order.
  const auto json = run_cli(cmd("mapspace", tiny({"--format", "json"})));
  ASSERT_EQ(json.status, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["dimensions"], nlohmann::json::parse(R"(["N","K","C","P","Q","R","S"])"));
}

TEST(CliMapspace, ExplainShowsTheEdgeTilePruningStep) {
  const auto json = run_cli(cmd("mapspace", tiny({"--explain", "--format", "json"})));
  ASSERT_EQ(json.status, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  // Factors-only tiles prune the space with edge tiles, which --edge-tiles
  // counts as its own first step.
  const auto edges = run_cli(cmd("mapspace", tiny({"--edge-tiles", "--format", "json"})));
  ASSERT_EQ(edges.status, 0) << edges.err;
  const auto e = nlohmann::json::parse(edges.out);
  EXPECT_EQ(j["with_edge_tiles"], e["steps"][0]["mappings"]);
  EXPECT_GT(std::stod(j["with_edge_tiles"].get<std::string>()),
            std::stod(j["steps"][0]["mappings"].get<std::string>()));
  const auto table = run_cli(cmd("mapspace", tiny({"--explain"})));
  ASSERT_EQ(table.status, 0) << table.err;
  const auto row =
      table.out.find("| tiles with edge tiles, splits within fan-outs, all loop orders | " +
                     e["steps"][0]["mappings"].get<std::string>());
  EXPECT_NE(row, std::string::npos) << table.out;
  EXPECT_LT(row, table.out.find("| tiles dividing the bounds")) << table.out;
  // Without --explain, and with --edge-tiles, there is no such extra row.
  EXPECT_FALSE(e.contains("with_edge_tiles"));
}

TEST(CliMapspace, BadConstraintsExitTwo) {
  for (const auto& args : {tiny({"--style", "banana"}), tiny({"--min-utilization", "1.5"}),
                           tiny({"--constraints", kData + "/bad_constraints.yaml"}),
                           tiny({"--constraints", kData + "/no_such_file.yaml"}),
                           tiny({"--outer-tile", "Z=4", "--subspaces"})}) {
    const auto r = run_cli(cmd("mapspace", args));
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto r = run_cli(cmd("mapspace", tiny({"--constraints", kData + "/bad_constraints.yaml"})));
  EXPECT_NE(r.err.find("bad_constraints.yaml:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("colour"), std::string::npos) << r.err;
}

TEST(CliMapspace, EmptySpaceIsSaidNotSilent) {
  // fc with K = 6 split over K only (dMazeRunner-like) uses at most 3 of
  // the 4 PEs, so asking for all 4 leaves nothing.
  auto args = tiny({"--min-utilization", "1", "--style", "dmazerunner"});
  args[3] = "fc";
  const auto r = run_cli(cmd("mapspace", args));
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("the mapspace is empty after constraints: no mapping is left once 'PE "
                       "utilisation >= 1'"),
            std::string::npos)
      << r.out;
}

TEST(CliPlugins, ListsTheBuiltInsWithKindVersionAbi) {
  const auto r = run_cli({"plugins"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string abi = " | " + std::to_string(kPluginAbiVersion) + " |";
  for (const std::string row : {"| roofline | costmodel | 1.0.0", "| exhaustive | searcher | 1.0.0",
                                "| random | searcher | 1.1.0"})
    EXPECT_NE(r.out.find(row + abi), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("victory_condition (int, default 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("level_probability (double, default 0)"), std::string::npos) << r.out;
}

TEST(CliPlugins, BrokenPluginsAreReportedNotFatal) {
  const auto r = run_cli({"plugins"}, {"MAPEX_PLUGIN_PATH=" MAPEX_TEST_PLUGIN_DIR
                                       "/broken_abi:" MAPEX_TEST_PLUGIN_DIR "/no_entry"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("| roofline |"), std::string::npos);
  EXPECT_NE(r.err.find("ABI " + std::to_string(kPluginAbiVersion + 100)), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("does not export"), std::string::npos) << r.err;
}

TEST(CliVersion, PrintsVersionAndAbi) {
  const auto r = run_cli({"version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("plugin ABI " + std::to_string(kPluginAbiVersion)), std::string::npos)
      << r.out;
}

// Whole-network scheduling of a four-layer chain on a 4 x 4-node chip:
// segments cover the layers in order, node bands fit the chip, figures add
// up, and the candidate counts shrink through pruning (KAPLA Table VI).
TEST(CliKaplaSchedule, JsonCoversEveryLayerInOrder) {
  const auto r = run_cli({"schedule", "--workload", kData + "/kapla_chain.yaml", "--arch",
                          kData + "/kapla_chip4.yaml", "--k-s", "2", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["network"], "kapla_chain");
  EXPECT_EQ(j["k_s"], 2);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_LE(j["chains_evaluated"].get<int>(), 3);  // k_S chains and the layer-by-layer one
  const auto& p = j["pruning"];
  EXPECT_GE(p["candidates"].get<int>(), p["after_validity_pruning"].get<int>());
  EXPECT_GE(p["after_validity_pruning"].get<int>(), p["after_pareto_pruning"].get<int>());
  std::vector<std::string> order;
  double energy = 0;
  for (const auto& seg : j["segments"]) {
    energy += seg["energy_pj"].get<double>();
    int row = 0;
    for (const auto& l : seg["layers"]) {
      order.push_back(l["layer"]);
      EXPECT_EQ(l["region"]["row"].get<int>(), row);
      row += l["region"]["rows"].get<int>();
      EXPECT_EQ(l["region"]["cols"].get<int>(), 4);
      EXPECT_GT(l["energy_pj"].get<double>(), 0);
    }
    EXPECT_LE(row, 4);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"c1", "c2", "c3", "fc"}));
  EXPECT_NEAR(energy, j["energy_pj"].get<double>(), 1e-6 * energy);
  EXPECT_GT(j["seconds"].get<double>(), 0);
  // The layer-by-layer chain is solved too and never beats the result.
  ASSERT_TRUE(j.contains("layer_by_layer"));
  EXPECT_LE(j["energy_pj"].get<double>(), j["layer_by_layer"]["energy_pj"].get<double>());
  const auto paper =
      run_cli({"schedule", "--workload", kData + "/kapla_chain.yaml", "--arch",
               kData + "/kapla_chip4.yaml", "--no-layer-by-layer", "--format", "json"});
  ASSERT_EQ(paper.status, 0) << paper.err;
  EXPECT_FALSE(nlohmann::json::parse(paper.out).contains("layer_by_layer"));
}

// The shipped LSTM of KAPLA's evaluation on the paper's 16 x 16-node chip:
// a recurrent network unrolled into one graph schedules like a CNN, every
// gate fc and element-wise loop nest once, in file order (k_S = 1 keeps it
// to one chain of intra-layer solves).
TEST(CliKaplaSchedule, ConnectedLstmOnTheMultiNodeChip) {
  const std::string experiments = MAPEX_EXPERIMENTS_DIR;
  const auto r = run_cli({"schedule", "--workload", experiments + "/workloads/kapla_lstm.yaml",
                          "--arch", experiments + "/architectures/kapla_multinode.yaml", "--k-s",
                          "1", "--no-layer-by-layer", "-j", "2", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["network"], "kapla_lstm");
  EXPECT_EQ(j["layers"], 24);
  EXPECT_TRUE(j["valid"].get<bool>());
  EXPECT_EQ(j["chains_evaluated"], 1);
  std::vector<std::string> expected;
  for (const char* step : {"t0", "t1"})
    for (const char* layer : {"l0", "l1", "l2", "l3"})
      for (const char* part : {"gates", "c", "h"})
        expected.push_back(std::string(layer) + "_" + step + "_" + part);
  std::vector<std::string> order;
  double energy = 0;
  for (const auto& seg : j["segments"]) {
    energy += seg["energy_pj"].get<double>();
    for (const auto& l : seg["layers"]) {
      order.push_back(l["layer"]);
      EXPECT_GT(l["energy_pj"].get<double>(), 0);
      EXPECT_GT(l["latency_cycles"].get<double>(), 0);
    }
  }
  EXPECT_EQ(order, expected);
  EXPECT_NEAR(energy, j["energy_pj"].get<double>(), 1e-6 * energy);
  // At least the 1 pJ per MAC of the chip on its 4.1 G MACs.
  EXPECT_GT(j["energy_pj"].get<double>(), 4097536000.0);
}

TEST(CliKaplaSchedule, TableNamesSegmentsRegionsAndCounts) {
  const auto r = run_cli({"schedule", "--workload", kData + "/kapla_chain.yaml", "--arch",
                          kData + "/kapla_chip4.yaml", "--objective", "latency"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("k_S = 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("after validity pruning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 0 | c1 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: energy_pj"), std::string::npos) << r.out;
}

// KAPLA's baselines on the whole network (§V): S, the exhaustive search
// at both levels, and R, random at both levels (allocations kept with a
// probability, random intra-layer search with a budget). Neither is a
// better schedule than S; kapla's is never better than S either.
TEST(CliKaplaSchedule, ExhaustiveAndRandomBaselines) {
  const std::vector<std::string> base{"schedule",
                                      "--workload",
                                      kData + "/kapla_tiny_chain.yaml",
                                      "--arch",
                                      kData + "/kapla_chip4.yaml",
                                      "--format",
                                      "json"};
  const auto run = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto s = run({"--inter-layer", "exhaustive", "--intra-searcher", "exhaustive"});
  const auto r = run({"--inter-layer", "exhaustive", "--allocation-probability", "0.5",
                      "--intra-searcher", "random", "--intra-max-evaluations", "50"});
  const auto k = run({});
  EXPECT_EQ(s["inter_layer"], "exhaustive");
  EXPECT_EQ(s["intra_searcher"], "exhaustive");
  EXPECT_EQ(r["allocation_probability"].get<double>(), 0.5);
  EXPECT_FALSE(r["allocation_keep_one"].get<bool>());
  EXPECT_TRUE(run({"--inter-layer", "exhaustive", "--allocation-probability", "0.5",
                   "--allocation-keep-one", "--intra-searcher", "random", "--intra-max-evaluations",
                   "50"})["allocation_keep_one"]
                  .get<bool>());
  EXPECT_EQ(k["intra_searcher"], "kapla");
  EXPECT_TRUE(k["calibrated"].get<bool>());
  EXPECT_FALSE(s["calibrated"].get<bool>());
  EXPECT_FALSE(run({"--no-calibration"})["calibrated"].get<bool>());
  EXPECT_TRUE(k["filter_pinning"].get<bool>());
  EXPECT_FALSE(run({"--no-filter-pinning"})["filter_pinning"].get<bool>());
  EXPECT_EQ(r["intra_layer_solves_cut"], r["intra_layer_solves"]);
  EXPECT_LT(r["pruning"]["after_pareto_pruning"].get<int>(),
            s["pruning"]["after_pareto_pruning"].get<int>());
  for (const auto* other : {&r, &k})
    EXPECT_LE(s["energy_pj"].get<double>(), (*other)["energy_pj"].get<double>() * (1 + 1e-12));
  EXPECT_GT(s["evaluations"].get<double>(), k["evaluations"].get<double>());
}

// `-o` writes the schedule as a result file: one row per layer in network
// order whose energies add up to the schedule's (idle energy aside), and
// the totals as attributes; a missing directory is refused before the run.
TEST(CliKaplaSchedule, WritesTheScheduleToAResultFile) {
  const std::string out = std::string(MAPEX_TEST_WORK_DIR) + "/schedule_chain.h5";
  std::remove(out.c_str());
  const std::vector<std::string> base{
      "schedule", "--workload", kData + "/kapla_chain.yaml", "--arch", kData + "/kapla_chip4.yaml",
      "--format", "json"};
  auto args = base;
  args.insert(args.end(), {"-o", out});
  const auto r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const host::ResultFile f = host::read_results(out);
  EXPECT_EQ(f.attributes.at("kind"), "schedule");
  EXPECT_EQ(f.attributes.at("network"), "kapla_chain");
  EXPECT_EQ(f.attributes.at("intra_searcher"), "kapla");
  EXPECT_NEAR(std::stod(f.attributes.at("energy_pj")), j["energy_pj"].get<double>(),
              1e-9 * j["energy_pj"].get<double>());
  EXPECT_EQ(std::stoull(f.attributes.at("evaluations")), j["evaluations"].get<std::uint64_t>());
  ASSERT_EQ(f.jobs.size(), 4u);
  const std::vector<std::string> names{"c1", "c2", "c3", "fc"};
  double layers = 0;
  for (size_t i = 0; i < f.jobs.size(); ++i) {
    EXPECT_EQ(f.jobs[i].layer, names[i]);
    EXPECT_EQ(f.jobs[i].status, "ok");
    EXPECT_FALSE(f.jobs[i].best_mapping.empty());
    EXPECT_NE(f.jobs[i].mapping_summary.find("segment "), std::string::npos);
    layers += f.jobs[i].energy_pj;
  }
  EXPECT_LE(layers, j["energy_pj"].get<double>() * (1 + 1e-12));
  EXPECT_GT(layers, 0.5 * j["energy_pj"].get<double>());
  auto bad = base;
  bad.insert(bad.end(), {"-o", "/nonexistent-dir/s.h5"});
  const auto e = run_cli(bad);
  EXPECT_EQ(e.status, 2);
  EXPECT_NE(e.err.find("/nonexistent-dir/s.h5"), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("directory of the result file does not exist"), std::string::npos) << e.err;
}

// KAPLA's tensor-centric directives (§III-B, Listing 1) from the CLI: a
// mapping printed as directives, the directives evaluated in its place and
// converted back give the same figures.
TEST(CliDirectives, RoundTripThroughTheCli) {
  const std::string work = std::string(MAPEX_TEST_WORK_DIR) + "/directives";
  std::filesystem::create_directories(work);
  const std::vector<std::string> layer{"--workload", kData + "/tiny_net.yaml", "--layer", "conv",
                                       "--arch",     kData + "/tiny_arch.yaml"};
  const auto with = [&](std::string command, std::vector<std::string> extra) {
    std::vector<std::string> args{std::move(command)};
    args.insert(args.end(), layer.begin(), layer.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  const auto printed = with("directives", {"--mapping", kData + "/tiny_conv_mapping.yaml"});
  ASSERT_EQ(printed.status, 0) << printed.err;
  EXPECT_NE(printed.out.find("conv:"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("tensor{"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("stack(K+="), std::string::npos) << printed.out;  // K over the PEs
  const std::string kd = work + "/conv.kd";
  std::ofstream(kd) << printed.out;
  const auto energy = [&](const std::vector<std::string>& scheme) {
    auto extra = scheme;
    extra.insert(extra.end(), {"--format", "json"});
    const auto r = with("evaluate", extra);
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out)["metrics"]["energy_pj"].get<double>();
  };
  const double reference = energy({"--mapping", kData + "/tiny_conv_mapping.yaml"});
  EXPECT_DOUBLE_EQ(energy({"--directives", kd}), reference);
  const auto back = with("directives", {"--directives", kd});
  ASSERT_EQ(back.status, 0) << back.err;
  const std::string yaml = work + "/conv_back.yaml";
  std::ofstream(yaml) << back.out;
  EXPECT_DOUBLE_EQ(energy({"--mapping", yaml}), reference);
}

}  // namespace
}  // namespace mapex
