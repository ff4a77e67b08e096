// The nn_dataflow model's depthwise and local-region layers (KAPLA's
// DepthwiseConvolutionLayer, nn_dataflow's EltwiseLayer and PoolingLayer):
// the invariants nn_dataflow's MapStrategyEyeriss asserts on every nested
// loop description it makes, checked over every partition the search
// generates; the bridge from mapex operators to these layers and back (every
// refusal included); and a searched scheme scoring the same through its
// canonical mapping. nn_dataflow's own pool reference run is a golden case
// of test_nn_dataflow_search.cpp.

#include <gtest/gtest.h>

#include <filesystem>
#include <mapex/architecture.hpp>
#include <mapex/network.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/nn_dataflow_search.hpp>

namespace {

namespace fs = std::filesystem;
using mapex::ndf::Dim2;
using mapex::ndf::Layer;
using mapex::ndf::LayerKind;

const fs::path kData = MAPEX_TEST_DATA_DIR;

Layer depthwise(std::int64_t channels, std::int64_t out, std::int64_t stride, std::int64_t batch) {
  Layer l;
  l.kind = LayerKind::kDepthwise;
  l.batch = batch;
  l.nifm = l.nofm = channels;
  l.hofm = l.wofm = out;
  l.hfil = l.wfil = 3;
  l.htrd = l.wtrd = stride;
  return l;
}

Layer eltwise(std::int64_t channels, std::int64_t operands, std::int64_t batch) {
  Layer l;
  l.kind = LayerKind::kLocalRegion;
  l.batch = batch;
  l.nofm = channels;
  l.nreg = l.ntrd = operands;
  l.nifm = channels * operands;
  return l;
}

Layer pool(std::int64_t channels, std::int64_t out, std::int64_t window, std::int64_t batch) {
  Layer l;
  l.kind = LayerKind::kLocalRegion;
  l.batch = batch;
  l.nifm = l.nofm = channels;
  l.hofm = l.wofm = out;
  l.hfil = l.wfil = window;
  return l;
}

double loop_product(const mapex::ndf::LoopDesc& d, int dce) {
  double p = 1;
  for (size_t l = 0; l < 3; ++l)
    if (d.data_loops[static_cast<size_t>(dce)][l]) p *= static_cast<double>(d.loopcnt[l]);
  return p;
}

void expect_near_rel(double a, double b, const std::string& what) {
  EXPECT_NEAR(a, b, 1e-9 * std::max(1.0, std::abs(b))) << what;
}

/// nn_dataflow's checks of gen_nested_loop_desc, for every partition of
/// `layer` on 4 x 4 nodes of 8 x 8 PEs and every replication it allows.
void check_loop_descs(const Layer& layer) {
  mapex::ndf::SearchOptions so;
  so.hybrid = so.batch = so.ifmaps = true;
  const Dim2 array{8, 8};
  int checked = 0;
  for (const auto& part : mapex::ndf::gen_partitions(layer, Dim2{4, 4}, so)) {
    EXPECT_EQ(part.size(mapex::ndf::kInpp), 1) << "no input-channel partition";
    double occ = 0;
    const Layer nl = mapex::ndf::part_layer(layer, part, &occ);
    EXPECT_EQ(nl.nifm, nl.nofm) << "the per-node layer reads one channel per output channel";
    EXPECT_LE(occ, 1 + 1e-9);
    mapex::ndf::PeMapping pe;
    if (mapex::ndf::pe_mapping(nl, array, pe)) continue;  // under half the array
    ASSERT_EQ(pe.repl_choices.size(), 1u);
    const auto [ifms, ofms] = pe.repl_choices.front();
    EXPECT_EQ(ifms, 1);
    const auto d = mapex::ndf::loop_desc(nl, occ, pe, ifms, ofms);
    EXPECT_EQ(d.loopcnt[mapex::ndf::kLoopIfm], 1);
    const double all = static_cast<double>(d.loopcnt[0] * d.loopcnt[1] * d.loopcnt[2]);
    const double ops = nl.ops() * occ;
    expect_near_rel(d.unit_ops * all, ops, "total ops");
    const double filters = layer.kind == LayerKind::kDepthwise
                               ? static_cast<double>(nl.nofm * nl.hfil * nl.wfil)
                               : 0.0;
    expect_near_rel(
        d.unit_access[mapex::ndf::kDram][mapex::ndf::kFil] * loop_product(d, mapex::ndf::kFil),
        filters, "filters fetched from DRAM");
    // Folding re-fetches overlapping input rows: nn_dataflow's amp_acc_ifm.
    const double hofm_acc = static_cast<double>(nl.hofm) / static_cast<double>(pe.fold.w);
    const double hifm_acc =
        static_cast<double>(nl.hfil) + (hofm_acc - 1) * static_cast<double>(nl.htrd);
    const double amp = hifm_acc * static_cast<double>(pe.fold.w) / static_cast<double>(nl.hifm());
    expect_near_rel(d.unit_access[mapex::ndf::kDram][mapex::ndf::kIfm] *
                        loop_product(d, mapex::ndf::kIfm) / amp,
                    static_cast<double>(nl.nifm * nl.hifm() * nl.wifm() * nl.batch),
                    "ifmaps fetched from DRAM");
    expect_near_rel(
        d.unit_access[mapex::ndf::kDram][mapex::ndf::kOfm] * loop_product(d, mapex::ndf::kOfm),
        static_cast<double>(nl.nofm * nl.hofm * nl.wofm * nl.batch), "ofmaps written to DRAM");
    expect_near_rel(d.unit_access[mapex::ndf::kRegf][mapex::ndf::kFil] * all,
                    layer.kind == LayerKind::kDepthwise ? ops : 0.0, "REGF filter accesses");
    expect_near_rel(d.unit_access[mapex::ndf::kRegf][mapex::ndf::kIfm] * all, ops,
                    "REGF ifmap accesses");
    expect_near_rel(d.unit_access[mapex::ndf::kRegf][mapex::ndf::kOfm] * all, ops,
                    "REGF ofmap accesses");
    // All used PEs run the unit time for the replicated unit-pass ops.
    const double unit_pass_ops =
        hofm_acc * static_cast<double>(nl.wofm * nl.hfil * nl.wfil) * static_cast<double>(nl.nreg);
    EXPECT_NEAR(d.unit_time * static_cast<double>(array.size()) * pe.util,
                unit_pass_ops * static_cast<double>(pe.repl.size()), 1e-3);
    ++checked;
  }
  EXPECT_GT(checked, 0) << "no partition maps onto the PE array";
}

TEST(NnDataflowLayers, DepthwiseLoopDescsKeepNnDataflowsInvariants) {
  check_loop_descs(depthwise(512, 14, 1, 4));
  check_loop_descs(depthwise(64, 56, 2, 64));
  check_loop_descs(depthwise(1024, 7, 1, 64));
}

TEST(NnDataflowLayers, LocalRegionLoopDescsKeepNnDataflowsInvariants) {
  check_loop_descs(eltwise(1000, 2, 64));
  check_loop_descs(eltwise(1000, 1, 64));
  check_loop_descs(pool(512, 14, 3, 4));
}

TEST(NnDataflowLayers, DataLoopsAndSharingFollowTheLayerKind) {
  using mapex::ndf::data_loops;
  const auto dw = data_loops(LayerKind::kDepthwise);
  const auto lr = data_loops(LayerKind::kLocalRegion);
  const auto conv = data_loops(LayerKind::kConv);
  // Filters: conv by ifmap and ofmap channels, depthwise by ofmap channels,
  // local regions have none; fmaps of both by ofmap channels and batch.
  EXPECT_TRUE(conv[mapex::ndf::kFil][mapex::ndf::kLoopIfm]);
  EXPECT_FALSE(dw[mapex::ndf::kFil][mapex::ndf::kLoopIfm]);
  EXPECT_TRUE(dw[mapex::ndf::kFil][mapex::ndf::kLoopOfm]);
  for (const auto& c : lr[mapex::ndf::kFil]) EXPECT_FALSE(c);
  for (const auto& loops : {dw, lr})
    for (int c : {mapex::ndf::kIfm, mapex::ndf::kOfm}) {
      EXPECT_FALSE(loops[static_cast<size_t>(c)][mapex::ndf::kLoopIfm]);
      EXPECT_TRUE(loops[static_cast<size_t>(c)][mapex::ndf::kLoopOfm]);
      EXPECT_TRUE(loops[static_cast<size_t>(c)][mapex::ndf::kLoopBat]);
    }
  // A batch x output-channel partition: conv filters are shared by the batch
  // nodes and ifmaps by the output-channel nodes; a depthwise or local
  // region's first loop that does not index a category is the ifmap loop,
  // whose (input-channel) partition these layers lack: no sharing.
  mapex::ndf::Partition part;
  part.pdims[mapex::ndf::kBatp] = Dim2{2, 1};
  part.pdims[mapex::ndf::kOutp] = Dim2{1, 4};
  const auto sc = mapex::ndf::sharing_groups(part, LayerKind::kConv);
  EXPECT_EQ(sc[mapex::ndf::kFil], 2);
  EXPECT_EQ(sc[mapex::ndf::kIfm], 4);
  for (auto kind : {LayerKind::kDepthwise, LayerKind::kLocalRegion})
    for (double g : mapex::ndf::sharing_groups(part, kind)) EXPECT_EQ(g, 1);
}

TEST(NnDataflowLayers, OpsCountEachKindsMerges) {
  EXPECT_DOUBLE_EQ(depthwise(32, 112, 1, 2).ops(), 2.0 * 32 * 112 * 112 * 9);
  EXPECT_DOUBLE_EQ(eltwise(1000, 2, 64).ops(), 64.0 * 1000 * 2);
  EXPECT_DOUBLE_EQ(pool(512, 14, 3, 4).ops(), 4.0 * 512 * 14 * 14 * 9);
}

// ---- the bridge ----

const char* kNetwork = R"(
network: bridge
batch: 4
layers:
  - {name: dw, type: conv2d, C: 64, K: 64, H: 28, W: 28, R: 3, S: 3, stride: 2, padding: 1, groups: 64, inputs: []}
  - {name: pw, type: conv2d, C: 64, K: 128, H: 14, W: 14, R: 1, S: 1}
  - name: add
    type: loopnest
    inputs: [pw]
    dims: {N: 4, J: 2, K: 128}
    tensors:
      - {name: x, role: input, subscripts: [N, J, K]}
      - {name: y, role: output, subscripts: [N, K]}
  - name: mul
    type: loopnest
    inputs: [add]
    dims: {N: 4, K: 128}
    tensors:
      - {name: a, role: input, subscripts: [N, K]}
      - {name: b, role: input, subscripts: [N, 'K + 128']}
      - {name: y, role: output, reduction: none, subscripts: [N, K]}
  - name: scale
    type: loopnest
    inputs: [mul]
    dims: {N: 4, K: 128}
    tensors:
      - {name: a, role: input, subscripts: [N, K]}
      - {name: w, role: input, subscripts: [K]}
      - {name: y, role: output, reduction: none, subscripts: [N, K]}
  - name: mixed
    type: loopnest
    inputs: [mul]
    dims: {N: 4, K: 128, P: 4, Q: 4, J: 2, R: 2, S: 2}
    tensors:
      - {name: a, role: input, subscripts: [N, J, K, '2*P + R', '2*Q + S']}
      - {name: y, role: output, subscripts: [N, K, P, Q]}
  - name: huge
    type: loopnest
    inputs: [mul]
    dims: {N: 1, J: 2147483648, K: 2147483648}
    tensors:
      - {name: a, role: input, subscripts: [N, J, K]}
      - {name: b, role: input, subscripts: [N, J, K]}
      - {name: y, role: output, subscripts: [N, K]}
  - name: transposed
    type: loopnest
    inputs: [mul]
    dims: {N: 4, K: 128}
    tensors:
      - {name: a, role: input, subscripts: [N, K]}
      - {name: y, role: output, reduction: none, subscripts: [K, N]}
)";

struct Bridge {
  mapex::Network net = mapex::Network::parse(kNetwork, "bridge.yaml");
  mapex::Architecture arch = mapex::Architecture::load((kData / "nn_dataflow/sm4.yaml").string());
  const mapex::Operator& op(const std::string& name) const {
    return net.layers()[static_cast<size_t>(net.find_layer(name))].op;
  }
  std::optional<std::string> problem(const std::string& name, mapex::ndf::Problem& pr) const {
    return mapex::ndf::make_problem(op(name), arch, "", "", "on", pr);
  }
};

TEST(NnDataflowLayers, ADepthwiseConvolutionIsKaplasDepthwiseLayer) {
  Bridge b;
  mapex::ndf::Problem pr;
  ASSERT_FALSE(b.problem("dw", pr));
  EXPECT_EQ(pr.layer.kind, LayerKind::kDepthwise);
  EXPECT_EQ(pr.layer.nofm, 64);
  EXPECT_EQ(pr.layer.nifm, 64);
  EXPECT_EQ(pr.layer.hofm, 14);
  EXPECT_EQ(pr.layer.htrd, 2);
  EXPECT_EQ(pr.c, -1);
  EXPECT_EQ(pr.k, b.op("dw").find_dim("C"));
  EXPECT_DOUBLE_EQ(pr.layer.ops(), static_cast<double>(b.op("dw").macs()));
}

TEST(NnDataflowLayers, ElementWiseLoopNestsAreEltwiseLayers) {
  Bridge b;
  mapex::ndf::Problem add, mul;
  ASSERT_FALSE(b.problem("add", add));
  EXPECT_EQ(add.layer.kind, LayerKind::kLocalRegion);
  EXPECT_EQ(add.layer.nreg, 2);  // J = 2 of one operand
  EXPECT_EQ(add.layer.nifm, 256);
  ASSERT_EQ(add.region.size(), 1u);
  EXPECT_EQ(add.fil, -1);
  ASSERT_FALSE(b.problem("mul", mul));
  EXPECT_EQ(mul.layer.nreg, 2);  // two operands
  EXPECT_EQ(mul.ifm, 0);
  EXPECT_TRUE(mul.region.empty());
}

TEST(NnDataflowLayers, LoopNestsOutsideALocalRegionAreRefused) {
  Bridge b;
  mapex::ndf::Problem pr;
  const auto weight = b.problem("scale", pr);
  ASSERT_TRUE(weight);
  EXPECT_NE(weight->find("input 'w' of 'scale' is not indexed by both N and K"), std::string::npos)
      << *weight;
  const auto mixed = b.problem("mixed", pr);
  ASSERT_TRUE(mixed);
  EXPECT_NE(mixed->find("both several channels and a window"), std::string::npos) << *mixed;
  // 2 operands x J = 2^31 merged per output over K = 2^31 channels: 2^63
  // input channels, past int64.
  const auto huge = b.problem("huge", pr);
  ASSERT_TRUE(huge);
  EXPECT_NE(huge->find("more words per output than int64 holds"), std::string::npos) << *huge;
  const auto transposed = b.problem("transposed", pr);
  ASSERT_TRUE(transposed);
  EXPECT_NE(transposed->find("is not [N, K] or [N, K, P, Q]"), std::string::npos) << *transposed;
}

/// The best scheme of a search over nn_dataflow's space scores the same
/// through its canonical mapping, and a mapping that splits the local
/// region across PEs is refused.
void expect_round_trip(const Bridge& b, const std::string& name) {
  mapex::ndf::Problem pr;
  ASSERT_FALSE(b.problem(name, pr));
  mapex::ndf::SearchOptions so;
  so.hybrid = so.batch = true;
  const auto out = mapex::ndf::search(pr.layer, pr.hw, pr.options, {pr.ifmaps}, so);
  ASSERT_FALSE(out.tops.empty()) << name << ": no scheme fits";
  const auto& best = out.tops.front();
  mapex::Mapping m;
  const auto err = mapex::ndf::mapping_from_scheme(b.op(name), b.arch, pr, best.scheme, m);
  ASSERT_FALSE(err) << name << ": " << *err;
  const auto r = mapex::ndf::evaluate_mapping(pr, m);
  ASSERT_TRUE(r.valid) << name << ": " << r.reason;
  EXPECT_NEAR(r.cost(), best.cost, 1e-9 * best.cost) << name;
  EXPECT_EQ(r.time, best.time) << name;
  for (const auto& [d, whole] : pr.region) {
    mapex::Mapping split = m;
    split.level(pr.roles.regf).tile[static_cast<size_t>(d)] = 1;
    const auto bad = mapex::ndf::evaluate_mapping(pr, split);
    EXPECT_FALSE(bad.valid);
    EXPECT_NE(bad.reason.find("merges the whole local region"), std::string::npos) << bad.reason;
  }
}

TEST(NnDataflowLayers, SearchedSchemesScoreTheSameThroughTheirMappings) {
  Bridge b;
  for (const char* name : {"dw", "add", "mul"}) expect_round_trip(b, name);
}

}  // namespace
