// Every kind of bad input exits with status 2 and one line naming the file,
// line and column, the key and what was expected; no stack trace, and an
// existing result file is left as it was.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
using test::slurp;
const std::string kData = MAPEX_TEST_DATA_DIR;
const std::string kWork = MAPEX_TEST_WORK_DIR;

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file(name, text);
}

const std::string kGood =
    "name: bad\n"
    "workloads: [" +
    kData +
    "/tiny_net.yaml]\n"
    "architectures: [" +
    kData +
    "/tiny_arch.yaml]\n"
    "budget: {evaluations: 10}\n"
    "searchers: [random]\n"
    "costmodels: [roofline]\n";

class BadInput : public ::testing::Test {
 protected:
  // One guard per test: ctest runs the tests of this fixture in parallel.
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    guard_ = write("guard_" + test + ".h5", "results that must survive");
  }

  // Runs `mapex run` on experiment text with the guard file as output and
  // checks the common contract; returns the message.
  std::string run_bad(const std::string& name, const std::string& experiment) {
    return expect_bad({"run", write(name, experiment), "-o", guard_});
  }

  std::string expect_bad(const std::vector<std::string>& args) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(guard_), "results that must survive");
    return r.err;
  }

  std::string guard_;
};

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

TEST_F(BadInput, YamlSyntaxError) {
  const std::string e = run_bad("syntax.yaml", "name: x\nworkloads: [a, b\nsearchers: [random]\n");
  EXPECT_HAS(e, "syntax.yaml:");
  EXPECT_HAS(e, "YAML syntax error");
}

TEST_F(BadInput, UnknownKey) {
  const std::string e = run_bad("unknown_key.yaml", kGood + "colour: blue\n");
  EXPECT_HAS(e, "unknown_key.yaml:7:1: key 'colour': unknown key in an experiment file");
  EXPECT_HAS(e, "expected one of:");
}

TEST_F(BadInput, WrongType) {
  write("wrong_type_net.yaml", "network: n\nlayers:\n  - {name: a, type: fc, C: 4, K: abc}\n");
  const std::string e = run_bad(
      "wrong_type.yaml", "name: x\nworkloads: [wrong_type_net.yaml]\narchitectures: [" + kData +
                             "/tiny_arch.yaml]\nsearchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "wrong_type_net.yaml:3:");
  EXPECT_HAS(e, "key 'K': expected a positive integer, got 'abc'");
}

TEST_F(BadInput, ZeroDimension) {
  write("zero_net.yaml", "network: n\nlayers:\n  - name: a\n    type: fc\n    C: 4\n    K: 0\n");
  const std::string e =
      run_bad("zero.yaml", "name: x\nworkloads: [zero_net.yaml]\narchitectures: [" + kData +
                               "/tiny_arch.yaml]\nsearchers: [random]\n"
                               "costmodels: [roofline]\n");
  EXPECT_HAS(e, "zero_net.yaml:6:8: key 'K': expected a positive integer, got '0'");
}

TEST_F(BadInput, ZeroSizeLevelNamesTheLevel) {
  // KAPLA's hardware template (§III-C): a level of size zero is refused
  // with the level named, for a buffer and for an array dimension.
  std::string arch = slurp(kData + "/tiny_arch.yaml");
  arch.replace(arch.find("size_bytes: 2048"), 16, "size_bytes: 0");
  write("zero_arch.yaml", arch);
  std::string e =
      run_bad("zero_level.yaml", "name: x\nworkloads: [" + kData +
                                     "/tiny_net.yaml]\narchitectures: [zero_arch.yaml]\n"
                                     "searchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "zero_arch.yaml:22:17: key 'size_bytes': level 'L2' has size 0 bytes");
  arch = slurp(kData + "/tiny_arch.yaml");
  arch.replace(arch.find("shape: [2, 2]"), 13, "shape: [2, 0]");
  write("zero_array.yaml", arch);
  e = run_bad("zero_array_exp.yaml", "name: x\nworkloads: [" + kData +
                                         "/tiny_net.yaml]\narchitectures: [zero_array.yaml]\n"
                                         "searchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "key 'shape': level 'PEs' has an array dimension of 0");
}

TEST_F(BadInput, CyclicAndMismatchedGraphsNameTheLayer) {
  write("cyclic_net.yaml",
        "network: n\nlayers:\n  - {name: a, type: fc, C: 4, K: 4, inputs: [b]}\n"
        "  - {name: b, type: fc, C: 4, K: 4, inputs: [a]}\n");
  std::string e =
      run_bad("cyclic.yaml", "name: x\nworkloads: [cyclic_net.yaml]\narchitectures: [" + kData +
                                 "/tiny_arch.yaml]\nsearchers: [random]\n"
                                 "costmodels: [roofline]\n");
  EXPECT_HAS(e, "layer 'b' is not defined before 'a'");
  write("mismatch_net.yaml",
        "network: n\ntraining: true\nlayers:\n  - {name: a, type: fc, C: 4, K: 8, inputs: []}\n"
        "  - {name: b, type: fc, C: 6, K: 4}\n");
  e = run_bad("mismatch.yaml", "name: x\nworkloads: [mismatch_net.yaml]\narchitectures: [" + kData +
                                   "/tiny_arch.yaml]\nsearchers: [random]\n"
                                   "costmodels: [roofline]\n");
  EXPECT_HAS(e, "layer 'b' reads 6 channels but its producers give 8");
}

TEST_F(BadInput, SubscriptNamesUnknownDimension) {
  write("subscript_net.yaml",
        "network: n\nlayers:\n  - name: a\n    type: loopnest\n    dims: {I: 4, J: 4}\n"
        "    tensors:\n      - {name: X, role: input, subscripts: [I + Z]}\n"
        "      - {name: Y, role: output, subscripts: [J]}\n");
  const std::string e = run_bad("subscript.yaml",
                                "name: x\nworkloads: [subscript_net.yaml]\n"
                                "architectures: [" +
                                    kData +
                                    "/tiny_arch.yaml]\n"
                                    "searchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "subscript_net.yaml:7:");
  EXPECT_HAS(e, "key 'subscripts'");
  EXPECT_HAS(e, "unknown dimension 'Z'");
}

TEST_F(BadInput, MissingWorkloadFile) {
  const std::string e =
      run_bad("missing_workload.yaml",
              "name: x\nworkloads: [nowhere.yaml]\narchitectures: [" + kData +
                  "/tiny_arch.yaml]\nsearchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "missing_workload.yaml:2:13: key 'file': workload file");
  EXPECT_HAS(e, "nowhere.yaml' does not exist");
}

// A directory named as a workload or architecture read as an empty file,
// reported at the directory's "line 1" (fuzz_experiment, this round).
TEST_F(BadInput, DirectoryNamedAsAWorkloadOrArchitecture) {
  std::string e =
      run_bad("dir_arch.yaml", "name: x\nworkloads: [" + kData +
                                   "/tiny_net.yaml]\narchitectures:\n  - file: " + kData +
                                   "\nsearchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "dir_arch.yaml:4:11: key 'file': architecture file '" + kData + "' is a directory");
  e = run_bad("dir_workload.yaml",
              "name: x\nworkloads: [" + kData + "]\narchitectures: [" + kData +
                  "/tiny_arch.yaml]\nsearchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "dir_workload.yaml:2:13: key 'file': workload file '" + kData + "' is a directory");
  // On the command line too.
  EXPECT_HAS(expect_bad({"mapspace", "--workload", kData, "--arch", kData + "/tiny_arch.yaml"}),
             "mapex: error: " + kData + ": is a directory; expected a file");
  EXPECT_HAS(expect_bad({"mapspace", "--workload", kData + "/tiny_net.yaml", "--layer", "conv",
                         "--arch", kData}),
             "mapex: error: " + kData + ": is a directory; expected a file");
}

TEST_F(BadInput, MissingArchitectureFile) {
  const std::string e =
      run_bad("missing_arch.yaml", "name: x\nworkloads: [" + kData +
                                       "/tiny_net.yaml]\narchitectures:\n"
                                       "  - file: no_chip.yaml\n"
                                       "searchers: [random]\ncostmodels: [roofline]\n");
  EXPECT_HAS(e, "missing_arch.yaml:4:");
  EXPECT_HAS(e, "architecture file");
  EXPECT_HAS(e, "no_chip.yaml' does not exist");
}

TEST_F(BadInput, UnknownPlugin) {
  std::string text = kGood;
  text.replace(text.find("searchers: [random]"), 19, "searchers: [tabu_search]");
  const std::string e = run_bad("unknown_plugin.yaml", text);
  EXPECT_HAS(e, "unknown_plugin.yaml:5:13");
  EXPECT_HAS(e,
             "unknown searcher 'tabu_search' (known: annealing, exhaustive, flash, genetic, kapla, "
             "marvel, nn_dataflow, optimal, random)");
}

TEST_F(BadInput, UnknownSearcherParameter) {
  std::string text = kGood;
  text.replace(text.find("searchers: [random]"), 19,
               "searchers:\n  - plugin: random\n    params: {temperature: 3}");
  const std::string e = run_bad("unknown_param.yaml", text);
  EXPECT_HAS(e,
             "unknown_param.yaml:6:5: key 'temperature': unknown parameter of searcher 'random'");
  EXPECT_HAS(e, "victory_condition");
}

// Uniform random sampling never ends by itself: without a budget (nor a
// victory condition) its jobs used to fail one by one at run time; the
// experiment is now refused at load, at the searcher's entry, and no result
// file is created.
TEST_F(BadInput, SearcherThatNeedsABudgetHasNone) {
  std::string text = kGood;
  text.erase(text.find("budget: {evaluations: 10}\n"), 26);
  EXPECT_HAS(run_bad("no_budget.yaml", text),
             "no_budget.yaml:4:13: key 'budget': searcher 'random' needs a budget (evaluations "
             "or seconds) or a victory_condition, or it would never stop");
  const std::string fresh = kWork + "/no_budget_fresh.h5";
  std::remove(fresh.c_str());
  const auto r = run_cli({"run", write("no_budget.yaml", text), "-o", fresh});
  EXPECT_EQ(r.status, 2) << r.err;
  std::ifstream written(fresh);
  EXPECT_FALSE(written.good()) << fresh << " was created";
  // A searcher entry's own budget or a victory condition make the search
  // end: accepted (the per-level mode, which also ends by itself, is
  // RandomLevelSearch.NeedsNoBudgetButUniformSamplingDoes).
  for (const char* entry : {"  - {plugin: random, budget: {seconds: 0.2}}",
                            "  - {plugin: random, params: {victory_condition: 3}}"}) {
    std::string ok = text;
    ok.replace(ok.find("searchers: [random]"), 19, std::string("searchers:\n") + entry);
    const auto fine = run_cli(
        {"run", write("budget_given.yaml", ok), "-o", kWork + "/budget_given.h5", "--force", "-q"});
    EXPECT_EQ(fine.status, 0) << entry << ": " << fine.err;
  }
  // `search` refuses it before searching, at the options that give a budget.
  const std::vector<std::string> search{"search", "--workload", kData + "/tiny_net.yaml", "--layer",
                                        "conv",   "--arch",     kData + "/tiny_arch.yaml"};
  auto args = search;
  args.insert(args.end(), {"--searcher", "random"});
  EXPECT_HAS(expect_bad(args),
             "mapex: error: --max-evaluations: key 'budget': searcher 'random' needs a budget");
  args = search;
  args.insert(args.end(), {"--searcher", "exhaustive", "--objective", "speed"});
  EXPECT_HAS(expect_bad(args),
             "mapex: error: --objective: key 'objective': expected latency, energy or edp, got "
             "'speed'");
}

TEST_F(BadInput, SearcherOperatorKinds) {
  std::string text = kGood;
  text.replace(text.find("searchers: [random]"), 19,
               "searchers:\n  - plugin: random\n    operators: [matmul]");
  std::string e = run_bad("unknown_kind.yaml", text);
  EXPECT_HAS(e,
             "unknown_kind.yaml:7:16: key 'operators': expected operator kinds among conv2d, "
             "fc, gemm, loopnest, got 'matmul'");
  text = kGood;
  text.replace(text.find("searchers: [random]"), 19,
               "searchers:\n  - plugin: random\n    operators: [gemm]");
  e = run_bad("no_layer.yaml", text);
  EXPECT_HAS(e, "no_layer.yaml:6:5: key 'operators': searcher 'random' runs on no layer");
  text = kGood;
  text.replace(text.find("searchers: [random]"), 19,
               "searchers:\n  - plugin: random\n    operators: []");
  e = run_bad("no_kind.yaml", text);
  EXPECT_HAS(e, "no_kind.yaml:7:16: key 'operators': expected a non-empty list");
}

TEST_F(BadInput, RandomLevelProbabilityOutOfRange) {
  // KAPLA §V's per-level probability: 0 (off) or a probability in (0, 1].
  for (const std::string bad : {"-0.1", "1.5"}) {
    const std::string e = expect_bad({"search", "--workload", kData + "/tiny_net.yaml", "--layer",
                                      "conv", "--arch", kData + "/tiny_arch.yaml", "--searcher",
                                      "random", "--param", "level_probability=" + bad});
    // Placed at the option that gave it, as a file's error at its line.
    EXPECT_HAS(e, "mapex: error: --param: key 'level_probability'");
    EXPECT_HAS(e, "0 (off, uniform sampling) or a probability in (0, 1], got " + bad);
    std::string text = kGood;
    text.replace(text.find("searchers: [random]"), 19,
                 "searchers:\n  - plugin: random\n    params: {level_probability: " + bad + "}");
    const std::string y = run_bad("level_probability.yaml", text);
    EXPECT_HAS(y, "level_probability");
    EXPECT_HAS(y, "(0, 1], got " + bad);
  }
  const std::string e = expect_bad({"search", "--workload", kData + "/tiny_net.yaml", "--layer",
                                    "conv", "--arch", kData + "/tiny_arch.yaml", "--searcher",
                                    "random", "--param", "level_probability=often"});
  EXPECT_HAS(e, "level_probability");
  EXPECT_HAS(e, "double");
  // A cost model's parameter the same way.
  EXPECT_HAS(expect_bad({"search", "--workload", kData + "/tiny_net.yaml", "--layer", "conv",
                         "--arch", kData + "/tiny_arch.yaml", "--searcher", "exhaustive",
                         "--costmodel", "mdc", "--costmodel-param", "nosuch=1"}),
             "mapex: error: --costmodel-param: key 'nosuch': unknown parameter of costmodel 'mdc'");
}

TEST_F(BadInput, OutputCannotBeWritten) {
  const std::string blocker = write("a_file", "not a directory");
  const auto r = run_cli({"run", write("good.yaml", kGood), "-o", blocker + "/out.h5"});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "a_file/out.h5: cannot create the result file");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// The campaign's `-o DIR` said "cannot create the result file: Success".
TEST_F(BadInput, OutputIsADirectory) {
  const std::string e = expect_bad({"run", write("good.yaml", kGood), "-o", kWork});
  EXPECT_HAS(e, kWork + ": is a directory; -o expects a result file name");
  EXPECT_EQ(e.find("Success"), std::string::npos) << e;
}

TEST_F(BadInput, MissingExperimentFile) {
  const std::string e = expect_bad({"run", kWork + "/no_such_experiment.yaml", "-o", guard_});
  EXPECT_HAS(e, "no_such_experiment.yaml: experiment file does not exist");
}

TEST_F(BadInput, UsageErrors) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"frobnicate"}, {"evaluate", "--arch", kData + "/tiny_arch.yaml"}, {"run"}}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  }
}

TEST_F(BadInput, MappingOutsideTheBounds) {
  write("bad_mapping.yaml", "L1:\n  tile: {K: 16}\n");
  const std::string e =
      expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
                  kData + "/tiny_arch.yaml", "--mapping", kWork + "/bad_mapping.yaml"});
  EXPECT_HAS(e, "bad_mapping.yaml");
  EXPECT_HAS(e, "tile of K is 16");
}

// Keep/bypass and partitions: an unknown tensor in `keep`, a
// partition whose sizes do not add up, and a model asked to evaluate a
// bypass it cannot model.
TEST_F(BadInput, KeepNamesAnUnknownTensor) {
  write("bad_keep.yaml", "L1:\n  tile: {R: 3}\n  keep: [Input, Wieght]\n");
  const std::string e =
      expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
                  kData + "/tiny_arch.yaml", "--mapping", kWork + "/bad_keep.yaml"});
  EXPECT_HAS(e, "bad_keep.yaml:3:");
  EXPECT_HAS(e, "key 'keep': unknown tensor 'Wieght'");
}

TEST_F(BadInput, PartitionsThatDoNotAddUp) {
  write("bad_partitions.yaml",
        "name: p\nclock_mhz: 1000\nword_bits: 8\nlevels:\n"
        "  - name: L1\n    kind: buffer\n    size_bytes: 100\n    partitions:\n"
        "      - {name: w, tensors: [Weight], size_bytes: 64}\n"
        "      - {name: io, tensors: [Input, Output], size_bytes: 32}\n"
        "  - {name: PEs, kind: spatial, shape: [4], noc: {bandwidth_gbps: 1}}\n"
        "  - {name: DRAM, kind: dram, bandwidth_gbps: 1}\n");
  const std::string e =
      expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv", "--arch",
                  kWork + "/bad_partitions.yaml", "--mapping", kData + "/tiny_conv_mapping.yaml"});
  EXPECT_HAS(e, "bad_partitions.yaml:7:");
  EXPECT_HAS(e, "key 'size_bytes'");
  EXPECT_HAS(e, "partitions adding up to 96 B; size_bytes says 100 B");
}

TEST_F(BadInput, ModelRefusesABypassItCannotModel) {
  write("bypass_mapping.yaml",
        "L1:\n  tile: {K: 1, C: 1, P: 1, Q: 1, R: 3, S: 3}\n  order: [R, S]\n"
        "  keep: [Weight, Output]\nPEs:\n  split: {K: 4}\n"
        "L2:\n  tile: {K: 4, C: 4, P: 2, Q: 2, R: 3, S: 3}\n  order: [C, P, Q]\n");
  const std::string e = expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer",
                                    "conv", "--arch", kData + "/tiny_arch.yaml", "--mapping",
                                    kWork + "/bypass_mapping.yaml", "--costmodel", "mdc"});
  EXPECT_HAS(e, "bypass_mapping.yaml:4:");
  EXPECT_HAS(e, "key 'keep': level 'L1': bypasses tensor 'Input'; cost model 'mdc'");
}

TEST_F(BadInput, UnknownLayer) {
  const std::string e =
      expect_bad({"evaluate", "--workload", kData + "/tiny_net.yaml", "--layer", "conv9", "--arch",
                  kData + "/tiny_arch.yaml", "--mapping", kData + "/tiny_conv_mapping.yaml"});
  EXPECT_HAS(e, "key 'layer': no layer 'conv9' in network 'tiny'; expected one of: conv, fc");
}

// `mapex schedule` needs one connected graph and shapes that agree between
// producers and consumers; each bad input names the layer.
TEST_F(BadInput, ScheduleNeedsOneConnectedGraph) {
  const std::string e = expect_bad(
      {"schedule", "--workload", std::string(MAPEX_EXPERIMENTS_DIR) + "/workloads/kapla_small.yaml",
       "--arch", kData + "/kapla_chip4.yaml"});
  // At the entry of the first layer outside layer 0's graph.
  EXPECT_HAS(e,
             "kapla_small.yaml:12:5: key 'inputs': network 'kapla_small' is not one connected "
             "graph: layer 'conv1x1'");
}

TEST_F(BadInput, ShapesThatDisagreeNameTheLayer) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"  - {name: a, type: conv2d, C: 3, K: 8, H: 8, W: 8, R: 3, S: 3, inputs: []}\n"
       "  - {name: b, type: conv2d, C: 8, K: 8, H: 8, W: 8, R: 1, S: 1}\n",
       "layer 'b' reads 8x8 pixels but its producer 'a' gives 6x6"},
      {"  - {name: a, type: conv2d, C: 3, K: 8, H: 8, W: 8, R: 1, S: 1, inputs: []}\n"
       "  - {name: b, type: conv2d, N: 2, C: 8, K: 8, H: 8, W: 8, R: 1, S: 1}\n",
       "layer 'b' reads a batch of 2 but its producer 'a' gives 1"},
      {"  - {name: a, type: gemm, M: 16, N: 32, K: 8, inputs: []}\n"
       "  - {name: b, type: gemm, M: 8, N: 4, K: 32}\n",
       "layer 'b' has M = 8 but its producer 'a' has M = 16"},
      {"  - {name: a, type: gemm, M: 16, N: 32, K: 8, inputs: []}\n"
       "  - {name: b, type: gemm, M: 16, N: 4, K: 24}\n",
       "layer 'b' reads K = 24 but its producers give N = 32"}};
  int i = 0;
  for (const auto& [layers, message] : cases) {
    const std::string net =
        write("shape_net" + std::to_string(i++) + ".yaml", "network: n\nlayers:\n" + layers);
    for (const std::string command : {"schedule", "mapspace"}) {
      std::vector<std::string> args{command, "--workload", net, "--arch",
                                    kData + "/kapla_chip4.yaml"};
      if (command == "mapspace") args.insert(args.end(), {"--layer", "a"});
      EXPECT_HAS(expect_bad(args), message);
    }
  }
}

TEST_F(BadInput, ScheduleOptions) {
  const std::vector<std::string> base{"schedule", "--workload", kData + "/kapla_chain.yaml",
                                      "--arch", kData + "/kapla_chip4.yaml"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--objective", "edp"}, "--objective expects energy or latency, got 'edp'"},
      {{"--k-s", "0"}, "--k-s expects 1 or more, got 0"},
      {{"--max-segment-layers", "0"}, "--max-segment-layers expects 1 or more"},
      {{"--format", "xml"}, "--format expects table or json, got 'xml'"},
      {{"--searcher", "random"}, "searcher 'random' maps one layer at a time"},
      {{"--inter-layer", "greedy"}, "--inter-layer expects pruned or exhaustive, got 'greedy'"},
      {{"--inter-layer", "exhaustive", "--allocation-probability", "0"},
       "--allocation-probability expects a probability in (0, 1], got 0"},
      {{"--inter-layer", "exhaustive", "--allocation-probability", "1.5"},
       "--allocation-probability expects a probability in (0, 1], got 1.5"},
      {{"--allocation-probability", "0.5"}, "give --inter-layer exhaustive too"},
      {{"--inter-layer", "exhaustive", "--allocation-keep-one"},
       "give --allocation-probability below 1 too"},
      {{"--intra-param", "x=1"}, "--intra-param needs --intra-searcher"},
      {{"--intra-searcher", "exhaustive", "--intra-param", "x"},
       "--intra-param expects key=value, got 'x'"},
      {{"--intra-searcher", "nosuch"}, "nosuch"},
      {{"--intra-max-seconds", "-1"}, "--intra-max-seconds expects 0 (none) or a positive"},
      {{"--intra-max-evaluations", "-1"}, "--intra-max-evaluations expects 0 (none) or a positive"},
      {{"-o", "/tmp"}, "/tmp: is a directory; -o expects a result file name"},
      {{"--intra-searcher", "random"},
       "--intra-max-evaluations: key 'budget': searcher 'random' needs a budget"}};
  for (const auto& [extra, message] : cases) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    EXPECT_HAS(expect_bad(args), message);
  }
}

// Directives files (KAPLA Listing 1): a malformed directive names the file
// and line; a file without the layer's section, both schemes at once, or
// neither, are refused.
TEST_F(BadInput, DirectivesFiles) {
  const std::vector<std::string> layer{"--workload", kData + "/tiny_net.yaml", "--layer", "conv",
                                       "--arch",     kData + "/tiny_arch.yaml"};
  const auto args = [&](std::string command, std::vector<std::string> extra) {
    std::vector<std::string> a{std::move(command)};
    a.insert(a.end(), layer.begin(), layer.end());
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // The directives of tests/data/tiny_conv_mapping.yaml with an unknown
  // tensor on line 3.
  const std::string bad = write("bad.kd",
                                "conv:\n  L1:\n    tensor{X}(K=1)\n"
                                "    tensor{Weight}(K=1, C=1, R=3, S=3)\n"
                                "    tensor{Output}(N=1, K=1, P=1, Q=1)\n"
                                "    stack(K+=1, 4)\n    update(Q+=1)\n    update(P+=1)\n"
                                "    update(C+=1)\n  L2:\n"
                                "    tensor{Input}(N=1, C=4, P=2, Q=2, R=3, S=3)\n"
                                "    tensor{Weight}(K=4, C=4, R=3, S=3)\n"
                                "    tensor{Output}(N=1, K=4, P=2, Q=2)\n"
                                "    update(Q+=2)\n    update(P+=2)\n    update(K+=4)\n");
  for (const std::string command : {"directives", "evaluate"})
    EXPECT_HAS(expect_bad(args(command, {"--directives", bad})),
               bad + ":3:5: key 'X': layer 'conv' has no tensor 'X'");
  const std::string other = write("other.kd", "fc:\n");
  EXPECT_HAS(expect_bad(args("directives", {"--directives", other})),
             "no section for layer 'conv'");
  EXPECT_HAS(expect_bad(args("evaluate", {"--directives", bad, "--mapping",
                                          kData + "/tiny_conv_mapping.yaml"})),
             "--mapping or --directives, not both");
  EXPECT_HAS(expect_bad(args("directives", {})), "directives needs --workload, --arch and one of");
  EXPECT_HAS(expect_bad(args("directives", {"--directives", "/nonexistent.kd"})),
             "/nonexistent.kd");
}

// A model asked to evaluate a mapping feature it cannot model refuses it
// at the key's line: tensor_centric has no cluster levels (FLASH Table 2).
TEST_F(BadInput, FeatureAModelCannotModel) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  const std::string mapping = write("cluster.yaml",
                                    "S1: {tile: {M: 8, N: 16, K: 1}}\n"
                                    "PE_array:\n"
                                    "  split: {N: 16}\n"
                                    "  cluster: {split: {K: 16}, tile: {M: 64, N: 16, K: 16}}\n"
                                    "S2: {tile: {M: 64, N: 256, K: 16}}\n");
  const std::string err =
      expect_bad({"evaluate", "--workload", exp + "/workloads/flash_table3.yaml", "--layer", "VI",
                  "--arch", exp + "/architectures/flash_edge.yaml", "--mapping", mapping,
                  "--costmodel", "tensor_centric"});
  EXPECT_NE(err.find("cluster.yaml:4:3: key 'cluster'"), std::string::npos) << err;
  EXPECT_NE(err.find("cannot model a cluster level"), std::string::npos) << err;
  // The same file under mdc evaluates.
  const auto ok = run_cli({"evaluate", "--workload", exp + "/workloads/flash_table3.yaml",
                           "--layer", "VI", "--arch", exp + "/architectures/flash_edge.yaml",
                           "--mapping", mapping, "--costmodel", "mdc"});
  EXPECT_EQ(ok.status, 0) << ok.err;
}

// Separate read and write ports: roofline models them, mdc refuses the chip.
TEST_F(BadInput, ReadWritePortsRefusedByModelsWithOneBandwidth) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  std::ifstream in(exp + "/architectures/flash_edge.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string arch = text.str();
  arch.replace(arch.find("    bandwidth_gbps: 256"), 23,
               "    bandwidth_gbps: 256\n    read_bandwidth_gbps: 128");
  const std::string path = write("ports.yaml", arch);
  std::vector<std::string> args{"evaluate",   "--workload", exp + "/workloads/flash_table3.yaml",
                                "--layer",    "VI",         "--arch",
                                path,         "--mapping",  exp + "/flash/table5_vi_maeri_mnk.yaml",
                                "--costmodel"};
  args.push_back("mdc");
  const std::string err = expect_bad(args);
  EXPECT_NE(err.find("separate read and write bandwidths (level 'DRAM'"), std::string::npos) << err;
  args.back() = "roofline";
  EXPECT_EQ(run_cli(args).status, 0);
}

// Per-tensor word widths: roofline counts them; mdc refuses the chip at
// the width key's place in the architecture file, and FLASH's searcher,
// whose capacity bounds count words of one size, refuses the job.
TEST_F(BadInput, WordWidthsRefusedAtTheKeyByModelsWithOneWordSize) {
  const std::string exp = MAPEX_EXPERIMENTS_DIR;
  std::string arch = slurp(exp + "/architectures/flash_edge.yaml");
  const auto at = arch.find("word_bits:");
  ASSERT_NE(at, std::string::npos);
  arch.insert(arch.find('\n', at) + 1, "output_word_bits: 16\n");
  const int line =
      static_cast<int>(std::count(arch.begin(), arch.begin() + static_cast<long>(at), '\n')) + 2;
  const std::string path = write("wide.yaml", arch);
  std::vector<std::string> args{"evaluate",   "--workload", exp + "/workloads/flash_table3.yaml",
                                "--layer",    "VI",         "--arch",
                                path,         "--mapping",  exp + "/flash/table5_vi_maeri_mnk.yaml",
                                "--costmodel"};
  args.push_back("mdc");
  const std::string err = expect_bad(args);
  EXPECT_NE(err.find(path + ":" + std::to_string(line) + ":1"), std::string::npos) << err;
  EXPECT_NE(err.find("output_word_bits"), std::string::npos) << err;
  EXPECT_NE(err.find("tensor 'C' of 'VI' 16-bit words"), std::string::npos) << err;
  // Roofline counts the widths: S2's tiles (A 64 x 64, B 64 x 256 at 1 B,
  // C 64 x 256 at 2 B, double-buffered) need 2 x 53,248 B of its 102,400 B
  // (2 x 36,864 B at 8 bits, which fit).
  args.back() = "roofline";
  const auto roofline = run_cli(args);
  EXPECT_EQ(roofline.status, 1);
  EXPECT_NE(roofline.out.find("S2: tiles need 106496 B (double-buffered), capacity 102400 B"),
            std::string::npos)
      << roofline.out;
  const std::string searched =
      expect_bad({"search", "--workload", exp + "/workloads/flash_table3.yaml", "--layer", "VI",
                  "--arch", path, "--searcher", "flash"});
  EXPECT_NE(searched.find("searcher 'flash'"), std::string::npos) << searched;
}

}  // namespace
}  // namespace mapex
