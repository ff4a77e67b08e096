// nn_dataflow's per-layer search over its own space (see
// nn_dataflow_search.hpp). Each step names the nn_dataflow routine whose
// enumeration it follows; the code is written from those definitions.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mapex/nn_dataflow_search.hpp>
#include <optional>
#include <tuple>

namespace mapex::ndf {

namespace {

std::int64_t idivc(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// Every ordered `num`-tuple of factors whose product is `value`, in
/// lexicographic order (util.factorize without limits).
std::vector<std::array<std::int64_t, 4>> factorize(std::int64_t value, int num) {
  std::vector<std::array<std::int64_t, 4>> out;
  std::array<std::int64_t, 4> f{1, 1, 1, 1};
  auto rec = [&](auto&& self, int pos, std::int64_t rest) -> void {
    if (pos == num - 1) {
      f[static_cast<size_t>(pos)] = rest;
      out.push_back(f);
      return;
    }
    for (std::int64_t d = 1; d <= rest; ++d) {
      if (rest % d) continue;
      f[static_cast<size_t>(pos)] = d;
      self(self, pos + 1, rest / d);
    }
  };
  rec(rec, 0, value);
  return out;
}

/// util.approx_dividable: `total` splits into `num` parts with at most 10%
/// (or one unit of) padding.
bool approx_dividable(std::int64_t total, std::int64_t num) {
  if (total < num) return false;
  const double a = static_cast<double>(idivc(total, num) * num), b = static_cast<double>(total);
  return std::abs(a - b) <= std::max(0.1 * std::max(std::abs(a), std::abs(b)), 1.0);
}

/// The six loop orders of one level as nn_dataflow lists them
/// (itertools.permutations(range(3))): the position of each loop.
constexpr std::array<std::array<int, 3>, 6> kOrders{{
    {0, 1, 2},
    {0, 2, 1},
    {1, 0, 2},
    {1, 2, 0},
    {2, 0, 1},
    {2, 1, 0},
}};

/// loop_blocking.skip_conv, per level with an order: the innermost
/// non-trivial loop (-1 if none), and whether the order is the regular
/// representative (innermost non-trivial loop first, then the other
/// non-trivial loops, then the trivial ones, each part by loop index).
struct LevelOrder {
  int inner = -1;
  bool regular = false;
};

LevelOrder level_order(int nt_mask, const std::array<int, 3>& ord) {
  LevelOrder lo;
  for (int l = 0; l < 3; ++l)
    if ((nt_mask >> l & 1) &&
        (lo.inner < 0 || ord[static_cast<size_t>(l)] < ord[static_cast<size_t>(lo.inner)]))
      lo.inner = l;
  std::array<int, 3> lp{0, 1, 2};
  auto key = [&](int l) { return std::make_tuple(l != lo.inner, !(nt_mask >> l & 1), l); };
  std::sort(lp.begin(), lp.end(), [&](int x, int y) { return key(x) < key(y); });
  lo.regular = true;
  for (int l = 0; l < 3; ++l)
    if (lp[static_cast<size_t>(ord[static_cast<size_t>(l)])] != l) lo.regular = false;
  return lo;
}

/// loop_blocking.skip_conv as a table: its per-level verdicts depend only
/// on which loops are non-trivial (a mask per level) and on the orders.
class SkipConv {
 public:
  SkipConv() {
    for (int m = 0; m < 8; ++m)
      for (size_t o = 0; o < 6; ++o) lo_[static_cast<size_t>(m)][o] = level_order(m, kOrders[o]);
    for (int m0 = 0; m0 < 8; ++m0)
      for (int m1 = 0; m1 < 8; ++m1)
        for (int m2 = 0; m2 < 8; ++m2) {
          Pairs& kept =
              pairs_[static_cast<size_t>(m0)][static_cast<size_t>(m1)][static_cast<size_t>(m2)];
          for (size_t o0 = 0; o0 < 6; ++o0)
            for (size_t o1 = 0; o1 < 6; ++o1)
              if (keeps({m0, m1, m2}, o0, o1))
                kept.pair[static_cast<size_t>(kept.count++)] =
                    static_cast<std::uint8_t>(o0 * 6 + o1);
        }
  }
  /// The table, built once: it depends on nothing.
  static const SkipConv& instance() {
    static const SkipConv table;
    return table;
  }
  /// Whether skip_conv keeps the blocking whose non-trivial masks are `nt`
  /// with orders `o0`, `o1` (indices into kOrders).
  bool keeps(const std::array<int, 3>& nt, size_t o0, size_t o1) const {
    const LevelOrder& l0 = lo_[static_cast<size_t>(nt[0])][o0];
    const LevelOrder& l1 = lo_[static_cast<size_t>(nt[1])][o1];
    if (!l0.regular || !l1.regular) return false;
    // Suboptimal: an outer level's innermost non-trivial loop is a
    // non-innermost non-trivial loop here (the last level has no innermost
    // loop).
    if (l0.inner >= 0 && l0.inner != l1.inner && (nt[1] >> l0.inner & 1)) return false;
    const int outer = l1.inner >= 0 ? l1.inner : l0.inner;
    return !(outer >= 0 && (nt[2] >> outer & 1));
  }
  /// The order pairs skip_conv keeps for the non-trivial masks `nt`, in
  /// enumeration order: `count` of them, each as o0 * 6 + o1.
  struct Pairs {
    int count = 0;
    std::array<std::uint8_t, 36> pair{};
  };
  const Pairs& kept_pairs(const std::array<int, 3>& nt) const {
    return pairs_[static_cast<size_t>(nt[0])][static_cast<size_t>(nt[1])]
                 [static_cast<size_t>(nt[2])];
  }
  /// The regular order (index) that stands for `o` at a level whose
  /// non-trivial loops are `mask`: the one with the same innermost
  /// non-trivial loop.
  size_t regular(int mask, size_t o) const {
    const int inner = lo_[static_cast<size_t>(mask)][o].inner;
    for (size_t r = 0; r < 6; ++r)
      if (lo_[static_cast<size_t>(mask)][r].regular &&
          lo_[static_cast<size_t>(mask)][r].inner == inner)
        return r;
    return o;  // unreachable: every mask has a regular order per innermost loop
  }

 private:
  std::array<std::array<LevelOrder, 6>, 8> lo_{};
  std::array<std::array<std::array<Pairs, 8>, 8>, 8> pairs_{};
};

/// A blocking kept for a pass, with what its total cost needs besides the
/// partition's NoC hops.
struct Candidate {
  Blocking blocking;
  double access_cost = 0, time = 0, ops = 0;
  std::array<double, 3> fetch0{};
};

/// Keeps the `n` smallest by key; an equal key goes after the ones seen
/// before it (Python's stable sorts and heapq.nsmallest).
template <class T, class Key = std::pair<double, double>>
class TopN {
 public:
  explicit TopN(std::size_t n) : n_(std::max<std::size_t>(1, n)) {}
  bool full() const { return items_.size() >= n_; }
  const Key& worst() const { return items_.back().first; }
  /// Whether an item with this key would be kept.
  bool admits(const Key& key) const { return !full() || key < worst(); }
  void add(const Key& key, const T& item) {
    if (!admits(key)) return;
    auto it = std::upper_bound(items_.begin(), items_.end(), key,
                               [](const auto& k, const auto& e) { return k < e.first; });
    items_.insert(it, {key, item});
    if (items_.size() > n_) items_.pop_back();
  }
  const std::vector<std::pair<Key, T>>& items() const { return items_; }

 private:
  std::size_t n_;
  std::vector<std::pair<Key, T>> items_;
};

std::pair<double, double> pass_key(Goal goal, double access_cost, double time) {
  // _loop_blocking_cmp_key: blockings of a pass rank by access cost.
  return rank_key(goal, access_cost, time);
}

/// One processing pass (a replication choice) of a per-node layer and its
/// best blockings.
struct Pass {
  std::int64_t ifms = 1, ofms = 1;
  LoopDesc nld;
  std::vector<Candidate> tops;
};

/// Everything searched for one per-node problem.
struct NodeResult {
  bool pe_ok = false;
  std::vector<Pass> passes;
};

/// The search's limits (SearchOptions::max_blockings, max_seconds).
class Limits {
 public:
  explicit Limits(const SearchOptions& so)
      : max_blockings_(so.max_blockings),
        max_seconds_(so.max_seconds),
        start_(std::chrono::steady_clock::now()) {}
  /// Called before scoring blocking number `scored` + 1.
  bool reached(std::uint64_t scored) {
    if (stopped_) return true;
    if (max_blockings_ && scored >= max_blockings_) stopped_ = true;
    if (max_seconds_ > 0 && (scored & 4095) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >=
            max_seconds_)
      stopped_ = true;
    return stopped_;
  }
  bool stopped() const { return stopped_; }

 private:
  std::uint64_t max_blockings_;
  double max_seconds_;
  std::chrono::steady_clock::time_point start_;
  bool stopped_ = false;
};

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Whether KAPLA §V's random search R (SearchOptions::keep_probability)
/// keeps the candidate at `index` of the enumeration `stream`: a uniform
/// draw from a hash of the seed, the stream and the index, so every run
/// and every order of the searches keeps the same candidates.
bool sampled_in(const SearchOptions& so, std::uint64_t stream, std::uint64_t index,
                double probability) {
  if (probability >= 1) return true;
  const std::uint64_t h = splitmix64(splitmix64(splitmix64(so.seed) ^ stream) ^ index);
  return static_cast<double>(h >> 11) * 0x1.0p-53 < probability;
}

bool sampled_in(const SearchOptions& so, std::uint64_t stream, std::uint64_t index) {
  return sampled_in(so, stream, index, so.keep_probability);
}

/// SearchOptions::keep_at_least_one: the one of `count` candidates of
/// `stream` kept when the draws keep none, uniform from a hash of the seed
/// and the stream.
std::uint64_t fallback_pick(const SearchOptions& so, std::uint64_t stream, std::uint64_t count) {
  return splitmix64(splitmix64(splitmix64(so.seed) ^ stream ^ 0x31)) % count;
}

/// The probability R keeps each partition with.
double partition_probability(const SearchOptions& so) {
  return so.partition_probability < 0 ? so.keep_probability : so.partition_probability;
}

/// SearchOptions::skip_sampling: how many candidates R leaves out before
/// the next one it keeps, a geometric draw with the keep probability from
/// a hash of the seed, the stream and `index` (the place of the last kept
/// candidate, or ~0 before the first). Each candidate is then kept with
/// the keep probability, independently of the others, as with sampled_in,
/// but the ones in the gap need not be visited.
std::uint64_t skip_gap(const SearchOptions& so, std::uint64_t stream, std::uint64_t index) {
  if (so.keep_probability >= 1) return 0;
  const std::uint64_t h = splitmix64(splitmix64(splitmix64(so.seed) ^ stream ^ 0x5b) ^ index);
  const double u = (static_cast<double>(h >> 11) + 1) * 0x1.0p-53;  // in (0, 1]
  const double gap = std::floor(std::log(u) / std::log1p(-so.keep_probability));
  // Capped far beyond any pass's size, so that adding it cannot overflow.
  return gap < 0x1.0p62 ? static_cast<std::uint64_t>(gap) : std::uint64_t{1} << 62;
}

/// The place of a blocking in the exhaustive enumeration's order (the
/// ifmap, ofmap and batch factorisations, each lexicographic over the
/// blocking levels, then the DRAM and GBUF orders): scoring blockings in
/// this order meets them as the exhaustive loops do, so ties go the same
/// way.
using Place = std::array<std::int64_t, 11>;

Place place_of(const std::array<std::array<std::int64_t, 3>, 3>& t, size_t o0, size_t o1) {
  Place p{};
  for (size_t l = 0; l < 3; ++l)
    for (size_t bl = 0; bl < 3; ++bl) p[3 * l + bl] = t[bl][l];
  p[9] = static_cast<std::int64_t>(o0);
  p[10] = static_cast<std::int64_t>(o1);
  return p;
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

/// SearchOptions::keep_per_memory_level: the blockings R keeps, in
/// enumeration order, drawn once per memory level from the top of the tree
/// down (KAPLA §V, "evaluates candidates at each level with a given
/// probability"): each REGF tile, then under a kept one each GBUF tile with
/// its loop order, then under a kept one each DRAM order (the DRAM tile is
/// what is left). Blockings sharing a level's choice share its draw, a
/// hash of the seed, the stream and the path of choices down to it. The
/// walk descends only into kept choices, so what a dropped tile would have
/// led to is never visited: the cost is that of the tiles drawn and the
/// blockings kept, not of the pass's whole space. With keep_at_least_one,
/// a level whose draws keep none of its choices keeps one, drawn uniformly
/// from a hash of the seed and its path (KAPLA's released code,
/// util.random_collect); a GBUF choice counts only when skip_conv keeps
/// some DRAM order under it, so that a kept path always ends in a blocking.
std::vector<Place> levels_kept(const SearchOptions& so, std::uint64_t stream,
                               const std::array<std::int64_t, 3>& loopcnt, const SkipConv& table) {
  std::vector<Place> kept;
  auto step = [](std::uint64_t path, std::uint64_t v) { return splitmix64(path ^ v); };
  // The kept indices of `count` choices whose draws `drawn(i)` makes;
  // one of them, from `path`, when none is kept and keep_at_least_one.
  auto keep = [&](size_t count, std::uint64_t path, const auto& drawn) {
    std::vector<size_t> out;
    for (size_t i = 0; i < count; ++i)
      if (drawn(i)) out.push_back(i);
    if (out.empty() && so.keep_at_least_one && count > 0)
      out.push_back(static_cast<size_t>(fallback_pick(so, path, count)));
    return out;
  };
  const std::array<std::vector<std::int64_t>, 3> dv{divisors(loopcnt[0]), divisors(loopcnt[1]),
                                                    divisors(loopcnt[2])};
  struct Tile {
    std::array<std::int64_t, 3> t;
    std::uint64_t path;
  };
  // The REGF tiles with a blocking skip_conv keeps under them: the whole
  // pass, or a tile that leaves some loop whole above the REGF (that loop
  // can be the innermost non-trivial one above; skip_conv drops a blocking
  // whose innermost loop above the REGF is also blocked in it).
  std::vector<Tile> regf_tiles;
  for (std::int64_t r0 : dv[0])
    for (std::int64_t r1 : dv[1])
      for (std::int64_t r2 : dv[2]) {
        const std::array<std::int64_t, 3> r{r0, r1, r2};
        bool whole = true, open = false;
        for (size_t l = 0; l < 3; ++l) {
          whole = whole && r[l] == loopcnt[l];
          open = open || (r[l] == 1 && loopcnt[l] > 1);
        }
        if (!whole && !open) continue;
        std::uint64_t path = 0;
        for (std::int64_t v : {r0, r1, r2}) path = step(path, static_cast<std::uint64_t>(v));
        regf_tiles.push_back(Tile{{r0, r1, r2}, path});
      }
  std::array<std::array<std::int64_t, 3>, 3> t{};
  for (size_t ri : keep(regf_tiles.size(), stream ^ 0x52, [&](size_t i) {
         return sampled_in(so, stream ^ 0x52, regf_tiles[i].path);
       })) {
    const Tile& regf = regf_tiles[ri];
    t[2] = regf.t;
    const std::array<std::vector<std::int64_t>, 3> gv{divisors(loopcnt[0] / t[2][0]),
                                                      divisors(loopcnt[1] / t[2][1]),
                                                      divisors(loopcnt[2] / t[2][2])};
    // The GBUF choices under this REGF tile: a tile and its loop order.
    struct GbufChoice {
      std::array<std::int64_t, 3> tile;
      size_t o1;
      std::uint64_t path;
      std::array<int, 3> nt;
    };
    std::vector<GbufChoice> gbuf_choices;
    for (std::int64_t g0 : gv[0])
      for (std::int64_t g1 : gv[1])
        for (std::int64_t g2 : gv[2]) {
          std::uint64_t gbuf_tile = regf.path;
          for (std::int64_t v : {g0, g1, g2})
            gbuf_tile = step(gbuf_tile, static_cast<std::uint64_t>(v));
          t[1] = {g0, g1, g2};
          for (size_t l = 0; l < 3; ++l) t[0][l] = loopcnt[l] / (t[1][l] * t[2][l]);
          std::array<int, 3> nt{};
          for (size_t bl = 0; bl < 3; ++bl)
            nt[bl] = (t[bl][0] > 1 ? 1 : 0) | (t[bl][1] > 1 ? 2 : 0) | (t[bl][2] > 1 ? 4 : 0);
          for (size_t o1 = 0; o1 < 6; ++o1) {
            bool any = false;
            for (size_t o0 = 0; o0 < 6 && !any; ++o0) any = table.keeps(nt, o0, o1);
            if (any) gbuf_choices.push_back(GbufChoice{{g0, g1, g2}, o1, step(gbuf_tile, o1), nt});
          }
        }
    for (size_t gi : keep(gbuf_choices.size(), stream ^ 0x47 ^ regf.path, [&](size_t i) {
           return sampled_in(so, stream ^ 0x47, gbuf_choices[i].path);
         })) {
      const GbufChoice& g = gbuf_choices[gi];
      t[1] = g.tile;
      for (size_t l = 0; l < 3; ++l) t[0][l] = loopcnt[l] / (t[1][l] * t[2][l]);
      std::vector<size_t> orders;
      for (size_t o0 = 0; o0 < 6; ++o0)
        if (table.keeps(g.nt, o0, g.o1)) orders.push_back(o0);
      for (size_t oi : keep(orders.size(), stream ^ 0x44 ^ g.path, [&](size_t i) {
             return sampled_in(so, stream ^ 0x44, step(g.path, orders[i]));
           }))
        kept.push_back(place_of(t, orders[oi], g.o1));
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

/// How many blockings of a pass skip_conv keeps, from how many
/// factorisations of each loop are non-trivial at which blocking levels
/// (`fac`, per loop), without walking them.
std::uint64_t regular_blockings(const std::array<std::vector<std::array<std::int64_t, 4>>, 3>& fac,
                                const SkipConv& table) {
  std::array<std::array<std::uint64_t, 8>, 3> count{};
  for (size_t l = 0; l < 3; ++l)
    for (const auto& f : fac[l])
      ++count[l][static_cast<size_t>((f[0] > 1 ? 1 : 0) | (f[1] > 1 ? 2 : 0) | (f[2] > 1 ? 4 : 0))];
  std::uint64_t total = 0;
  for (int q0 = 0; q0 < 8; ++q0)
    for (int q1 = 0; q1 < 8; ++q1)
      for (int q2 = 0; q2 < 8; ++q2) {
        std::array<int, 3> nt{};
        for (int bl = 0; bl < 3; ++bl)
          nt[static_cast<size_t>(bl)] = (q0 >> bl & 1) | (q1 >> bl & 1) << 1 | (q2 >> bl & 1) << 2;
        total += count[0][static_cast<size_t>(q0)] * count[1][static_cast<size_t>(q1)] *
                 count[2][static_cast<size_t>(q2)] *
                 static_cast<std::uint64_t>(table.kept_pairs(nt).count);
      }
  return total;
}

/// The enumeration stream of one pass's blockings for sampled_in: the
/// pass's loop counts and replication (stream 0 is the partitions').
std::uint64_t pass_stream(const Pass& pass) {
  std::uint64_t h = 1;
  for (std::int64_t v :
       {pass.nld.loopcnt[0], pass.nld.loopcnt[1], pass.nld.loopcnt[2], pass.ifms, pass.ofms})
    h = splitmix64(h ^ static_cast<std::uint64_t>(v));
  return h | 1;
}

/// Exhaustive loop blocking of one pass (gen_loopblocking without the
/// solver): factorisations and orders in nn_dataflow's order, skip_conv's
/// pruning, the top `ntops` by access cost then time; with
/// `keep_probability` below 1, the sampled part of it (R).
void search_pass_exhaustive(const Hardware& hw, const Options& options,
                            const std::array<double, 3>& share, const SearchOptions& so, Pass& pass,
                            SearchStats& stats, Limits& limits) {
  const LoopDesc& nld = pass.nld;
  const std::uint64_t stream = pass_stream(pass);
  std::array<std::vector<std::array<std::int64_t, 4>>, 3> fac;
  for (size_t l = 0; l < 3; ++l) fac[l] = factorize(nld.loopcnt[l], 3);
  const SkipConv& table = SkipConv::instance();
  TopN<Candidate> top(so.ntops);
  Blocking b;
  BlockingStats s;
  // Scores b with orders o0, o1; false once a limit is reached.
  auto score = [&](size_t o0, size_t o1) {
    b.ord[0] = kOrders[o0];
    b.ord[1] = kOrders[o1];
    if (limits.reached(stats.blockings)) return false;
    ++stats.blockings;
    const Misfit m = score_blocking(hw, options, share, nld, b, s);
    if (m == Misfit::kRotation) ++stats.rotation_refused;
    if (m != Misfit::kNone) return true;
    ++stats.fitting;
    const auto key = pass_key(so.goal, s.access_cost(), s.time);
    if (top.admits(key))
      top.add(
          key,
          Candidate{
              b, s.access_cost(), s.time, s.ops, {s.fetch[0][0], s.fetch[0][1], s.fetch[0][2]}});
    return true;
  };
  if (so.keep_probability < 1 && so.keep_per_factorization) {
    // One draw per factorisation (skip_conv's regular ones: those with at
    // least one order pair kept), then one per order pair under a kept
    // factorisation; scored in enumeration order.
    struct Fact {
      size_t i, o, b;
      std::uint64_t pairs;
    };
    std::vector<Fact> facts;
    std::uint64_t total = 0;
    for (size_t i = 0; i < fac[0].size(); ++i)
      for (size_t o = 0; o < fac[1].size(); ++o)
        for (size_t bb = 0; bb < fac[2].size(); ++bb) {
          std::array<int, 3> nt{};
          for (size_t bl = 0; bl < 3; ++bl)
            nt[bl] = (fac[0][i][bl] > 1 ? 1 : 0) | (fac[1][o][bl] > 1 ? 2 : 0) |
                     (fac[2][bb][bl] > 1 ? 4 : 0);
          const auto n = static_cast<std::uint64_t>(table.kept_pairs(nt).count);
          if (n == 0) continue;
          facts.push_back(Fact{i, o, bb, n});
          total += n;
        }
    std::vector<size_t> kept_facts;
    for (size_t f = 0; f < facts.size(); ++f)
      if (sampled_in(so, stream ^ 0x46, f)) kept_facts.push_back(f);
    if (kept_facts.empty() && so.keep_at_least_one && !facts.empty())
      kept_facts.push_back(static_cast<size_t>(fallback_pick(so, stream ^ 0x46, facts.size())));
    stats.factorizations += facts.size();
    stats.factorizations_kept += kept_facts.size();
    std::uint64_t reached = 0;
    for (size_t f : kept_facts) {
      const Fact& fa = facts[f];
      for (size_t bl = 0; bl < 3; ++bl)
        b.t[bl] = {fac[0][fa.i][bl], fac[1][fa.o][bl], fac[2][fa.b][bl]};
      std::array<int, 3> nt{};
      for (size_t bl = 0; bl < 3; ++bl)
        nt[bl] = (b.t[bl][0] > 1 ? 1 : 0) | (b.t[bl][1] > 1 ? 2 : 0) | (b.t[bl][2] > 1 ? 4 : 0);
      const SkipConv::Pairs& pairs = table.kept_pairs(nt);
      const std::uint64_t order_stream = splitmix64(stream ^ 0x4f ^ f);
      std::vector<std::uint8_t> kept_pairs;
      for (size_t k = 0; k < static_cast<size_t>(pairs.count); ++k)
        if (sampled_in(so, order_stream, k)) kept_pairs.push_back(pairs.pair[k]);
      if (kept_pairs.empty() && so.keep_at_least_one)
        kept_pairs.push_back(pairs.pair[static_cast<size_t>(
            fallback_pick(so, order_stream, static_cast<std::uint64_t>(pairs.count)))]);
      bool go = true;
      for (std::uint8_t pair : kept_pairs) {
        ++reached;
        if (!score(pair / 6u, pair % 6u)) {
          go = false;
          break;
        }
      }
      if (!go) break;
    }
    stats.sampled_out += total - reached;
  } else if (so.keep_probability < 1 && so.keep_per_memory_level) {
    const std::vector<Place> kept = levels_kept(so, stream, nld.loopcnt, table);
    stats.sampled_out += regular_blockings(fac, table) - kept.size();
    for (const Place& p : kept) {
      for (size_t l = 0; l < 3; ++l)
        for (size_t bl = 0; bl < 3; ++bl) b.t[bl][l] = p[3 * l + bl];
      if (!score(static_cast<size_t>(p[9]), static_cast<size_t>(p[10]))) break;
    }
  } else {
    // One draw per blocking: a hash per blocking visited (sampled_in), or
    // with skip_sampling the gap to the next kept one, so that a
    // factorisation without a kept blocking is passed over whole.
    const bool skip = so.skip_sampling && so.keep_probability < 1;
    std::uint64_t index = 0, reached = 0;
    std::uint64_t next = skip ? skip_gap(so, stream, ~std::uint64_t{0}) : 0;
    // A lambda so that a reached limit leaves all the loops at once.
    [&] {
      for (const auto& fi : fac[0])
        for (const auto& fo : fac[1])
          for (const auto& fb : fac[2]) {
            std::array<int, 3> nt{};
            for (size_t bl = 0; bl < 3; ++bl)
              nt[bl] = (fi[bl] > 1 ? 1 : 0) | (fo[bl] > 1 ? 2 : 0) | (fb[bl] > 1 ? 4 : 0);
            if (skip) {
              // Straight to the kept places among this factorisation's
              // order pairs, if any.
              const SkipConv::Pairs& pairs = table.kept_pairs(nt);
              const auto here = static_cast<std::uint64_t>(pairs.count);
              if (index + here <= next) {
                index += here;
                continue;
              }
              for (size_t bl = 0; bl < 3; ++bl) b.t[bl] = {fi[bl], fo[bl], fb[bl]};
              while (next < index + here) {
                const std::uint64_t at = next;
                const std::uint8_t pair = pairs.pair[static_cast<size_t>(at - index)];
                next = at + 1 + skip_gap(so, stream, at);
                ++reached;
                if (!score(pair / 6u, pair % 6u)) {
                  index = at + 1;
                  return;
                }
              }
              index += here;
              continue;
            }
            for (size_t bl = 0; bl < 3; ++bl) b.t[bl] = {fi[bl], fo[bl], fb[bl]};
            for (size_t o0 = 0; o0 < 6; ++o0) {
              for (size_t o1 = 0; o1 < 6; ++o1) {
                if (!table.keeps(nt, o0, o1)) continue;
                const bool kept = sampled_in(so, stream, index);
                ++index;
                if (!kept) continue;
                ++reached;
                if (!score(o0, o1)) return;
              }
            }
          }
    }();
    stats.sampled_out += index - reached;
  }
  pass.tops.clear();
  for (const auto& [key, c] : top.items()) pass.tops.push_back(c);
}

/// KAPLA's intra-layer solver (§IV-C, Algorithm 1) on one processing pass,
/// in nn_dataflow's blocking space: the unit tensor is the pass (the
/// row-stationary mapping fixed by the PE array, Algorithm 1 line 4), and
/// the memory levels are solved bottom-up, REGF (blocking level 2) then
/// GBUF (level 1); what is left runs at DRAM (level 0). Within a level, for
/// each loop order (genLoopOrder: the six orders of the loops above it), a
/// caching pass enlarges one loop at a time to its next blocked size (the
/// next divisor of what is left of it), taking the factor from the loops
/// still at DRAM. Each step picks the loop that most reduces the traffic of
/// the data category with the most traffic above the level, ties broken by
/// the second and then the third; it stops when no step fits or none
/// lowers that ranking (the cost descends at every step). There is no
/// stacking pass: in nn_dataflow's space the spatial split inside a node
/// is the pass's replication and across nodes the partition, both
/// enumerated outside this solver.
///
/// The traffic of a category is its accesses above the level weighted by
/// each level's unit energy (REGF: DRAM, GBUF and array-interconnect
/// accesses; GBUF: DRAM accesses), so that counts at levels of different
/// cost rank in one unit; §IV-C speaks of access counts at the next level.
///
/// While the REGF is solved the GBUF holds unit tensors, so the loops above
/// the REGF all run at DRAM in the order being tried (both orders set to
/// it). The GBUF level keeps the REGF's best and tries each order of the
/// DRAM loops. Orders are taken through skip_conv's regular representative
/// (same innermost non-trivial loop) and a step that skip_conv drops is not
/// taken, so every blocking scored is one the exhaustive solver scores.
/// The end state of every (level, order) is a candidate (Algorithm 1 lines
/// 9-12); the pass keeps the top `ntops` of them by the pass rank key.
class CostDescent {
 public:
  CostDescent(const Hardware& hw, const Options& options, const std::array<double, 3>& share,
              const SearchOptions& so, const LoopDesc& nld, SearchStats& stats, Limits& limits)
      : hw_(hw),
        options_(options),
        share_(share),
        so_(so),
        nld_(nld),
        stats_(stats),
        limits_(limits),
        top_(so.ntops) {}

  std::vector<Candidate> run() {
    std::optional<State> regf_best;
    std::pair<double, double> regf_key{};
    std::vector<State> regf_ends;
    for (size_t o = 0; o < 6 && !stopped_; ++o) {
      State st;
      for (size_t l = 0; l < 3; ++l) st.t[0][l] = nld_.loopcnt[l];
      st.o0 = st.o1 = o;
      auto end = descend(st, 2);
      if (!end) continue;
      regf_ends.push_back(end->state);
      const auto key = pass_key(so_.goal, end->stats.access_cost(), end->stats.time);
      if (!regf_best || key < regf_key) {
        regf_best = end->state;
        regf_key = key;
      }
    }
    for (size_t o = 0; o < 6 && regf_best && !stopped_; ++o) {
      State st = *regf_best;
      st.o0 = o;
      descend(st, 1);
    }
    // Pinned starts from every REGF end state: the tile that lets the
    // filters stay whole in the GBUF need not be the one best without.
    for (size_t o = 0; o < 6 && hw_.no_time_mux && !stopped_; ++o)
      for (State st : regf_ends) {
        st.o0 = o;
        descend_pinned(st);
      }
    std::vector<Candidate> out;
    for (const auto& [key, c] : top_.items()) out.push_back(c);
    return out;
  }

 private:
  struct State {
    std::array<std::array<std::int64_t, 3>, 3> t{{{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}};
    size_t o0 = 0, o1 = 0;  ///< the orders asked for (indices into kOrders)
  };
  /// A state with the blocking it stands for and its score.
  struct Scored {
    State state;
    Blocking blocking;
    BlockingStats stats;
  };

  /// Scores a state as the blocking skip_conv would list it; nothing when
  /// it does not fit, skip_conv drops it, or a limit is reached.
  std::optional<Scored> score(const State& st) {
    Scored out{st, {}, {}};
    Blocking& b = out.blocking;
    std::array<int, 3> nt{};
    for (size_t bl = 0; bl < 3; ++bl) {
      b.t[bl] = st.t[bl];
      nt[bl] = (st.t[bl][0] > 1 ? 1 : 0) | (st.t[bl][1] > 1 ? 2 : 0) | (st.t[bl][2] > 1 ? 4 : 0);
    }
    const size_t o0 = table_.regular(nt[0], st.o0), o1 = table_.regular(nt[1], st.o1);
    if (!table_.keeps(nt, o0, o1)) return std::nullopt;
    b.ord[0] = kOrders[o0];
    b.ord[1] = kOrders[o1];
    if (limits_.reached(stats_.blockings)) {
      stopped_ = true;
      return std::nullopt;
    }
    ++stats_.blockings;
    const Misfit m = score_blocking(hw_, options_, share_, nld_, b, out.stats);
    if (m == Misfit::kRotation) ++stats_.rotation_refused;
    if (m != Misfit::kNone) return std::nullopt;
    ++stats_.fitting;
    return out;
  }

  /// Under no_time_mux, the GBUF descent also starts from the filters held
  /// whole (every filter loop moved from DRAM into the GBUF tile) or, when
  /// that start does not fit or is a blocking skip_conv drops, from every
  /// loop held whole. Pinning removes the filters' DRAM reads only once
  /// their last loop leaves DRAM, a saving no single step of the greedy pass
  /// sees; KAPLA's released solver reaches such tiles because its GBUF fill
  /// tries every factor product of the loops outside the innermost one, and
  /// its cost (kapla_solver.py, get_ldf_cost) drops the filter refetch under
  /// no_time_mux as nn_dataflow does.
  void descend_pinned(const State& st) {
    const auto lift = [&](bool every_loop) {
      State out = st;
      for (size_t l = 0; l < 3; ++l) {
        if (!every_loop && !nld_.data_loops[kFil][l]) continue;
        out.t[1][l] *= out.t[0][l];
        out.t[0][l] = 1;
      }
      return out;
    };
    const State filters = lift(false);
    if (filters.t[0] == st.t[0] || !descend(filters, 1)) {
      const State all = lift(true);
      if (all.t[0] != st.t[0]) descend(all, 1);
    }
  }

  /// Per data category, its traffic above blocking level `level`.
  std::array<double, 3> traffic(const BlockingStats& s, size_t level) const {
    std::array<double, 3> out{};
    const size_t top_mem = level == 2 ? kItcn : kDram;
    for (size_t c = 0; c < 3; ++c)
      for (size_t m = kDram; m <= top_mem; ++m) out[c] += hw_.mem_cost[m] * s.access[m][c];
    return out;
  }

  /// The greedy caching pass at `level`; the end state is a candidate.
  std::optional<Scored> descend(const State& start, size_t level) {
    auto cur = score(start);
    if (!cur) return std::nullopt;
    for (;;) {
      // Rank the categories by their traffic now, most first.
      const auto now = traffic(cur->stats, level);
      std::array<size_t, 3> rank{0, 1, 2};
      std::stable_sort(rank.begin(), rank.end(),
                       [&](size_t x, size_t y) { return now[x] > now[y]; });
      auto key_of = [&](const BlockingStats& s) {
        const auto v = traffic(s, level);
        return std::array<double, 4>{v[rank[0]], v[rank[1]], v[rank[2]], s.access_cost()};
      };
      const auto cur_key = key_of(cur->stats);
      const State& st = cur->state;
      std::optional<Scored> best;
      std::array<double, 4> best_key{};
      for (size_t l = 0; l < 3; ++l) {
        const std::int64_t have = st.t[level][l], left = st.t[0][l];
        if (left == 1) continue;
        // The next blocked size: the next divisor of what the two hold.
        const std::int64_t whole = have * left;
        std::int64_t next = have + 1;
        while (whole % next) ++next;
        State cand = st;
        cand.t[level][l] = next;
        cand.t[0][l] = whole / next;
        auto s = score(cand);
        if (!s) continue;
        const auto k = key_of(s->stats);
        if (!best || k < best_key) {
          best = std::move(s);
          best_key = k;
        }
      }
      if (!best || !(best_key < cur_key)) break;
      cur = std::move(best);
    }
    const BlockingStats& s = cur->stats;
    top_.add(pass_key(so_.goal, s.access_cost(), s.time),
             Candidate{cur->blocking,
                       s.access_cost(),
                       s.time,
                       s.ops,
                       {s.fetch[0][0], s.fetch[0][1], s.fetch[0][2]}});
    return cur;
  }

  const Hardware& hw_;
  const Options& options_;
  const std::array<double, 3>& share_;
  const SearchOptions& so_;
  const LoopDesc& nld_;
  SearchStats& stats_;
  Limits& limits_;
  const SkipConv& table_ = SkipConv::instance();
  TopN<Candidate> top_;
  bool stopped_ = false;
};

void search_pass(const Hardware& hw, const Options& options, const std::array<double, 3>& share,
                 const SearchOptions& so, Pass& pass, SearchStats& stats, Limits& limits) {
  if (so.blocking == BlockingSolver::kCostDescending)
    pass.tops = CostDescent(hw, options, share, so, pass.nld, stats, limits).run();
  else
    search_pass_exhaustive(hw, options, share, so, pass, stats, limits);
}

}  // namespace

std::pair<double, double> rank_key(Goal goal, double cost, double time) {
  switch (goal) {
    case Goal::kDelay:
      return {time, cost};
    case Goal::kEnergyDelay:
      return {cost * time, 0};
    case Goal::kEnergy:
      break;
  }
  return {cost, time};
}

std::vector<Partition> gen_partitions(const Layer& layer, const Dim2& nodes,
                                      const SearchOptions& options, bool conv) {
  std::vector<Partition> out;
  const auto fh = factorize(nodes.h, 4), fw = factorize(nodes.w, 4);
  for (const auto& ph : fh)
    for (const auto& pw : fw) {
      std::array<Dim2, 4> pd{};
      for (size_t p = 0; p < 4; ++p) pd[p] = Dim2{ph[p], pw[p]};
      if (!options.batch && pd[kBatp].size() > 1) continue;
      if (layer.batch % pd[kBatp].size() != 0) continue;
      // Each parallelism fills one dimension before the other, except OFMP.
      bool spread = false;
      for (size_t p = 0; p < 4; ++p)
        if (p != kOfmp && 1 < pd[p].h && pd[p].h < nodes.h && 1 < pd[p].w && pd[p].w < nodes.w)
          spread = true;
      if (spread) continue;
      if (options.hybrid) {
        if (!approx_dividable(layer.nofm, pd[kOutp].size())) continue;
        if (!approx_dividable(layer.hofm, pd[kOfmp].h) ||
            !approx_dividable(layer.wofm, pd[kOfmp].w))
          continue;
        if (!options.ifmaps && pd[kInpp].size() > 1) continue;
        // Depthwise and local-region layers have no input-channel
        // partition (their input channel follows the output channel).
        if (layer.kind != LayerKind::kConv && pd[kInpp].size() > 1) continue;
        if (conv && !approx_dividable(layer.nifm, pd[kInpp].size())) continue;
      } else {
        if (pd[kInpp].size() != 1) continue;
        const bool fc = layer.hofm == 1 && layer.wofm == 1;
        if (fc ? pd[kOfmp].size() != 1 : pd[kOutp].size() != 1) continue;
      }
      // The transpose of a 1D partition without OFMP is the same scheme.
      if (pd[kOfmp].size() == 1 &&
          std::all_of(pd.begin(), pd.end(), [](const Dim2& d) { return d.h == 1 || d.w == 1; })) {
        const std::array<std::int64_t, 4> hs{pd[0].h, pd[1].h, pd[2].h, pd[3].h};
        const std::array<std::int64_t, 4> ws{pd[0].w, pd[1].w, pd[2].w, pd[3].w};
        if (hs > ws) continue;
      }
      std::array<int, 4> order{0, 1, 2, 3};
      do {
        bool skip = false;
        for (size_t i = 0; i + 1 < 4 && !skip; ++i) {
          const int a = order[i], c = order[i + 1];
          const Dim2& d1 = pd[static_cast<size_t>(a)];
          const Dim2& d2 = pd[static_cast<size_t>(c)];
          // Trivial ones in enum order, first; a 1 x n after an n x 1 only
          // under BATP.
          if (d1.size() == 1 && d2.size() == 1 && a > c) skip = true;
          if (d1.size() > 1 && d2.size() == 1) skip = true;
          if (a != kBatp && d2.h == 1 && d2.w > 1 && d1.h > 1 && d1.w == 1) skip = true;
        }
        if (skip) continue;
        // Batch parallelism sits just outside the trivial ones.
        size_t trivial = 0;
        for (const auto& d : pd)
          if (d.size() == 1) ++trivial;
        if (pd[kBatp].size() > 1 && order[trivial] != kBatp) continue;
        Partition part;
        part.order = order;
        part.pdims = pd;
        out.push_back(part);
      } while (std::next_permutation(order.begin(), order.end()));
    }
  if (out.empty()) {
    // gen_partition(guaranteed=True): the naive scheme.
    Partition part;
    const bool fc = layer.hofm == 1 && layer.wofm == 1;
    part.pdims[fc ? kOutp : kOfmp] = nodes;
    out.push_back(part);
  }
  return out;
}

std::vector<Layout> network_input_layouts(const Layer& layer, const Hardware& hw,
                                          const SearchOptions& options) {
  // The input layer as nn_dataflow sees it: its "outputs" are the layer's
  // input fmaps.
  Layer input;
  input.batch = layer.batch;
  input.nifm = input.nofm = layer.nifm;
  input.hofm = layer.hifm();
  input.wofm = layer.wifm();
  std::vector<Layout> out;
  for (const Partition& part : gen_partitions(input, hw.dram.dim, options, false))
    out.push_back(ofmap_layout(input, part, hw.dram));
  return out;
}

SearchOutput search(const Layer& layer, const Hardware& hw, const Options& options,
                    const std::vector<Layout>& ifmaps, const SearchOptions& so) {
  SearchOutput result;
  SearchStats& stats = result.stats;
  const std::vector<Partition> parts = gen_partitions(layer, hw.nodes, so);
  stats.partitions = parts.size();
  // Per-node problems, keyed by the per-node layer and the sharing groups.
  std::map<std::array<std::int64_t, 8>, NodeResult> cache;
  Limits limits(so);
  auto node_result = [&](const Partition& part, const std::array<double, 3>& share) {
    double occ = 0;
    const Layer nl = part_layer(layer, part, &occ);
    std::array<std::int64_t, 8> key{nl.batch, nl.nifm, nl.nofm, nl.hofm, nl.wofm, 0, 0, 0};
    if (options.forwarding)
      for (size_t c = 0; c < 3; ++c) key[5 + c] = static_cast<std::int64_t>(share[c]);
    auto [it, fresh] = cache.try_emplace(key);
    NodeResult& nr = it->second;
    if (!fresh) return &nr;
    ++stats.node_layers;
    PeMapping pe;
    nr.pe_ok = !pe_mapping(nl, hw.array, pe);
    if (!nr.pe_ok) return &nr;
    for (const auto& [ifms, ofms] : pe.repl_choices) {
      Pass pass;
      pass.ifms = ifms;
      pass.ofms = ofms;
      pass.nld = loop_desc(nl, occ, pe, ifms, ofms);
      ++stats.passes;
      search_pass(hw, options, share, so, pass, stats, limits);
      nr.passes.push_back(std::move(pass));
    }
    return &nr;
  };

  // Per-node searches of every partition (shared through the cache).
  std::vector<const NodeResult*> nodes(parts.size());
  std::vector<std::array<double, 3>> shares(parts.size());
  const double part_p = partition_probability(so);
  std::vector<bool> part_kept(parts.size());
  bool any_part = false;
  for (size_t pi = 0; pi < parts.size(); ++pi) {
    part_kept[pi] = sampled_in(so, 0, pi, part_p);
    any_part = any_part || part_kept[pi];
  }
  if (!any_part && so.keep_at_least_one && !parts.empty())
    part_kept[static_cast<size_t>(fallback_pick(so, 0, parts.size()))] = true;
  for (size_t pi = 0; pi < parts.size(); ++pi) {
    if (!part_kept[pi]) {  // R leaves this partition out (stays null)
      ++stats.sampled_out;
      continue;
    }
    shares[pi] = sharing_groups(parts[pi], layer.kind);
    nodes[pi] = node_result(parts[pi], shares[pi]);
    if (!nodes[pi]->pe_ok) ++stats.pe_refused;
  }

  // Scoring a scheme needs the partition's NoC hops, the costly part. The
  // (layout, partition) pairs are scored best-first by a lower bound that
  // leaves the NoC out, and the search stops at the first pair whose bound
  // cannot enter the top. Keys carry each scheme's place in nn_dataflow's
  // generation order (layout, partition, pass, rank), so ties still go to
  // the scheme nn_dataflow would have met first.
  using Key = std::tuple<double, double, std::uint64_t>;
  auto key_of = [&](double cost, double time, std::uint64_t seq) {
    const auto k = rank_key(so.goal, cost, time);
    return Key{k.first, k.second, seq};
  };
  auto lower_bound_cost = [&](const Candidate& c) {
    return hw.mac_cost * c.ops + c.access_cost + hw.idle_cost * c.time;
  };
  struct Pair {
    Key bound;
    size_t li = 0, pi = 0;
  };
  std::vector<Pair> pairs;
  for (size_t li = 0; li < ifmaps.size(); ++li)
    for (size_t pi = 0; pi < parts.size(); ++pi) {
      if (!nodes[pi] || !nodes[pi]->pe_ok) continue;
      const std::uint64_t seq = (static_cast<std::uint64_t>(li * parts.size() + pi)) << 32;
      bool any = false;
      Key best{};
      for (const Pass& pass : nodes[pi]->passes)
        for (const Candidate& c : pass.tops) {
          const Key k = key_of(lower_bound_cost(c), c.time, seq);
          if (!any || k < best) best = k;
          any = true;
        }
      if (any) pairs.push_back(Pair{best, li, pi});
    }
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& a, const Pair& b) { return a.bound < b.bound; });

  TopN<Found, Key> top(so.ntops);
  // Filter and ofmap hops do not depend on the input layout: once per
  // partition.
  std::vector<std::optional<std::array<double, 3>>> fil_ofm_hops(parts.size());
  for (const Pair& pair : pairs) {
    if (!top.admits(pair.bound)) break;
    const Partition& part = parts[pair.pi];
    const Layout ofmaps = ofmap_layout(layer, part, hw.dram);
    Layout in = ifmaps[pair.li];
    if (in.part.order[0] < 0) {
      const std::array<std::int64_t, 4> end = in.end;
      in = ofmap_layout(layer, part, hw.dram);
      in.end = end;
    }
    auto& fo = fil_ofm_hops[pair.pi];
    if (!fo) fo = unit_nhops(layer, part, hw, in, ofmaps, options.forwarding, {true, false, true});
    std::array<double, 3> unh = *fo;
    unh[kIfm] =
        unit_nhops(layer, part, hw, in, ofmaps, options.forwarding, {false, true, false})[kIfm];
    std::uint64_t local = 0;
    const std::uint64_t seq = std::get<2>(pair.bound);
    for (const Pass& pass : nodes[pair.pi]->passes)
      for (const Candidate& c : pass.tops) {
        double hops = 0;
        for (size_t d = 0; d < 3; ++d) hops += unh[d] * c.fetch0[d];
        const double cost = lower_bound_cost(c) + hw.hop_cost * hops;
        top.add(key_of(cost, c.time, seq | local++),
                Found{Scheme{part, pass.ifms, pass.ofms, c.blocking}, pair.li, cost, c.time});
      }
  }
  for (const auto& [key, f] : top.items()) result.tops.push_back(f);
  result.complete = !limits.stopped();
  return result;
}

}  // namespace mapex::ndf
