// End-to-end tests of the marvel searcher and the db_locality cost model
// through the real CLI: results, reproducibility at any thread count,
// agreement with exhaustive search on a small layer, and every bad-input
// path (exit 2, one line saying what is wrong).

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file(name, text);
}

std::vector<std::string> marvel_search(std::vector<std::string> extra) {
  std::vector<std::string> args{"search",
                                "--workload",
                                kData + "/tiny_net.yaml",
                                "--layer",
                                "conv",
                                "--arch",
                                kData + "/tiny_arch.yaml",
                                "--costmodel",
                                "mdc",
                                "--format",
                                "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

nlohmann::json json_of(const test::CliResult& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

/// The dimensions split across the PEs in a mapping's YAML, with their
/// factors, e.g. "K: 4, C: 2, Q: 2".
std::vector<std::string> split_dims(const std::string& yaml) {
  const auto open = yaml.find("split: {");
  if (open == std::string::npos) return {};
  const auto body = yaml.substr(open + 8, yaml.find('}', open) - open - 8);
  std::vector<std::string> dims;
  std::size_t at = 0;
  while (at < body.size()) {
    const auto comma = body.find(',', at);
    auto item = body.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    item.erase(0, item.find_first_not_of(' '));
    const auto value = std::stoll(item.substr(item.find(':') + 1));
    if (value > 1) dims.push_back(item);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return dims;
}

std::string expect_bad(const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  return r.err;
}

TEST(CliMarvel, FindsAMappingAndSaysWhatItChose) {
  const auto j = json_of(run_cli(marvel_search({"--searcher", "marvel"})));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_GT(j["evaluations"].get<double>(), 0);
  const std::string why = j["stop_reason"];
  EXPECT_NE(why.find("level-3 tile"), std::string::npos) << why;
  EXPECT_NE(why.find("DMC"), std::string::npos) << why;
  EXPECT_NE(why.find("layouts"), std::string::npos) << why;
}

TEST(CliMarvel, SameResultAtAnyThreadCount) {
  for (const char* objective : {"latency", "energy", "edp"}) {
    const auto one = json_of(
        run_cli(marvel_search({"--searcher", "marvel", "--objective", objective, "-j", "1"})));
    const auto two = json_of(
        run_cli(marvel_search({"--searcher", "marvel", "--objective", objective, "-j", "2"})));
    EXPECT_EQ(one["mapping_yaml"], two["mapping_yaml"]) << objective;
    EXPECT_EQ(one["evaluations"], two["evaluations"]) << objective;
  }
}

// The exhaustive optimum of the factors-only space Marvel draws from (any
// number of split dimensions, utilisation >= 0.1). The conv run fixes the
// point-loop and DRAM orders, which mdc does not read, to stay fast.
// Issue 5's targets are within 5% of the optimum with at least 1,000x fewer
// evaluations than the exhaustive search; these spaces are small (they must
// be enumerated in seconds), so the ratio Marvel reaches on them is far
// below 1,000x. Both searches are deterministic: the bounds below are the
// ratios these cases reach (conv 69,197 / 3,491 = 19.8x; gemm 15,822 /
// 1,372 = 11.5x, with the on-chip spaces of 8 level-3 tiles searched) with
// about 15% margin, so a searcher that evaluates notably more fails here.
TEST(CliMarvel, CloseToExhaustiveWithFarFewerEvaluations) {
  struct Case {
    const char* layer;
    std::vector<std::string> constraints;
    std::string max_parallel_dims;  ///< the same space for Marvel
    double min_ratio;               ///< exhaustive evaluations / Marvel's evaluations
  };
  for (const Case& c :
       {Case{"conv", {"--constraints", kData + "/marvel_exhaustive_constraints.yaml"}, "7", 17},
        Case{"gemm", {"--max-parallel-dims", "3", "--min-utilization", "0.1"}, "3", 10}}) {
    std::vector<std::string> base{"search",
                                  "--workload",
                                  kData + "/marvel_small_net.yaml",
                                  "--layer",
                                  c.layer,
                                  "--arch",
                                  kData + "/tiny_arch.yaml",
                                  "--costmodel",
                                  "mdc",
                                  "--format",
                                  "json"};
    auto ex_args = base;
    ex_args.insert(ex_args.end(), {"--searcher", "exhaustive"});
    ex_args.insert(ex_args.end(), c.constraints.begin(), c.constraints.end());
    auto mv_args = base;
    mv_args.insert(mv_args.end(),
                   {"--searcher", "marvel", "--max-parallel-dims", c.max_parallel_dims});
    const auto ex = json_of(run_cli(ex_args));
    const auto mv = json_of(run_cli(mv_args));
    ASSERT_EQ(ex["complete"], true);
    const double best = ex["metrics"]["latency_cycles"];
    const double found = mv["metrics"]["latency_cycles"];
    EXPECT_LE(found, best * 1.05) << c.layer << ": exhaustive " << best << ", marvel " << found;
    EXPECT_GE(found, best) << c.layer;  // exhaustive covers Marvel's space
    const double ratio = ex["evaluations"].get<double>() / mv["evaluations"].get<double>();
    EXPECT_GE(ratio, c.min_ratio) << c.layer << ": " << ex["evaluations"] << " exhaustive, "
                                  << mv["evaluations"] << " marvel";
  }
}

TEST(CliMarvel, MoreOffchipCandidatesNeverHurt) {
  const auto one =
      json_of(run_cli(marvel_search({"--searcher", "marvel", "--param", "offchip_candidates=1"})));
  const auto four =
      json_of(run_cli(marvel_search({"--searcher", "marvel", "--param", "offchip_candidates=4"})));
  EXPECT_LE(four["metrics"]["latency_cycles"].get<double>(),
            one["metrics"]["latency_cycles"].get<double>());
  EXPECT_GT(four["evaluations"].get<double>(), one["evaluations"].get<double>());
}

TEST(CliMarvel, JointTilingsAndFixedOrdersAreOptions) {
  const auto coord =
      json_of(run_cli(marvel_search({"--searcher", "marvel", "--param", "split_candidates=2"})));
  const auto joint =
      json_of(run_cli(marvel_search({"--searcher", "marvel", "--param", "split_candidates=0"})));
  const auto fixed = json_of(run_cli(marvel_search(
      {"--searcher", "marvel", "--param", "split_candidates=2", "--param", "order_candidates=0"})));
  EXPECT_GT(joint["evaluations"].get<double>(), coord["evaluations"].get<double>());
  EXPECT_LT(fixed["evaluations"].get<double>(), coord["evaluations"].get<double>());
  EXPECT_NE(std::string(fixed["stop_reason"]).find("+ 0 level-2 orders"), std::string::npos);
  // Level-2 orders can only help the best tilings.
  EXPECT_LE(coord["metrics"]["latency_cycles"].get<double>(),
            fixed["metrics"]["latency_cycles"].get<double>());
}

TEST(CliMarvel, UtilisationBoundDroppedForALayerTooSmall) {
  const std::string net = write(
      "marvel_one.yaml", "network: one\nlayers:\n  - {name: g, type: gemm, M: 1, N: 1, K: 2}\n");
  const auto j = json_of(run_cli({"search", "--workload", net, "--arch", kData + "/tiny_arch.yaml",
                                  "--searcher", "marvel", "--costmodel", "mdc", "--param",
                                  "min_utilization=1", "--format", "json"}));
  EXPECT_EQ(j["status"], "ok");
  // Dropped, and said so in a field the result file keeps.
  const std::string why = j["stop_reason"];
  EXPECT_NE(why.find("utilization_bound=dropped"), std::string::npos) << why;
  EXPECT_NE(why.find("min_utilization=1"), std::string::npos) << why;
  // Asked not to drop it: no mapping, and the reason says the bound is unmet.
  const auto r =
      run_cli({"search", "--workload", net, "--arch", kData + "/tiny_arch.yaml", "--searcher",
               "marvel", "--costmodel", "mdc", "--param", "min_utilization=1", "--param",
               "drop_unmet_utilization=false", "--format", "json"});
  EXPECT_NE(r.out.find("utilization_bound=unmet"), std::string::npos) << r.out << r.err;
}

// Each variant searches its own level-3 tiles. On P2 (1,024 PEs) the
// best-DMC tile of DeepBench's 35 x 8457 x 2560 GEMM is M7 N10 K2819
// (8457 = 3 x 2819), under which at most M7 x N10 = 70 PEs can work:
// below p = 0.1. It used to be every variant's one tile, and the bound was
// dropped (29x the roofline peak). Now even a single off-chip candidate is
// one under which the variant's own splits can reach p, and the result
// says the bound is met.
TEST(CliMarvel, EachVariantKeepsTilesThatCanReachTheBound) {
  for (const std::vector<std::string>& style :
       {std::vector<std::string>{}, std::vector<std::string>{"--style", "dmazerunner"}}) {
    std::vector<std::string> args{"search",
                                  "--workload",
                                  MAPEX_EXPERIMENTS_DIR "/workloads/gemm_sigma.yaml",
                                  "--layer",
                                  "deepbench_35x8457x2560",
                                  "--arch",
                                  MAPEX_EXPERIMENTS_DIR "/architectures/marvel_p2.yaml",
                                  "--searcher",
                                  "marvel",
                                  "--costmodel",
                                  "mdc",
                                  "--max-parallel-dims",
                                  "3",
                                  "--param",
                                  "offchip_candidates=1",
                                  "--format",
                                  "json"};
    args.insert(args.end(), style.begin(), style.end());
    const auto j = json_of(run_cli(args));
    const std::string why = j["stop_reason"];
    EXPECT_NE(why.find("utilization_bound=met"), std::string::npos) << why;
    EXPECT_EQ(why.find("M7 N10 K2819"), std::string::npos) << why;
    std::int64_t pes = 1;
    for (const auto& d : split_dims(j["mapping_yaml"]))
      pes *= std::stoll(d.substr(d.find(':') + 1));
    EXPECT_GE(pes, 103) << j["mapping_yaml"];  // 10% of 1,024 PEs
  }
}

TEST(CliMarvel, StylesConstrainTheOnChipSpace) {
  const auto j =
      json_of(run_cli(marvel_search({"--searcher", "marvel", "--style", "dmazerunner"})));
  EXPECT_EQ(j["status"], "ok");
  // dMazeRunner-like: only K is split across the PEs.
  const std::string yaml = j["mapping_yaml"];
  const auto open = yaml.find("split: {", yaml.find("PEs:"));
  ASSERT_NE(open, std::string::npos) << yaml;
  const auto split = yaml.substr(open, yaml.find('}', open) - open);
  EXPECT_NE(split.find("K:"), std::string::npos) << split;
  for (const char* dim : {"C:", "P:", "Q:", "R:", "S:"})
    EXPECT_EQ(split.find(dim), std::string::npos) << split;
}

// The job's mapspace is honoured: on 16 PEs this layer's fastest mapping
// splits three dimensions (K4 C2 Q2) when the space allows any number,
// and with the mapspace's max_parallel_dims: 2 Marvel returns at most two
// (it used to replace the job's limit with the number of dimensions).
TEST(CliMarvel, HonoursTheJobsMaxParallelDims) {
  std::ifstream in(kData + "/tiny_arch.yaml");
  std::string arch((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = arch.find("shape: [2, 2]");
  ASSERT_NE(at, std::string::npos);
  arch.replace(at, 13, "shape: [4, 4]");
  const std::string arch_path = write("marvel_16pe.yaml", arch);
  const std::string net =
      write("marvel_three.yaml",
            "network: three\nlayers:\n  - {name: conv, type: conv2d, C: 4, K: 4, H: 4, W: 4, R: 3, "
            "S: 3}\n");
  auto search = [&](const std::string& limit) {
    const std::string constraints =
        write("marvel_par" + limit + ".yaml", "max_parallel_dims: " + limit + "\n");
    return json_of(
        run_cli({"search", "--workload", net, "--arch", arch_path, "--searcher", "marvel",
                 "--costmodel", "mdc", "--constraints", constraints, "--format", "json"}));
  };
  const auto any = search("7");
  EXPECT_EQ(split_dims(any["mapping_yaml"]).size(), 3u) << any["mapping_yaml"];
  const auto two = search("2");
  const auto dims = split_dims(two["mapping_yaml"]);
  EXPECT_GE(dims.size(), 1u) << two["mapping_yaml"];
  EXPECT_LE(dims.size(), 2u) << two["mapping_yaml"];
  EXPECT_GE(two["metrics"]["latency_cycles"].get<double>(),
            any["metrics"]["latency_cycles"].get<double>());
  // The limit in force is recorded with the result.
  EXPECT_NE(std::string(two["stop_reason"]).find("max_parallel_dims=2"), std::string::npos)
      << two["stop_reason"];
  // The searcher's own parameter can only lower the job's limit.
  const auto lowered = json_of(run_cli(
      {"search", "--workload", net, "--arch", arch_path, "--searcher", "marvel", "--costmodel",
       "mdc", "--max-parallel-dims", "7", "--param", "max_parallel_dims=1", "--format", "json"}));
  EXPECT_EQ(split_dims(lowered["mapping_yaml"]).size(), 1u) << lowered["mapping_yaml"];
}

TEST(CliMarvel, NonConformableOperatorNamesTheRule) {
  const std::string bad =
      write("marvel_diag.yaml",
            "network: d\nlayers:\n  - name: windows\n    type: loopnest\n"
            "    dims: {I: 8, J: 8}\n    tensors:\n"
            "      - {name: A, role: input, subscripts: [I + J, I + J*2]}\n"
            "      - {name: B, role: output, reduction: sum, subscripts: [I, J]}\n");
  const std::string e =
      expect_bad({"search", "--workload", bad, "--arch", kData + "/tiny_arch.yaml", "--searcher",
                  "marvel", "--costmodel", "mdc"});
  EXPECT_NE(e.find("not conformable"), std::string::npos) << e;
  EXPECT_NE(e.find("rule 3"), std::string::npos) << e;
}

TEST(CliMarvel, L2TooSmallForAnyTile) {
  std::ifstream in(kData + "/tiny_arch.yaml");
  std::string arch((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = arch.find("size_bytes: 2048");
  ASSERT_NE(at, std::string::npos);
  arch.replace(at, 16, "size_bytes: 128");
  const std::string path = write("marvel_small_l2.yaml", arch);
  const std::string e =
      expect_bad({"search", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
                  path, "--searcher", "marvel", "--costmodel", "mdc"});
  EXPECT_NE(e.find("cannot hold even a minimal level-3 tile"), std::string::npos) << e;
  EXPECT_NE(e.find("L2 (128 B"), std::string::npos) << e;
}

TEST(CliMarvel, OffchipSpaceTooLargeWithoutFactorsOnly) {
  const std::string e = expect_bad(
      {"search", "--workload", MAPEX_EXPERIMENTS_DIR "/workloads/vgg16.yaml", "--layer", "conv1_2",
       "--arch", MAPEX_EXPERIMENTS_DIR "/architectures/marvel_p2.yaml", "--searcher", "marvel",
       "--costmodel", "mdc", "--edge-tiles", "--param", "factors_only=false"});
  EXPECT_NE(e.find("too many to enumerate"), std::string::npos) << e;
}

TEST(CliMarvel, BadParameters) {
  for (const char* p : {"min_utilization=1.5", "offchip_candidates=0", "order_candidates=-1",
                        "block_bytes=-4", "max_parallel_dims=-1", "nonsense=1"}) {
    const std::string e = expect_bad(marvel_search({"--searcher", "marvel", "--param", p}));
    const std::string key = std::string(p).substr(0, std::string(p).find('='));
    EXPECT_NE(e.find(key), std::string::npos) << e;
  }
}

TEST(CliDbLocality, EvaluatesOffchipTraffic) {
  const auto r =
      run_cli({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
               kData + "/tiny_arch.yaml", "--mapping", kData + "/tiny_conv_mapping.yaml",
               "--costmodel", "db_locality", "--format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["metrics"]["valid"], true) << r.out;
  EXPECT_GT(j["metrics"]["latency_cycles"].get<double>(), 0);
  EXPECT_GT(j["metrics"]["energy_pj"].get<double>(), 0);
}

TEST(CliDbLocality, BadParameters) {
  for (const char* p : {"layout=diagonal", "block_bytes=-1"}) {
    const std::string e =
        expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
                    kData + "/tiny_arch.yaml", "--mapping", kData + "/tiny_conv_mapping.yaml",
                    "--costmodel", "db_locality", "--param", p});
    EXPECT_NE(e.find(std::string(p).substr(0, std::string(p).find('='))), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace mapex
