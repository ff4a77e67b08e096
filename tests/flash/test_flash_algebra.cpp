// Unit tests of FLASH's algebra (searchers/flash/flash_algebra.hpp): the
// Table 6 bounds, the §5.2 counts, candidate generation, and the lowering
// of every style to the directives of Table 2; and GEMM as a native
// operator of the mdc engine (MAESTRO-BLAS, FLASH §3.3).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mdc.hpp>
#include <set>
#include <tuple>

#include "engine.hpp"
#include "flash_algebra.hpp"

namespace fl = mapex::flash;

namespace {

mapex::Architecture edge() {
  return mapex::Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) +
                                   "/architectures/flash_edge.yaml");
}

const fl::Chip kEdge{256, 512, 102400};

fl::Dataflow flow_of(fl::Style style, const fl::Problem& p, std::int64_t lambda,
                     fl::LoopOrder order = {-1, -1, -1}) {
  for (const auto& f : fl::dataflows(style, p, 256))
    if (f.cluster_size == lambda && (order[0] < 0 || f.order == order)) return f;
  ADD_FAILURE() << "no dataflow with cluster size " << lambda;
  return {};
}

std::string lowered(const fl::Candidate& c, const mapex::Operator& op,
                    const mapex::Architecture& arch) {
  const auto l = mapex::mdc::from_mapping(op, arch, fl::to_mapping(c, op, arch));
  std::string s;
  for (const auto& d : l.layer.dataflow) {
    if (d.kind == mapex::mdc::DirectiveKind::kCluster) {
      s += "C(" + std::to_string(d.size) + ") ";
      continue;
    }
    s += d.kind == mapex::mdc::DirectiveKind::kSpatialMap ? "S" : "T";
    s += "(" + std::to_string(d.size) + "," + std::to_string(d.offset) + ")" + d.dim + " ";
  }
  return s;
}

}  // namespace

TEST(FlashBounds, Table6ClosedFormsOnTheEdgeChip) {
  // Eq. 4: sqrt((512 + 2) / 2) - 1 = 15.03; Eq. 3 with N = 256:
  // sqrt(51,200 + 65,536) - 256 = 85.67 (FLASH §4, MAERI-style <m,n,k>).
  EXPECT_NEAR(fl::inner_bound_maeri(512), 15.0312, 1e-3);
  EXPECT_NEAR(fl::outer_bound_maeri(256, 102400), 85.6663, 1e-3);
  // Table 6, STT_TTS: with lambda = 1 the outer bound solves
  // T^2 + 2 D T = beta / 2, the same quadratic as Eq. 3.
  EXPECT_NEAR(fl::outer_bound_stt(256, 1, 102400), fl::outer_bound_maeri(256, 102400), 1e-9);
  // The inner bound solves T_in^2 + 2 T_K T_in = alpha / 2.
  const double t = fl::inner_bound_stt(4, 512);
  EXPECT_NEAR(t * t + 2 * 4 * t, 256, 1e-9);
  // Both shrink as the other side grows.
  EXPECT_GT(fl::outer_bound_stt(64, 16, 102400), fl::outer_bound_stt(8192, 16, 102400));
  EXPECT_GT(fl::inner_bound_stt(1, 512), fl::inner_bound_stt(8, 512));
}

TEST(FlashCounts, Section52BaselineIsThePapersNumber) {
  // FLASH §5.2: 7,250,826,667 tile-size combinations for 256^3 on Edge.
  EXPECT_EQ(fl::section52_baseline(256, 512, 102400), 7250826667ULL);
}

TEST(FlashCounts, Section52CountersMatchBruteForceOnSmallProblems) {
  // The closed-form loops against a plain enumeration of the same rule.
  for (const auto& [n, alpha, beta] :
       {std::array<std::int64_t, 3>{12, 40, 200}, std::array<std::int64_t, 3>{9, 64, 150}}) {
    std::uint64_t brute = 0;
    for (std::int64_t tm = 1; tm <= n; ++tm)
      for (std::int64_t tn = 1; tn <= n; ++tn)
        for (std::int64_t tk = 1; tk <= n; ++tk) {
          if (2 * (tm * tk + tk * tn + tm * tn) > beta) continue;
          for (std::int64_t a = 1; a <= tm; ++a)
            for (std::int64_t b = 1; b <= tn; ++b)
              if (2 * (a + b + a * b) <= alpha) ++brute;
        }
    EXPECT_EQ(fl::section52_baseline(n, alpha, beta), brute) << n;
  }
  // Pruning keeps a subset: Eq. 3 and 4 only narrow the ranges.
  const auto pruned = fl::section52_pruned(256, 512, 102400);
  EXPECT_GT(pruned, 0u);
  EXPECT_LT(pruned, fl::section52_baseline(256, 512, 102400) / 100);
}

TEST(FlashCounts, Section52PrunedCountIsOursAndReported) {
  // Eq. 3 caps T_M^out and T_K^out at 85 (so T_N' = N = 256) and Eq. 4 caps
  // the inner tiles at 15; the tuples left that still hold Eq. 1-2 are the
  // count docs/results/flash.md reports beside the paper's 14,992,384.
  EXPECT_EQ(fl::section52_pruned(256, 512, 102400), 1491750u);
}

// The plain product of the Eq. 3-4 ranges: floor(sqrt(102400/2 + 256^2) -
// 256) = 85 for the outer sizes, floor(sqrt((512+2)/2) - 1) = 15 and, with
// S1 in bits, floor(sqrt((4096+2)/2) - 1) = 44 for the inner ones.
TEST(FlashCounts, Section52RangeProductIsTheSquaredBounds) {
  EXPECT_EQ(fl::section52_range_product(256, 512, 102400), 85ull * 85 * 15 * 15);
  EXPECT_EQ(fl::section52_range_product(256, 4096, 102400), 85ull * 85 * 44 * 44);
}

TEST(FlashDataflows, StylesHaveTable2OrdersAndClusterSizes) {
  const fl::Problem p{{8192, 8192, 8192}};
  EXPECT_EQ(fl::dataflows(fl::Style::kEyeriss, p, 256).size(), 12u);  // 1..12
  EXPECT_EQ(fl::dataflows(fl::Style::kNvdla, p, 256).size(), 49u);    // 16..64
  EXPECT_EQ(fl::cluster_sizes(fl::Style::kTpu, {fl::kN, fl::kM, fl::kK}, p, 256),
            (std::vector<std::int64_t>{16, 256}));
  EXPECT_EQ(fl::cluster_sizes(fl::Style::kTpu, {fl::kN, fl::kM, fl::kK}, p, 2048),
            (std::vector<std::int64_t>{45, 256}));
  EXPECT_EQ(fl::cluster_sizes(fl::Style::kShidiannao, {fl::kM, fl::kN, fl::kK}, p, 256),
            (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(fl::loop_orders(fl::Style::kMaeri).size(), 6u);
  EXPECT_EQ(fl::dataflows(fl::Style::kMaeri, fl::Problem{{8, 8, 100}}, 256).size(),
            2u * 100 + 2u * 8 + 2u * 8);
  for (auto s : fl::kAllStyles) EXPECT_EQ(fl::parse_style(fl::to_string(s)), s);
  EXPECT_EQ(fl::mapping_name(fl::Style::kNvdla, {fl::kN, fl::kK, fl::kM}), "STT_TTS-NKM");
  EXPECT_EQ(fl::mapping_name(fl::Style::kShidiannao, {fl::kM, fl::kN, fl::kK}), "STT_TST-MNK");
  EXPECT_EQ(fl::mapping_name(fl::Style::kMaeri, {fl::kK, fl::kM, fl::kN}), "TST_TTS-KMN");
  EXPECT_FALSE(fl::parse_order("mmk"));
  EXPECT_FALSE(fl::parse_style("gpu"));
}

TEST(FlashDataflows, AnyOrderGivesFixedStylesAllSixOrdersWithTable2sParallelDims) {
  // §5.4's flexible-vs-fixed reading: Eyeriss-style (STT_TTS, M across
  // clusters, K inside, lambda 1..12) in each of the six orders, 6 x 12
  // dataflows; the orders change, the parallel dimensions do not.
  const fl::Problem p{{8, 8192, 1024}};
  EXPECT_EQ(fl::loop_orders(fl::Style::kEyeriss, true).size(), 6u);
  const auto flows = fl::dataflows(fl::Style::kEyeriss, p, 256, true);
  ASSERT_EQ(flows.size(), 6u * 12);
  std::set<std::string> orders;
  for (const auto& f : flows) {
    EXPECT_EQ(f.inter_dim, fl::kM);
    EXPECT_EQ(f.intra_dim, fl::kK);
    orders.insert(fl::to_string(f.order));
  }
  EXPECT_EQ(orders.size(), 6u);
  // One order asked for: only its candidates, built in that order; without
  // any_order the fixed style has none in <k,m,n>.
  const fl::LoopOrder kmn{fl::kK, fl::kM, fl::kN};
  const auto g = fl::generate(fl::Style::kEyeriss, p, kEdge, true, {kmn}, fl::TileValues::kLargest,
                              50'000'000, true);
  ASSERT_FALSE(g.candidates.empty());
  for (const auto& c : g.candidates) EXPECT_EQ(c.flow.order, kmn);
  EXPECT_TRUE(fl::generate(fl::Style::kEyeriss, p, kEdge, true, {kmn}, fl::TileValues::kLargest)
                  .candidates.empty());
  const auto op = mapex::make_gemm("IV", 8, 8192, 1024);
  const auto m = fl::to_mapping(g.candidates[0], op, edge());
  EXPECT_EQ(m.level(2).order[0], op.find_dim("K"));
  EXPECT_EQ(m.level(2).order[2], op.find_dim("N"));
}

TEST(FlashCandidates, PrunedCandidatesFitAndAreASubsetOfTheFullSpace) {
  // A problem small enough for the full space of every integer tile.
  const fl::Problem p{{48, 32, 40}};
  const fl::Chip chip{64, 128, 4096};
  auto key = [](const fl::Candidate& c) {
    return std::tuple(c.flow.order, c.flow.cluster_size, c.outer, c.inner);
  };
  for (auto s : fl::kAllStyles) {
    const std::vector<fl::LoopOrder> orders{fl::loop_orders(s)[0]};
    const auto pruned = fl::generate(s, p, chip, true, orders);
    const auto full = fl::generate(s, p, chip, false, orders);
    ASSERT_FALSE(pruned.candidates.empty()) << fl::to_string(s);
    EXPECT_LT(pruned.candidates.size(), full.candidates.size()) << fl::to_string(s);
    EXPECT_EQ(pruned.before_pruning, full.before_pruning);
    EXPECT_GT(pruned.before_pruning, static_cast<double>(full.candidates.size()));
    std::set<decltype(key(full.candidates[0]))> in_full;
    for (const auto& c : full.candidates) in_full.insert(key(c));
    for (const auto& c : pruned.candidates) {
      ASSERT_TRUE(in_full.count(key(c))) << fl::to_string(s);
      ASSERT_TRUE(fl::fits(c, p, chip));
      // Eq. 1-2 with double buffering: the three tiles in half of each buffer.
      ASSERT_LE(2 * fl::s1_footprint(c), chip.s1_words);
      ASSERT_LE(2 * fl::s2_footprint(c, p), chip.s2_words);
      // Table 6: T^out within the S2 bounds, T^in within the S1 bounds
      // around the intra tile and within T^out.
      const auto b = fl::outer_bounds(c.flow, p, chip, c.outer[c.flow.inter_dim]);
      ASSERT_TRUE(b.feasible);
      for (int d = 0; d < 3; ++d) ASSERT_LE(c.outer[d], b.outer[d]);
      const auto in = fl::inner_bounds(c, chip);
      ASSERT_LE(c.inner[c.flow.inter_dim], in[0]);
      ASSERT_LE(c.inner[3 - c.flow.inter_dim - c.flow.intra_dim], in[1]);
      for (int d = 0; d < 3; ++d) ASSERT_LE(c.inner[d], c.outer[d]);
    }
    // Powers of two (and each range's bound) keep a subset of the same ranges.
    const auto pow2 = fl::generate(s, p, chip, true, orders, fl::TileValues::kPow2);
    EXPECT_LT(pow2.candidates.size(), pruned.candidates.size()) << fl::to_string(s);
    std::set<decltype(key(full.candidates[0]))> in_pruned;
    for (const auto& c : pruned.candidates) in_pruned.insert(key(c));
    for (const auto& c : pow2.candidates) ASSERT_TRUE(in_pruned.count(key(c)));
  }
  const fl::Problem vi{{512, 256, 256}};  // workload VI, Edge
  // MAERI: the intra-cluster tile is SMap(1,1) and lambda obeys Eq. 3 for
  // the extent one outer step covers (85 when that is all of N = 256).
  for (const auto& c :
       fl::generate(fl::Style::kMaeri, vi, kEdge, true, {}, fl::TileValues::kPow2).candidates) {
    ASSERT_EQ(c.inner[c.flow.intra_dim], 1);
    ASSERT_EQ(c.outer[c.flow.intra_dim], c.flow.cluster_size);
    const auto extent =
        std::min(vi.dims[c.flow.inter_dim], c.outer[c.flow.inter_dim] * c.flow.clusters);
    ASSERT_LE(c.flow.cluster_size,
              std::floor(fl::outer_bound_maeri(static_cast<double>(extent), 102400)));
    if (extent == 256) {
      ASSERT_LE(c.flow.cluster_size, 85);
    }
  }
}

TEST(FlashCandidates, GenerationIsDeterministic) {
  const fl::Problem p{{8, 8192, 1024}};
  const auto a = fl::generate(fl::Style::kNvdla, p, kEdge, true, {}, fl::TileValues::kPow2);
  const auto b = fl::generate(fl::Style::kNvdla, p, kEdge, true, {}, fl::TileValues::kPow2);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    ASSERT_EQ(a.candidates[i].outer, b.candidates[i].outer);
    ASSERT_EQ(a.candidates[i].inner, b.candidates[i].inner);
  }
}

TEST(FlashCandidates, BuffersTooSmallLeaveNoCandidate) {
  const fl::Problem p{{64, 64, 64}};
  const fl::Chip tiny{256, 4, 102400};  // 2 x (1 + 1 + 1) > 4
  for (auto s : fl::kAllStyles) EXPECT_TRUE(fl::generate(s, p, tiny, true).candidates.empty());
}

// Table 2's GEMM mappings, outer tiles above the Cluster directive and
// inner tiles below it, every style (FLASH §3.1, Table 2).
TEST(FlashLowering, EveryStyleLowersToItsTable2Directives) {
  const auto arch = edge();
  const auto op = mapex::make_gemm("VI", 512, 256, 256);
  const fl::Problem p = fl::problem_from(op);
  auto cand = [&](fl::Style s, std::int64_t lambda, fl::Extents outer, fl::Extents inner,
                  fl::LoopOrder order = {-1, -1, -1}) {
    fl::Candidate c;
    c.flow = flow_of(s, p, lambda, order);
    c.outer = outer;
    c.inner = inner;
    return c;
  };
  // Eyeriss STT_TTS-MNK: SMap(T_M^out) M; TMap(T_N^out) N; TMap(T_K^out x l) K; Cluster(l);
  // TMap(T_M^in) M; TMap(T_N^in) N; SMap(T_K^out) K. 32 clusters: T_M^out = 512 / 32 = 16.
  EXPECT_EQ(lowered(cand(fl::Style::kEyeriss, 8, {16, 6, 4}, {2, 3, 4}), op, arch),
            "S(16,16)M T(6,6)N T(32,32)K C(8) T(2,2)M T(3,3)N S(4,4)K ");
  // NVDLA STT_TTS-NKM: SMap(T_N^out) N; TMap(T_K^out x l) K; TMap(T_M^out) M; Cluster(l);
  // TMap(T_N^in) N; SMap(T_K^out) K; TMap(T_M^in) M. 16 clusters: T_N^out = 16.
  EXPECT_EQ(lowered(cand(fl::Style::kNvdla, 16, {10, 16, 3}, {5, 2, 3}), op, arch),
            "S(16,16)N T(48,48)K T(10,10)M C(16) T(2,2)N S(3,3)K T(5,5)M ");
  // MAERI TST_TTS-MNK: TMap(T_M^out) M; SMap(T_N^out) N; TMap(T_K^out) K; Cluster(T_K^out);
  // TMap(T_M^in) M; TMap(T_N^in) N; SMap(1) K. 64 clusters of 4: T_N^out = 4.
  EXPECT_EQ(lowered(cand(fl::Style::kMaeri, 4, {64, 4, 4}, {8, 2, 1}, {fl::kM, fl::kN, fl::kK}), op,
                    arch),
            "T(64,64)M S(4,4)N T(4,4)K C(4) T(8,8)M T(2,2)N S(1,1)K ");
}

TEST(FlashLowering, SplitsEngageTheClustersTheDimensionNeeds) {
  const auto arch = edge();
  const auto op = mapex::make_gemm("III", 8, 8, 8192);
  const fl::Problem p = fl::problem_from(op);
  fl::Candidate c;
  c.flow = flow_of(fl::Style::kEyeriss, p, 12);  // 21 clusters, M = 8: one element each
  c.outer = {1, 1, 1};
  c.inner = {1, 1, 1};
  const auto m = fl::to_mapping(c, op, arch);
  EXPECT_FALSE(m.structural_error(op, arch));
  const auto l = mapex::mdc::from_mapping(op, arch, m);
  EXPECT_EQ(l.hardware.num_pes, 8 * 12);
}

// FLASH Table 5, tiled MAERI-style <m,n,k> on workload VI, Edge: T_M^out
// = 64 stepped by T_M^in = 8 and T_N^out = 64 by T_N^in = 8 in clusters of
// 64 PEs, a candidate of the pruned power-of-two space. The paper reports
// 0.13 ms and S2 accesses (reads + writes) of 2.6e5 (A), 4.7e5 (B) and
// 6.5e5 (C).
TEST(FlashLowering, Table5TiledMaeriMatchesThePaper) {
  const auto arch = edge();
  const auto op = mapex::make_gemm("VI", 512, 256, 256);
  const fl::Problem p = fl::problem_from(op);
  fl::Candidate c;
  c.flow = flow_of(fl::Style::kMaeri, p, 64, {fl::kM, fl::kN, fl::kK});
  c.outer = {64, 64, 64};
  c.inner = {8, 8, 1};
  ASSERT_TRUE(fl::fits(c, p, kEdge));
  bool generated = false;
  for (const auto& g :
       fl::generate(fl::Style::kMaeri, p, kEdge, true, {c.flow.order}, fl::TileValues::kPow2)
           .candidates)
    generated =
        generated || (g.flow.cluster_size == 64 && g.outer == c.outer && g.inner == c.inner);
  EXPECT_TRUE(generated);
  const auto lowered_mapping = mapex::mdc::from_mapping(op, arch, fl::to_mapping(c, op, arch));
  const auto r = mapex::mdc::engine::analyse(
      mapex::mdc::engine::compile(lowered_mapping.layer, lowered_mapping.hardware, false));
  EXPECT_NEAR(r.runtime_cycles / 1e6, 0.13, 0.13 * 0.05);  // ms at 1 GHz
  EXPECT_NEAR(r.input_l2_rd + r.input_l2_wr, 2.6e5, 2.6e5 * 0.25);
  EXPECT_NEAR(r.filter_l2_rd + r.filter_l2_wr, 4.7e5, 4.7e5 * 0.25);
  EXPECT_NEAR(r.output_l2_rd + r.output_l2_wr, 6.5e5, 6.5e5 * 0.25);
}

TEST(FlashInput, NonGemmOperatorsAndOtherChipsAreRefused) {
  mapex::Conv2dShape shape;
  shape.C = 3;
  shape.K = 8;
  shape.H = shape.W = 8;
  shape.R = shape.S = 3;
  const auto conv = mapex::make_conv2d("conv", shape);
  try {
    fl::problem_from(conv);
    FAIL() << "a convolution was accepted";
  } catch (const mapex::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fl::problem_from(mapex::make_fc("fc", 1, 16, 16)), mapex::InputError);
  const auto marvel = mapex::Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) +
                                                "/architectures/kapla_multinode.yaml");
  EXPECT_THROW(fl::chip_from(marvel), mapex::InputError);
  EXPECT_EQ(fl::chip_from(edge()).s2_words, 102400);
}

// MAESTRO-BLAS (FLASH §3.3): GEMM is a native layer of the mdc engine, A
// the input, B the filter, C the output, S1 the per-PE L1 and S2 the
// shared L2. Fig. 5's walk-through: M = N = K = 4 on 16 PEs,
// TMap(1,1) M; SMap(1,1) N; TMap(4,4) K; Cluster(4); SMap(1,1) K.
TEST(MaestroBlas, Fig5WalkThroughCountsEveryMatrixOnceInS2) {
  mapex::mdc::Layer layer;
  layer.name = "fig5";
  layer.type = mapex::mdc::LayerType::kGemm;
  layer.dims = {{"M", 4}, {"N", 4}, {"K", 4}};
  using mapex::mdc::DirectiveKind;
  auto map = [](DirectiveKind k, std::int64_t size, const char* dim) {
    mapex::mdc::Directive d;
    d.kind = k;
    d.size = d.offset = size;
    d.dim = dim;
    return d;
  };
  mapex::mdc::Directive cluster;
  cluster.kind = DirectiveKind::kCluster;
  cluster.size = 4;
  layer.dataflow = {
      map(DirectiveKind::kTemporalMap, 1, "M"), map(DirectiveKind::kSpatialMap, 1, "N"),
      map(DirectiveKind::kTemporalMap, 4, "K"), cluster, map(DirectiveKind::kSpatialMap, 1, "K")};
  mapex::mdc::Hardware hw;
  hw.num_pes = 16;
  const auto r = mapex::mdc::engine::analyse(mapex::mdc::engine::compile(layer, hw, false));
  EXPECT_EQ(r.num_macs, 64);
  // Each element of A, B and C crosses S2 once: A rows are multicast to the
  // four clusters, B stays put while M advances, C is reduced in the
  // cluster before it is written.
  EXPECT_EQ(r.input_l2_rd, 16);
  EXPECT_EQ(r.filter_l2_rd, 16);
  EXPECT_EQ(r.output_l2_wr, 16);
  // Every MAC reads one element of A and one of B from its PE's S1.
  EXPECT_EQ(r.input_l1_rd, 64);
  EXPECT_EQ(r.filter_l1_rd, 64);
  // Four M steps, one output per cluster each: a full array's 16 PEs
  // busy for 4 steps (plus pipeline fill).
  EXPECT_GE(r.runtime_cycles, 4);
}

TEST(FlashBounds, ACappedTileLeavesItsRoomToThePartner) {
  // Eq. 2 around T = 1 with y capped at 8 (e.g. N = 8): x <= (256 - 8) / 9.
  const auto b = fl::inner_pair_bounds(1, 256, 8, 512);
  EXPECT_NEAR(b[0], 248.0 / 9, 1e-9);
  EXPECT_NEAR(b[1], fl::inner_bound_stt(1, 512), 1e-9);
  // The floored bound is exact: 27 fits S1 with y = 8, 28 does not.
  EXPECT_LE(2 * (27 + 8 + 27 * 8), 512);
  EXPECT_GT(2 * (28 + 8 + 28 * 8), 512);
  // Neither capped: Table 6's square bound for both.
  const auto square = fl::inner_bound_stt(4, 512);
  EXPECT_EQ(fl::inner_pair_bounds(4, 100, 100, 512), (std::array<double, 2>{square, square}));
  // Workload V on TPU-style (N = 8 across one cluster of 256): the M tile
  // may grow to 27, which Table 6's equal-tile bound (10) would prune.
  const auto g = fl::generate(fl::Style::kTpu, fl::Problem{{8192, 8, 1024}}, kEdge, true);
  bool found = false;
  for (const auto& c : g.candidates)
    found = found || (c.flow.cluster_size == 256 && c.inner == fl::Extents{27, 8, 1});
  EXPECT_TRUE(found);
}

TEST(FlashCandidates, LargestTilesGiveTable5sTiledMapping) {
  // §4: "the largest power of two (constrained by Equations 3 and 4)". On
  // workload VI (512 x 256 x 256), MAERI <m,n,k>: lambda = T_K^out and
  // T_M^out are bounded by Eq. 3's 85, so 64; T_N^out = N lambda / P = 64;
  // Eq. 4 bounds T_M^in and T_N^in by 15, so 8: Table 5's tiled mapping,
  // the only candidate.
  const auto op = mapex::make_gemm("VI", 512, 256, 256);
  const fl::Problem p = fl::problem_from(op);
  const auto g = fl::generate(fl::Style::kMaeri, p, kEdge, true, {{fl::kM, fl::kN, fl::kK}},
                              fl::TileValues::kLargest);
  ASSERT_EQ(g.candidates.size(), 1u);
  const auto& c = g.candidates[0];
  EXPECT_EQ(c.flow.cluster_size, 64);
  EXPECT_EQ(c.outer, (fl::Extents{64, 64, 64}));
  EXPECT_EQ(c.inner, (fl::Extents{8, 8, 1}));
  // <n,m,k>: the middle loop is M = 512, so Eq. 3 gives 47 and lambda 32.
  const auto h = fl::generate(fl::Style::kMaeri, p, kEdge, true, {{fl::kN, fl::kM, fl::kK}},
                              fl::TileValues::kLargest);
  ASSERT_EQ(h.candidates.size(), 1u);
  EXPECT_EQ(h.candidates[0].flow.cluster_size, 32);
}

TEST(FlashCandidates, LargestTilesTakeTheLargestInnerTilesThatFit) {
  // Each pick's inner tiles are the largest powers of two that fit: the
  // same candidate with either inner tile doubled is not in the pow2 space
  // (it would overflow S1 or leave Eq. 2's range), on every style.
  const auto op = mapex::make_gemm("IV", 8, 8192, 1024);
  const fl::Problem p = fl::problem_from(op);
  for (fl::Style s : fl::kAllStyles) {
    const auto largest = fl::generate(s, p, kEdge, true, {}, fl::TileValues::kLargest);
    const auto pow2 = fl::generate(s, p, kEdge, true, {}, fl::TileValues::kPow2);
    ASSERT_FALSE(largest.candidates.empty()) << fl::to_string(s);
    EXPECT_LT(largest.candidates.size(), pow2.candidates.size()) << fl::to_string(s);
    for (const auto& c : largest.candidates) {
      EXPECT_TRUE(fl::fits(c, p, kEdge));
      for (std::size_t d = 0; d < 3; ++d) {
        fl::Candidate bigger = c;
        bigger.inner[d] *= 2;
        const bool in_pow2 = std::any_of(
            pow2.candidates.begin(), pow2.candidates.end(), [&](const fl::Candidate& o) {
              return o.flow.order == bigger.flow.order &&
                     o.flow.cluster_size == bigger.flow.cluster_size && o.outer == bigger.outer &&
                     o.inner == bigger.inner;
            });
        EXPECT_FALSE(in_pow2) << fl::to_string(s) << " inner tile " << d;
      }
    }
  }
}

TEST(FlashCandidates, NonTiledMaeriClusterIsTheLastLoopsWholeDimension) {
  // Fig. 6(a): T_K^out = K; Table 5's non-tiled runtimes (2.23 ms for
  // <m,n,k>) come from lambda = min(D_last, P).
  const fl::Problem p = fl::problem_from(mapex::make_gemm("VI", 512, 256, 256));
  int kept = 0;
  for (const auto& f : fl::dataflows(fl::Style::kMaeri, p, 256)) {
    const bool keep = fl::non_tiled_cluster(f, p, 256);
    kept += keep;
    EXPECT_EQ(keep, f.cluster_size == 256) << fl::to_string(f.order) << " " << f.cluster_size;
  }
  EXPECT_EQ(kept, 6);  // one per loop order
  for (const auto& f : fl::dataflows(fl::Style::kNvdla, p, 256))
    EXPECT_TRUE(fl::non_tiled_cluster(f, p, 256));
}
