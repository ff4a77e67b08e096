// Checked integer arithmetic (mapex/checked.hpp) and the loaders that use
// it: sizes the parsers accept (up to 2^63 - 1) never wrap; a product that
// does not fit is an InputError with its location, or is clamped exactly.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mapex/architecture.hpp>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapping.hpp>
#include <mapex/mdc.hpp>
#include <mapex/metrics.hpp>
#include <mapex/network.hpp>
#include <mapex/operator.hpp>
#include <string>

namespace mapex {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t k2to62 = std::int64_t{1} << 62;

// Expects `f` to throw an InputError whose message holds `needle`.
template <typename F>
std::string expect_input_error(F f, const std::string& needle) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "no InputError; expected one saying '" << needle << "'";
  return "";
}

TEST(Checked, MulAndAddReportOverflow) {
  EXPECT_EQ(checked_mul(3, 4), 12);
  EXPECT_EQ(checked_mul(k2to62, 1), k2to62);
  EXPECT_EQ(checked_mul(k2to62, 2), std::nullopt);  // 2^63
  EXPECT_EQ(checked_mul(kMax, -1), -kMax);
  EXPECT_EQ(checked_mul(std::numeric_limits<std::int64_t>::min(), -1), std::nullopt);
  EXPECT_EQ(checked_add(kMax - 1, 1), kMax);
  EXPECT_EQ(checked_add(kMax, 1), std::nullopt);
  const std::int64_t fits[] = {2, 3, 5, 7};
  EXPECT_EQ(checked_product(fits), 210);
  const std::int64_t wraps[] = {k2to62, 2, 0};  // 2^63 overflows before the 0
  EXPECT_EQ(checked_product(wraps), std::nullopt);
}

TEST(Checked, CappedAndSaturatedProductsAreExact) {
  EXPECT_EQ(mul_capped(6, 7, 100), 42);
  EXPECT_EQ(mul_capped(6, 7, 40), 40);
  EXPECT_EQ(mul_capped(k2to62, 4, 1000), 1000);  // 2^64 would wrap to 0
  EXPECT_EQ(mul_capped(kMax, kMax, kMax), kMax);
  EXPECT_EQ(mul_saturating(k2to62, 2), kMax);
  EXPECT_EQ(mul_saturating(1 << 20, 1 << 20), std::int64_t{1} << 40);
}

TEST(Checked, CeilDivNearTheTop) {
  EXPECT_EQ(ceil_div(7, 2), 4);
  EXPECT_EQ(ceil_div(8, 2), 4);
  EXPECT_EQ(ceil_div(0, 3), 0);
  // (a + b - 1) / b overflows here.
  EXPECT_EQ(ceil_div(kMax, 2), std::int64_t{1} << 62);
  EXPECT_EQ(ceil_div(kMax, kMax), 1);
}

// ---- Operator::make and the affine parser ----

TEST(CheckedOperator, MacsThatDoNotFitAreRefused) {
  // 2^62 channels fit; times K = 4 they do not (2^64 wraps to 0 MACs).
  EXPECT_EQ(make_fc("fc", 1, k2to62, 1).macs(), k2to62);
  expect_input_error([] { make_fc("fc", 1, k2to62, 4); }, "number of MACs");
}

TEST(CheckedOperator, SubscriptExtentsThatDoNotFitAreRefused) {
  const std::vector<Dim> dims{{"X", 3}, {"Y", 2}};
  // 2^62 * (3 - 1) + 1 overflows; 2^61 * 2 + 1 does not.
  auto make = [&](std::int64_t coeff) {
    Tensor in{"In", TensorRole::kInput, Reduction::kNone, {AffineExpr{{{0, coeff}}, 0}}};
    Tensor out{"Out", TensorRole::kOutput, Reduction::kSum, {AffineExpr{{{1, 1}}, 0}}};
    return Operator::make("op", "loopnest", dims, {in, out});
  };
  EXPECT_NO_THROW(make(std::int64_t{1} << 61));
  expect_input_error([&] { make(k2to62); }, "subscript of tensor 'In'");
}

TEST(CheckedOperator, AffineCoefficientsOutOfRangeAreInputErrors) {
  const std::vector<Dim> dims{{"X", 3}, {"Y", 2}};
  EXPECT_EQ(parse_affine("X*9223372036854775807", dims).terms[0].coeff, kMax);
  expect_input_error([&] { parse_affine("X*99999999999999999999", dims); },
                     "expected a number of at most 9223372036854775807, got "
                     "'99999999999999999999'");
  // Repeated terms add up past int64.
  expect_input_error([&] { parse_affine("X*9223372036854775807 + X", dims); },
                     "terms add up to more than");
  expect_input_error([&] { parse_affine("9223372036854775807 + 1", dims); },
                     "terms add up to more than");
}

TEST(CheckedOperator, LoopnestCoefficientErrorIsLocated) {
  const std::string yaml =
      "network: n\n"
      "layers:\n"
      "  - name: nest\n"
      "    type: loopnest\n"
      "    dims: {X: 4}\n"
      "    tensors:\n"
      "      - {name: In, role: input, subscripts: [X*99999999999999999999]}\n"
      "      - {name: Out, role: output, subscripts: [X]}\n";
  expect_input_error([&] { Network::parse(yaml, "nest.yaml"); },
                     "nest.yaml:7:46: key 'subscripts'");
}

TEST(CheckedOperator, HugeFcLayerInANetworkIsLocated) {
  const std::string yaml =
      "network: n\n"
      "layers:\n"
      "  - {name: fc, type: fc, C: 4611686018427387904, K: 4}\n";
  expect_input_error([&] { Network::parse(yaml, "fc.yaml"); }, "fc.yaml:3:5:");
}

// An fc reading a convolution flattened (C = K x P x Q): the pixel count
// P x Q of a convolution whose MACs fit is exact; one of 2^64 pixels is
// refused at the convolution's entry before any product is taken
// (network.cpp's reads_flattened multiplied P by Q unchecked).
TEST(CheckedOperator, FcReadingAHugeConvolutionFlattened) {
  const std::string head =
      "network: n\nlayers:\n  - {name: c, type: conv2d, C: 1, K: 1, R: 1, S: 1, ";
  const Network ok = Network::parse(
      head +
          "H: 2147483648, W: 2147483648}\n  - {name: f, type: fc, C: 4611686018427387904, K: 1}\n",
      "ok.yaml");
  EXPECT_EQ(ok.layers().back().op.macs(), k2to62);
  expect_input_error(
      [&] {
        Network::parse(
            head + "H: 4294967296, W: 4294967296}\n  - {name: f, type: fc, C: 4, K: 2}\n",
            "big.yaml");
      },
      "big.yaml:3:5:");
}

TEST(CheckedOperator, ConvPaddingAndDilationOverflowAreRefused) {
  Conv2dShape s;
  s.C = s.K = 1;
  s.H = s.W = 4;
  s.R = s.S = 3;
  s.padding_h = s.padding_w = k2to62;  // H + 2 * padding overflows
  expect_input_error([&] { make_conv2d("c", s); }, "padded input height");
  s.padding_h = s.padding_w = 0;
  s.dilation_h = s.dilation_w = k2to62;  // dilation * (R - 1) + 1 overflows
  expect_input_error([&] { make_conv2d("c", s); }, "dilated filter height");
}

// ---- Architecture: fan-outs, partitions, real-valued ranges ----

std::string arch_with(const std::string& spatial_shape, const std::string& extra_l1 = "",
                      const std::string& dram = "bandwidth_gbps: 1") {
  return "name: a\nclock_mhz: 100\nword_bits: 8\nlevels:\n"
         "  - {name: L1, kind: buffer, size_bytes: 64" +
         extra_l1 +
         "}\n"
         "  - {name: PEs, kind: spatial, shape: " +
         spatial_shape +
         ", noc: {}}\n"
         "  - {name: DRAM, kind: dram, " +
         dram + "}\n";
}

TEST(CheckedArchitecture, FanoutsThatDoNotFitAreLocated) {
  // 2^31 x 2^31 = 2^62 PEs fit; a third axis of 4 makes 2^64.
  EXPECT_EQ(Architecture::parse(arch_with("[2147483648, 2147483648]"), "a.yaml").num_pes(), k2to62);
  expect_input_error(
      [] { Architecture::parse(arch_with("[2147483648, 2147483648, 4]"), "a.yaml"); },
      "a.yaml:6:64: key 'shape': level 'PEs' brings the number of PEs over");
}

TEST(CheckedArchitecture, MakeRefusesFanoutsThatDoNotFit) {
  Level l1, pes, dram;
  l1.name = "L1";
  l1.size_bytes = 64;
  pes.name = "PEs";
  pes.kind = LevelKind::kSpatial;
  pes.shape = {k2to62, 4};
  dram.name = "DRAM";
  dram.kind = LevelKind::kDram;
  dram.bandwidth_gbps = 1.0;
  expect_input_error(
      [&] {
        Architecture::make("a", 100, 8, 1, 1, {l1, pes, dram});
      },
      "brings the number of PEs over");
}

TEST(CheckedArchitecture, EnergiesBandwidthsAndClockAreBounded) {
  expect_input_error(
      [] { Architecture::parse(arch_with("4", ", read_energy_pj: 1e308"), "a.yaml"); },
      "a.yaml:5:62: key 'read_energy_pj': expected a number from 0 to 1e+09, got '1e308'");
  expect_input_error(
      [] { Architecture::parse(arch_with("4", "", "bandwidth_gbps: 1e-300"), "a.yaml"); },
      "key 'bandwidth_gbps': expected a number from 1e-06 to 1e+15");
  std::string fast_clock = arch_with("4");
  fast_clock.replace(fast_clock.find("clock_mhz: 100"), 14, "clock_mhz: 1e300");
  expect_input_error([&] { Architecture::parse(fast_clock, "a.yaml"); },
                     "a.yaml:2:12: key 'clock_mhz'");
  // The shipped "unlimited" bandwidth of 1e12 GB/s stays accepted.
  EXPECT_NO_THROW(Architecture::parse(arch_with("4", "", "bandwidth_gbps: 1.0e12"), "a.yaml"));
}

TEST(CheckedArchitecture, PartitionSizesThatDoNotFitAreLocated) {
  const std::string extra =
      ", partitions: [{name: a, tensors: [In], size_bytes: 9223372036854775807}, "
      "{name: b, tensors: [Out], size_bytes: 1}]";
  std::string text = arch_with("4", extra);
  text.replace(text.find("size_bytes: 64, "), 16, "");
  expect_input_error([&] { Architecture::parse(text, "a.yaml"); },
                     "key 'partitions': level 'L1': the partitions' sizes add up to more than");
}

// ---- Mapping spans and splits near INT64_MAX ----

TEST(CheckedMapping, SpansAreClampedToTheBoundNotWrapped) {
  // A dimension of bound 2^63 - 1: tiles of 2^62 split by 2 span 2^63,
  // which wraps to a negative span in int64 arithmetic; it is the bound.
  const Operator op = make_fc("fc", 1, kMax, 1);
  const Architecture arch = Architecture::parse(arch_with("4"), "a.yaml");
  const Mapping m = Mapping::parse("L1: {tile: {C: 4611686018427387904}}\nPEs: {split: {C: 2}}\n",
                                   "m.yaml", op, arch);
  const auto c = static_cast<size_t>(op.find_dim("C"));
  EXPECT_EQ(m.span(op, arch, 1)[c], kMax);
  EXPECT_EQ(m.span(op, arch, 2)[c], kMax);
  // A split of 2^62 on tiles of 2^61 would cover 2^123: refused, located.
  expect_input_error(
      [&] {
        Mapping::parse(
            "L1: {tile: {C: 2305843009213693952}}\nPEs: {split: {C: 4611686018427387904}}\n",
            "m.yaml", op, arch);
      },
      "m.yaml:2:14: key 'split': level 'PEs': split of C is 4611686018427387904 but tiles of "
      "2305843009213693952 "
      "cover its bound 9223372036854775807 with fewer children");
}

TEST(CheckedMapping, SplitsBeyondTheFanoutDoNotWrapBelowIt) {
  // Splits 2 and 2^62 multiply to 2^63, which wraps to a negative count of
  // children that is "within" a fan-out of 4 (searchers build splits
  // freely; a loaded operator bounds their product, a hand-built one not).
  const Architecture arch = Architecture::parse(arch_with("4"), "a.yaml");
  const Level& pes = arch.levels()[1];
  ASSERT_EQ(pes.split_placement, SplitPlacement::kOneAxis);
  EXPECT_FALSE(splits_fit_array({2, k2to62}, pes));
  Level flat = pes;
  flat.split_placement = SplitPlacement::kFlat;
  EXPECT_FALSE(splits_fit_array({2, k2to62}, flat));
  LevelMapping lm;
  lm.split = {std::int64_t{1} << 32, std::int64_t{1} << 32};
  EXPECT_EQ(units_used(lm), kMax);  // 2^64 wraps to 0 unchecked
}

// ---- MAESTRO files ----

TEST(CheckedMaestro, HugeIntegersAreLocatedInputErrors) {
  expect_input_error([] { mdc::parse_hardware("num_pes: 99999999999999999999\n", "hw.m"); },
                     "hw.m:1:10: key 'num_pes': expected a positive integer of at most "
                     "9223372036854775807, got '99999999999999999999'");
  // A hop latency of 2^63 - 1 cycles fits but overflows every transfer's sum.
  expect_input_error(
      [] { mdc::parse_hardware("num_pes: 4\nNoC_NumHops: 9223372036854775807\n", "hw.m"); },
      "hw.m:2:14: key 'NoC_NumHops': expected at most 1000000000 hops");
  EXPECT_EQ(mdc::parse_hardware("num_pes: 4\nNoC_NumHops: 1000000000\n", "hw.m").noc_latency,
            1'000'000'000);
  const std::string head = "Network n {\nLayer L {\nType: GEMM\nDimensions { M: 4, N: 4, K: ";
  const std::string tail = " }\nDataflow { SpatialMap(1,1) M; }\n}\n}\n";
  expect_input_error(
      [&] { mdc::parse_mapping(head + "99999999999999999999" + tail, "m.m"); },
      "m.m:4:29: key 'dimension size': expected a positive dimension size of at most");
  expect_input_error(
      [&] { mdc::parse_mapping("Constant BIG 99999999999999999999\n" + head + "4" + tail, "m.m"); },
      "m.m:1:14: key 'Constant'");
  // Each dimension fits; their product (the MACs) does not.
  expect_input_error(
      [&] {
        mdc::parse_mapping(
            "Network n {\nLayer L {\nType: GEMM\nDimensions { M: 4611686018427387904, N: 4, K: 1 "
            "}\nDataflow { SpatialMap(1,1) M; }\n}\n}\n",
            "m.m");
      },
      "m.m:2:1: key 'Dimensions': layer 'L': its number of MACs exceeds");
}

// ---- The final guard on metrics ----

TEST(CheckedMetrics, NonFiniteFiguresAreNamed) {
  Metrics m;
  m.valid = true;
  m.latency_cycles = 10;
  m.energy_pj = 5;
  EXPECT_EQ(non_finite_metric(m), std::nullopt);
  m.energy_pj = std::numeric_limits<double>::infinity();
  EXPECT_EQ(non_finite_metric(m), "energy_pj = inf");
  m.energy_pj = 5;
  m.levels.push_back(LevelMetrics{"L1", {{"In", std::nan(""), 0}}, 0, 0, 0, 0});
  EXPECT_EQ(non_finite_metric(m), "level 'L1' In reads_words = nan");
}

}  // namespace
}  // namespace mapex
