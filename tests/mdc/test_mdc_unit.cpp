// Unit tests of the MDC pieces: the file parsers (round trip and every error
// path), the engine's algebra on examples small enough to count by hand
// (MAESTRO §IV: iteration cases, reuse, folding, edge tiles), Marvel's
// Algorithm 1 and its conformability rules.

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <mapex/architecture.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>

#include "engine.hpp"
#include "test_chips.hpp"

namespace mapex::mdc {
namespace {

const std::string kData = MAPEX_TEST_DATA_DIR;

std::string layer_text(const std::string& dims, const std::string& dataflow,
                       const std::string& type = "CONV") {
  return "Network n {\n"
         "  Layer l {\n"
         "    Type: " +
         type +
         "\n"
         "    Dimensions { " +
         dims +
         " }\n"
         "    Dataflow {\n" +
         dataflow +
         "    }\n"
         "  }\n"
         "}\n";
}

Result run(const std::string& text, std::int64_t pes, std::int64_t noc_bw = 1000) {
  const Network net = parse_mapping(text, "t.m");
  Hardware hw;
  hw.num_pes = pes;
  hw.noc_bw = noc_bw;
  hw.offchip_bw = 1000;
  validate(net.layers.at(0), hw, "t.m");
  return engine::analyse(engine::compile(net.layers.at(0), hw, false));
}

// ---- parser -------------------------------------------------------------------

TEST(MdcParser, ReadsConstantsSzStrideAndClusters) {
  const std::string text =
      "Constant T 4;\n"
      "Network net {\n"
      "Layer Conv2d-7 {\n"
      "Type: CONV\n"
      "Stride { X: 2, Y: 2 }\n"
      "Dimensions { K: 8, C: 4, R: 3, S: 3, Y: 9, X: 9 }\n"
      "Dataflow {\n"
      "  SpatialMap(1,1) K; // comment\n"
      "  TemporalMap(T,T) C;\n"
      "  TemporalMap(Sz(R),Sz(R)) R;\n"
      "  Cluster(2, L);\n"
      "  SpatialMap(Sz(S),1) X;\n"
      "}\n}\n"
      "Layer second { Type: CONV Dimensions { K: 2, C: 2, R: 3, S: 3, Y: 5, X: 5 } }\n"
      "}\n";
  const Network net = parse_mapping(text, "x.m");
  ASSERT_EQ(net.layers.size(), 2u);
  const Layer& l = net.layers[0];
  EXPECT_EQ(l.name, "7");  // MAESTRO splits names on '-'
  EXPECT_EQ(l.stride_x, 2);
  EXPECT_EQ(l.dim("Y"), 9);
  ASSERT_EQ(l.dataflow.size(), 5u);
  EXPECT_EQ(l.dataflow[1].size, 4);
  EXPECT_EQ(l.dataflow[2].size, 3);
  EXPECT_EQ(l.dataflow[3].kind, DirectiveKind::kCluster);
  EXPECT_EQ(l.dataflow[3].cluster_type, 'L');
  EXPECT_EQ(l.dataflow[4].line, 12);
  // A layer without a Dataflow copies the previous one's.
  EXPECT_EQ(format_dataflow(net.layers[1].dataflow), format_dataflow(l.dataflow));
  // ... and a copied dataflow must name dimensions the layer has.
  EXPECT_THROW(parse_mapping("Network n { Layer a { Type: CONV Dimensions { K: 2, C: 2, R: 1, "
                             "S: 1, Y: 2, X: 2 } Dataflow { SpatialMap(1,1) C; } }\n"
                             "Layer b { Type: GEMM Dimensions { M: 2, N: 2, K: 2 } } }\n",
                             "c.m"),
               InputError);
  EXPECT_EQ(l.true_macs(), 8 * 4 * 3 * 3 * 4 * 4);
}

TEST(MdcParser, PrintsWhatItReadsBack) {
  const std::string text = layer_text("K: 16, C: 8, R: 3, S: 3, Y: 10, X: 10",
                                      "SpatialMap(1,1) K; TemporalMap(2,2) C; "
                                      "TemporalMap(3,1) Y; Cluster(4, P); SpatialMap(3,1) X;");
  const Network a = parse_mapping(text, "a.m");
  const std::string printed = format_network(a);
  const Network b = parse_mapping(printed, "b.m");
  ASSERT_EQ(b.layers.size(), 1u);
  EXPECT_EQ(a.layers[0].dims, b.layers[0].dims);
  EXPECT_EQ(format_dataflow(a.layers[0].dataflow), format_dataflow(b.layers[0].dataflow));
  EXPECT_EQ(format_dataflow(a.layers[0].dataflow),
            "SpatialMap(1,1) K;\nTemporalMap(2,2) C;\nTemporalMap(3,1) Y;\nCluster(4,P);\n"
            "SpatialMap(3,1) X;\n");
}

void expect_error(const std::string& text, const std::string& where, const std::string& what) {
  try {
    parse_mapping(text, "bad.m");
    FAIL() << "no error for: " << text;
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(where), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

TEST(MdcParser, EveryErrorNamesFileLineAndExpectation) {
  const std::string dims = "K: 4, C: 4, R: 3, S: 3, Y: 8, X: 8";
  expect_error(layer_text(dims, "SpatialMap(1,1) K;", "CONVOLUTION"),
               "bad.m:3:", "expected CONV, DSCONV, NGCONV, TRCONV or GEMM");
  expect_error("Network n {\n Layer l {\n Type: CONV\n }\n}\n", "bad.m:2:", "has no Dimensions");
  expect_error(layer_text(dims, "SpatialMap(1,1) Q;\n"), "bad.m:6:", "unknown dimension 'Q'");
  expect_error(layer_text(dims, "SpatialMap(0,1) K;\n"), "bad.m:6:", "expected a positive size");
  expect_error(layer_text(dims, "SpatialMap(1,0) K;\n"), "bad.m:6:", "expected a positive offset");
  expect_error(layer_text(dims, "SpatialMap(1,1) K;\nFoldMap(1,1) C;\n"),
               "bad.m:7:", "unknown directive 'FoldMap'");
  expect_error(layer_text(dims, "TemporalMap(Sz(Z),1) C;\n"),
               "bad.m:6:", "Sz(Z) names no dimension");
  expect_error(layer_text(dims, "TemporalMap(x,1) C;\n"),
               "bad.m:6:", "expected a positive integer, a Constant or Sz(DIM)");
  expect_error(layer_text(dims, "Cluster(4);\nSpatialMap(1,1) K;\n"),
               "bad.m:7:", "expected the cluster type P or L");
  expect_error(layer_text("K: 4, C: 4, R: 3, S: 3, Y: 8, Q: 8", ""),
               "bad.m:4:", "unknown dimension 'Q' for CONV");
  expect_error(layer_text("K: 4, C: 4, R: 3, S: 3, Y: 8", ""), "bad.m:2:", "needs X or X'");
  expect_error("Network n {\n Layer l {\n Type: CONV\n", "bad.m:2:", "missing '}'");
  expect_error("Constant A b;\n", "bad.m:1:", "expected an integer value");
  expect_error("Graph g {}\n", "bad.m:1:", "expected 'Constant' or 'Network'");
  expect_error(
      "Network n {\n Layer l {\n Type: CONV\n Dimensions { K: 1, C: 1, R: 1, S: 1, "
      "Y: 1, X: 1 }\n }\n}\n",
      "bad.m:2:", "no Dataflow and no previous layer");
}

// The tokenizer's corners: a '-' is a separator, and the sign of a number
// only where a word starts; "//" is a comment only where a word starts;
// integers up to the int64 limits, and a word with a non-digit is no
// integer however long its digits run.
TEST(MdcParser, SignsCommentsAndIntegerLimits) {
  const Network net = parse_mapping(
      "// a comment line\n"
      "Constant BIG 9223372036854775807;\n"
      "Network n {\n Layer a//b {\n Type: CONV\n"
      " Dimensions { K-4, C: 2, R: 1, S: 1, Y: 3, X: 3 }\n"
      " Dataflow { SpatialMap(1,1) K; }\n }\n}\n",
      "s.m");
  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].name, "a//b");
  EXPECT_EQ(net.layers[0].dim("K"), 4);  // K-4 is K and 4: the '-' follows a word
  const std::string dims = "K: 4, C: 4, R: 3, S: 3, Y: 8, X: 8";
  expect_error(layer_text("K: -4, C: 4, R: 3, S: 3, Y: 8, X: 8", "SpatialMap(1,1) K;\n"),
               "bad.m:4:", "expected a positive dimension size, got -4");
  expect_error(layer_text(dims, "SpatialMap(-2,1) K;\n"),
               "bad.m:6:", "expected a positive size, got -2");
  expect_error("Constant A 9223372036854775808;\n", "bad.m:1:12",
               "expected an integer of at most 9223372036854775807 for 'A'");
  expect_error("Constant A 99999999999999999999x;\n", "bad.m:1:12",
               "expected an integer value for 'A'");
  expect_error(layer_text(dims, "SpatialMap(9223372036854775808,1) K;\n"),
               "bad.m:6:", "expected a positive size of at most 9223372036854775807");

  EXPECT_EQ(parse_hardware("num_pes: +7\n", "h.m").num_pes, 7);
  EXPECT_EQ(parse_hardware("l2_size_cstr: 9223372036854775807\n", "h.m").l2_size,
            std::numeric_limits<std::int64_t>::max());
  for (const char* value : {"-9223372036854775808", "9223372036854775808", "0", "-3", "7x"}) {
    try {
      parse_hardware(std::string("num_pes: ") + value + "\n", "h.m");
      FAIL() << value;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("h.m:1:10: key 'num_pes': expected a "
                                                       "positive integer of at most "
                                                       "9223372036854775807, got '") +
                                           value + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(MdcParser, ValidationErrorsNameTheDirectiveLine) {
  const std::string dims = "K: 4, C: 4, R: 3, S: 3, Y: 8, X: 8";
  Hardware hw;
  hw.num_pes = 16;
  auto check = [&](const std::string& dataflow, const std::string& what) {
    const Network net = parse_mapping(layer_text(dims, dataflow), "v.m");
    try {
      validate(net.layers[0], hw, "v.m");
      FAIL() << "no error for " << dataflow;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("v.m:"), std::string::npos) << e.what();
    }
  };
  check("SpatialMap(1,1) K;\nSpatialMap(1,1) C;\nSpatialMap(3,1) Y;\n", "a third SpatialMap");
  check("SpatialMap(1,1) K;\nCluster(32, P);\nSpatialMap(1,1) C;\n", "exceed the 16 PEs");
  check("TemporalMap(1,1) K;\n", "has no SpatialMap");
  check("SpatialMap(1,1) K;\nTemporalMap(1,1) R;\n",
        "TemporalMap on R must have size and offset 3");
}

TEST(MdcHardware, DefaultsKeysAndErrors) {
  const Hardware hw = parse_hardware("num_pes: 64\nnoc_bw_cstr: 32\nNoC_NumHops: 2\n", "h.m");
  EXPECT_EQ(hw.num_pes, 64);
  EXPECT_EQ(hw.noc_bw, 32);
  EXPECT_EQ(hw.noc_latency, 2);
  EXPECT_EQ(hw.offchip_bw, 2147483647);  // MAESTRO's default
  EXPECT_THROW(parse_hardware("num_pe: 4\n", "h.m"), InputError);
  try {
    parse_hardware("num_pes: 4\nl1_size_cstr: big\n", "h.m");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h.m:2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_hardware(kData + "/no_such_hw.m"), InputError);
}

// ---- engine algebra, counted by hand ------------------------------------------

// Four output channels on two PEs, one MAC each per step. Cases (§IV-B):
// Init (PEs get K 0,1) and Steady x1 (K 2,3). Init: inputs 1 (shared by
// multicast) + filters 2, NoC delay 1 + compute 1 = 2 (nothing to overlap
// with); Steady: only the filters change (2 words), overlapped: max(1,1,1)
// = 1. Runtime 3, MACs 4, L2 filter reads 4, input reads 1.
TEST(MdcEngine, SpatialSteadyStateAndMulticast) {
  const Result r = run(layer_text("K: 4, C: 1, R: 1, S: 1, Y: 1, X: 1", "SpatialMap(1,1) K;\n"), 2);
  EXPECT_EQ(r.num_macs, 4);
  EXPECT_EQ(r.runtime_cycles, 3);
  EXPECT_EQ(r.filter_l2_rd, 4);
  EXPECT_EQ(r.input_l2_rd, 1);
  EXPECT_EQ(r.output_l2_wr, 4);
  EXPECT_EQ(r.avg_utilized_pes, 2);
  EXPECT_EQ(r.output_l1_wr, 4);
}

// Five channels on two PEs: two full folds and an edge fold with one busy
// PE (Marvel §1's "17 channels on 16 PEs"). Runtime 2 + 1 + 1; average busy
// PEs (2 + 2 + 1) / 3.
TEST(MdcEngine, SpatialFoldsAndEdgeTile) {
  const Result r = run(layer_text("K: 5, C: 1, R: 1, S: 1, Y: 1, X: 1", "SpatialMap(1,1) K;\n"), 2);
  EXPECT_EQ(r.num_macs, 5);
  EXPECT_EQ(r.runtime_cycles, 4);
  EXPECT_NEAR(r.avg_utilized_pes, 5.0 / 3.0, 1e-9);
  EXPECT_EQ(r.filter_l2_rd, 5);
}

// Temporal reuse of a sliding window: a 3-row filter sliding over 6 input
// rows by 1 (§IV-A). One PE: 4 output rows; the first step loads 3 input
// rows, each later step 1 new row (the unique part); the filter stays.
TEST(MdcEngine, SlidingWindowLoadsOnlyTheNewRow) {
  const Result r = run(
      layer_text("K: 1, C: 1, R: 3, S: 1, Y: 6, X: 1", "SpatialMap(1,1) K;\nTemporalMap(3,1) Y;\n"),
      1);
  EXPECT_EQ(r.num_macs, 12);
  EXPECT_EQ(r.input_l2_rd, 3 + 3 * 1);
  EXPECT_EQ(r.filter_l2_rd, 3);
  EXPECT_EQ(r.output_l2_wr, 4);
  EXPECT_EQ(r.output_l2_rd, 4);  // output size: Y - R + 1
}

// NoC bandwidth: 9 words at 2 words/cycle take 5 sends, i.e. latency
// 1 + 4 = 5 cycles, paid in full in the Init case (nothing to overlap).
TEST(MdcEngine, NocBandwidthDelaysIngress) {
  const Result r =
      run(layer_text("K: 8, C: 1, R: 1, S: 1, Y: 1, X: 1", "SpatialMap(1,1) K;\n"), 8, 2);
  // 8 filter words and 1 input word: 5 sends, delay 1 + 4; compute 1.
  EXPECT_EQ(r.runtime_cycles, 5 + 1);
  EXPECT_EQ(r.ingress_delay_avg, 5);
}

// Double buffering: L1 holds two copies of each tile of the innermost level.
TEST(MdcEngine, L1RequirementIsDoubleBufferedTile) {
  const Result r = run(layer_text("K: 4, C: 2, R: 3, S: 3, Y: 5, X: 5",
                                  "SpatialMap(1,1) K;\nTemporalMap(3,1) Y;\nTemporalMap(3,1) X;\n"),
                       4);
  // input C2 x Y3 x X3, filter K1 C2 R3 S3, output K1 x Y'1 x X'1 (MAESTRO,
  // and maestro_compat, size the output tile on input rows: K1 x Y3 x X3).
  EXPECT_EQ(r.input_l1_size_req, 2 * 18);
  EXPECT_EQ(r.filter_l1_size_req, 2 * 18);
  EXPECT_EQ(r.output_l1_size_req, 2 * 1);
  EXPECT_EQ(r.num_macs, 4 * 2 * 9 * 9);
  const Network net =
      parse_mapping(layer_text("K: 4, C: 2, R: 3, S: 3, Y: 5, X: 5",
                               "SpatialMap(1,1) K;\nTemporalMap(3,1) Y;\nTemporalMap(3,1) X;\n"),
                    "t.m");
  Hardware hw;
  hw.num_pes = 4;
  EXPECT_EQ(engine::analyse(engine::compile(net.layers.at(0), hw, false, true)).output_l1_size_req,
            2 * 9);
}

TEST(MdcEngine, TileLargerThanDimensionGivesTrueCountNotNaN) {
  // The reference case where MAESTRO reports 0 MACs and NaN throughput: an
  // output tile of 10 columns on 9 input columns (refdata quirks). The true
  // iteration space clips the tile to the dimension; MAESTRO's cannot, so
  // its compatible mode refuses the layer instead of printing NaN.
  const std::string dir = std::string(MAPEX_MAESTRO_REFDATA) + "/cases/A__late_3x3__yxp_os__hw256";
  const Network net = load_mapping(dir + "/mapping.m");
  const Hardware hw = load_hardware(dir + "/hw.m");
  const Result r = engine::analyse(engine::compile(net.layers.at(0), hw, false));
  EXPECT_EQ(r.num_macs, net.layers.at(0).true_macs());
  EXPECT_GT(r.runtime_cycles, 0);
  EXPECT_TRUE(std::isfinite(r.energy_total_macunits));
  EXPECT_THROW(engine::analyse(engine::compile(net.layers.at(0), hw, false, true)), InputError);
}

TEST(MdcEngine, StridedTilesCountOnlyRealOutputs) {
  // X tile of 10 input columns moving by 8 on a stride-2 3x3 layer: MAESTRO
  // rewrites it to 9 columns moving by 8, i.e. 4 output columns, but counts
  // 9 - 3 + 1 = 7 of them (README "Deviations").
  const std::string text =
      "Network n {\nLayer l {\nType: CONV\nStride { X: 2, Y: 2 }\n"
      "Dimensions { K: 2, C: 2, R: 3, S: 3, Y: 17, X: 17 }\nDataflow {\n"
      "SpatialMap(Sz(R),1) Y;\nTemporalMap(10,8) X;\nCluster(4, P);\n"
      "SpatialMap(Sz(S),1) X;\n}\n}\n}\n";
  const Network net = parse_mapping(text, "t.m");
  Hardware hw;
  hw.num_pes = 16;
  const Layer& l = net.layers.at(0);
  EXPECT_EQ(l.true_macs(), 2 * 2 * 9 * 8 * 8);
  const Result r = engine::analyse(engine::compile(l, hw, false));
  EXPECT_EQ(r.num_macs, l.true_macs());
  EXPECT_EQ(r.input_l1_rd, r.num_macs);
  EXPECT_EQ(r.output_l1_wr, r.num_macs);
  const Result m = engine::analyse(engine::compile(l, hw, false, true));
  EXPECT_GT(m.num_macs, r.num_macs);
}

TEST(MdcEngine, DepthwiseAndGemmAreNative) {
  const Result dw =
      run(layer_text("K: 1, C: 4, R: 3, S: 3, Y: 5, X: 5",
                     "SpatialMap(1,1) C;\nTemporalMap(3,1) Y;\nTemporalMap(3,1) X;\n", "DSCONV"),
          4);
  EXPECT_EQ(dw.num_macs, 4 * 9 * 9);
  EXPECT_EQ(dw.filter_l2_rd, 4 * 9);
  const Result g =
      run(layer_text("M: 4, N: 3, K: 2", "SpatialMap(1,1) M;\nTemporalMap(1,1) N;\n", "GEMM"), 4);
  EXPECT_EQ(g.num_macs, 24);
  EXPECT_EQ(g.output_l2_rd, 12);
}

// ---- idle units: a spatial map with more units than tiles ------------------------

Result run_mode(const std::string& text, std::int64_t pes, bool maestro_compat) {
  const Network net = parse_mapping(text, "t.m");
  Hardware hw;
  hw.num_pes = pes;
  hw.noc_bw = 1000;
  hw.offchip_bw = 1000;
  validate(net.layers.at(0), hw, "t.m");
  return engine::analyse(engine::compile(net.layers.at(0), hw, false, maestro_compat));
}

// Every count, the runtime and the busy PEs of `a` equal those of `b`.
void expect_same_analysis(const Result& a, const Result& b, const std::string& what) {
  const double Result::*fields[] = {
      &Result::num_macs,     &Result::runtime_cycles,  &Result::energy_total_macunits,
      &Result::input_l2_rd,  &Result::input_l2_wr,     &Result::filter_l2_rd,
      &Result::filter_l2_wr, &Result::output_l2_rd,    &Result::output_l2_wr,
      &Result::input_l1_rd,  &Result::input_l1_wr,     &Result::filter_l1_rd,
      &Result::filter_l1_wr, &Result::output_l1_rd,    &Result::output_l1_wr,
      &Result::l2_size_req,  &Result::avg_utilized_pes};
  for (auto f : fields) EXPECT_EQ(a.*f, b.*f) << what;
}

// MAESTRO §IV-A on a layer whose channels C3 are spread over the PEs
// (MAESTRO's `cp` dataflow in miniature: K2 C3 3x3 filters, 5x5 inputs,
// 3x3 outputs). Each busy PE holds one channel; K moves outermost, then the
// 3x3 window slides over Y and X by one.
// - Filter (K, C, R, S) is new only when K moves: 3 PEs x 9 words in the
//   first step and again at the K step: 54, the whole filter, each word once.
// - Input (C, Y, X), per PE: the first step of a row of windows loads the
//   3x3 tile (9), each X step a new column (3); a Y step reloads the tile
//   (X starts over); the K step brings nothing (K does not index the input).
//   k=0: 9 + 2x3 + 2x(9 + 2x3) = 45; k=1: 2x3 + 2x(9 + 2x3) = 36; 81 per
//   PE, 243 on 3 PEs.
// - Output: the 3 PEs' partial sums are reduced, one word per step: 18.
// With 4 or 8 PEs the extra PEs are idle and change nothing. MAESTRO (and
// maestro_compat) flags the third PE as a partial edge unit and gives it
// the empty unique part of an edge tile after the first step: filters
// 27 + 2x9 = 45, inputs 81 + 81 + 9 = 171. The same on VGG16 conv1 (K64
// C3) on 256 PEs, refdata A__vgg_conv1__cp__hw256: MAESTRO reads 27 + 63 x
// 18 = 1161 filter words for a filter of 64 x 27 = 1728.
TEST(MdcIdleUnits, ChannelsSpreadOverMorePesThanChannels) {
  const std::string text =
      layer_text("K: 2, C: 3, R: 3, S: 3, Y: 5, X: 5",
                 "TemporalMap(1,1) K;\nTemporalMap(Sz(R),1) Y;\nTemporalMap(Sz(S),1) X;\n"
                 "TemporalMap(Sz(R),Sz(R)) R;\nTemporalMap(Sz(S),Sz(S)) S;\nSpatialMap(1,1) C;\n");
  const Result busy = run_mode(text, 3, false);
  EXPECT_EQ(busy.num_macs, 2 * 3 * 9 * 9);
  EXPECT_EQ(busy.filter_l2_rd, 54);
  EXPECT_EQ(busy.filter_l1_wr, 54);
  EXPECT_EQ(busy.input_l2_rd, 243);
  EXPECT_EQ(busy.input_l1_wr, 243);
  EXPECT_EQ(busy.output_l2_wr, 18);
  EXPECT_EQ(busy.avg_utilized_pes, 3);
  // Exactly divisible: MAESTRO's own analysis agrees.
  expect_same_analysis(run_mode(text, 3, true), busy, "maestro_compat on 3 PEs");
  for (const std::int64_t pes : {4, 8})
    expect_same_analysis(run_mode(text, pes, false), busy, std::to_string(pes) + " PEs");
  for (const std::int64_t pes : {4, 8}) {
    const Result m = run_mode(text, pes, true);
    EXPECT_EQ(m.filter_l2_rd, 45) << pes;
    EXPECT_EQ(m.filter_l1_wr, 45) << pes;
    EXPECT_EQ(m.input_l2_rd, 171) << pes;
    EXPECT_EQ(m.input_l1_wr, 171) << pes;
    EXPECT_EQ(m.num_macs, busy.num_macs) << pes;
  }
  const std::string dir = std::string(MAPEX_MAESTRO_REFDATA) + "/cases/A__vgg_conv1__cp__hw256";
  const Network vgg = load_mapping(dir + "/mapping.m");
  const Hardware hw = load_hardware(dir + "/hw.m");
  EXPECT_EQ(engine::analyse(engine::compile(vgg.layers.at(0), hw, false)).filter_l2_rd, 1728);
  EXPECT_EQ(engine::analyse(engine::compile(vgg.layers.at(0), hw, false, true)).filter_l2_rd, 1161);
}

// A GEMM (M3 N2 K2) with M over the PEs and K moving outside it. Input
// (M, K): each busy PE gets its own word at every K step, 3 x 2 = 6 (the
// whole input). Filter (K, N): shared by all PEs, multicast: 2 words per K
// step, 4. Output (M, N): every PE sends its 2 partial sums per K step, 3 x
// 2 x 2 = 12 L2 writes (K accumulates in L2 over 2 steps); 6 outputs read
// out. With 4 PEs the fourth is idle and nothing changes; MAESTRO gives the
// third PE no new input after the first step and counts none of its
// outputs (the empty unique part of M's edge tile): input 3 + 2 = 5,
// outputs 2 x (2 + 2) = 8.
TEST(MdcIdleUnits, GemmRowsSpreadOverMorePesThanRows) {
  const std::string text =
      layer_text("M: 3, N: 2, K: 2", "TemporalMap(1,1) K;\nSpatialMap(1,1) M;\n", "GEMM");
  const Result busy = run_mode(text, 3, false);
  EXPECT_EQ(busy.num_macs, 12);
  EXPECT_EQ(busy.input_l2_rd, 6);
  EXPECT_EQ(busy.filter_l2_rd, 4);
  EXPECT_EQ(busy.output_l2_wr, 12);
  EXPECT_EQ(busy.output_l2_rd, 6);
  expect_same_analysis(run_mode(text, 3, true), busy, "maestro_compat on 3 PEs");
  expect_same_analysis(run_mode(text, 4, false), busy, "4 PEs");
  const Result m = run_mode(text, 4, true);
  EXPECT_EQ(m.input_l2_rd, 5);
  EXPECT_EQ(m.filter_l2_rd, 4);
  EXPECT_EQ(m.output_l2_wr, 8);
  EXPECT_EQ(m.num_macs, 12);
}

// ---- networks without multicast or spatial reduction (MAESTRO Table 1) ----------

Result run_noc(const std::string& text, std::int64_t pes, std::int64_t noc_bw, bool multicast,
               bool reduction) {
  const Network net = parse_mapping(text, "t.m");
  Hardware hw;
  hw.num_pes = pes;
  hw.noc_bw = noc_bw;
  hw.offchip_bw = 1000;
  hw.multicast = multicast;
  hw.reduction = reduction;
  validate(net.layers.at(0), hw, "t.m");
  return engine::analyse(engine::compile(net.layers.at(0), hw, false));
}

// The layer of SpatialSteadyStateAndMulticast at 1 word/cycle. Init: both
// PEs need the one input word. With multicast L2 reads it once (3 words on
// the NoC: 1 input + 2 filters, delay 3, + compute 1 = 4); without, once per
// PE (4 words, 5 cycles). Steady: only filters move (2 words, max(2, 1, 2)
// = 2). Runtime 6 against 7; input L2 reads 1 against 2; the words landing
// in the L1s (MAESTRO's count, 1) and everything else unchanged.
TEST(MdcNoc, WithoutMulticastEveryPeReadsItsOwnCopy) {
  const std::string text = layer_text("K: 4, C: 1, R: 1, S: 1, Y: 1, X: 1", "SpatialMap(1,1) K;\n");
  const Result on = run_noc(text, 2, 1, true, true);
  const Result off = run_noc(text, 2, 1, false, true);
  EXPECT_EQ(on.input_l2_rd, 1);
  EXPECT_EQ(off.input_l2_rd, 2);
  EXPECT_EQ(on.runtime_cycles, 6);
  EXPECT_EQ(off.runtime_cycles, 7);
  EXPECT_EQ(off.filter_l2_rd, 4);
  EXPECT_EQ(off.input_l1_wr, on.input_l1_wr);
  EXPECT_EQ(off.output_l2_wr, on.output_l2_wr);
  EXPECT_EQ(off.num_macs, on.num_macs);
  EXPECT_NEAR(off.energy_total_macunits - on.energy_total_macunits, 18.61, 1e-9);
  // Reduction off changes nothing here: every output has one producer.
  const Result no_red = run_noc(text, 2, 1, true, false);
  EXPECT_EQ(no_red.output_l2_wr, on.output_l2_wr);
  EXPECT_EQ(no_red.output_l2_rd, on.output_l2_rd);
  EXPECT_EQ(no_red.energy_total_macunits, on.energy_total_macunits);
}

// Four input channels on two PEs reduce into one output: two steps (Init,
// Steady), each with two partial sums of the same output. With reduction
// the network adds them: one word leaves per step (L2 writes 2, MAESTRO's
// count of the temporal accumulation; L2 reads 1, the output read out).
// Without, both partial sums reach L2 (writes 4) and the second of each
// step is added to L2's running sum (a read-modify-write: reads 1 + 2).
// Egress delay per step: 1 word against 2 at 1 word/cycle.
TEST(MdcNoc, WithoutReductionEveryPartialSumIsAReadModifyWrite) {
  const std::string text = layer_text("K: 1, C: 4, R: 1, S: 1, Y: 1, X: 1", "SpatialMap(1,1) C;\n");
  const Result on = run_noc(text, 2, 1, true, true);
  const Result off = run_noc(text, 2, 1, true, false);
  EXPECT_EQ(on.output_l2_wr, 2);
  EXPECT_EQ(on.output_l2_rd, 1);
  EXPECT_EQ(off.output_l2_wr, 4);
  EXPECT_EQ(off.output_l2_rd, 3);
  EXPECT_EQ(on.egress_delay_avg, 1);
  EXPECT_EQ(off.egress_delay_avg, 2);
  EXPECT_EQ(off.output_l1_wr, on.output_l1_wr);
  EXPECT_EQ(off.input_l2_rd, on.input_l2_rd);
  EXPECT_NEAR(off.energy_total_macunits - on.energy_total_macunits, 4 * 18.61, 1e-9);
  // Multicast off changes nothing here: no two PEs need the same word.
  const Result no_mc = run_noc(text, 2, 1, false, true);
  EXPECT_EQ(no_mc.input_l2_rd, on.input_l2_rd);
  EXPECT_EQ(no_mc.filter_l2_rd, on.filter_l2_rd);
  EXPECT_EQ(no_mc.runtime_cycles, on.runtime_cycles);
}

// KC-P in miniature (MAESTRO Fig. 4(a)): K over two clusters, C over the two
// PEs of each. Input words (C, not K) are multicast to both clusters: 2 L2
// reads with multicast, 4 without (each cluster's PEs hold distinct
// channels, so nothing is shared inside a cluster). Outputs (K, not C) are
// reduced inside each cluster: 2 words reach L2 with reduction; without, 4
// partial sums (the inner level's ratio, 2 per output) and 2
// read-modify-writes. Filters are never shared: 4 reads either way.
TEST(MdcNoc, ClusterLevelsScaleByThePesSharingAWord) {
  const std::string text = layer_text("K: 2, C: 2, R: 1, S: 1, Y: 1, X: 1",
                                      "SpatialMap(1,1) K;\nTemporalMap(2,2) C;\nCluster(2, P);\n"
                                      "SpatialMap(1,1) C;\n");
  const Result on = run_noc(text, 4, 1000, true, true);
  const Result off = run_noc(text, 4, 1000, false, false);
  EXPECT_EQ(on.input_l2_rd, 2);
  EXPECT_EQ(off.input_l2_rd, 4);
  EXPECT_EQ(on.filter_l2_rd, 4);
  EXPECT_EQ(off.filter_l2_rd, 4);
  EXPECT_EQ(on.output_l2_wr, 2);
  EXPECT_EQ(off.output_l2_wr, 4);
  EXPECT_EQ(on.output_l2_rd, 2);
  EXPECT_EQ(off.output_l2_rd, 4);
  EXPECT_EQ(off.num_macs, 4);
  EXPECT_NEAR(off.energy_total_macunits - on.energy_total_macunits, (2 + 2 + 2) * 18.61, 1e-9);
}

// Overlapping windows (X-P), 6 input columns, 3-column windows, 2 PEs: two
// folds. First fold: PE 0 columns 0-2, PE 1 columns 1-3 (MAESTRO's all-Init
// case gives every unit its whole tile: 3 + 3); second fold: columns 2-4 and
// 3-5, where with multicast PE 1 gets only the column PE 0 lacks (3 + 1).
// Without multicast each PE gets its whole window each fold (3 + 3 twice).
// The filter row both PEs use: read once with multicast, twice without.
TEST(MdcNoc, WithoutMulticastOverlappingWindowsAreSentToEachPe) {
  const std::string text = layer_text("K: 1, C: 1, R: 1, S: 3, Y: 1, X: 6", "SpatialMap(3,1) X;\n");
  const Result on = run_noc(text, 2, 1000, true, true);
  const Result off = run_noc(text, 2, 1000, false, true);
  EXPECT_EQ(on.num_macs, 12);
  EXPECT_EQ(on.input_l2_rd, 6 + 4);
  EXPECT_EQ(off.input_l2_rd, 6 + 6);
  EXPECT_EQ(on.filter_l2_rd, 3);
  EXPECT_EQ(off.filter_l2_rd, 6);
  EXPECT_EQ(off.output_l2_wr, on.output_l2_wr);
}

// The mirror image, CK-P: C over two clusters, K over the two PEs of each.
// Now the input word of a cluster's channel is multicast inside it (the
// inner level's ratio, 2 PEs per word: 2 L2 reads become 4) and the
// partial sums of the two channels are reduced across the clusters (2
// outputs with reduction; 4 partial sums and 2 read-modify-writes without).
TEST(MdcNoc, SharingInsideAClusterAndAcrossClusters) {
  const std::string text = layer_text("K: 2, C: 2, R: 1, S: 1, Y: 1, X: 1",
                                      "SpatialMap(1,1) C;\nTemporalMap(2,2) K;\nCluster(2, P);\n"
                                      "SpatialMap(1,1) K;\n");
  const Result on = run_noc(text, 4, 1000, true, true);
  const Result no_mc = run_noc(text, 4, 1000, false, true);
  const Result no_red = run_noc(text, 4, 1000, true, false);
  EXPECT_EQ(on.input_l2_rd, 2);
  EXPECT_EQ(no_mc.input_l2_rd, 4);
  EXPECT_EQ(no_red.input_l2_rd, 2);
  EXPECT_EQ(no_mc.filter_l2_rd, 4);
  EXPECT_EQ(on.output_l2_wr, 2);
  EXPECT_EQ(no_mc.output_l2_wr, 2);
  EXPECT_EQ(no_red.output_l2_wr, 4);
  EXPECT_EQ(no_red.output_l2_rd, on.output_l2_rd + 2);
}

// The switches reach the analysis from the architecture (every spatial
// level) and a mix, which MAESTRO's one network cannot model, is refused
// naming the level and key.
TEST(MdcNoc, HardwareTakesTheSwitchesOfEverySpatialLevel) {
  using test::buffer;
  using test::dram;
  using test::spatial;
  Level pes = spatial("PEs", {4}, /*multicast=*/false);
  pes.noc.reduction = false;
  const Hardware hw = hardware_from(Architecture::make(
      "c", 1000, 8, 1, 1, {buffer("L1", 1024), pes, buffer("L2", 1 << 20), dram()}));
  EXPECT_FALSE(hw.multicast);
  EXPECT_FALSE(hw.reduction);
  EXPECT_TRUE(hardware_from(test::chip({4})).multicast);
  EXPECT_TRUE(hardware_from(test::chip({4})).reduction);
  Level rows = spatial("Rows", {2});
  Level cols = spatial("Cols", {2});
  cols.noc.reduction = false;
  const Architecture mixed = Architecture::make(
      "mixed", 1000, 8, 1, 1,
      {buffer("L1", 1024), rows, buffer("L2", 4096), cols, buffer("L3", 1 << 20), dram()});
  try {
    (void)hardware_from(mixed);
    FAIL() << "a mix of reduction switches was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("levels.Cols.noc.reduction"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("'Rows'"), std::string::npos) << e.what();
  }
}

// ---- Marvel Algorithm 1 and conformability ---------------------------------------

TEST(MdcTransform, Algorithm1OnTheTinyConvMapping) {
  const mapex::Network net = mapex::Network::load(kData + "/tiny_net.yaml");
  const Architecture arch = Architecture::load(kData + "/tiny_arch.yaml");
  const Operator& op = net.layers()[0].op;
  const Mapping m = Mapping::load(kData + "/tiny_conv_mapping.yaml", op, arch);
  const Lowered lowered = from_mapping(op, arch, m);
  const Layer& l = lowered.layer;
  // PEs split K by 4 with an L1 tile of K1: SpatialMap(1,1) K, at K's place
  // in L2's loop order (N K R S C P Q) over L1 tiles; the others become one
  // TemporalMap each, sized by the L1 tile; P, Q tiles of 1 output row are 3 input rows sliding
  // by 1.
  EXPECT_EQ(format_dataflow(l.dataflow),
            "TemporalMap(1,1) N;\nSpatialMap(1,1) K;\nTemporalMap(3,3) R;\nTemporalMap(3,3) S;\n"
            "TemporalMap(1,1) C;\nTemporalMap(3,1) Y;\nTemporalMap(3,1) X;\n");
  EXPECT_EQ(l.dim("Y"), 6);
  const Hardware& hw = lowered.hardware;
  EXPECT_EQ(hw.num_pes, 4);
  EXPECT_EQ(hw.l1_size, 64);
  EXPECT_EQ(hw.noc_bw, 8);  // 0.8 GB/s at 100 MHz, 1-byte words
  const Result r = engine::analyse(engine::compile(l, hw, true));
  EXPECT_EQ(r.num_macs, static_cast<double>(op.macs()));
}

TEST(MdcTransform, PaddedLayerIsTheConvolutionOfItsPaddedInput) {
  // H = W = 6 with padding 1 and a 3x3 filter has the output of an
  // unpadded 8x8 input: MAESTRO's convention for padded layers.
  const Architecture arch = Architecture::load(kData + "/tiny_arch.yaml");
  const Operator padded =
      mapex::make_conv2d("p", mapex::Conv2dShape{1, 4, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Operator plain = mapex::make_conv2d("q", mapex::Conv2dShape{1, 4, 8, 8, 8, 3, 3});
  ASSERT_EQ(padded.macs(), plain.macs());
  const Mapping m = Mapping::load(kData + "/tiny_conv_mapping.yaml", plain, arch);
  const Layer a = from_mapping(padded, arch, m).layer, b = from_mapping(plain, arch, m).layer;
  EXPECT_EQ(a.dim("Y"), 8);
  EXPECT_EQ(format_dataflow(a.dataflow), format_dataflow(b.dataflow));
  const Hardware hw = from_mapping(plain, arch, m).hardware;
  const Result ra = engine::analyse(engine::compile(a, hw, true));
  const Result rb = engine::analyse(engine::compile(b, hw, true));
  EXPECT_EQ(ra.runtime_cycles, rb.runtime_cycles);
  EXPECT_EQ(ra.input_l2_rd, rb.input_l2_rd);
}

// A mapping that engages 8 of P2's 1024 PEs (K split 4, C split 2) must be
// analysed on those 8: each split is a region of its own (Algorithm 1,
// lines 5-13) and the hardware has the PEs the splits multiply to. Spread
// over the whole chip, or with K and C as lock-step SpatialMaps of one
// region, MAESTRO's analysis describes another mapping.
Mapping split_mapping(const Operator& op, const Architecture& arch, const std::string& split) {
  return Mapping::parse(
      "L1: {tile: {K: 1, C: 1, P: 1, Q: 4, R: 3, S: 3}, order: [R, S, Q]}\n"
      "PE_array: {split: " +
          split +
          "}\n"
          "L2: {tile: {K: 16, C: 8, P: 8, Q: 8, R: 3, S: 3}, order: [K, C, P, Q, R, S]}\n"
          "DRAM: {order: [K, C, P, Q, R, S]}\n",
      "split mapping", op, arch);
}

TEST(MdcTransform, EverySplitIsARegionOverItsOwnUnits) {
  const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/marvel_p2.yaml");
  const Operator op = mapex::make_conv2d("c", mapex::Conv2dShape{1, 8, 16, 10, 10, 3, 3});
  const double macs = static_cast<double>(op.macs());
  const Lowered kc = from_mapping(op, arch, split_mapping(op, arch, "{K: 4, C: 2}"));
  EXPECT_EQ(kc.hardware.num_pes, 8);
  EXPECT_EQ(format_dataflow(kc.layer.dataflow),
            "TemporalMap(1,1) N;\nSpatialMap(1,1) K;\nTemporalMap(2,2) C;\nTemporalMap(3,1) Y;\n"
            "TemporalMap(6,4) X;\nTemporalMap(3,3) R;\nTemporalMap(3,3) S;\nCluster(2,P);\n"
            "SpatialMap(1,1) C;\n");
  const Result rkc = engine::analyse(engine::compile(kc.layer, kc.hardware, true));
  EXPECT_EQ(rkc.num_macs, macs);
  EXPECT_EQ(rkc.avg_utilized_pes, 8);
  EXPECT_GE(rkc.runtime_cycles, macs / 8);

  const Lowered k = from_mapping(op, arch, split_mapping(op, arch, "{K: 4}"));
  EXPECT_EQ(k.hardware.num_pes, 4);
  const Result rk = engine::analyse(engine::compile(k.layer, k.hardware, true));
  EXPECT_EQ(rk.avg_utilized_pes, 4);
  EXPECT_GE(rk.runtime_cycles, macs / 4);
  EXPECT_LT(rkc.runtime_cycles, rk.runtime_cycles);
}

TEST(MdcTransform, ThreeSplitsAtOneLevelAreThreeRegions) {
  const Architecture arch =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/marvel_p2.yaml");
  const Operator op = mapex::make_conv2d("c", mapex::Conv2dShape{1, 8, 16, 10, 10, 3, 3});
  const Lowered l = from_mapping(op, arch, split_mapping(op, arch, "{K: 4, C: 2, P: 2}"));
  EXPECT_EQ(l.hardware.num_pes, 16);
  const Result r = engine::analyse(engine::compile(l.layer, l.hardware, true));
  EXPECT_EQ(r.num_macs, static_cast<double>(op.macs()));
  EXPECT_EQ(r.avg_utilized_pes, 16);
  EXPECT_GE(r.runtime_cycles, static_cast<double>(op.macs()) / 16);
}

// Row stationary (Eyeriss; MAESTRO's YR-P, Marvel Fig. 12's style) on
// VGG16 conv5_1 with 256 PEs: output rows over 14 clusters of 3 PEs, filter
// row r and input row p + r on PE r of each cluster. The canonical mapping
// with the same P14 x R3 split, lowered, must be MAESTRO's own YR-P
// directives (42 busy PEs, the same cycles and traffic), not what a
// lowering without the lock-step input rows gives (every PE would then
// receive all three rows of its window).
TEST(MdcTransform, RowStationaryMapsInputRowsWithFilterRows) {
  const std::string yr_p =
      "SpatialMap(1,1) Y';\nTemporalMap(1,1) X';\nTemporalMap(1,1) C;\nTemporalMap(16,16) K;\n"
      "TemporalMap(Sz(R),Sz(R)) R;\nTemporalMap(Sz(S),Sz(S)) S;\nCluster(Sz(R),P);\n"
      "SpatialMap(1,1) Y;\nSpatialMap(1,1) R;\nTemporalMap(Sz(S),Sz(S)) S;\n";
  const Network net =
      parse_mapping(layer_text("K: 512, C: 512, R: 3, S: 3, Y: 16, X: 16", yr_p), "yr_p.m");
  Hardware hw;
  hw.num_pes = 256;
  hw.l1_size = 1024;
  hw.l2_size = 1048576;
  hw.noc_bw = 64;
  hw.offchip_bw = 64;
  const Result native = engine::analyse(engine::compile(net.layers.at(0), hw, false));

  Level l1;
  l1.name = "L1";
  l1.size_bytes = 1024;
  Level pes;
  pes.name = "PEs";
  pes.kind = LevelKind::kSpatial;
  pes.shape = {256};
  pes.noc.bandwidth_gbps = 64;
  Level l2 = l1;
  l2.name = "L2";
  l2.size_bytes = 1048576;
  Level dram;
  dram.name = "DRAM";
  dram.kind = LevelKind::kDram;
  dram.bandwidth_gbps = 64;
  const Architecture arch = Architecture::make("hw256", 1000, 8, 1, 1, {l1, pes, l2, dram});
  const Operator op = mapex::make_conv2d(
      "conv5_1", mapex::Conv2dShape{1, 512, 512, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Mapping m = Mapping::parse(
      "L1: {tile: {K: 16, S: 3}}\n"
      "PEs: {split: {P: 14, R: 3}}\n"
      "L2: {tile: {K: 512, C: 512, P: 14, Q: 14, R: 3, S: 3}, order: [P, Q, C, K, R, S, N]}\n",
      "rs", op, arch);
  const Lowered lowered = from_mapping(op, arch, m);
  EXPECT_EQ(format_dataflow(lowered.layer.dataflow),
            "SpatialMap(3,1) Y;\nTemporalMap(3,1) X;\nTemporalMap(1,1) C;\nTemporalMap(16,16) K;\n"
            "TemporalMap(3,3) R;\nTemporalMap(3,3) S;\nTemporalMap(1,1) N;\nCluster(3,P);\n"
            "SpatialMap(1,1) Y;\nSpatialMap(1,1) R;\n");
  EXPECT_EQ(lowered.hardware.num_pes, 42);
  const Result r = engine::analyse(engine::compile(lowered.layer, lowered.hardware, true));
  EXPECT_EQ(r.num_macs, static_cast<double>(op.macs()));
  EXPECT_EQ(r.runtime_cycles, native.runtime_cycles);
  EXPECT_EQ(r.avg_utilized_pes, 42);
  EXPECT_EQ(native.avg_utilized_pes, 42);
  // What the lowering gave before the rows moved with the filter rows: the
  // YR-P directives without the inner SpatialMap on Y.
  std::string without_rows = yr_p;
  without_rows.erase(without_rows.find("SpatialMap(1,1) Y;\n"), 19);
  const Result old = engine::analyse(engine::compile(
      parse_mapping(layer_text("K: 512, C: 512, R: 3, S: 3, Y: 16, X: 16", without_rows), "o.m")
          .layers.at(0),
      hw, false));
  std::cout << "conv5_1 row stationary: " << r.runtime_cycles << " cycles on " << r.avg_utilized_pes
            << " PEs; without the lock-step rows " << old.runtime_cycles << " cycles on "
            << old.avg_utilized_pes << " PEs\n";
  EXPECT_GT(old.runtime_cycles, 1.2 * r.runtime_cycles);
  EXPECT_EQ(r.input_l2_rd, native.input_l2_rd);
  EXPECT_EQ(r.filter_l2_rd, native.filter_l2_rd);
  EXPECT_EQ(r.output_l2_wr, native.output_l2_wr);

  // Only filter rows split (no output-row split): the outermost region is
  // one unit over the first other dimension, and the rows still follow.
  const Mapping only_r = Mapping::parse(
      "L1: {tile: {K: 16, S: 3}}\n"
      "PEs: {split: {R: 3}}\n"
      "L2: {tile: {K: 512, C: 512, P: 14, Q: 14, R: 3, S: 3}, order: [P, Q, C, K, R, S, N]}\n",
      "r only", op, arch);
  const Lowered lr = from_mapping(op, arch, only_r);
  EXPECT_EQ(lr.hardware.num_pes, 3);
  const Result rr = engine::analyse(engine::compile(lr.layer, lr.hardware, true));
  EXPECT_EQ(rr.num_macs, static_cast<double>(op.macs()));
  EXPECT_EQ(rr.avg_utilized_pes, 3);
  EXPECT_NEAR(rr.runtime_cycles, r.runtime_cycles * 14, r.runtime_cycles * 14 * 0.05);
}

// A strided layer whose row-stationary units hold more than one output row
// has input rows that cover a whole filter; MAESTRO rewrites such rows by
// the stride (§III-B), so they cannot follow the filter rows: refused.
TEST(MdcTransform, StridedRowStationaryWithSeveralOutputRowsIsRefused) {
  const Architecture arch = mapex::test::chip({64});
  const Operator op =
      mapex::make_conv2d("s2", mapex::Conv2dShape{1, 8, 8, 17, 17, 3, 3, 2, 2, 0, 0, 1, 1, 1});
  const Mapping m = Mapping::parse(
      "L1: {tile: {P: 2, S: 3}}\nPEs: {split: {P: 4, R: 3}}\n"
      "L2: {tile: {K: 8, C: 8, P: 8, Q: 8, R: 3, S: 3}}\n",
      "rs2", op, arch);
  try {
    (void)from_mapping(op, arch, m);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("split of R with 2 outputs per unit at stride 2"),
              std::string::npos)
        << e.what();
  }
}

Operator loopnest(const std::vector<std::string>& input_subscripts,
                  const std::vector<std::string>& output_subscripts, Reduction red) {
  std::vector<Dim> dims{{"I", 8}, {"J", 8}};
  Tensor in{"A", TensorRole::kInput, Reduction::kNone, {}};
  for (const auto& s : input_subscripts) in.subscripts.push_back(parse_affine(s, dims));
  Tensor out{"B", TensorRole::kOutput, red, {}};
  for (const auto& s : output_subscripts) out.subscripts.push_back(parse_affine(s, dims));
  return Operator::make("op", "loopnest", dims, {in, out});
}

TEST(MdcConformability, ConvAndGemmConform) {
  const mapex::Network net = mapex::Network::load(kData + "/tiny_net.yaml");
  for (const auto& l : net.layers()) EXPECT_TRUE(check_conformability(l.op).empty()) << l.op.name();
  EXPECT_TRUE(check_conformability(loopnest({"I", "J"}, {"I"}, Reduction::kSum)).empty());
}

TEST(MdcConformability, EachRuleIsReported) {
  auto rules = [](const Operator& op) {
    std::vector<int> out;
    for (const auto& i : check_conformability(op)) out.push_back(i.rule);
    return out;
  };
  // Rule 2: J does not index the output and nothing reduces over it.
  EXPECT_EQ(rules(loopnest({"I", "J"}, {"I"}, Reduction::kNone)), std::vector<int>{2});
  // Rule 3: two windows over the same iterators depend on each other.
  EXPECT_EQ(rules(loopnest({"I + J", "I + J*2"}, {"I", "J"}, Reduction::kSum)),
            std::vector<int>{3});
  // Rule 4: an independent subscript with a stride of 2.
  EXPECT_EQ(rules(loopnest({"I*2", "J"}, {"I*2", "J"}, Reduction::kSum)), std::vector<int>{4});
}

}  // namespace
}  // namespace mapex::mdc

namespace mapex::mdc {
namespace {

// The true iteration space counts each output position once, whatever the
// stride, tile sizes, offsets and PE count: a deterministic sweep of
// single- and two-level dataflows (KC-P style, YX-P style, tiled KC-P)
// over strided layers, each MAC count compared with the layer's. The
// mappings are well formed: tiles of K and C do not overlap or leave gaps,
// and at stride 1 a window tile moves by the outputs it holds (at larger
// strides MAESTRO's rewrite sets the offset, whatever is written).
TEST(MdcEngine, TrueSpaceCountsLayerMacsAcrossStridesAndTiles) {
  std::uint64_t seed = 12345;
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<std::int64_t>((seed >> 33) % static_cast<std::uint64_t>(hi - lo + 1));
  };
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const std::int64_t r = pick(1, 5), s = pick(1, 5), stride = pick(1, 4);
    const std::int64_t y = r + pick(0, 20), x = s + pick(0, 20);
    const std::int64_t k = pick(1, 9), c = pick(1, 6);
    const std::int64_t ty = r + pick(0, 6), tx = s + pick(0, 6);
    auto window = [&](std::int64_t tile, std::int64_t filter) {
      const std::int64_t offset = stride == 1 ? tile - filter + 1 : pick(1, tile);
      return "(" + std::to_string(tile) + "," + std::to_string(offset) + ")";
    };
    const std::string rs = "TemporalMap(Sz(R),Sz(R)) R;\nTemporalMap(Sz(S),Sz(S)) S;\n";
    const std::int64_t kt = pick(1, 3);
    std::string flow;
    switch (trial % 3) {
      case 0:
        flow = "SpatialMap(" + std::to_string(kt) + "," + std::to_string(kt) +
               ") K;\nTemporalMap(1,1) C;\n" + rs + "TemporalMap" + window(ty, r) +
               " Y;\nTemporalMap" + window(tx, s) + " X;\n";
        break;
      case 1:
        flow = "TemporalMap(1,1) K;\nTemporalMap(1,1) C;\nSpatialMap(Sz(R),1) Y;\nTemporalMap" +
               window(tx, s) + " X;\nCluster(" + std::to_string(pick(1, 8)) +
               ", P);\nSpatialMap(Sz(S),1) X;\n" + rs;
        break;
      default:
        flow = "SpatialMap(2,2) K;\nTemporalMap(2,2) C;\n" + rs + "TemporalMap(Sz(R),1) Y;\n" +
               "TemporalMap" + window(tx, s) +
               " X;\nCluster(2, P);\nSpatialMap(1,1) C;\nTemporalMap(2,2) K;\n" +
               "TemporalMap(Sz(R),1) Y;\nTemporalMap(Sz(S),1) X;\n" + rs;
        break;
    }
    const std::string text =
        "Network n {\nLayer l {\nType: CONV\nStride { X: " + std::to_string(stride) +
        ", Y: " + std::to_string(stride) + " }\nDimensions { K: " + std::to_string(k) +
        ", C: " + std::to_string(c) + ", R: " + std::to_string(r) + ", S: " + std::to_string(s) +
        ", Y: " + std::to_string(y) + ", X: " + std::to_string(x) + " }\nDataflow {\n" + flow +
        "}\n}\n}\n";
    const Network net = parse_mapping(text, "sweep.m");
    Hardware hw;
    hw.num_pes = pick(8, 64);
    Result res;
    try {
      res = engine::analyse(engine::compile(net.layers.at(0), hw, false));
    } catch (const InputError&) {
      continue;  // e.g. a stride larger than a tile leaves no output
    }
    ++checked;
    EXPECT_EQ(res.num_macs, net.layers.at(0).true_macs()) << text << "PEs " << hw.num_pes;
    EXPECT_GT(res.runtime_cycles, 0) << text;
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace mapex::mdc

namespace mapex::mdc {
namespace {

// A fan-out of fan-outs (FLASH Edge's 256 PEs as 4 rows of 64 columns)
// lowers to nested cluster levels of one network: the same directives and
// the same analysis as one 256-PE array whose cluster level has no steps.
TEST(MdcLowering, AdjacentSpatialLevelsAreNestedClusterLevels) {
  const Operator op = make_gemm("VI", 512, 256, 256);
  const Architecture flat =
      Architecture::load(std::string(MAPEX_EXPERIMENTS_DIR) + "/architectures/flash_edge.yaml");
  std::vector<Level> levels = flat.levels();
  Level cols = levels[1], rows = levels[1];
  cols.name = "PE_cols";
  cols.shape = {64};
  rows.name = "PE_rows";
  rows.shape = {4};
  const Architecture nested =
      Architecture::make("nested", flat.clock_mhz(), flat.word_bits(), flat.mac_energy_pj(),
                         flat.macs_per_pe(), {levels[0], cols, rows, levels[2], levels[3]});
  const DimId M = op.find_dim("M"), N = op.find_dim("N"), K = op.find_dim("K");
  const std::vector<DimId> mnk{M, N, K};
  auto base = [&](const Architecture& arch) {
    Mapping m = Mapping::trivial(op, arch);
    m.level(0).tile = {8, 8, 1};
    auto& s2 = m.level(arch.num_levels() - 2);
    s2.tile = {8, 32, 64};
    s2.order = mnk;
    m.level(arch.num_levels() - 1).order = mnk;
    return m;
  };
  Mapping one = base(flat);
  one.level(1).split[static_cast<std::size_t>(N)] = 4;
  one.level(1).cluster = ClusterMapping{{1, 1, 64}, {8, 8, 64}, mnk};
  Mapping two = base(nested);
  two.level(1).split[static_cast<std::size_t>(K)] = 64;
  two.level(2).split[static_cast<std::size_t>(N)] = 4;
  ASSERT_FALSE(one.structural_error(op, flat)) << *one.structural_error(op, flat);
  ASSERT_FALSE(two.structural_error(op, nested)) << *two.structural_error(op, nested);
  const Lowered a = from_mapping(op, flat, one);
  const Lowered b = from_mapping(op, nested, two);
  EXPECT_EQ(format_dataflow(a.layer.dataflow), format_dataflow(b.layer.dataflow));
  EXPECT_EQ(a.hardware.num_pes, b.hardware.num_pes);
  const Result ra = engine::analyse(engine::compile(a.layer, a.hardware, false));
  const Result rb = engine::analyse(engine::compile(b.layer, b.hardware, false));
  EXPECT_EQ(ra.runtime_cycles, rb.runtime_cycles);
  EXPECT_EQ(ra.filter_l2_rd, rb.filter_l2_rd);
  // Fan-outs whose networks differ are refused: MAESTRO has one network.
  rows.noc.bandwidth_gbps *= 2;
  const Architecture mixed =
      Architecture::make("mixed", flat.clock_mhz(), flat.word_bits(), flat.mac_energy_pj(),
                         flat.macs_per_pe(), {levels[0], cols, rows, levels[2], levels[3]});
  EXPECT_THROW(hardware_from(mixed), InputError);
}

}  // namespace
}  // namespace mapex::mdc
