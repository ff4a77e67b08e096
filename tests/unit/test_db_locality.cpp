// The distinct-block locality model (Marvel §5.1) on examples counted by
// hand: blocks per reference (block rounding, sliding windows, runs that
// span whole rows), DMC, its derivatives and the order they give, the
// traffic of a DRAM loop nest, and the off-chip search under the L2
// constraint.

#include <gtest/gtest.h>

#include <mapex/db_locality.hpp>
#include <mapex/error.hpp>
#include <mapex/generators.hpp>

namespace mapex {
namespace {

// The paper's example reference I[y][x+y] in a nest over x, y, z, with an
// output O[z] so the nest is complete.
Operator paper_nest() {
  const std::vector<Dim> dims{{"x", 100}, {"y", 100}, {"z", 10}};
  Tensor in{"I",
            TensorRole::kInput,
            Reduction::kNone,
            {parse_affine("y", dims), parse_affine("x + y", dims)}};
  Tensor out{"O", TensorRole::kOutput, Reduction::kSum, {parse_affine("z", dims)}};
  return Operator::make("paper", "loopnest", dims, {in, out});
}

Operator matrix(std::int64_t rows, std::int64_t cols) {
  const std::vector<Dim> dims{{"i", rows}, {"j", cols}};
  Tensor a{"A",
           TensorRole::kInput,
           Reduction::kNone,
           {parse_affine("i", dims), parse_affine("j", dims)}};
  Tensor out{"O", TensorRole::kOutput, Reduction::kSum, {parse_affine("i", dims)}};
  return Operator::make("m", "loopnest", dims, {a, out});
}

TEST(DbLocality, PaperReferenceRowAndColumnMajor) {
  const Operator op = paper_nest();
  const db::Model model(op, 8, 1.0);  // 8 one-byte words per block
  // Tile x=10, y=4: each of the 4 rows spans x+y = 13 columns -> 2 blocks.
  EXPECT_DOUBLE_EQ(model.blocks(0, {10, 4, 10}, {0, 1}), 8);
  // Column-major: 13 columns of 4 rows, 1 block each.
  EXPECT_DOUBLE_EQ(model.blocks(0, {10, 4, 10}, {1, 0}), 13);
  // O[z] with z whole: 10 words, 2 blocks.
  EXPECT_DOUBLE_EQ(model.blocks(1, {10, 4, 10}, {0}), 2);
  // DMC: (8 + 2) blocks over 10 x 4 x 10 iterations.
  EXPECT_DOUBLE_EQ(model.dmc({10, 4, 10}, {{0, 1}, {0}}), 10.0 / 400.0);
  // Block size 1 ignores the layout (§5.1, footnote 5): 4 x 13 either way.
  const db::Model unit(op, 1, 1.0);
  EXPECT_DOUBLE_EQ(unit.blocks(0, {10, 4, 10}, {0, 1}), 52);
  EXPECT_DOUBLE_EQ(unit.blocks(0, {10, 4, 10}, {1, 0}), 52);
}

TEST(DbLocality, SlidingWindowOfAConvolution) {
  Conv2dShape s;
  s.C = 1;
  s.K = 1;
  s.H = 10;
  s.W = 10;
  s.R = 3;
  s.S = 3;
  const Operator op = make_conv2d("c", s);
  int input = -1;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
    if (op.tensors()[static_cast<std::size_t>(t)].name == "Input") input = t;
  ASSERT_GE(input, 0);
  const db::Model model(op, 4, 1.0);
  std::vector<std::int64_t> tile(static_cast<std::size_t>(op.num_dims()), 1);
  tile[static_cast<std::size_t>(op.find_dim("P"))] = 4;
  tile[static_cast<std::size_t>(op.find_dim("R"))] = 3;
  tile[static_cast<std::size_t>(op.find_dim("Q"))] = 2;
  tile[static_cast<std::size_t>(op.find_dim("S"))] = 3;
  // Row-major [N][C][P+R][Q+S]: 6 rows of 4 columns, 4-word blocks -> 6.
  const auto rm = db::Model::row_major(op.tensors()[static_cast<std::size_t>(input)]);
  EXPECT_DOUBLE_EQ(model.blocks(input, tile, rm), 6);
  // Rows innermost: 4 columns of 6 rows -> 2 blocks each -> 8.
  EXPECT_DOUBLE_EQ(model.blocks(input, tile, {0, 1, 3, 2}), 8);
}

TEST(DbLocality, WholeRowsJoinTheContiguousRun) {
  const Operator op = matrix(4, 8);
  const db::Model model(op, 16, 1.0);
  // Rows 0-1 of a row-major 4 x 8 matrix are 16 adjacent words: 1 block,
  // where the per-row formula would say 2.
  EXPECT_DOUBLE_EQ(model.blocks(0, {2, 8}, {0, 1}), 1);
  // Half rows are not adjacent: 2 rows x 1 block.
  EXPECT_DOUBLE_EQ(model.blocks(0, {2, 4}, {0, 1}), 2);
}

TEST(DbLocality, BestLayoutPerTensor) {
  const Operator op = matrix(8, 8);
  const db::Model model(op, 8, 1.0);
  EXPECT_EQ(model.layouts(0).size(), 2u);
  // A column of 8 rows: 8 blocks row-major, 1 block column-major.
  const auto c = model.best_layouts({8, 1});
  EXPECT_EQ(c.layouts[0], (db::Layout{1, 0}));
  EXPECT_DOUBLE_EQ(c.blocks[0], 1);
  EXPECT_DOUBLE_EQ(c.total_blocks, 2);  // O[i]: 8 words, 1 block
  EXPECT_DOUBLE_EQ(c.required_bytes, 16);
  EXPECT_EQ(db::format_layout(op, 0, c.layouts[0]), "[j][i]");
}

TEST(DbLocality, DerivativesGiveTheLevel3Order) {
  // GEMM with one-word blocks: DMC = 1/Tn + 1/Tm + 1/Tk, so dDMC/dT = -1/T^2.
  const Operator op = make_gemm("g", 16, 16, 16);
  const db::Model model(op, 1, 1.0);
  std::vector<db::Layout> rm;
  for (const auto& t : op.tensors()) rm.push_back(db::Model::row_major(t));
  const DimId M = op.find_dim("M"), N = op.find_dim("N"), K = op.find_dim("K");
  std::vector<std::int64_t> tile(3);
  tile[static_cast<std::size_t>(M)] = 2;
  tile[static_cast<std::size_t>(N)] = 4;
  tile[static_cast<std::size_t>(K)] = 8;
  EXPECT_DOUBLE_EQ(model.dmc(tile, rm), 1.0 / 2 + 1.0 / 4 + 1.0 / 8);
  const auto g = model.dmc_gradient(tile, rm);
  EXPECT_NEAR(g[static_cast<std::size_t>(M)], -1.0 / 4, 1e-6);
  EXPECT_NEAR(g[static_cast<std::size_t>(N)], -1.0 / 16, 1e-6);
  EXPECT_NEAR(g[static_cast<std::size_t>(K)], -1.0 / 64, 1e-6);
  // Most negative innermost.
  EXPECT_EQ(model.order(tile, rm), (std::vector<DimId>{K, N, M}));
  // A loop with one trip goes outermost.
  tile[static_cast<std::size_t>(N)] = 16;
  EXPECT_EQ(model.order(tile, rm).front(), N);
}

TEST(DbLocality, TrafficOfADramLoopNest) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const db::Model model(op, 1, 1.0);
  std::vector<db::Layout> rm;
  int a = -1, b = -1, c = -1;
  for (int t = 0; t < 3; ++t) {
    rm.push_back(db::Model::row_major(op.tensors()[static_cast<std::size_t>(t)]));
    const auto& name = op.tensors()[static_cast<std::size_t>(t)].name;
    (name == "A" ? a : name == "B" ? b : c) = t;
  }
  const DimId M = op.find_dim("M"), N = op.find_dim("N"), K = op.find_dim("K");
  std::vector<std::int64_t> tile(3, 2);
  tile[static_cast<std::size_t>(K)] = 4;
  // for m, for n (k whole): A read once (16), B twice (32), C written once.
  auto tr = model.traffic(tile, {K, M, N}, rm);
  EXPECT_DOUBLE_EQ(tr.read_blocks[static_cast<std::size_t>(a)], 16);
  EXPECT_DOUBLE_EQ(tr.read_blocks[static_cast<std::size_t>(b)], 32);
  EXPECT_DOUBLE_EQ(tr.write_blocks[static_cast<std::size_t>(c)], 16);
  EXPECT_DOUBLE_EQ(tr.read_blocks[static_cast<std::size_t>(c)], 0);
  EXPECT_DOUBLE_EQ(tr.total_blocks(), 64);
  // All 2-tiles, k outermost: each C tile is written twice and read back
  // once as partial sums.
  tile[static_cast<std::size_t>(K)] = 2;
  tr = model.traffic(tile, {K, M, N}, rm);
  EXPECT_DOUBLE_EQ(tr.write_blocks[static_cast<std::size_t>(c)], 32);
  EXPECT_DOUBLE_EQ(tr.read_blocks[static_cast<std::size_t>(c)], 16);
}

TEST(DbLocality, OffchipSearchUnderTheL2Constraint) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const db::Model model(op, 1, 1.0);
  const std::vector<std::vector<std::int64_t>> values(3, {1, 2, 4});
  double considered = 0;
  // Everything fits 48 B: the whole problem, 48 blocks over 64 iterations.
  auto best = db::search_offchip(model, values, 48, 1, &considered);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].tile, (std::vector<std::int64_t>{4, 4, 4}));
  EXPECT_DOUBLE_EQ(best[0].dmc, 0.75);
  EXPECT_DOUBLE_EQ(considered, 27.0 * 8);  // 27 tiles x 2^3 layouts
  // 47 B: the best tiles need 32 blocks (DMC 1); the first in
  // enumeration order wins the tie. Two kept, in DMC order.
  best = db::search_offchip(model, values, 47, 2);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_DOUBLE_EQ(best[0].dmc, 1.0);
  EXPECT_DOUBLE_EQ(best[0].total_blocks, 32);
  EXPECT_LE(best[0].dmc, best[1].dmc);
  // Nothing fits 2 B: the minimal tile needs 3 blocks.
  EXPECT_TRUE(db::search_offchip(model, values, 2, 1).empty());
  EXPECT_DOUBLE_EQ(db::minimal_choice(model, values).required_bytes, 3);
}

TEST(DbLocality, OffchipSearchKeepsOnlyAdmittedTiles) {
  const Operator op = make_gemm("g", 4, 4, 4);
  const db::Model model(op, 1, 1.0);
  const std::vector<std::vector<std::int64_t>> values(3, {1, 2, 4});
  // Turn away tiles whose first dimension is whole: the 4 x 4 x 4 optimum
  // (DMC 0.75) goes, and 2 x 4 x 4 (8 + 16 + 8 = 32 blocks over 32
  // iterations, DMC 1) is the best left. 4 x 2 x 4 and 4 x 4 x 2 also
  // have DMC 1 but come later in enumeration order at the same volume, so
  // they would not be kept and the filter is not asked: one rejection.
  std::uint64_t rejected = 0;
  const auto best = db::search_offchip(
      model, values, 48, 1, [](const std::vector<std::int64_t>& t) { return t[0] < 4; }, nullptr,
      &rejected);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].tile, (std::vector<std::int64_t>{2, 4, 4}));
  EXPECT_DOUBLE_EQ(best[0].dmc, 1.0);
  EXPECT_EQ(rejected, 1u);
  // A filter that admits nothing leaves nothing, and says how often it said no.
  EXPECT_TRUE(db::search_offchip(
                  model, values, 48, 1, [](const auto&) { return false; }, nullptr, &rejected)
                  .empty());
  EXPECT_GT(rejected, 0u);
}

TEST(DbLocality, BadBlockSize) {
  const Operator op = make_gemm("g", 4, 4, 4);
  EXPECT_THROW(db::Model(op, 0, 1.0), InputError);
}

}  // namespace
}  // namespace mapex
