// roofline's score along the enumeration stream redoes only the traffic part
// of the analysis while the tiling stays the same (costmodels/roofline). The
// fast path must give exactly the figures of a full analysis: score is
// compared with evaluate, which analyses every mapping from scratch, over
// whole streams, with two models interleaved on one thread.

#include <gtest/gtest.h>

#include <mapex/analysis.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>

#include "plugin_fixture.hpp"
#include "test_chips.hpp"

namespace mapex {
namespace {

using test::registry;

struct StreamCheck {
  std::uint64_t scored = 0;
  std::uint64_t same_tiling_as_previous = 0;
};

// Scores every mapping of `op` on `arch` in stream order (at most `limit`)
// and checks it against evaluate; `other` is scored between any two
// mappings when given, so the per-thread state changes hands.
StreamCheck check_stream(const Operator& op, const Architecture& arch, std::uint64_t limit,
                         const BoundCostModel* other = nullptr, const Mapping* other_m = nullptr) {
  const auto bound = registry().make_costmodel("roofline", {})->bind(op, arch);
  const Mapspace space(op, arch);
  Mapspace::Cursor cursor(space);
  StreamCheck c;
  Mapping m, previous;
  while (c.scored < limit && cursor.next(m)) {
    if (bound->precheck(m)) continue;
    const Score s = bound->score(m);
    const Metrics full = bound->evaluate(m);
    EXPECT_TRUE(s.valid);
    EXPECT_EQ(s.latency_cycles, full.latency_cycles) << m.summary(op, arch);
    EXPECT_EQ(s.energy_pj, full.energy_pj) << m.summary(op, arch);
    if (c.scored > 0 && same_tiling(previous, m)) ++c.same_tiling_as_previous;
    if (other) other->score(*other_m);
    previous = m;
    ++c.scored;
  }
  return c;
}

TEST(RooflineIncremental, ScoreEqualsTheFullAnalysisOverTheStream) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 8, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = test::chip({2, 2}, 256);
  const StreamCheck c = check_stream(op, arch, 20000);
  // Both paths are exercised: runs of one tiling, and tiling changes.
  EXPECT_GT(c.scored, 1000u);
  EXPECT_GT(c.same_tiling_as_previous, c.scored / 2);
  EXPECT_LT(c.same_tiling_as_previous, c.scored - 10);
}

TEST(RooflineIncremental, TwoModelsInterleavedOnOneThreadKeepTheirOwnState) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 8, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Operator other_op = make_conv2d("d", Conv2dShape{1, 4, 4, 5, 5, 1, 1, 1, 1, 0, 0, 1, 1, 1});
  const Architecture arch = test::chip({2, 2}, 256);
  const auto other = registry().make_costmodel("roofline", {})->bind(other_op, arch);
  const Mapping other_m = Mapping::trivial(other_op, arch);
  const StreamCheck c = check_stream(op, arch, 3000, other.get(), &other_m);
  EXPECT_GT(c.scored, 1000u);
}

// precheck_and_score, told what changed by the cursor, against precheck
// then evaluate (from scratch) on every mapping of streams: a space that
// does not prune by capacity (so the model's own capacity answer, kept per
// tiling, says invalid for some), and two streams of one model advanced in
// turn on one thread, each with its own state.
struct ToldCheck {
  std::uint64_t scored = 0, invalid = 0, order_only = 0;
};

void expect_told_equals_full(const BoundCostModel& bound, const Operator& op,
                             const Architecture& arch, const Mapping& m,
                             const MappingChange& change, std::unique_ptr<StreamState>& state,
                             ToldCheck& c) {
  const Score s = bound.precheck_and_score(m, change, state);
  const bool fits = !bound.precheck(m);
  EXPECT_EQ(s.valid, fits) << m.summary(op, arch);
  if (fits) {
    const Metrics full = bound.evaluate(m);
    EXPECT_EQ(s.latency_cycles, full.latency_cycles) << m.summary(op, arch);
    EXPECT_EQ(s.energy_pj, full.energy_pj) << m.summary(op, arch);
  } else {
    ++c.invalid;
  }
  if (!change.tiling) ++c.order_only;
  ++c.scored;
}

TEST(RooflineIncremental, ToldWhatChangedEqualsTheFullAnalysisIncludingOverflows) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 8, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = test::chip({2, 2}, 12);  // L1 of 12 B: many tilings overflow
  const auto bound = registry().make_costmodel("roofline", {})->bind(op, arch);
  MapspaceOptions options;
  options.check_capacity = false;
  const Mapspace space(op, arch, options);
  Mapspace::Cursor cursor(space);
  Mapping m;
  MappingChange change;
  std::unique_ptr<StreamState> state;
  ToldCheck c;
  while (c.scored < 20000 && cursor.next(m, change) && !::testing::Test::HasFailure())
    expect_told_equals_full(*bound, op, arch, m, change, state, c);
  EXPECT_EQ(c.scored, 20000u);
  EXPECT_GT(c.invalid, 100u);
  EXPECT_LT(c.invalid, c.scored - 100);
  EXPECT_GT(c.order_only, c.scored / 2);
}

TEST(RooflineIncremental, TwoStreamsOfOneModelKeepTheirOwnState) {
  const Operator op = make_conv2d("c", Conv2dShape{1, 8, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1});
  const Architecture arch = test::chip({2, 2}, 256);
  const auto bound = registry().make_costmodel("roofline", {})->bind(op, arch);
  const Mapspace space(op, arch);
  const auto chunks = space.chunks(4);
  ASSERT_GE(chunks.size(), 2u);
  Mapspace::Cursor a(space, chunks[0]), b(space, chunks.back());
  Mapping ma, mb;
  MappingChange ca, cb;
  std::unique_ptr<StreamState> sa, sb;
  ToldCheck c;
  for (int i = 0; i < 3000 && !::testing::Test::HasFailure(); ++i) {
    if (a.next(ma, ca)) expect_told_equals_full(*bound, op, arch, ma, ca, sa, c);
    if (b.next(mb, cb)) expect_told_equals_full(*bound, op, arch, mb, cb, sb, c);
    // score() on the same thread in between uses state of its own.
    bound->score(Mapping::trivial(op, arch));
  }
  EXPECT_GT(c.scored, 3000u);
}

}  // namespace
}  // namespace mapex
