// Training graphs (KAPLA §II-A), network DAG checks and the hardware
// template's bad-input paths (§III-C): zero-size levels name the level.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/network.hpp>

#include "test_chips.hpp"

namespace mapex {
namespace {

const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TrainingGraph, ChainGetsBackwardLayersInReverseOrder) {
  const Network net = Network::parse(
      "network: mlp\nbatch: 2\nlayers:\n"
      "  - {name: fc1, type: fc, C: 8, K: 4, inputs: []}\n"
      "  - {name: fc2, type: fc, C: 4, K: 3}\n",
      "mlp.yaml");
  const Network t = net.training();
  EXPECT_EQ(t.name(), "mlp[training]");
  std::vector<std::string> names;
  for (const auto& l : t.layers()) names.push_back(l.op.name());
  // fc1 reads the network input: no error propagation for it.
  EXPECT_EQ(names, (std::vector<std::string>{"fc1", "fc2", "fc2.bwd_weight", "fc2.bwd_data",
                                             "fc1.bwd_weight"}));
  const auto& l = t.layers();
  EXPECT_EQ(l[2].producers, (std::vector<int>{1, 0}));  // loss on fc2, fc2's input
  EXPECT_EQ(l[3].producers, (std::vector<int>{1}));
  EXPECT_EQ(l[4].producers, (std::vector<int>{3}));  // fc2's error propagation
  // The weight gradient writes a Weight-shaped tensor, reduced over N.
  const Operator& wg = l[2].op;
  EXPECT_EQ(wg.output().name, "dWeight");
  EXPECT_EQ(wg.tensor_size(static_cast<int>(wg.tensors().size()) - 1), 4.0 * 3);
  EXPECT_FALSE(wg.relevant(static_cast<int>(wg.tensors().size()) - 1, wg.find_dim("N")));
  // Error propagation writes an Input-shaped gradient, reduced over K.
  const Operator& bd = l[3].op;
  EXPECT_EQ(bd.output().name, "dInput");
  EXPECT_EQ(bd.macs(), net.layers()[1].op.macs());
  EXPECT_EQ(bd.kind(), "fc_bwd_data");
}

TEST(TrainingGraph, ResidualFanOutSumsGradients) {
  // ResNet-50's training graph: a layer read by two consumers takes the
  // error propagation of both; the graph stays topologically ordered.
  const Network net = Network::load(kExperiments + "/workloads/resnet50.yaml");
  const Network t = net.training();
  const int a = t.find_layer("res2a_branch2a.bwd_data");
  const int b = t.find_layer("res2a_branch1.bwd_data");
  const int conv1 = t.find_layer("conv1.bwd_weight");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  ASSERT_GE(conv1, 0);
  const auto& p = t.layers()[static_cast<size_t>(conv1)].producers;
  EXPECT_NE(std::find(p.begin(), p.end(), a), p.end());
  EXPECT_NE(std::find(p.begin(), p.end(), b), p.end());
  EXPECT_EQ(t.find_layer("conv1.bwd_data"), -1);
  for (size_t i = 0; i < t.layers().size(); ++i)
    for (int q : t.layers()[i].producers) EXPECT_LT(q, static_cast<int>(i));
  // Convolutions: one weight gradient each, one error propagation for all
  // but conv1.
  EXPECT_EQ(t.layers().size(), net.layers().size() * 3 - 1);
}

TEST(TrainingGraph, WorkloadKeyBuildsIt) {
  const Network t = Network::parse(
      "network: m\ntraining: true\nlayers:\n  - {name: a, type: gemm, M: 2, N: 2, K: 2}\n",
      "m.yaml");
  EXPECT_EQ(t.layers().size(), 2u);  // a, a.bwd_weight
  const std::string bad = error_of([] {
    Network::parse(
        "network: m\ntraining: maybe\nlayers:\n"
        "  - {name: a, type: gemm, M: 2, N: 2, K: 2}\n",
        "m.yaml");
  });
  EXPECT_EQ(bad.rfind("m.yaml:2:", 0), 0u) << bad;
  EXPECT_NE(bad.find("key 'training': expected true or false"), std::string::npos) << bad;
}

TEST(NetworkGraph, CyclesAndDuplicatesNameTheLayer) {
  const Operator a = make_gemm("a", 2, 2, 2);
  const Operator b = make_gemm("b", 2, 2, 2);
  EXPECT_EQ(error_of([&] {
              Network::make("n", {Layer{a, {}}, Layer{b, {1}}});
            }),
            "network 'n': layer 'b' reads from layer #1, which is not an earlier layer "
            "(layers must be in topological order; a cycle has none)");
  EXPECT_EQ(error_of([&] {
              Network::make("n", {Layer{a, {}}, Layer{a, {0}}});
            }),
            "network 'n': layer 'a' is defined twice");
  // In a file, a producer that comes later (or a cycle) names both layers.
  EXPECT_NE(error_of([] {
              Network::parse(
                  "network: n\nlayers:\n"
                  "  - {name: a, type: fc, C: 2, K: 2, inputs: [b]}\n"
                  "  - {name: b, type: fc, C: 2, K: 2, inputs: [a]}\n",
                  "cyc.yaml");
            }).find("cyc.yaml:3:"),
            std::string::npos);
  // Shapes that disagree between producer and consumer name the consumer.
  EXPECT_NE(error_of([] {
              Network::parse(
                  "network: n\nlayers:\n"
                  "  - {name: a, type: fc, C: 2, K: 4, inputs: []}\n"
                  "  - {name: b, type: fc, C: 3, K: 2}\n",
                  "shape.yaml");
            }).find("layer 'b' reads 3 channels but its producers give 4"),
            std::string::npos);
}

TEST(HardwareTemplate, ZeroSizeLevelsNameTheLevel) {
  const std::string head = "name: z\nclock_mhz: 500\nword_bits: 16\nlevels:\n";
  const std::string zero = error_of([&] {
    Architecture::parse(head +
                            "  - {name: REGF, kind: buffer, size_bytes: 0}\n"
                            "  - {name: DRAM, kind: dram, bandwidth_gbps: 1}\n",
                        "z.yaml");
  });
  EXPECT_EQ(zero.rfind("z.yaml:5:", 0), 0u) << zero;
  EXPECT_NE(zero.find("key 'size_bytes': level 'REGF' has size 0 bytes; a buffer needs a "
                      "positive size"),
            std::string::npos)
      << zero;
  const std::string shape = error_of([&] {
    Architecture::parse(head +
                            "  - {name: REGF, kind: buffer, size_bytes: 64}\n"
                            "  - {name: PE_array, kind: spatial, shape: [8, 0], "
                            "noc: {bandwidth_gbps: 1}}\n"
                            "  - {name: DRAM, kind: dram, bandwidth_gbps: 1}\n",
                        "z.yaml");
  });
  EXPECT_EQ(shape.rfind("z.yaml:6:", 0), 0u) << shape;
  EXPECT_NE(shape.find("key 'shape': level 'PE_array' has an array dimension of 0; every "
                       "dimension needs at least one unit"),
            std::string::npos)
      << shape;
  EXPECT_NE(error_of([] {
              Architecture::make("m", 500, 16, 1, 1, {test::buffer("GBUF", 0), test::dram()});
            }).find("buffer level 'GBUF' has size_bytes 0"),
            std::string::npos);
}

TEST(HardwareTemplate, PresetsCarryThePaperNumbers) {
  // KAPLA §V and Fig. 4: 16 x 16 nodes of 8 x 8 PEs, 64 B REGF, 32 KB
  // GBUF, 500 MHz, 16-bit words, 1 pJ MACs, 0.61 pJ/bit/hop, 25.6 GB/s.
  const Architecture m = Architecture::load(kExperiments + "/architectures/kapla_multinode.yaml");
  const auto& lv = m.levels();
  EXPECT_EQ(m.num_pes(), 16 * 16 * 8 * 8);
  EXPECT_EQ(m.clock_mhz(), 500);
  EXPECT_EQ(m.word_bits(), 16);
  // Unit costs of KAPLA's hardware file (multi_node.json, per 16-bit word).
  EXPECT_DOUBLE_EQ(m.mac_energy_pj(), 0.9984);
  EXPECT_EQ(lv[0].size_bytes, 64);
  EXPECT_EQ(lv[1].shape, (std::vector<std::int64_t>{8, 8}));
  EXPECT_EQ(lv[2].size_bytes, 32 * 1024);
  EXPECT_EQ(lv[3].shape, (std::vector<std::int64_t>{16, 16}));
  EXPECT_DOUBLE_EQ(lv[3].noc.hop_energy_pj, 0.61 * 16);
  EXPECT_TRUE(lv[1].noc.forwarding && lv[3].noc.forwarding);
  EXPECT_NEAR(lv[3].idle_energy_pj_per_cycle, 1272.87, 0.01);
  EXPECT_NEAR(lv[0].read_energy_pj, 0.0940885, 1e-7);
  EXPECT_NEAR(lv[1].noc.hop_energy_pj, 1.6416, 1e-7);
  EXPECT_NEAR(lv[2].read_energy_pj, 2.8325, 1e-4);
  EXPECT_NEAR(lv[4].read_energy_pj, 401.89, 0.01);
  EXPECT_DOUBLE_EQ(*lv[4].bandwidth_gbps, 25.6);
  // The edge chip: one 16 x 16 systolic array, 512 B registers, 256 KB.
  const Architecture e = Architecture::load(kExperiments + "/architectures/kapla_edge.yaml");
  EXPECT_EQ(e.num_pes(), 256);
  EXPECT_EQ(e.levels()[0].size_bytes, 512);
  EXPECT_EQ(e.levels()[2].size_bytes, 256 * 1024);
  EXPECT_TRUE(e.levels()[1].noc.forwarding);
}

}  // namespace
}  // namespace mapex
