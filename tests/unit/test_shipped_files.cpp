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
