// Every cost model on a mapping that bypasses a tensor at a level and on a
// partitioned buffer that overflows for one tensor only: the
// models that can model it give the hand-counted accesses, the others
// refuse with an InputError naming the level, the tensor and the reason.
// And Timeloop's Eyeriss-like VGG16 conv3_1 mapping on the shipped preset.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/network.hpp>

#include "host/plugin_registry.hpp"
#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex::host {
namespace {

using test::registry;

Metrics evaluate(const std::string& model, const Operator& op, const Architecture& arch,
                 const Mapping& m) {
  return test::evaluate_with(model, op, arch, m);
}

// What a model says it cannot model (BoundCostModel::unsupported), as
// "level 'X' (key): reason"; it must also report the mapping invalid from
// precheck and evaluate, never a result.
std::string refusal(const std::string& model, const Operator& op, const Architecture& arch,
                    const Mapping& m) {
  const auto bound = registry().make_costmodel(model, {})->bind(op, arch);
  const auto refused = bound->unsupported(m);
  if (!refused) return "";
  EXPECT_TRUE(bound->precheck(m)) << model;
  const Metrics r = bound->evaluate(m);
  EXPECT_FALSE(r.valid) << model;
  EXPECT_NE(r.invalid_reason.find(refused->reason), std::string::npos) << r.invalid_reason;
  return "level '" + refused->level + "' (" + refused->key + "): " + refused->reason;
}

const TensorAccess& access(const Metrics& m, const std::string& level, const std::string& tensor) {
  return test::access(m.levels, level, tensor);
}

Architecture chip(const std::string& l1) {
  return Architecture::parse(test::keep_chip_yaml(l1), "chip.yaml");
}
using test::kPartitionedL1;
using test::kPlainL1;

// C[M][N] += A[M][K] * B[K][N], M 4, N 1, K 2; M over the 2 PEs, K
// innermost at L2.
Mapping mapping(const Operator& op, const Architecture& arch, const std::string& l1,
                const std::string& l2_keep = "") {
  return Mapping::parse("L1: {" + l1 + "}\nPEs: {split: {M: 2}}\n" +
                            "L2: {tile: {M: 4, N: 1, K: 2}, order: [M, K]" + l2_keep + "}\n",
                        "m.yaml", op, arch);
}

// A bypasses L1. Hand counts: the MACs read A 8 times straight from L2,
// which gets the 4 x 2 tile of A from DRAM once (8 words); L1 has no
// access to A (roofline: the loop-nest analysis; tensor_centric: KAPLA's
// exchange between L2 and the MACs).
TEST(KeepBypassModels, RooflineAndTensorCentricCountTheBypass) {
  const Architecture arch = chip(kPlainL1);
  const Operator op = make_gemm("g", 4, 1, 2);
  const Mapping m = mapping(op, arch, "keep: [B, C]");
  for (const char* model : {"roofline", "tensor_centric"}) {
    SCOPED_TRACE(model);
    const Metrics r = evaluate(model, op, arch, m);
    ASSERT_TRUE(r.valid) << r.invalid_reason;
    EXPECT_DOUBLE_EQ(access(r, "L1", "A").reads, 0);
    EXPECT_DOUBLE_EQ(access(r, "L1", "A").writes, 0);
    EXPECT_DOUBLE_EQ(access(r, "L2", "A").reads, 8);
    EXPECT_DOUBLE_EQ(access(r, "L2", "A").writes, 8);
    EXPECT_DOUBLE_EQ(access(r, "DRAM", "A").reads, 8);
    // B and C are untouched by A's bypass: the same as with A kept.
    const Metrics kept = evaluate(model, op, arch, mapping(op, arch, ""));
    ASSERT_TRUE(kept.valid);
    EXPECT_GT(access(kept, "L1", "A").reads, 0);
    for (const char* t : {"B", "C"})
      for (const char* level : {"L1", "L2", "DRAM"}) {
        EXPECT_DOUBLE_EQ(access(r, level, t).reads, access(kept, level, t).reads) << level << t;
        EXPECT_DOUBLE_EQ(access(r, level, t).writes, access(kept, level, t).writes) << level << t;
      }
  }
}

TEST(KeepBypassModels, MdcAndDbLocalityRefuseWhatTheyCannotModel) {
  const Architecture arch = chip(kPlainL1);
  const Operator op = make_gemm("g", 4, 1, 2);
  const std::string mdc = refusal("mdc", op, arch, mapping(op, arch, "keep: [B, C]"));
  EXPECT_NE(mdc.find("level 'L1' (keep): bypasses tensor 'A'; cost model 'mdc'"), std::string::npos)
      << mdc;
  // db_locality models DRAM traffic per tile of the buffer below DRAM: a
  // bypass further in does not change it...
  const Metrics inner = evaluate("db_locality", op, arch, mapping(op, arch, "keep: [B, C]"));
  const Metrics plain = evaluate("db_locality", op, arch, mapping(op, arch, ""));
  ASSERT_TRUE(inner.valid) << inner.invalid_reason;
  for (const char* t : {"A", "B", "C"})
    EXPECT_DOUBLE_EQ(access(inner, "DRAM", t).reads, access(plain, "DRAM", t).reads);
  // ... but one at that buffer is refused.
  const std::string db = refusal("db_locality", op, arch, mapping(op, arch, "", ", keep: [A, C]"));
  EXPECT_NE(db.find("level 'L2' (keep): bypasses tensor 'B'; cost model 'db_locality'"),
            std::string::npos)
      << db;
  EXPECT_EQ(refusal("db_locality", op, arch, mapping(op, arch, "keep: [B, C]")), "");
  EXPECT_EQ(refusal("roofline", op, arch, mapping(op, arch, "keep: [B, C]")), "");
  EXPECT_EQ(refusal("tensor_centric", op, arch, mapping(op, arch, "keep: [B, C]")), "");
}

// Partition b (1 B) cannot hold B's 2 words when L1's tile takes K 2, while
// the level as a whole (6 B) could hold all three tiles (5 B).
TEST(KeepBypassModels, EveryModelRefusesAPartitionThatOverflowsForOneTensor) {
  const Architecture arch = chip(kPartitionedL1);
  const Operator op = make_gemm("g", 4, 1, 2);
  const Mapping m = mapping(op, arch, "tile: {K: 2}");
  for (const char* model : {"roofline", "mdc", "tensor_centric", "db_locality"}) {
    SCOPED_TRACE(model);
    const Metrics r = evaluate(model, op, arch, m);
    EXPECT_FALSE(r.valid);
    EXPECT_NE(r.invalid_reason.find("L1/b"), std::string::npos) << r.invalid_reason;
  }
  // Without B at L1 it fits, and each tensor pays its partition's energy.
  const Mapping fits = mapping(op, arch, "tile: {K: 2}, keep: [A, C]");
  for (const char* model : {"roofline", "tensor_centric", "db_locality"}) {
    SCOPED_TRACE(model);
    const Metrics r = evaluate(model, op, arch, fits);
    ASSERT_TRUE(r.valid) << r.invalid_reason;
  }
  for (const char* model : {"roofline", "tensor_centric"}) {
    const Metrics r = evaluate(model, op, arch, fits);
    const auto& a = access(r, "L1", "A");
    const auto& c = access(r, "L1", "C");
    EXPECT_DOUBLE_EQ(access(r, "L1", "B").reads + access(r, "L1", "B").writes, 0) << model;
    for (const auto& l : r.levels)
      if (l.level == "L1") {
        EXPECT_DOUBLE_EQ(l.energy_pj, a.reads * 3 + a.writes * 5 + c.reads * 1 + c.writes * 2)
            << model;
      }
  }
  // mdc keeps every tensor: it evaluates partitions (capacity and energy
  // per tensor) on mappings without a bypass.
  const Metrics r = evaluate("mdc", op, arch, mapping(op, arch, ""));
  ASSERT_TRUE(r.valid) << r.invalid_reason;
  double energy = 0;
  for (const char* t : {"A", "B", "C"}) {
    const auto& x = access(r, "L1", t);
    energy += x.reads * arch.levels()[0].read_energy_of(t) +
              x.writes * arch.levels()[0].write_energy_of(t);
  }
  for (const auto& l : r.levels)
    if (l.level == "L1") {
      EXPECT_DOUBLE_EQ(l.energy_pj, energy);
    }
}

// Timeloop's best Eyeriss-like mapping of VGG16 conv3_1 (5,505,024 cycles,
// 100% of 168 PEs) on the shipped preset: no capacity error, every PE busy.
TEST(KeepBypassModels, TimeloopsEyerissMappingRunsOnEveryPe) {
  const std::string dir = MAPEX_EXPERIMENTS_DIR;
  const Network vgg = Network::load(dir + "/workloads/vgg16.yaml");
  const Operator& op = vgg.layers()[static_cast<size_t>(vgg.find_layer("conv3_1"))].op;
  const Architecture arch = Architecture::load(dir + "/architectures/eyeriss_like.yaml");
  const Mapping m = Mapping::load(dir + "/mappings/eyeriss_like_vgg16_conv3_1.yaml", op, arch);
  for (const char* model : {"roofline", "tensor_centric"}) {
    SCOPED_TRACE(model);
    const Metrics r = evaluate(model, op, arch, m);
    ASSERT_TRUE(r.valid) << r.invalid_reason;
    EXPECT_DOUBLE_EQ(r.compute_cycles, 5505024);
    EXPECT_DOUBLE_EQ(r.latency_cycles, 5505024) << r.bound_by;
    EXPECT_DOUBLE_EQ(r.utilization, 1.0);
    // The weights never enter the global buffer.
    EXPECT_DOUBLE_EQ(access(r, "GLB", "Weight").reads + access(r, "GLB", "Weight").writes, 0);
  }
  // DRAM words, as Timeloop's stats count them (ref-output
  // timeloop-mapper.stats.txt: 14,450,688 scalar accesses): weights
  // 294,912 x 28 (refetched for each Q4 x P7 step, no global buffer to keep
  // them), inputs 573,440, outputs 2,408,448 read back and 3,211,264
  // written (C is split 4 ways at DRAM: 4 visits per output, 3 read-backs).
  const Metrics r = evaluate("roofline", op, arch, m);
  double dram = 0;
  for (const char* t : {"Input", "Weight", "Output"})
    dram += access(r, "DRAM", t).reads + access(r, "DRAM", t).writes;
  EXPECT_DOUBLE_EQ(dram, 14450688);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "Weight").reads, 294912.0 * 28);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "Output").writes, 802816.0 * 4);
  EXPECT_DOUBLE_EQ(access(r, "DRAM", "Output").reads, 802816.0 * 3);
  // The models that keep every tensor everywhere say why they cannot.
  EXPECT_NE(refusal("mdc", op, arch, m).find("level 'GLB' (keep): bypasses tensor 'Weight'"),
            std::string::npos);
  EXPECT_NE(
      refusal("db_locality", op, arch, m).find("level 'GLB' (keep): bypasses tensor 'Weight'"),
      std::string::npos);
}

}  // namespace
}  // namespace mapex::host
