// Every workload, architecture and experiment file shipped in experiments/
// loads and validates, so a broken preset is caught here and not by a user.

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/network.hpp>
#include <set>
#include <sstream>

#include "host/experiment.hpp"

namespace mapex {
namespace {

namespace fs = boost::filesystem;
const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

std::vector<std::string> yaml_files(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ShippedFiles, EveryWorkloadLoads) {
  const auto files = yaml_files(kExperiments + "/workloads");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const Network net = Network::load(f);
    EXPECT_FALSE(net.layers().empty());
    std::set<std::string> names;
    for (const auto& layer : net.layers()) {
      EXPECT_TRUE(names.insert(layer.op.name()).second);
      EXPECT_GT(layer.op.macs(), 0);
    }
  }
}

TEST(ShippedFiles, Vgg16HasItsThirteenConvolutions) {
  const Network net = Network::load(kExperiments + "/workloads/vgg16.yaml");
  int convs = 0;
  double macs = 0;
  for (const auto& layer : net.layers()) {
    convs += layer.op.kind() == "conv2d";
    if (layer.op.kind() == "conv2d") macs += static_cast<double>(layer.op.macs());
  }
  EXPECT_EQ(convs, 13);
  // VGG16's convolutions take 15.35 GMACs on a 224x224 image.
  EXPECT_NEAR(macs / 1e9, 15.35, 0.01);
}

/// Multiply-accumulates of a network, in millions.
double mega_macs(const Network& net) {
  double macs = 0;
  for (const auto& layer : net.layers()) macs += static_cast<double>(layer.op.macs());
  return macs / 1e6;
}

// The published operation counts pin down every layer shape at once.
TEST(ShippedFiles, NetworksHaveTheirPublishedSizes) {
  // AlexNet with its channel groups: 666 M MACs in convolutions, 724 M in all.
  const Network alexnet = Network::load(kExperiments + "/workloads/alexnet.yaml");
  EXPECT_EQ(alexnet.layers().size(), 8u);
  EXPECT_NEAR(mega_macs(alexnet), 724.4, 0.1);
  // ResNet-50 (stride on the 1x1 of each down-sampling block): 3.86 G MACs.
  const Network resnet = Network::load(kExperiments + "/workloads/resnet50.yaml");
  EXPECT_EQ(resnet.layers().size(), 54u);  // 53 convolutions + fc1000
  EXPECT_NEAR(mega_macs(resnet), 3858.0, 0.1);
  // MobileNetV2 1.0/224: the paper's "300M" multiply-adds.
  const Network mbv2 = Network::load(kExperiments + "/workloads/mobilenetv2.yaml");
  EXPECT_NEAR(mega_macs(mbv2), 300.8, 0.1);
  EXPECT_NEAR(mega_macs(Network::load(kExperiments + "/workloads/vgg16.yaml")), 15470.3, 0.1);
}

TEST(ShippedFiles, ResidualAddsListEverySummedTensor) {
  const Network resnet = Network::load(kExperiments + "/workloads/resnet50.yaml");
  // res2c's input is conv2b + (conv2a + projection shortcut).
  const auto& c = resnet.layers()[static_cast<size_t>(resnet.find_layer("res2c_branch2a"))];
  EXPECT_EQ(c.producers.size(), 3u);
  const Network mbv2 = Network::load(kExperiments + "/workloads/mobilenetv2.yaml");
  const auto& dw = mbv2.layers()[static_cast<size_t>(mbv2.find_layer("block2_dw"))];
  EXPECT_EQ(dw.op.attributes().at("groups"), 96);  // depthwise: one group per channel
  EXPECT_EQ(dw.op.macs(), 56 * 56 * 96 * 9);
}

// The networks of KAPLA's evaluation (§V) that `mapex schedule` runs on:
// each is one connected graph, and so is its training graph (§II-A), whose
// size follows from the forward layers: a weight gradient per further
// input of each layer, an error propagation for every layer but those
// reading only the network input.
TEST(ShippedFiles, KaplaNetworksAreConnectedWithTheirTrainingGraphs) {
  struct Expect {
    const char* file;
    size_t layers;
    size_t training_layers;
  };
  const Expect nets[] = {
      {"alexnet", 8, 8 * 3 - 1},       {"vgg16", 16, 16 * 3 - 1},
      {"mobilenetv2", 53, 53 * 3 - 1}, {"resnet50", 54, 54 * 3 - 1},
      {"googlenet", 58, 58 * 3 - 1},   {"kapla_mlp", 4, 4 * 3 - 1},
      {"kapla_lstm", 24, 24 * 3 - 1},
  };
  for (const auto& e : nets) {
    SCOPED_TRACE(e.file);
    const Network net = Network::load(kExperiments + "/workloads/" + e.file + ".yaml");
    EXPECT_EQ(net.layers().size(), e.layers);
    EXPECT_NO_THROW(require_connected(net));
    const Network t = net.training();
    EXPECT_EQ(t.layers().size(), e.training_layers);
    EXPECT_NO_THROW(require_connected(t));
  }
  // The same through the workload file's `training` key.
  const std::string text = read_text(kExperiments + "/workloads/googlenet.yaml");
  const Network t = Network::parse(text + "training: true\n", "googlenet.yaml");
  EXPECT_EQ(t.layers().size(), 58u * 3 - 1);
  EXPECT_GE(t.find_layer("inception_3a_pool_proj.bwd_data"), 0);
  EXPECT_EQ(t.find_layer("conv1.bwd_data"), -1);  // conv1 reads the image
}

// GoogLeNet, Szegedy et al. (CVPR 2015) Table 1: the MACs of its layers
// from the table's shapes (output pixels x filter size x channels).
TEST(ShippedFiles, GoogLeNetHasTheShapesOfItsTable) {
  const Network net = Network::load(kExperiments + "/workloads/googlenet.yaml");
  // An inception module at H x H with `in` input channels and the table's
  // #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5 and pool proj columns.
  const auto module = [](std::int64_t h, std::int64_t in, std::int64_t c1, std::int64_t r3,
                         std::int64_t c3, std::int64_t r5, std::int64_t c5, std::int64_t pp) {
    return h * h * (in * c1 + in * r3 + r3 * c3 * 9 + in * r5 + r5 * c5 * 25 + in * pp);
  };
  const std::int64_t table = 112 * 112 * 64 * 3 * 7 * 7                      // conv1
                             + 56 * 56 * 64 * 64 + 56 * 56 * 64 * 192 * 9    // conv2
                             + module(28, 192, 64, 96, 128, 16, 32, 32)      // 3a
                             + module(28, 256, 128, 128, 192, 32, 96, 64)    // 3b
                             + module(14, 480, 192, 96, 208, 16, 48, 64)     // 4a
                             + module(14, 512, 160, 112, 224, 24, 64, 64)    // 4b
                             + module(14, 512, 128, 128, 256, 24, 64, 64)    // 4c
                             + module(14, 512, 112, 144, 288, 32, 64, 64)    // 4d
                             + module(14, 528, 256, 160, 320, 32, 128, 128)  // 4e
                             + module(7, 832, 256, 160, 320, 32, 128, 128)   // 5a
                             + module(7, 832, 384, 192, 384, 48, 128, 128)   // 5b
                             + 1024 * 1000;                                  // fc
  std::int64_t macs = 0;
  for (const auto& layer : net.layers()) macs += layer.op.macs();
  EXPECT_EQ(macs, table);
  EXPECT_EQ(table, 1582671872);  // the paper's "1.5 billion multiply-adds"
  // 3 stem convolutions, 6 per module, the classifier.
  EXPECT_EQ(net.layers().size(), 3u + 9 * 6 + 1);
  // A module's input is the concatenation of the previous one's branches.
  const auto& b = net.layers()[static_cast<size_t>(net.find_layer("inception_3b_5x5_reduce"))];
  std::vector<std::string> from;
  for (int p : b.producers) from.push_back(net.layers()[static_cast<size_t>(p)].op.name());
  EXPECT_EQ(from, (std::vector<std::string>{"inception_3a_1x1", "inception_3a_3x3",
                                            "inception_3a_5x5", "inception_3a_pool_proj"}));
  EXPECT_EQ(b.op.attributes().at("C"), 64 + 128 + 32 + 32);
  const auto& fc = net.layers().back();
  EXPECT_EQ(fc.op.attributes().at("C"), 1024);
  EXPECT_EQ(fc.producers.size(), 4u);
  // The concatenations are checked: one channel too many is refused.
  std::string text = read_text(kExperiments + "/workloads/googlenet.yaml");
  const std::string line = "{name: inception_4a_1x1, type: conv2d, C: 480,";
  const auto at = text.find(line);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, line.size(), "{name: inception_4a_1x1, type: conv2d, C: 481,");
  EXPECT_THROW(Network::parse(text, "googlenet.yaml"), InputError);
}

// KAPLA's MLP (PRIME's MLP-L) and LSTM (Sutskever et al.: four layers of
// 1000 cells, two time steps) at batch 64.
TEST(ShippedFiles, KaplaMlpAndLstmHaveTheirSizes) {
  const Network mlp = Network::load(kExperiments + "/workloads/kapla_mlp.yaml");
  std::int64_t macs = 0;
  for (const auto& layer : mlp.layers()) macs += layer.op.macs();
  EXPECT_EQ(macs, 64 * (784 * 1500 + 1500 * 1000 + 1000 * 500 + 500 * 10));

  const Network lstm = Network::load(kExperiments + "/workloads/kapla_lstm.yaml");
  macs = 0;
  for (const auto& layer : lstm.layers()) macs += layer.op.macs();
  // Per cell step: the gates fc ([x, h] of 2000 to 4 x 1000), c_t (two
  // products per element) and h_t (one).
  EXPECT_EQ(macs, std::int64_t{4} * 2 * (64 * 2000 * 4000 + 64 * 1000 * 2 + 64 * 1000));
  const auto producers = [&lstm](const std::string& name) {
    std::vector<std::string> out;
    for (int p : lstm.layers()[static_cast<size_t>(lstm.find_layer(name))].producers)
      out.push_back(lstm.layers()[static_cast<size_t>(p)].op.name());
    return out;
  };
  // h_t of the layer below and h_{t-1} of the same layer feed the gates;
  // c_{t-1} feeds c_t; h_t reads c_t and the gates' o columns.
  EXPECT_EQ(producers("l2_t1_gates"), (std::vector<std::string>{"l1_t1_h", "l2_t0_h"}));
  EXPECT_EQ(producers("l2_t1_c"), (std::vector<std::string>{"l2_t1_gates", "l2_t0_c"}));
  EXPECT_EQ(producers("l2_t1_h"), (std::vector<std::string>{"l2_t1_c", "l2_t1_gates"}));
  EXPECT_TRUE(producers("l0_t0_gates").empty());
  // The element-wise layers spell out N: it must be the file's batch.
  for (const auto& layer : lstm.layers()) {
    SCOPED_TRACE(layer.op.name());
    const DimId n = layer.op.find_dim("N");
    ASSERT_GE(n, 0);
    EXPECT_EQ(layer.op.dims()[static_cast<size_t>(n)].bound, 64);
  }
}

TEST(ShippedFiles, EveryArchitectureLoads) {
  const auto files = yaml_files(kExperiments + "/architectures");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const Architecture arch = Architecture::load(f);
    EXPECT_GT(arch.num_pes(), 0);
  }
}

TEST(ShippedFiles, MarvelP1IsEyerissLike) {
  const Architecture p1 = Architecture::load(kExperiments + "/architectures/marvel_p1.yaml");
  EXPECT_EQ(p1.num_pes(), 168);
  EXPECT_EQ(p1.clock_mhz(), 200);
  EXPECT_EQ(p1.levels()[static_cast<size_t>(p1.find_level("L1"))].size_bytes, 512);
  EXPECT_EQ(p1.levels()[static_cast<size_t>(p1.find_level("L2"))].size_bytes, 108 * 1024);
}

TEST(ShippedFiles, PaperPresetsHaveTheirPeCountsAndBuffers) {
  struct Expect {
    const char* file;
    std::int64_t pes;
    const char* buffer;
    std::int64_t bytes;
  };
  const Expect presets[] = {
      {"marvel_p2", 1024, "L2", 108 * 1024},   {"flash_edge", 256, "S2", 100 * 1024},
      {"flash_cloud", 2048, "S2", 800 * 1024}, {"kapla_multinode", 16384, "GBUF", 32 * 1024},
      {"kapla_edge", 256, "GBUF", 256 * 1024}, {"maestro_hw256", 256, "L2", 1048576},
  };
  for (const auto& e : presets) {
    SCOPED_TRACE(e.file);
    const Architecture a = Architecture::load(kExperiments + "/architectures/" + e.file + ".yaml");
    EXPECT_EQ(a.num_pes(), e.pes);
    const int level = a.find_level(e.buffer);
    ASSERT_GE(level, 0);
    EXPECT_EQ(a.levels()[static_cast<size_t>(level)].size_bytes, e.bytes);
  }
}

TEST(ShippedFiles, EveryExperimentExpands) {
  const auto files = yaml_files(kExperiments);
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const host::Experiment e = host::load_experiment(f);
    const auto jobs = host::expand_jobs(e);
    EXPECT_FALSE(jobs.empty());
    std::set<std::string> ids;
    for (const auto& j : jobs) EXPECT_TRUE(ids.insert(j.id).second) << "duplicate job id " << j.id;
  }
}

}  // namespace
}  // namespace mapex
