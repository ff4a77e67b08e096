// Every mapping file shipped with the project (a `# for:` header names its
// workload, layer and architecture), and one mapping with each format
// feature, survives a round trip through the three forms mapex reads and
// writes: mapping YAML, MAESTRO's directives (Marvel's Algorithm 1, printed
// and parsed again, evaluating the same) and KAPLA's tensor-centric
// directives (printed, parsed and converted back).

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <mapex/directives.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>
#include <sstream>

#include "engine.hpp"

namespace mapex {
namespace {

namespace fs = boost::filesystem;

struct Shipped {
  std::string mapping, workload, layer, arch;
};

// Mapping files under experiments/ and tests/data with their `# for:` line.
std::vector<Shipped> shipped_mappings() {
  std::vector<Shipped> out;
  for (const std::string& root :
       {std::string(MAPEX_EXPERIMENTS_DIR), std::string(MAPEX_TEST_DATA_DIR)})
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      if (entry.path().extension() != ".yaml") continue;
      std::ifstream in(entry.path().string());
      std::string first;
      std::getline(in, first);
      if (first.rfind("# for: ", 0) != 0) continue;
      Shipped s;
      s.mapping = entry.path().string();
      std::istringstream fields(first.substr(7));
      const std::string dir = entry.path().parent_path().string() + "/";
      for (std::string kv; fields >> kv;) {
        const auto eq = kv.find('=');
        const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
        if (key == "workload") s.workload = dir + value;
        if (key == "layer") s.layer = value;
        if (key == "arch") s.arch = dir + value;
      }
      out.push_back(s);
    }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.mapping < b.mapping; });
  return out;
}

// MAESTRO's directives of a mapping, printed and parsed: the same dataflow
// and the same analysis.
void mdc_round_trip(const Operator& op, const Architecture& arch, const Mapping& m) {
  const mdc::Lowered lowered = mdc::from_mapping(op, arch, m);
  const mdc::Network net{"rt", "rt.m", {lowered.layer}};
  const mdc::Network parsed = mdc::parse_mapping(mdc::format_network(net), "rt.m");
  ASSERT_EQ(parsed.layers.size(), 1u);
  EXPECT_EQ(mdc::format_dataflow(parsed.layers[0].dataflow),
            mdc::format_dataflow(lowered.layer.dataflow));
  // The batch dimension is modelled when the operator has one (as mdc.cpp).
  const bool batch = op.find_dim("N") >= 0;
  const auto a = mdc::engine::analyse(mdc::engine::compile(lowered.layer, lowered.hardware, batch));
  const auto b =
      mdc::engine::analyse(mdc::engine::compile(parsed.layers[0], lowered.hardware, batch));
  EXPECT_EQ(a.runtime_cycles, b.runtime_cycles);
  EXPECT_EQ(a.input_l2_rd + a.filter_l2_rd + a.output_l2_wr,
            b.input_l2_rd + b.filter_l2_rd + b.output_l2_wr);
}

void round_trips(const Operator& op, const Architecture& arch, const Mapping& m) {
  // YAML.
  EXPECT_EQ(Mapping::parse(m.to_yaml(op, arch), "rt.yaml", op, arch), m);
  // MAESTRO's directives keep every tensor: a bypass is refused, naming
  // the level and tensor, and the same tiles without it lower.
  bool bypass = false;
  for (const auto& lm : m.levels()) bypass = bypass || !lm.keep.empty();
  if (!bypass) {
    mdc_round_trip(op, arch, m);
  } else {
    try {
      (void)mdc::from_mapping(op, arch, m);
      ADD_FAILURE() << "the MDC lowering took a bypass";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("MDC directives keep every tensor"), std::string::npos)
          << e.what();
    }
    Mapping kept = m;
    for (auto& lm : kept.levels()) lm.keep.clear();
    mdc_round_trip(op, arch, kept);
  }
  // KAPLA's tensor-centric directives: the same mapping up to one-trip
  // loops; their stacks do not say on which axis of the array a split
  // lies, so a placement (`axes`) is not carried.
  const std::string text = format_directives(to_directives(op, arch, m), op);
  const auto kd = parse_directives(text, "rt.kd", {&op}, arch);
  ASSERT_EQ(kd.size(), 1u);
  Mapping unplaced = normalise_orders(m, op, arch);
  for (auto& lm : unplaced.levels()) lm.axes.clear();
  EXPECT_EQ(to_mapping(kd.front(), op, arch, "rt.kd"), unplaced) << text;
}

TEST(RoundTrip, EveryShippedMappingFile) {
  const auto files = shipped_mappings();
  ASSERT_GE(files.size(), 4u);
  for (const auto& s : files) {
    SCOPED_TRACE(s.mapping);
    const Network net = Network::load(s.workload);
    const int index = net.find_layer(s.layer);
    ASSERT_GE(index, 0) << s.layer;
    const Operator& op = net.layers()[static_cast<std::size_t>(index)].op;
    const Architecture arch = Architecture::load(s.arch);
    round_trips(op, arch, Mapping::load(s.mapping, op, arch));
  }
}

// A cluster level (FLASH Table 2) in all three forms: the MAESTRO form has
// TemporalMaps below its Cluster directive, the tensor-centric form a
// section named after the array.
TEST(RoundTrip, ClusterLevel) {
  const Network net =
      Network::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/workloads/flash_table3.yaml");
  const Operator& op = net.layers()[static_cast<std::size_t>(net.find_layer("VI"))].op;
  const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/flash_edge.yaml");
  const Mapping m = Mapping::load(
      std::string(MAPEX_EXPERIMENTS_DIR) + "/flash/table5_vi_maeri_mnk.yaml", op, arch);
  ASSERT_TRUE(m.level(1).cluster.active());
  round_trips(op, arch, m);
  const std::string text = format_directives(to_directives(op, arch, m), op);
  EXPECT_NE(text.find("PE_array:"), std::string::npos) << text;
  const auto lowered = mdc::format_dataflow(mdc::from_mapping(op, arch, m).layer.dataflow);
  EXPECT_NE(lowered.find("Cluster(64"), std::string::npos) << lowered;
}

}  // namespace
}  // namespace mapex
