// MAESTRO's case study of hardware support for spatial reuse (IEEE Micro
// 2020, "Case Study II", Fig. 4(d)): KC-P on VGG16-conv2 with and without
// spatial multicast and spatial reduction (Table 1). The paper reports
// about 47% more energy without either. The test checks the counts that
// follow by hand from the dataflow and prints the energy rise of each
// setting (costmodels/mdc/README.md, "Networks without multicast or
// reduction", quotes them).

#include <gtest/gtest.h>

#include <cstdio>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>
#include <string>

#include "engine.hpp"

namespace mapex::mdc {
namespace {

const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

Architecture with_switches(const Architecture& base, bool multicast, bool reduction) {
  std::vector<Level> levels = base.levels();
  for (auto& l : levels)
    if (l.kind == LevelKind::kSpatial) {
      l.noc.multicast = multicast;
      l.noc.reduction = reduction;
    }
  return Architecture::make(base.name(), base.clock_mhz(), base.word_bits(), base.mac_energy_pj(),
                            base.macs_per_pe(), levels);
}

Result evaluate(const Operator& op, const Architecture& arch, const std::string& mapping_file) {
  const Mapping m = Mapping::load(mapping_file, op, arch);
  const Lowered lowered = from_mapping(op, arch, m);
  return engine::analyse(engine::compile(lowered.layer, lowered.hardware, true));
}

TEST(MdcCaseStudy, Fig4dKcpOnVgg16Conv2WithoutMulticastOrReduction) {
  const mapex::Network net = mapex::Network::load(kExperiments + "/workloads/vgg16.yaml");
  const Operator* op = nullptr;
  for (const auto& l : net.layers())
    if (l.op.name() == "conv1_2") op = &l.op;
  ASSERT_NE(op, nullptr);
  const Architecture base = Architecture::load(kExperiments + "/architectures/maestro_hw256.yaml");
  const std::string mapping = kExperiments + "/maestro/vgg16_conv1_2_kcp.yaml";
  // The mapping is MAESTRO's KC-P: K over 4 clusters, C over 64 PEs each.
  const Lowered lowered = from_mapping(*op, base, Mapping::load(mapping, *op, base));
  EXPECT_EQ(format_dataflow(lowered.layer.dataflow),
            "TemporalMap(1,1) N;\nSpatialMap(1,1) K;\nTemporalMap(64,64) C;\nTemporalMap(3,3) R;\n"
            "TemporalMap(3,3) S;\nTemporalMap(3,1) Y;\nTemporalMap(3,1) X;\nCluster(64,P);\n"
            "SpatialMap(1,1) C;\n");

  const Result on = evaluate(*op, with_switches(base, true, true), mapping);
  const Result no_mc = evaluate(*op, with_switches(base, false, true), mapping);
  const Result no_red = evaluate(*op, with_switches(base, true, false), mapping);
  const Result neither = evaluate(*op, with_switches(base, false, false), mapping);

  // Without multicast each of the 4 clusters reads every input word it
  // needs; inside a cluster the PEs hold distinct channels.
  EXPECT_DOUBLE_EQ(no_mc.input_l2_rd, 4 * on.input_l2_rd);
  EXPECT_DOUBLE_EQ(no_mc.filter_l2_rd, on.filter_l2_rd);
  EXPECT_DOUBLE_EQ(no_mc.output_l2_wr, on.output_l2_wr);
  // Without reduction all 64 PEs of a cluster send their partial sums; L2
  // adds 63 of them to its running sum by a read-modify-write.
  EXPECT_DOUBLE_EQ(no_red.output_l2_wr, 64 * on.output_l2_wr);
  EXPECT_DOUBLE_EQ(no_red.output_l2_rd, on.output_l2_rd + 63 * on.output_l2_wr);
  EXPECT_DOUBLE_EQ(no_red.input_l2_rd, on.input_l2_rd);
  for (const Result* r : {&no_mc, &no_red, &neither}) {
    EXPECT_EQ(r->num_macs, on.num_macs);
    EXPECT_EQ(r->input_l1_wr, on.input_l1_wr);
    EXPECT_EQ(r->output_l1_wr, on.output_l1_wr);
    EXPECT_GE(r->runtime_cycles, on.runtime_cycles);
  }
  EXPECT_DOUBLE_EQ(neither.input_l2_rd, no_mc.input_l2_rd);
  EXPECT_DOUBLE_EQ(neither.output_l2_wr, no_red.output_l2_wr);

  auto rise = [&](const Result& r) {
    return 100.0 * (r.energy_total_macunits / on.energy_total_macunits - 1.0);
  };
  auto slow = [&](const Result& r) { return 100.0 * (r.runtime_cycles / on.runtime_cycles - 1.0); };
  std::printf("KC-P, VGG16 conv1_2, maestro_hw256: energy %.6g MAC units, runtime %.6g cycles\n",
              on.energy_total_macunits, on.runtime_cycles);
  std::printf("  no multicast: energy %+.1f%%, runtime %+.1f%%\n", rise(no_mc), slow(no_mc));
  std::printf("  no reduction: energy %+.1f%%, runtime %+.1f%%\n", rise(no_red), slow(no_red));
  std::printf("  neither:      energy %+.1f%%, runtime %+.1f%%\n", rise(neither), slow(neither));
  EXPECT_GT(rise(no_mc), 0);
  EXPECT_GT(rise(no_red), 0);
  EXPECT_NEAR(rise(neither), rise(no_mc) + rise(no_red), 1e-6);  // disjoint L2 traffic
}

}  // namespace
}  // namespace mapex::mdc
