// Every workload, architecture and experiment file shipped in experiments/
// loads and validates, so a broken preset is caught here and not by a user.

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <mapex/architecture.hpp>
#include <mapex/network.hpp>
#include <set>

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
