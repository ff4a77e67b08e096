#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <mapex/analysis.hpp>
#include <mapex/checked.hpp>
#include <mapex/divisors.hpp>
#include <mapex/mapspace.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace mapex {

namespace {

/// Which rules a count applies; `count_steps` switches them on in turn.
struct Rules {
  bool parallel = true;     ///< allowed split dimensions and max split count
  bool fixed = true;        ///< fixed tiles and splits
  bool orders = true;       ///< loop-order rules
  bool utilization = true;  ///< Marvel's PE-utilisation bound
  bool placement = true;    ///< splits placed on the array's axes
  bool limits = true;       ///< bounds on the factors (max_factor, min_factor)
};

/// True when a * b is at most `bound` and divides it (factors-only spans,
/// Marvel §5.2), computed without overflow.
bool divides_bound(std::int64_t a, std::int64_t b, std::int64_t bound) {
  const auto product = checked_mul(a, b);
  return product && *product <= bound && bound % *product == 0;
}

/// Most tile chains one dimension of a mapspace may have (a chain holds a
/// tile or split per level). VGG16 conv3_1's K = 256 on an Eyeriss-like chip
/// has 168,241 with edge tiles.
constexpr std::size_t kMaxChains = 2'000'000;

/// Most chains the sampler's per-state choice lists hold in all (a few
/// hundred MB); draws from states beyond it scan the chains.
constexpr std::size_t kMaxDrawEntries = 4'000'000;

/// The divisors in `divs` (a bound's, ascending) that are multiples of
/// `base` with a quotient of at most `max_quotient`, ascending: the
/// factors-only spans above a span of `base` (Marvel §5.2).
std::vector<std::int64_t> multiples_dividing(const std::vector<std::int64_t>& divs,
                                             std::int64_t base, std::int64_t max_quotient) {
  std::vector<std::int64_t> out;
  for (auto it = std::lower_bound(divs.begin(), divs.end(), base); it != divs.end(); ++it) {
    if (*it % base != 0) continue;
    if (*it / base > max_quotient) break;
    out.push_back(*it);
  }
  return out;
}

BigInt factorial(int k) {
  BigInt f = 1;
  for (int i = 2; i <= k; ++i) f *= i;
  return f;
}

int bits_for(std::uint64_t max_value) {
  return std::max(1, static_cast<int>(std::bit_width(max_value)));
}

/// True when `perm` (free loops, outermost first) satisfies a level's
/// order rules.
bool order_allowed(const LevelRule& rule, const Operator& op, const std::vector<DimId>& perm) {
  if (!rule.orders.empty()) {
    bool any = false;
    for (const auto& order : rule.orders) {
      std::size_t i = 0;
      bool ok = true;
      for (DimId d : order) {
        if (std::find(perm.begin(), perm.end(), d) == perm.end()) continue;
        if (i >= perm.size() || perm[i] != d) {
          ok = false;
          break;
        }
        ++i;
      }
      if (ok && i == perm.size()) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  if (!rule.innermost.empty()) {
    // Pinned innermost loops (Timeloop's partial permutation): those with
    // more than one trip close the order, in the pinned order; one-trip
    // loops have no position, so pinning them says nothing.
    std::vector<DimId> tail;
    for (DimId d : rule.innermost)
      if (std::find(perm.begin(), perm.end(), d) != perm.end()) tail.push_back(d);
    if (!std::equal(tail.rbegin(), tail.rend(), perm.rbegin())) return false;
  }
  if (!rule.stationary.empty()) {
    bool any = false;
    for (int t : rule.stationary) {
      const Tensor& tensor = op.tensors()[static_cast<size_t>(t)];
      // Stationary: once a loop that does not index the tensor starts, no
      // loop inside it indexes the tensor.
      bool inner = false, ok = true;
      for (DimId d : perm) {
        if (!tensor.relevant(d))
          inner = true;
        else if (inner) {
          ok = false;
          break;
        }
      }
      if (ok) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

/// DRAM's span: the whole problem.
std::vector<std::int64_t> dram_span(const Operator& op) {
  std::vector<std::int64_t> out;
  for (const auto& d : op.dims()) out.push_back(d.bound);
  return out;
}

std::vector<DimId> dims_of(std::uint32_t mask) {
  std::vector<DimId> out;
  for (DimId d = 0; mask >> d; ++d)
    if (mask >> d & 1u) out.push_back(d);
  return out;
}

}  // namespace

struct Mapspace::Impl {
  const Operator& op;
  const Architecture& arch;
  const MapspaceOptions& options;
  int n = 0;  // dimensions
  int L = 0;  // levels (the last is DRAM)
  std::vector<int> data_levels, spatial_levels;
  std::vector<int> slot;  // level -> data or spatial slot
  /// Loop-order slots: the data levels (slot k = data slot k), then one per
  /// spatial level whose cluster level is on (its cluster order).
  std::vector<int> order_levels;
  std::vector<LevelRule> order_rules;  ///< the order rules of each order slot
  std::vector<int> cluster_slot;       ///< per spatial slot: its order slot, or -1

  /// Per dimension: every chain of per-level values (tile for buffers,
  /// split for spatial levels) with what the counts need.
  struct Chains {
    std::size_t count = 0;
    std::vector<std::int64_t> values;  // count x (L - 1)
    std::vector<std::int64_t> spans;   // count x L
    std::vector<std::uint32_t> free;   // bit k: more than one trip at data slot k
    std::vector<std::int64_t> splits;  // count x spatial slots
    /// Cluster split and tile (FLASH's T^out) per spatial slot: 1 and the
    /// step's span where the level has no cluster level.
    std::vector<std::int64_t> csplits, ctiles;  // count x spatial slots
    std::vector<char> fixed_ok, parallel_ok;
    /// The chain's factors (splits and trip counts) are within the
    /// levels' max_factor / min_factor.
    std::vector<char> limit_ok;
  };
  std::vector<Chains> chains;
  /// Per tensor, per subscript: (dimension, |coefficient|) terms, for fast
  /// footprints (AffineExpr::extent without allocation).
  std::vector<std::vector<std::vector<std::pair<int, std::int64_t>>>> subscripts;
  /// Per level: capacity in words (halved when double-buffered); 0 for
  /// levels that are not buffers.
  std::vector<double> capacity_words;
  /// Keep/bypass: every combination of the choices the
  /// options leave free, as the `keep` each level's mapping gets (empty:
  /// the default). One combination, all empty, when nothing is free or
  /// fixed away from the default: the space is what it was before.
  std::vector<std::vector<std::vector<bool>>> keep_combos;
  /// Per level, per tensor: its partition's index, -1 for none; per level,
  /// per partition: capacity in words (halved when double-buffered).
  std::vector<std::vector<int>> partition_index;
  std::vector<std::vector<double>> partition_words;
  /// Per tensor: its word size in default words (1 unless the architecture
  /// gives it its own width), so footprints add up in capacity words.
  std::vector<double> tensor_width;
  /// The main table's total times the keep combinations: size().
  mutable BigInt total_all = 0;

  /// A count table for one set of rules: W[d][state] is the number of
  /// completions of the dimensions d.. from a state.
  struct Table {
    Rules rules;
    std::vector<char> masked;  // per data slot: state holds the free set
    struct Field {
      int shift = 0, bits = 0;
    };
    std::vector<Field> data_field, prod_field, par_field, cpar_field;
    std::vector<int> max_parallel;
    /// Per spatial slot: the split factors so far, largest first (0 =
    /// empty), one field each; none when placement is not tested there
    /// (see placement_slots).
    std::vector<std::vector<Field>> place_field;
    std::vector<std::unordered_map<std::uint64_t, BigInt>> W;
    /// Per data slot, for masked slots: free set -> allowed orders.
    std::vector<std::map<std::uint32_t, std::vector<std::vector<DimId>>>> allowed;
    BigInt total;

    std::uint64_t get(std::uint64_t s, const Field& f) const {
      return (s >> f.shift) & ((std::uint64_t{1} << f.bits) - 1);
    }
    std::uint64_t put(std::uint64_t s, const Field& f, std::uint64_t v) const {
      const std::uint64_t m = ((std::uint64_t{1} << f.bits) - 1) << f.shift;
      return (s & ~m) | (v << f.shift);
    }
  };

  Impl(const Operator& o, const Architecture& a, const MapspaceOptions& opt)
      : op(o), arch(a), options(opt) {
    n = op.num_dims();
    L = arch.num_levels();
    slot.assign(static_cast<size_t>(L), -1);
    for (int i = 0; i < L; ++i) {
      const Level& l = arch.levels()[static_cast<size_t>(i)];
      if (l.holds_data()) {
        slot[static_cast<size_t>(i)] = static_cast<int>(data_levels.size());
        data_levels.push_back(i);
      } else {
        slot[static_cast<size_t>(i)] = static_cast<int>(spatial_levels.size());
        spatial_levels.push_back(i);
      }
    }
    build_order_slots();
    for (DimId d = 0; d < n; ++d) chains.push_back(build_chains(d));
    for (const auto& t : op.tensors()) {
      tensor_width.push_back(arch.word_bytes_of(t) / arch.word_bytes());
      auto& subs = subscripts.emplace_back();
      for (const auto& e : t.subscripts) {
        auto& terms = subs.emplace_back();
        for (const auto& term : e.terms)
          if (term.coeff != 0) terms.emplace_back(term.dim, std::abs(term.coeff));
      }
    }
    for (const auto& l : arch.levels()) {
      double words = 0;
      if (l.kind == LevelKind::kBuffer)
        words = static_cast<double>(l.size_bytes) / arch.word_bytes() / (l.double_buffered ? 2 : 1);
      capacity_words.push_back(words);
    }
    build_partitions();
    build_keep_combos();
  }

  // --- keep/bypass and partitions -----------------

  void build_partitions() {
    for (const auto& l : arch.levels()) {
      auto& index = partition_index.emplace_back(op.tensors().size(), -1);
      auto& words = partition_words.emplace_back();
      for (size_t p = 0; p < l.partitions.size(); ++p) {
        words.push_back(static_cast<double>(l.partitions[p].size_bytes) / arch.word_bytes() /
                        (l.double_buffered ? 2 : 1));
        for (size_t t = 0; t < op.tensors().size(); ++t)
          if (l.partition_of(op.tensors()[t].name) == &l.partitions[p])
            index[t] = static_cast<int>(p);
      }
    }
  }

  /// Whether buffer `level` may hold tensor t at all (a partitioned level
  /// only the tensors its partitions name).
  bool holdable(int level, size_t t) const {
    return arch.levels()[static_cast<size_t>(level)].partitions.empty() ||
           partition_index[static_cast<size_t>(level)][t] >= 0;
  }

  void build_keep_combos() {
    const size_t nt = op.tensors().size();
    std::vector<std::vector<bool>> base(static_cast<size_t>(L));
    std::vector<std::pair<int, size_t>> free;  // (level, tensor) left to enumerate
    bool explicit_keep = false;
    for (int i = 0; i < L; ++i) {
      if (arch.levels()[static_cast<size_t>(i)].kind != LevelKind::kBuffer) continue;
      auto& keep = base[static_cast<size_t>(i)];
      const LevelRule* r = rule(i);
      for (size_t t = 0; t < nt; ++t) {
        keep.push_back(holdable(i, t));
        const int fixed = r && !r->keep.empty() ? r->keep[t] : -1;
        if (fixed >= 0) {
          explicit_keep = explicit_keep || (fixed == 1) != keep.back();
          keep.back() = fixed == 1;
        } else if (options.explore_bypass && holdable(i, t)) {
          free.emplace_back(i, t);
        }
      }
    }
    if (free.size() > 20)
      throw InputError(SourceLocation{}, "explore_bypass",
                       "layer '" + op.name() + "': " + std::to_string(free.size()) +
                           " keep/bypass choices are free; at most 20 can be enumerated (fix "
                           "some with keep/bypass rules)");
    if (free.empty() && !explicit_keep) {
      keep_combos.assign(1, std::vector<std::vector<bool>>(static_cast<size_t>(L)));
      return;
    }
    // Combination c bypasses the free choices whose bit is set: 0 keeps all.
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << free.size()); ++c) {
      auto combo = base;
      for (size_t j = 0; j < free.size(); ++j)
        if (c >> j & 1u) combo[static_cast<size_t>(free[j].first)][free[j].second] = false;
      keep_combos.push_back(std::move(combo));
    }
  }

  /// Whether combination `combo` keeps tensor t at buffer `level`.
  bool kept(std::size_t combo, int level, size_t t) const {
    const auto& keep = keep_combos[combo][static_cast<size_t>(level)];
    return keep.empty() ? holdable(level, t) : static_cast<bool>(keep[t]);
  }

  void set_keep(Mapping& m, std::size_t combo) const {
    for (int i = 0; i < L; ++i) m.level(i).keep = keep_combos[combo][static_cast<size_t>(i)];
  }

  /// The combination a mapping's keep/bypass matches, or nothing.
  std::optional<std::size_t> combo_of(const Mapping& m) const {
    for (std::size_t c = 0; c < keep_combos.size(); ++c) {
      bool same = true;
      for (int i = 0; i < L && same; ++i)
        if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer)
          for (size_t t = 0; t < op.tensors().size() && same; ++t)
            same = m.keeps(op, arch, i, static_cast<int>(t)) == kept(c, i, t);
      if (same) return c;
    }
    return std::nullopt;
  }

  // --- end of keep/bypass and partitions -------------------------------------

  const LevelRule* rule(int level) const {
    if (options.levels.empty()) return nullptr;
    return &options.levels[static_cast<size_t>(level)];
  }

  // --- cluster levels -----------

  bool cluster_on(int level) const {
    const LevelRule* r = rule(level);
    return r && r->cluster.enabled;
  }

  /// Order slots: data levels first (their slot numbers unchanged), then
  /// the cluster orders of the spatial levels whose cluster level is on.
  void build_order_slots() {
    order_levels = data_levels;
    for (int level : data_levels) order_rules.push_back(rule(level) ? *rule(level) : LevelRule{});
    cluster_slot.assign(spatial_levels.size(), -1);
    for (size_t j = 0; j < spatial_levels.size(); ++j) {
      if (!cluster_on(spatial_levels[j])) continue;
      cluster_slot[j] = static_cast<int>(order_levels.size());
      order_levels.push_back(spatial_levels[j]);
      LevelRule r;
      r.orders = rule(spatial_levels[j])->cluster.orders;
      order_rules.push_back(std::move(r));
    }
  }

  /// Chains through a spatial level with a cluster level: units per
  /// cluster c (a step covers child x c), the cluster tile T^out from one
  /// step's span up to the bound (the parent's tile then holds T^out x s),
  /// and the clusters' split s, with c x s within the fan-out. Tiles
  /// dividing the bounds make every span divide the next (Marvel §5.2).
  void add_cluster_chains(DimId d, std::int64_t bound, const std::vector<std::int64_t>& divs,
                          std::vector<std::int64_t>& prefix, std::vector<std::int64_t>& cluster,
                          std::int64_t child_span, int level, Chains& out) const {
    const std::int64_t fanout = arch.levels()[static_cast<size_t>(level)].fanout();
    const auto with = [&](std::int64_t c, std::int64_t tile, std::int64_t s, std::int64_t span) {
      prefix.push_back(s);
      cluster.push_back(c);
      cluster.push_back(tile);
      add_chains(d, bound, divs, prefix, cluster, span, level + 1, out);
      cluster.resize(cluster.size() - 2);
      prefix.pop_back();
    };
    if (options.factors_only) {
      // Steps, tiles and spans all divide the bound: walk its divisors.
      for (std::int64_t step : multiples_dividing(divs, child_span, fanout))
        for (std::int64_t tile : multiples_dividing(divs, step, bound / step))
          for (std::int64_t span : multiples_dividing(divs, tile, fanout / (step / child_span)))
            with(step / child_span, tile, span / tile, span);
      return;
    }
    // Products capped (checked.hpp) and counters advanced only below their
    // limit: bounds and fan-outs may be anywhere up to INT64_MAX.
    for (std::int64_t c = 0; c < fanout && mul_saturating(child_span, c) < bound;) {
      ++c;
      const std::int64_t step = mul_capped(child_span, c, bound);
      for (std::int64_t t = step - 1; t < bound;) {
        const std::int64_t tile = ++t;
        for (std::int64_t s = 0;
             mul_saturating(c, s + 1) <= fanout && mul_saturating(tile, s) < bound;) {
          ++s;
          with(c, tile, s, mul_capped(tile, s, bound));
        }
      }
    }
  }

  // --- chains -----------------------------------------------------------

  Chains build_chains(DimId d) const {
    Chains c;
    const std::int64_t bound = op.dims()[static_cast<size_t>(d)].bound;
    // Factors-only spaces take their tiles from the bound's divisors, found
    // by factorisation: construction time then depends on the number of
    // divisors, not on the bound (issue 18: W = 2^31 took minutes).
    const std::vector<std::int64_t> divs =
        options.factors_only ? divisors(bound) : std::vector<std::int64_t>{};
    std::vector<std::int64_t> prefix, cluster;
    add_chains(d, bound, divs, prefix, cluster, 1, 0, c);
    return c;
  }

  void add_chains(DimId d, std::int64_t bound, const std::vector<std::int64_t>& divs,
                  std::vector<std::int64_t>& prefix, std::vector<std::int64_t>& cluster,
                  std::int64_t child_span, int level, Chains& out) const {
    if (level + 1 == L) {
      record(d, bound, prefix, cluster, out);
      return;
    }
    const Level& l = arch.levels()[static_cast<size_t>(level)];
    if (l.kind == LevelKind::kSpatial && cluster_on(level)) {
      add_cluster_chains(d, bound, divs, prefix, cluster, child_span, level, out);
      return;
    }
    if (l.kind == LevelKind::kSpatial) {
      cluster.push_back(1);
      cluster.push_back(child_span);
      const auto split = [&](std::int64_t s, std::int64_t span) {
        prefix.push_back(s);
        add_chains(d, bound, divs, prefix, cluster, span, level + 1, out);
        prefix.pop_back();
      };
      if (options.factors_only) {
        for (std::int64_t span : multiples_dividing(divs, child_span, l.fanout()))
          split(span / child_span, span);
      } else {
        for (std::int64_t s = 0; s < l.fanout() && mul_saturating(child_span, s) < bound;) {
          ++s;
          split(s, mul_capped(child_span, s, bound));
        }
      }
      cluster.resize(cluster.size() - 2);
      return;
    }
    const auto tile_of = [&](std::int64_t tile) {
      prefix.push_back(tile);
      add_chains(d, bound, divs, prefix, cluster, tile, level + 1, out);
      prefix.pop_back();
    };
    if (options.factors_only) {
      for (std::int64_t tile : multiples_dividing(divs, child_span, bound)) tile_of(tile);
      return;
    }
    for (std::int64_t t = child_span - 1; t < bound;) tile_of(++t);
  }

  void record(DimId d, std::int64_t bound, const std::vector<std::int64_t>& values,
              const std::vector<std::int64_t>& cluster, Chains& out) const {
    std::uint32_t free = 0;
    bool fixed_ok = true, parallel_ok = true, limit_ok = true;
    std::int64_t child = 1;
    out.values.insert(out.values.end(), values.begin(), values.end());
    for (int i = 0; i < L; ++i) {
      const Level& l = arch.levels()[static_cast<size_t>(i)];
      const bool last = i + 1 == L;
      const std::int64_t v = last ? bound : values[static_cast<size_t>(i)];
      const LevelRule* r = rule(i);
      if (r && !last && !r->fixed.empty() && r->fixed[static_cast<size_t>(d)] != 0 &&
          r->fixed[static_cast<size_t>(d)] != v)
        fixed_ok = false;
      if (l.kind == LevelKind::kSpatial) {
        if (r && v > 1 && !(r->parallel_mask >> d & 1u)) parallel_ok = false;
        limit_ok = limit_ok && within_limits(r, d, v);
        const size_t j = static_cast<size_t>(slot[static_cast<size_t>(i)]);
        const std::int64_t cs = cluster[2 * j], ct = cluster[2 * j + 1];
        if (cluster_slot[j] >= 0) {
          // The cluster level (README, "Cluster levels"): its split, its
          // tile T^out, and a loop when T^out spans several steps.
          const ClusterRule& cr = r->cluster;
          if (cs > 1 && !(cr.parallel_mask >> d & 1u)) parallel_ok = false;
          if (!cr.fixed_split.empty() && cr.fixed_split[static_cast<size_t>(d)] != 0 &&
              cr.fixed_split[static_cast<size_t>(d)] != cs)
            fixed_ok = false;
          if (!cr.fixed_tile.empty() && cr.fixed_tile[static_cast<size_t>(d)] != 0 &&
              cr.fixed_tile[static_cast<size_t>(d)] != ct)
            fixed_ok = false;
          const std::int64_t step = mul_capped(child, cs, bound);
          if (ceil_div(ct, step) > 1) free |= 1u << cluster_slot[j];
          child = ct;
        }
        out.splits.push_back(v);
        out.csplits.push_back(cs);
        out.ctiles.push_back(ct);
        child = mul_capped(child, v, bound);
        out.spans.push_back(child);
        continue;
      }
      const std::int64_t trips = ceil_div(v, child);
      limit_ok = limit_ok && within_limits(r, d, trips);
      if (trips > 1) free |= 1u << slot[static_cast<size_t>(i)];
      child = v;
      out.spans.push_back(v);
    }
    out.free.push_back(free);
    out.fixed_ok.push_back(fixed_ok);
    out.parallel_ok.push_back(parallel_ok);
    out.limit_ok.push_back(limit_ok);
    ++out.count;
    // With edge tiles every tile size up to the bound is a choice, and a
    // bound with thousands of divisors has as many factors-only tiles per
    // level, so the chains of such a dimension cannot all be held (issue
    // 18: W = 2^31 ran for minutes); refuse the space instead (keyed by the
    // dimension; the host places it at the layer's entry).
    if (out.count > kMaxChains)
      throw InputError(
          SourceLocation{}, op.dims()[static_cast<size_t>(d)].name,
          "layer '" + op.name() + "': dimension '" + op.dims()[static_cast<size_t>(d)].name +
              "' (bound " + std::to_string(bound) + ") has more than " +
              std::to_string(kMaxChains) +
              " tile chains (tile and split choices across the levels)" +
              (options.factors_only ? "" : " with edge tiles; use factors-only tiles") +
              "; the mapspace is too large to build");
  }

  /// Whether a level's factor of dimension d (its split, or its loop's
  /// trip count) is within the level's max_factor / min_factor.
  static bool within_limits(const LevelRule* r, DimId d, std::int64_t factor) {
    if (!r) return true;
    const auto du = static_cast<size_t>(d);
    if (!r->max_factor.empty() && r->max_factor[du] != 0 && factor > r->max_factor[du])
      return false;
    if (!r->min_factor.empty() && r->min_factor[du] != 0 && factor < r->min_factor[du])
      return false;
    return true;
  }

  std::int64_t value(DimId d, std::size_t c, int level) const {
    return chains[static_cast<size_t>(d)]
        .values[c * static_cast<size_t>(L - 1) + static_cast<size_t>(level)];
  }
  std::int64_t span(DimId d, std::size_t c, int level) const {
    return chains[static_cast<size_t>(d)]
        .spans[c * static_cast<size_t>(L) + static_cast<size_t>(level)];
  }
  std::int64_t csplit(DimId d, std::size_t c, size_t j) const {
    return chains[static_cast<size_t>(d)].csplits[c * spatial_levels.size() + j];
  }
  std::int64_t ctile(DimId d, std::size_t c, size_t j) const {
    return chains[static_cast<size_t>(d)].ctiles[c * spatial_levels.size() + j];
  }
  std::int64_t split(DimId d, std::size_t c, size_t j) const {
    return chains[static_cast<size_t>(d)].splits[c * spatial_levels.size() + j];
  }

  bool chain_allowed(const Table& t, DimId d, std::size_t c) const {
    const Chains& ch = chains[static_cast<size_t>(d)];
    if (t.rules.fixed && !ch.fixed_ok[c]) return false;
    if (t.rules.parallel && !ch.parallel_ok[c]) return false;
    if (t.rules.limits && !ch.limit_ok[c]) return false;
    return true;
  }

  // --- count tables -------------------------------------------------------

  /// The count table of the space itself, laid out and filled on first use
  /// (counted()), so a space whose count state does not fit (layout()
  /// throws) still serves membership tests.
  mutable std::unique_ptr<Table> main;
  mutable std::once_flag main_counted;

  /// The main table with its counts. Filling it dominates building a
  /// mapspace for layers with many divisors (85% of a kapla search on a
  /// ResNet-50 layer), and searchers that only test membership
  /// (reject_reason) never need it; once_flag because cursors of one space
  /// run on several threads.
  /// Consecutive chains of one dimension that the count table cannot tell
  /// apart: all allowed by the main table's rules, with the same free loops
  /// and the same splits, so every state steps to the same next state
  /// through each of them and each has the same number of completions.
  /// With edge tiles a dimension has many chains (172,157 for K = 256 on
  /// flash_edge) but few runs, since the innermost tile varies fastest and
  /// changes neither.
  struct ChainRun {
    std::uint32_t first = 0;
    std::uint32_t length = 0;
  };
  /// Runs per dimension for the main table, built with its counts.
  mutable std::vector<std::vector<ChainRun>> runs;

  bool same_step(DimId d, std::size_t a, std::size_t b) const {
    if (chains[static_cast<size_t>(d)].free[a] != chains[static_cast<size_t>(d)].free[b])
      return false;
    for (size_t j = 0; j < spatial_levels.size(); ++j)
      if (split(d, a, j) != split(d, b, j) || csplit(d, a, j) != csplit(d, b, j)) return false;
    return true;
  }

  std::vector<ChainRun> build_runs(const Table& t, DimId d) const {
    std::vector<ChainRun> out;
    const std::size_t count = chains[static_cast<size_t>(d)].count;
    bool open = false;
    for (std::size_t c = 0; c < count; ++c) {
      if (!chain_allowed(t, d, c)) {
        open = false;
        continue;
      }
      if (open && same_step(d, out.back().first, c)) {
        ++out.back().length;
        continue;
      }
      out.push_back(ChainRun{static_cast<std::uint32_t>(c), 1});
      open = true;
    }
    return out;
  }

  /// Sampling's choices at one dimension from one state, in chain order:
  /// the runs with completions, the state each leads to, the completions
  /// of each of its chains, and the running total of completions up to and
  /// including the run. Drawing a chain is then a binary search over runs
  /// and a division within the run instead of a pass over every chain
  /// (11 ms a draw for K = 256 with edge tiles), and picks the same chain
  /// as that pass.
  struct DrawChoices {
    std::vector<std::uint32_t> run;
    std::vector<std::uint64_t> next;
    std::vector<BigInt> each;     ///< completions of one chain of run[i]
    std::vector<BigInt> running;  ///< completions of runs[0..i]
  };
  /// Choices per (dimension, state) of the main table, built on first use;
  /// at most kMaxDrawEntries runs in all, then draws scan the runs.
  mutable std::mutex draw_mutex;
  mutable std::map<std::pair<DimId, std::uint64_t>, std::shared_ptr<const DrawChoices>> draws;
  mutable std::size_t draw_entries = 0;

  /// The completions of one chain of run `k` of dimension d from state s,
  /// and the state it leads to; nothing when it has none.
  std::optional<std::pair<std::uint64_t, const BigInt*>> run_step(const Table& t, DimId d,
                                                                  std::size_t k,
                                                                  std::uint64_t s) const {
    const auto next = step(t, s, d, runs[static_cast<size_t>(d)][k].first);
    if (!next) return std::nullopt;
    const auto& Wn = t.W[static_cast<size_t>(d) + 1];
    const auto it = Wn.find(*next);
    if (it == Wn.end() || it->second == 0) return std::nullopt;
    return std::make_pair(*next, &it->second);
  }

  std::shared_ptr<const DrawChoices> draw_choices(const Table& t, DimId d, std::uint64_t s) const {
    {
      const std::lock_guard<std::mutex> lock(draw_mutex);
      const auto it = draws.find({d, s});
      if (it != draws.end()) return it->second;
      if (draw_entries >= kMaxDrawEntries) return nullptr;
    }
    auto out = std::make_shared<DrawChoices>();
    BigInt running = 0;
    const auto& dim_runs = runs[static_cast<size_t>(d)];
    for (std::size_t k = 0; k < dim_runs.size(); ++k) {
      const auto stepped = run_step(t, d, k, s);
      if (!stepped) continue;
      running += *stepped->second * dim_runs[k].length;
      out->run.push_back(static_cast<std::uint32_t>(k));
      out->next.push_back(stepped->first);
      out->each.push_back(*stepped->second);
      out->running.push_back(running);
    }
    const std::lock_guard<std::mutex> lock(draw_mutex);
    draw_entries += out->run.size();
    return draws.emplace(std::make_pair(d, s), std::move(out)).first->second;
  }

  /// The chain of dimension d that rank r (below W[d][s]) falls in from
  /// state s, in chain order, and the state it leads to; r becomes the rank
  /// within that chain's completions. Nothing when r is out of range.
  std::optional<std::pair<std::uint32_t, std::uint64_t>> draw_chain(const Table& t, DimId d,
                                                                    std::uint64_t s,
                                                                    BigInt& r) const {
    const auto& dim_runs = runs[static_cast<size_t>(d)];
    const auto within = [&](std::size_t k, const BigInt& each) {
      const BigInt index = r / each;
      r -= index * each;
      return dim_runs[k].first + static_cast<std::uint32_t>(index);
    };
    if (const auto choices = draw_choices(t, d, s)) {
      const auto& run = choices->running;
      const auto at = std::upper_bound(run.begin(), run.end(), r) - run.begin();
      if (at == static_cast<std::ptrdiff_t>(run.size())) return std::nullopt;
      const auto i = static_cast<size_t>(at);
      if (i > 0) r -= run[i - 1];
      return std::make_pair(within(choices->run[i], choices->each[i]), choices->next[i]);
    }
    for (std::size_t k = 0; k < dim_runs.size(); ++k) {
      const auto stepped = run_step(t, d, k, s);
      if (!stepped) continue;
      const BigInt total = *stepped->second * dim_runs[k].length;
      if (r < total) return std::make_pair(within(k, *stepped->second), stepped->first);
      r -= total;
    }
    return std::nullopt;
  }

  /// The inverse of draw_chain: adds to r the completions of every chain
  /// of dimension d before chain c from state s, in chain order, and gives
  /// the state c leads to; nothing when c is not allowed from s.
  std::optional<std::uint64_t> rank_chain(const Table& t, DimId d, std::uint64_t s, std::uint32_t c,
                                          BigInt& r) const {
    const auto& dim_runs = runs[static_cast<size_t>(d)];
    for (std::size_t k = 0; k < dim_runs.size() && dim_runs[k].first <= c; ++k) {
      const auto stepped = run_step(t, d, k, s);
      if (!stepped) continue;
      const std::uint32_t first = dim_runs[k].first;
      if (c < first + dim_runs[k].length) {
        r += *stepped->second * (c - first);
        return stepped->first;
      }
      r += *stepped->second * dim_runs[k].length;
    }
    return std::nullopt;
  }

  Table& counted() const {
    std::call_once(main_counted, [this] {
      main = layout(Rules{});
      count(*main);
      for (DimId d = 0; d < n; ++d) runs.push_back(build_runs(*main, d));
      total_all = main->total * keep_combos.size();
    });
    return *main;
  }

  std::unique_ptr<Table> make_table(Rules rules) const {
    auto t = layout(rules);
    count(*t);
    return t;
  }

  /// A table's state layout for the rules, without counts. Throws when the
  /// state does not fit 64 bits, so a space too large to count is refused
  /// when it is built.
  std::unique_ptr<Table> layout(Rules rules) const {
    auto t = std::make_unique<Table>();
    t->rules = rules;
    int shift = 0;
    auto field = [&](int bits) {
      Table::Field f{shift, bits};
      shift += bits;
      return f;
    };
    for (size_t k = 0; k < order_levels.size(); ++k) {
      const bool masked = rules.orders && order_rules[k].order_constrained();
      t->masked.push_back(masked);
      t->data_field.push_back(field(masked ? n : bits_for(static_cast<std::uint64_t>(n))));
    }
    for (int level : spatial_levels) {
      const Level& l = arch.levels()[static_cast<size_t>(level)];
      t->prod_field.push_back(field(bits_for(static_cast<std::uint64_t>(l.fanout()))));
      t->par_field.push_back(field(bits_for(static_cast<std::uint64_t>(n))));
      int max_par = options.max_parallel_dims > 0 ? options.max_parallel_dims
                                                  : static_cast<int>(l.shape.size());
      if (!rules.parallel) max_par = n;
      t->max_parallel.push_back(max_par);
      // A cluster level's split dimensions are limited like the level's.
      const bool cluster = cluster_slot[t->max_parallel.size() - 1] >= 0;
      t->cpar_field.push_back(field(cluster ? bits_for(static_cast<std::uint64_t>(n)) : 0));
      auto& factors = t->place_field.emplace_back();
      const int slots = rules.placement ? placement_slots(l, cluster ? 2 * max_par : max_par) : 0;
      const int bits = bits_for(
          static_cast<std::uint64_t>(l.split_placement == SplitPlacement::kOneAxis
                                         ? *std::max_element(l.shape.begin(), l.shape.end())
                                         : l.fanout()));
      for (int k = 0; k < slots; ++k) factors.push_back(field(bits));
    }
    if (shift > 64)
      throw InputError(SourceLocation{}, "mapspace",
                       "layer '" + op.name() +
                           "': too many rules to count this space (loop orders, "
                           "splits and their placement need a state of " +
                           std::to_string(shift) + " bits, at most 64)");
    t->allowed.resize(order_levels.size());
    t->W.resize(static_cast<size_t>(n + 1));
    return t;
  }

  /// Split factors a spatial level's state must remember to test
  /// placement: none where only the product matters (a flat or
  /// one-axis array), else at most one per split dimension and at most
  /// log2(fan-out) (each factor is at least 2). Whether the factors can be
  /// placed depends on them only as a multiset, so the state keeps them
  /// sorted.
  static int placement_slots(const Level& l, int max_parallel) {
    if (l.split_placement == SplitPlacement::kFlat || l.shape.size() <= 1) return 0;
    const int most = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(l.fanout()))) - 1;
    return std::min(max_parallel, most);
  }

  /// Adds factor v to spatial slot j's sorted factors in state s; nothing
  /// when they cannot be placed on the level's array (splits_fit_array,
  /// the test every cost model applies).
  std::optional<std::uint64_t> place(const Table& t, std::uint64_t s, size_t j, std::int64_t v,
                                     const Level& l) const {
    const auto& fields = t.place_field[j];
    if (fields.empty()) return s;
    std::vector<std::int64_t> factors;
    for (const auto& f : fields)
      if (const auto x = t.get(s, f)) factors.push_back(static_cast<std::int64_t>(x));
    if (factors.size() == fields.size()) return std::nullopt;
    factors.push_back(v);
    std::sort(factors.rbegin(), factors.rend());
    if (!splits_fit_array(factors, l)) return std::nullopt;
    for (size_t k = 0; k < factors.size(); ++k)
      s = t.put(s, fields[k], static_cast<std::uint64_t>(factors[k]));
    return s;
  }

  /// Fills the completion counts W and the total of a laid-out table.
  void count(Table& table) const {
    Table* t = &table;
    // Initial state: products 1.
    std::uint64_t init = 0;
    for (const auto& f : t->prod_field) init = t->put(init, f, 1);

    // Forward: reachable states per depth.
    std::vector<std::vector<std::uint64_t>> reach(static_cast<size_t>(n + 1));
    reach[0].push_back(init);
    for (DimId d = 0; d < n; ++d) {
      std::unordered_map<std::uint64_t, char> seen;
      const auto sigs = signatures(*t, d);
      for (std::uint64_t s : reach[static_cast<size_t>(d)])
        for (const auto& [c, count] : sigs) {
          (void)count;
          if (auto next = step(*t, s, d, c)) seen.emplace(*next, 1);
        }
      for (const auto& [s, one] : seen) reach[static_cast<size_t>(d + 1)].push_back(s);
      std::sort(reach[static_cast<size_t>(d + 1)].begin(), reach[static_cast<size_t>(d + 1)].end());
    }
    // Backward: completion counts.
    for (std::uint64_t s : reach[static_cast<size_t>(n)])
      t->W[static_cast<size_t>(n)][s] = final_factor(*t, s);
    for (DimId d = n - 1; d >= 0; --d) {
      const auto sigs = signatures(*t, d);
      auto& Wd = t->W[static_cast<size_t>(d)];
      const auto& Wn = t->W[static_cast<size_t>(d + 1)];
      for (std::uint64_t s : reach[static_cast<size_t>(d)]) {
        BigInt sum = 0;
        for (const auto& [c, count] : sigs)
          if (auto next = step(*t, s, d, c)) {
            const BigInt& w = Wn.at(*next);
            if (w != 0) sum += w * count;
          }
        Wd[s] = sum;
      }
    }
    t->total = t->W[0].at(init);
  }

  /// Representative chains of dimension d grouped by what they do to the
  /// state: (representative index, number of chains).
  std::vector<std::pair<std::size_t, std::uint64_t>> signatures(const Table& t, DimId d) const {
    const Chains& ch = chains[static_cast<size_t>(d)];
    std::map<std::vector<std::int64_t>, std::pair<std::size_t, std::uint64_t>> groups;
    std::vector<std::int64_t> key;
    for (std::size_t c = 0; c < ch.count; ++c) {
      if (!chain_allowed(t, d, c)) continue;
      key.assign(1, ch.free[c]);
      for (size_t j = 0; j < spatial_levels.size(); ++j) {
        key.push_back(split(d, c, j));
        key.push_back(csplit(d, c, j));
      }
      auto [it, inserted] = groups.emplace(key, std::make_pair(c, std::uint64_t{0}));
      ++it->second.second;
    }
    std::vector<std::pair<std::size_t, std::uint64_t>> out;
    for (const auto& [k, v] : groups) out.push_back(v);
    std::sort(out.begin(), out.end());
    return out;
  }

  /// The state after choosing chain c of dimension d, or nothing when a
  /// fan-out or the parallel-dimension limit is exceeded.
  std::optional<std::uint64_t> step(const Table& t, std::uint64_t s, DimId d, std::size_t c) const {
    const std::uint32_t free = chains[static_cast<size_t>(d)].free[c];
    for (size_t k = 0; k < order_levels.size(); ++k) {
      if (!(free >> k & 1u)) continue;
      const auto& f = t.data_field[k];
      s = t.put(s, f, t.masked[k] ? (t.get(s, f) | (std::uint64_t{1} << d)) : t.get(s, f) + 1);
    }
    for (size_t j = 0; j < spatial_levels.size(); ++j) {
      const std::int64_t cv = csplit(d, c, j);
      if (cv > 1) {
        const auto next = cluster_step(t, s, j, cv);
        if (!next) return std::nullopt;
        s = *next;
      }
      const std::int64_t v = split(d, c, j);
      if (v == 1) continue;
      const Level& l = arch.levels()[static_cast<size_t>(spatial_levels[j])];
      std::uint64_t prod = 0;
      if (__builtin_mul_overflow(t.get(s, t.prod_field[j]), static_cast<std::uint64_t>(v), &prod) ||
          prod > static_cast<std::uint64_t>(l.fanout()))
        return std::nullopt;
      const std::uint64_t par = t.get(s, t.par_field[j]) + 1;
      if (par > static_cast<std::uint64_t>(t.max_parallel[j])) return std::nullopt;
      s = t.put(t.put(s, t.prod_field[j], prod), t.par_field[j], par);
      const auto placed = place(t, s, j, v, l);
      if (!placed) return std::nullopt;
      s = *placed;
    }
    return s;
  }

  /// Adds a cluster split cv of spatial slot j to the state: its units
  /// count toward the fan-out, its dimensions toward the split limit, and
  /// it is one more factor to place on the array.
  std::optional<std::uint64_t> cluster_step(const Table& t, std::uint64_t s, size_t j,
                                            std::int64_t cv) const {
    const Level& l = arch.levels()[static_cast<size_t>(spatial_levels[j])];
    std::uint64_t prod = 0;
    if (__builtin_mul_overflow(t.get(s, t.prod_field[j]), static_cast<std::uint64_t>(cv), &prod) ||
        prod > static_cast<std::uint64_t>(l.fanout()))
      return std::nullopt;
    const std::uint64_t par = t.get(s, t.cpar_field[j]) + 1;
    if (par > static_cast<std::uint64_t>(t.max_parallel[j])) return std::nullopt;
    s = t.put(t.put(s, t.prod_field[j], prod), t.cpar_field[j], par);
    return place(t, s, j, cv, l);
  }

  /// Loop orders (and the utilisation bound) of a complete choice of chains.
  BigInt final_factor(Table& t, std::uint64_t s) const {
    if (t.rules.utilization && options.min_utilization > 0) {
      double used = 1;
      for (const auto& f : t.prod_field) used *= static_cast<double>(t.get(s, f));
      if (used < options.min_utilization * static_cast<double>(arch.num_pes()) - 1e-9) return 0;
    }
    BigInt orders = 1;
    for (size_t k = 0; k < order_levels.size(); ++k) {
      const std::uint64_t v = t.get(s, t.data_field[k]);
      if (!t.masked[k]) {
        orders *= factorial(static_cast<int>(v));
        continue;
      }
      orders *= allowed_orders(t, k, static_cast<std::uint32_t>(v)).size();
    }
    return orders;
  }

  const std::vector<std::vector<DimId>>& allowed_orders(Table& t, size_t k,
                                                        std::uint32_t mask) const {
    auto it = t.allowed[k].find(mask);
    if (it != t.allowed[k].end()) return it->second;
    std::vector<std::vector<DimId>> list;
    std::vector<DimId> perm = dims_of(mask);
    const LevelRule& r = order_rules[k];
    do {
      if (order_allowed(r, op, perm)) list.push_back(perm);
    } while (std::next_permutation(perm.begin(), perm.end()));
    return t.allowed[k].emplace(mask, std::move(list)).first->second;
  }

  std::uint64_t init_state(const Table& t) const {
    std::uint64_t s = 0;
    for (const auto& f : t.prod_field) s = t.put(s, f, 1);
    return s;
  }

  // --- mappings -----------------------------------------------------------

  /// Writes tiles and splits of the chosen chains into `m` (sized already).
  void set_chains(Mapping& m, const std::vector<std::uint32_t>& pos) const {
    for (int i = 0; i + 1 < L; ++i) {
      const bool spatial = arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial;
      auto& lm = m.level(i);
      auto& target = spatial ? lm.split : lm.tile;
      for (DimId d = 0; d < n; ++d)
        target[static_cast<size_t>(d)] = value(d, pos[static_cast<size_t>(d)], i);
      if (spatial) set_cluster(m, pos, i);
    }
  }

  /// The cluster level of spatial level i: none when the level has no
  /// cluster level here, or when the chosen one is trivial (one unit per
  /// cluster, T^out one step: the same mapping as no cluster level, so it
  /// is emitted, and counted, once).
  void set_cluster(Mapping& m, const std::vector<std::uint32_t>& pos, int i) const {
    ClusterMapping& cm = m.level(i).cluster;
    const size_t j = static_cast<size_t>(slot[static_cast<size_t>(i)]);
    cm = ClusterMapping{};
    if (cluster_slot[j] < 0) return;
    const std::vector<std::int64_t> below =
        i > 0 ? m.span(op, arch, i - 1) : std::vector<std::int64_t>(static_cast<size_t>(n), 1);
    bool trivial = true;
    for (DimId d = 0; d < n; ++d) {
      const auto du = static_cast<size_t>(d);
      cm.split.push_back(csplit(d, pos[du], j));
      cm.tile.push_back(ctile(d, pos[du], j));
      trivial = trivial && cm.split.back() == 1 && cm.tile.back() == below[du];
    }
    if (trivial) {
      cm = ClusterMapping{};
      return;
    }
    cm.order.resize(static_cast<size_t>(n));
    for (DimId d = 0; d < n; ++d) cm.order[static_cast<size_t>(d)] = d;
  }

  /// Loop order of data slot k: one-trip loops first in operator order,
  /// then the free loops in the given order.
  void set_order(Mapping& m, size_t k, std::uint32_t free_mask,
                 const std::vector<DimId>& perm) const {
    const int level = order_levels[k];
    const bool cluster = k >= data_levels.size();
    if (cluster && !m.level(level).cluster.active()) return;  // trivial: no loops
    auto& order = cluster ? m.level(level).cluster.order : m.level(level).order;
    order.clear();
    for (DimId d = 0; d < n; ++d)
      if (!(free_mask >> d & 1u)) order.push_back(d);
    order.insert(order.end(), perm.begin(), perm.end());
  }

  /// Free set of data slot k for the chosen chains.
  std::uint32_t free_mask(const std::vector<std::uint32_t>& pos, size_t k) const {
    std::uint32_t mask = 0;
    for (DimId d = 0; d < n; ++d)
      if (chains[static_cast<size_t>(d)].free[pos[static_cast<size_t>(d)]] >> k & 1u)
        mask |= 1u << d;
    return mask;
  }

  // --- capacity -----------------------------------------------------------

  /// First buffer that overflows with the given spans per level (dimensions
  /// not chosen yet at span 1, the smallest), as its level index, or -1.
  /// Same arithmetic as required_bytes (analysis.hpp), without allocation:
  /// the hot loop of capacity counting and enumeration.
  int overflow(const std::vector<std::vector<std::int64_t>>& spans, std::size_t combo) const {
    if (!options.check_capacity) return -1;
    // Per partition of the level being checked (few: a handful at most).
    boost::container::small_vector<double, 4> part;
    for (int i = 0; i + 1 < L; ++i) {
      const double capacity = capacity_words[static_cast<size_t>(i)];
      if (capacity <= 0) continue;
      const auto& span = spans[static_cast<size_t>(i)];
      const auto& index = partition_index[static_cast<size_t>(i)];
      part.assign(partition_words[static_cast<size_t>(i)].size(), 0.0);
      double words = 0;
      for (size_t t = 0; t < subscripts.size(); ++t) {
        if (!kept(combo, i, t)) continue;
        double size = 1;
        for (const auto& terms : subscripts[t]) {
          std::int64_t extent = 1;
          for (const auto& [d, coeff] : terms) extent += coeff * (span[static_cast<size_t>(d)] - 1);
          size *= static_cast<double>(extent);
        }
        size *= tensor_width[t];
        words += size;
        if (index[t] >= 0) part[static_cast<size_t>(index[t])] += size;
      }
      if (words > capacity) return i;
      for (size_t p = 0; p < part.size(); ++p)
        if (part[p] > partition_words[static_cast<size_t>(i)][p]) return i;
    }
    return -1;
  }
};

// --- the depth-first walker shared by enumeration and counting -------------

namespace {

std::uint64_t saturate(const BigInt& v) {
  if (v > std::numeric_limits<std::uint64_t>::max())
    return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(v);
}

/// Walks the chain choices that can complete to a valid mapping, in index
/// order, cutting subtrees that cannot (count table) or that overflow a
/// buffer (capacity lower bound). Resumable: `next_leaf` returns each
/// complete choice in turn.
class Walker {
 public:
  Walker(const Mapspace::Impl& impl, Mapspace::Impl::Table& table,
         std::vector<std::uint32_t> prefix, int stop_depth, std::size_t keep_combo = 0)
      : impl_(impl),
        t_(table),
        combo_(keep_combo),
        stop_(stop_depth),
        fixed_(static_cast<int>(prefix.size())) {
    const auto n = static_cast<size_t>(impl.n);
    pos_.assign(n, 0);
    state_.assign(n + 1, 0);
    spans_.assign(static_cast<size_t>(impl.L), std::vector<std::int64_t>(n, 1));
    state_[0] = impl.init_state(table);
    for (size_t d = 0; d < prefix.size(); ++d) {
      pos_[d] = prefix[d];
      auto next = choose(static_cast<int>(d));
      if (!next) {
        dead_ = true;
        return;
      }
    }
    depth_ = fixed_;
  }

  /// Advances to the next complete choice (dimensions up to stop_depth);
  /// false when done.
  bool next_leaf() {
    if (dead_) return false;
    if (started_) {
      if (depth_ == fixed_) return false;  // only the prefix itself was a leaf
      --depth_;
      ++pos_[static_cast<size_t>(depth_)];
    }
    started_ = true;
    for (;;) {
      if (depth_ == stop_) {
        return true;
      }
      const auto du = static_cast<size_t>(depth_);
      const auto& ch = impl_.chains[du];
      if (pos_[du] >= ch.count) {
        if (depth_ == fixed_) {
          dead_ = true;
          return false;
        }
        pos_[du] = 0;
        reset_spans(depth_);
        --depth_;
        ++pos_[static_cast<size_t>(depth_)];
        continue;
      }
      if (choose(depth_)) {
        ++depth_;
        if (depth_ < impl_.n) pos_[static_cast<size_t>(depth_)] = 0;
      } else {
        ++pos_[du];
      }
    }
  }

  const std::vector<std::uint32_t>& pos() const { return pos_; }
  std::uint64_t state() const { return state_[static_cast<size_t>(depth_)]; }
  /// Mappings in subtrees cut by capacity so far.
  const BigInt& rejected() const { return rejected_; }
  void clear_rejected() { rejected_ = 0; }

 private:
  /// Tries pos_[d] at depth d; on success sets state_[d + 1] and spans.
  bool choose(int d) {
    const auto du = static_cast<size_t>(d);
    const std::size_t c = pos_[du];
    if (c >= impl_.chains[du].count) return false;
    if (!impl_.chain_allowed(t_, d, c)) return false;
    const auto next = impl_.step(t_, state_[du], d, c);
    if (!next) return false;
    const auto it = t_.W[du + 1].find(*next);
    if (it == t_.W[du + 1].end() || it->second == 0) return false;
    for (int i = 0; i < impl_.L; ++i) spans_[static_cast<size_t>(i)][du] = impl_.span(d, c, i);
    if (impl_.overflow(spans_, combo_) >= 0) {
      rejected_ += it->second;
      reset_spans(d);
      return false;
    }
    state_[du + 1] = *next;
    return true;
  }

  void reset_spans(int d) {
    for (auto& s : spans_) s[static_cast<size_t>(d)] = 1;
  }

  const Mapspace::Impl& impl_;
  Mapspace::Impl::Table& t_;
  std::size_t combo_;  ///< the keep/bypass combination capacity is checked under
  int stop_;
  int fixed_;
  int depth_ = 0;
  bool started_ = false;
  bool dead_ = false;
  std::vector<std::uint32_t> pos_;
  std::vector<std::uint64_t> state_;
  std::vector<std::vector<std::int64_t>> spans_;
  BigInt rejected_ = 0;
};

}  // namespace

// --- Mapspace ----------------------------------------------------------------

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t max = std::mt19937_64::max();
  const std::uint64_t limit = max - (max % n + 1) % n;  // accept [0, limit]
  std::uint64_t x = rng();
  while (x > limit) x = rng();
  return x % n;
}

BigInt uniform_below(std::mt19937_64& rng, const BigInt& n) {
  if (n <= std::numeric_limits<std::uint64_t>::max())
    return uniform_below(rng, static_cast<std::uint64_t>(n));
  // Draw as many 64-bit words as n needs and reject draws beyond the
  // largest multiple of n.
  const std::size_t bits = msb(n) + 1;
  const std::size_t words = (bits + 63) / 64;
  BigInt range = BigInt(1) << (words * 64);
  const BigInt limit = range - range % n;
  for (;;) {
    BigInt x = 0;
    for (std::size_t w = 0; w < words; ++w) x = (x << 64) | BigInt(rng());
    if (x < limit) return x % n;
  }
}

std::string format_count(const BigInt& n) {
  std::ostringstream out;
  out << n;
  const std::string digits = out.str();
  if (digits.size() <= 4) return digits;
  std::ostringstream sci;
  sci << std::setprecision(2) << std::scientific << n.convert_to<double>();
  return digits + " (" + sci.str() + ")";
}

Mapspace::Mapspace(const Operator& op, const Architecture& arch, MapspaceOptions options)
    : op_(&op), arch_(&arch), options_(std::move(options)) {
  if (!options_.levels.empty() && static_cast<int>(options_.levels.size()) != arch.num_levels())
    throw InputError(SourceLocation{}, "mapspace",
                     "level rules for " + std::to_string(options_.levels.size()) +
                         " levels, the architecture has " + std::to_string(arch.num_levels()));
  if (op.num_dims() > 24)
    throw InputError(SourceLocation{}, "dims",
                     "operator '" + op.name() + "' has more than 24 dimensions");
  // Marvel's level 3: the buffer right below DRAM (on chips with a node
  // array in between the split is off-chip too, and there is none).
  const int below_dram = arch.num_levels() - 2;
  if (below_dram >= 0 && arch.levels()[static_cast<size_t>(below_dram)].kind == LevelKind::kBuffer)
    outer_buffer_ = below_dram;
  impl_ = std::make_unique<Impl>(op, arch, options_);
}

Mapspace::~Mapspace() = default;

const BigInt& Mapspace::size() const {
  impl_->counted();
  return impl_->total_all;
}

std::size_t Mapspace::num_chains(DimId d) const {
  return impl_->chains[static_cast<size_t>(d)].count;
}

BigInt Mapspace::count_valid() const {
  if (!options_.check_capacity) return size();
  // Count leaves per final state, then weigh each state by its orders once.
  // Each keep/bypass combination has its own capacity.
  std::unordered_map<std::uint64_t, std::uint64_t> leaves;
  for (std::size_t c = 0; c < impl_->keep_combos.size(); ++c) {
    Walker w(*impl_, impl_->counted(), {}, op_->num_dims(), c);
    while (w.next_leaf()) ++leaves[w.state()];
  }
  BigInt total = 0;
  const auto& final_counts = impl_->counted().W[static_cast<size_t>(op_->num_dims())];
  for (const auto& [state, count] : leaves) total += final_counts.at(state) * count;
  return total;
}

std::vector<CountStep> Mapspace::count_steps(bool with_capacity) const {
  std::vector<CountStep> out;
  Rules r{false, false, false, false, false, false};
  const std::string tiles =
      options_.factors_only ? "tiles dividing the bounds" : "tiles with edge tiles";
  // Spatial levels whose cluster level a constraint turned on: their
  // cluster splits, tiles and orders are in every step.
  std::string clusters;
  for (size_t j = 0; j < impl_->spatial_levels.size(); ++j)
    if (impl_->cluster_slot[j] >= 0)
      clusters += (clusters.empty() ? ", cluster levels on " : ", ") +
                  arch_->levels()[static_cast<size_t>(impl_->spatial_levels[j])].name;
  out.push_back({tiles + ", splits within fan-outs, all loop orders" + clusters,
                 impl_->make_table(r)->total});
  r.parallel = true;
  const bool any_parallel_rule =
      std::any_of(options_.levels.begin(), options_.levels.end(),
                  [](const LevelRule& l) { return l.parallel_mask != ~std::uint64_t{0}; });
  out.push_back({std::string("parallel dimensions per spatial level") +
                     (options_.max_parallel_dims > 0
                          ? " (at most " + std::to_string(options_.max_parallel_dims) + ")"
                          : " (at most the array's rank)") +
                     (any_parallel_rule ? ", allowed dimensions" : ""),
                 impl_->make_table(r)->total});
  r.placement = true;
  const bool any_placement =
      std::any_of(arch_->levels().begin(), arch_->levels().end(), [](const Level& l) {
        return l.kind == LevelKind::kSpatial && Impl::placement_slots(l, 1) > 0;
      });
  if (any_placement)
    out.push_back({"splits placed on the array's axes", impl_->make_table(r)->total});
  const bool any_fixed =
      std::any_of(options_.levels.begin(), options_.levels.end(), [](const LevelRule& l) {
        return std::any_of(l.fixed.begin(), l.fixed.end(), [](std::int64_t v) { return v != 0; });
      });
  if (any_fixed) {
    r.fixed = true;
    out.push_back({"fixed tiles and splits", impl_->make_table(r)->total});
  }
  r.fixed = true;
  const bool any_limit = std::any_of(options_.levels.begin(), options_.levels.end(),
                                     [](const LevelRule& l) { return l.has_factor_limits(); });
  if (any_limit) {
    r.limits = true;
    out.push_back({"factor limits (max_factor, min_factor)", impl_->make_table(r)->total});
  }
  r.limits = true;
  const bool any_order = std::any_of(options_.levels.begin(), options_.levels.end(),
                                     [](const LevelRule& l) { return l.order_constrained(); });
  if (any_order) {
    r.orders = true;
    out.push_back({"loop-order rules", impl_->make_table(r)->total});
  }
  r.orders = true;
  if (options_.min_utilization > 0) {
    std::ostringstream rule;
    rule << "PE utilisation >= " << options_.min_utilization;
    out.push_back({rule.str(), impl_->counted().total});
  }
  if (impl_->keep_combos.size() > 1)
    out.push_back(
        {"keep/bypass choices (" + std::to_string(impl_->keep_combos.size()) + " per tiling)",
         size()});
  if (with_capacity && options_.check_capacity)
    out.push_back({"buffer capacity (double-buffered where set)", count_valid()});
  return out;
}

std::optional<std::string> Mapspace::empty_reason() const {
  if (size() != 0) {
    if (!options_.check_capacity) return std::nullopt;
    Cursor cursor(*this);
    Mapping first;
    if (cursor.next(first)) return std::nullopt;
  }
  const auto steps = count_steps(size() != 0);
  std::string before = "the space of " + op_->name() + " on " + arch_->name();
  for (const auto& step : steps) {
    if (step.size == 0)
      return "the mapspace is empty after constraints: no mapping is left once '" + step.rule +
             "' is applied (" + before + ")";
    before = format_count(step.size) + " mappings before it";
  }
  return "the mapspace is empty after constraints";  // not reached: the last step is 0
}

std::optional<std::string> Mapspace::cluster_reject_reason(const Mapping& mapping, int i,
                                                           const LevelRule* r,
                                                           int max_parallel) const {
  const Operator& op = *op_;
  const Level& l = arch_->levels()[static_cast<size_t>(i)];
  const ClusterMapping& c = mapping.level(i).cluster;
  if (!c.active()) return std::nullopt;  // the trivial cluster, always in the space
  if (!r || !r->cluster.enabled)
    return "cluster: " + l.name + " has no cluster level in this space (a constraint turns it on)";
  const ClusterRule& cr = r->cluster;
  const auto below = i > 0 ? mapping.span(op, *arch_, i - 1)
                           : std::vector<std::int64_t>(static_cast<size_t>(op.num_dims()), 1);
  int parallel = 0;
  std::vector<DimId> perm;
  for (DimId d = 0; d < op.num_dims(); ++d) {
    const auto du = static_cast<size_t>(d);
    const std::string& name = op.dims()[du].name;
    const std::int64_t bound = op.dims()[du].bound;
    if (c.split[du] > 1) ++parallel;
    if (c.split[du] > 1 && !(cr.parallel_mask >> d & 1u))
      return "parallel_dims: the cluster of " + l.name + " may not split " + name;
    if (!cr.fixed_split.empty() && cr.fixed_split[du] != 0 && cr.fixed_split[du] != c.split[du])
      return "fixed: the cluster of " + l.name + " must split " + name + " by " +
             std::to_string(cr.fixed_split[du]);
    if (!cr.fixed_tile.empty() && cr.fixed_tile[du] != 0 && cr.fixed_tile[du] != c.tile[du])
      return "fixed: the cluster of " + l.name + " must have tile " +
             std::to_string(cr.fixed_tile[du]) + " along " + name;
    const std::int64_t step = mul_capped(below[du], c.split[du], bound);
    if (options_.factors_only && (!divides_bound(below[du], c.split[du], bound) ||
                                  c.tile[du] % step != 0 || bound % c.tile[du] != 0))
      return "tiles: the cluster tile " + std::to_string(c.tile[du]) + " of " + name + " on " +
             l.name + " does not divide evenly (factors-only space)";
    if ((c.tile[du] + step - 1) / step > 1) perm.push_back(d);
  }
  if (parallel > max_parallel)
    return "parallel_dims: the cluster of " + l.name + " splits " + std::to_string(parallel) +
           " dimensions, at most " + std::to_string(max_parallel) + " allowed";
  // The cluster's loops in its order.
  std::vector<DimId> ordered;
  for (DimId d : c.order)
    if (std::find(perm.begin(), perm.end(), d) != perm.end()) ordered.push_back(d);
  LevelRule orders;
  orders.orders = cr.orders;
  if (!order_allowed(orders, op, ordered))
    return "order: the cluster order of " + l.name + " is not allowed";
  return std::nullopt;
}

bool Mapspace::has_limits_or_pins() const {
  return std::any_of(options_.levels.begin(), options_.levels.end(), [](const LevelRule& r) {
    return r.has_factor_limits() || !r.innermost.empty();
  });
}

std::optional<std::string> Mapspace::limit_reject_reason(const Mapping& mapping) const {
  if (!has_limits_or_pins()) return std::nullopt;
  const Operator& op = *op_;
  const Architecture& arch = *arch_;
  const int n = op.num_dims();
  std::vector<std::int64_t> below(static_cast<size_t>(n), 1);
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    const LevelRule& r = options_.levels[static_cast<size_t>(i)];
    const LevelMapping& lm = mapping.level(i);
    const bool dram = l.kind == LevelKind::kDram;
    std::vector<std::int64_t> span = l.kind == LevelKind::kSpatial ? spatial_span(op, lm, below)
                                     : dram                        ? dram_span(op)
                                                                   : lm.tile;
    std::vector<DimId> loops;  // this level's loops of more than one trip, in its order
    for (DimId d = 0; d < n; ++d) {
      const auto du = static_cast<size_t>(d);
      const std::int64_t factor =
          l.kind == LevelKind::kSpatial ? lm.split[du] : (span[du] + below[du] - 1) / below[du];
      if (!Impl::within_limits(&r, d, factor))
        return "limit: " + l.name + " " +
               (l.kind == LevelKind::kSpatial ? "splits " : "loops over ") + op.dims()[du].name +
               " " + std::to_string(factor) + " times, outside its factor bounds";
    }
    if (!r.innermost.empty()) {
      for (DimId d : lm.order) {
        const auto du = static_cast<size_t>(d);
        if ((span[du] + below[du] - 1) / below[du] > 1) loops.push_back(d);
      }
      LevelRule pins;
      pins.innermost = r.innermost;
      if (!order_allowed(pins, op, loops))
        return "order: " + l.name + " loop order does not end with its pinned innermost loops";
    }
    below = std::move(span);
  }
  return std::nullopt;
}

std::optional<std::string> Mapspace::reject_reason(const Mapping& mapping) const {
  const Operator& op = *op_;
  const Architecture& arch = *arch_;
  if (auto error = mapping.structural_error(op, arch)) return "structure: " + *error;
  if (auto why = limit_reject_reason(mapping)) return why;
  const int n = op.num_dims();
  const int L = arch.num_levels();
  double used = 1;
  for (int i = 0; i < L; ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    const LevelMapping& lm = mapping.level(i);
    const LevelRule* r =
        options_.levels.empty() ? nullptr : &options_.levels[static_cast<size_t>(i)];
    if (l.kind == LevelKind::kSpatial) {
      int parallel = 0;
      std::int64_t product = 1;
      for (DimId d = 0; d < n; ++d) {
        const std::int64_t s = lm.split[static_cast<size_t>(d)];
        product = mul_saturating(product, s);
        if (s > 1) ++parallel;
        if (r && s > 1 && !(r->parallel_mask >> d & 1u))
          return "parallel_dims: " + l.name + " may not split " +
                 op.dims()[static_cast<size_t>(d)].name;
        if (r && !r->fixed.empty() && r->fixed[static_cast<size_t>(d)] != 0 &&
            r->fixed[static_cast<size_t>(d)] != s)
          return "fixed: " + l.name + " must split " + op.dims()[static_cast<size_t>(d)].name +
                 " by " + std::to_string(r->fixed[static_cast<size_t>(d)]);
      }
      used *= static_cast<double>(units_used(lm));
      const int max_parallel = options_.max_parallel_dims > 0 ? options_.max_parallel_dims
                                                              : static_cast<int>(l.shape.size());
      if (parallel > max_parallel)
        return "parallel_dims: " + l.name + " splits " + std::to_string(parallel) +
               " dimensions, at most " + std::to_string(max_parallel) + " allowed";
      if (auto why = cluster_reject_reason(mapping, i, r, max_parallel)) return why;
      continue;
    }
    if (i + 1 < L && r && !r->fixed.empty())
      for (DimId d = 0; d < n; ++d)
        if (r->fixed[static_cast<size_t>(d)] != 0 &&
            r->fixed[static_cast<size_t>(d)] != lm.tile[static_cast<size_t>(d)])
          return "fixed: " + l.name + " must hold tiles of " +
                 std::to_string(r->fixed[static_cast<size_t>(d)]) + " along " +
                 op.dims()[static_cast<size_t>(d)].name;
    if (options_.factors_only && i + 1 < L) {
      const auto span = mapping.span(op, arch, i);
      const auto below = i > 0 ? mapping.span(op, arch, i - 1)
                               : std::vector<std::int64_t>(static_cast<size_t>(n), 1);
      for (DimId d = 0; d < n; ++d) {
        const std::int64_t b = op.dims()[static_cast<size_t>(d)].bound;
        const auto du = static_cast<size_t>(d);
        if (b % span[du] != 0 || span[du] % below[du] != 0)
          return "tiles: " + l.name + " tile " + std::to_string(span[du]) + " of " +
                 op.dims()[du].name + " does not divide evenly (factors-only space)";
      }
    }
    if (r && r->order_constrained()) {
      // The free loops of this level, in the mapping's order.
      const auto span = mapping.span(op, arch, i);
      const auto below = i > 0 ? mapping.span(op, arch, i - 1)
                               : std::vector<std::int64_t>(static_cast<size_t>(n), 1);
      std::vector<DimId> perm;
      for (DimId d : lm.order) {
        const auto du = static_cast<size_t>(d);
        if ((span[du] + below[du] - 1) / below[du] > 1) perm.push_back(d);
      }
      if (!order_allowed(*r, op, perm)) return "order: " + l.name + " loop order is not allowed";
    }
  }
  if (options_.min_utilization > 0 &&
      used < options_.min_utilization * static_cast<double>(arch.num_pes()) - 1e-9) {
    std::ostringstream out;
    out << "utilization: splits use " << used << " of " << arch.num_pes() << " PEs, below "
        << options_.min_utilization;
    return out.str();
  }
  if (!impl_->combo_of(mapping))
    return "keep: the levels' keep/bypass is not one the constraints allow";
  if (options_.check_capacity)
    if (auto error = capacity_error(op, arch, mapping)) return "capacity: " + *error;
  return std::nullopt;
}

std::vector<Mapspace::Chunk> Mapspace::chunks(std::size_t min_chunks) const {
  return chunks(min_chunks, std::numeric_limits<std::size_t>::max());
}

std::vector<Mapspace::Chunk> Mapspace::chunks(std::size_t min_chunks,
                                              std::size_t max_chunks) const {
  // Subtrees of the chain choices, split until each holds at most a
  // fraction of the space (by the count table, before capacity), so that
  // the chunks are of comparable size however lopsided the space is.
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  std::vector<Chunk> out;
  if (t.total == 0) return out;
  const BigInt target = std::max<BigInt>(1, t.total / (4 * std::max<std::size_t>(min_chunks, 1)));
  const int n = impl.n;
  std::vector<std::uint32_t> prefix;
  std::vector<std::vector<std::int64_t>> spans(
      static_cast<size_t>(impl.L), std::vector<std::int64_t>(static_cast<size_t>(n), 1));
  std::size_t combo = 0;
  std::function<void(int, std::uint64_t)> split = [&](int d, std::uint64_t state) {
    const auto du = static_cast<size_t>(d);
    for (std::size_t c = 0; c < impl.chains[du].count && out.size() < max_chunks; ++c) {
      if (!impl.chain_allowed(t, d, c)) continue;
      const auto next = impl.step(t, state, d, c);
      if (!next) continue;
      const auto it = t.W[du + 1].find(*next);
      if (it == t.W[du + 1].end() || it->second == 0) continue;
      for (int i = 0; i < impl.L; ++i) spans[static_cast<size_t>(i)][du] = impl.span(d, c, i);
      if (impl.overflow(spans, combo) < 0) {
        prefix.push_back(static_cast<std::uint32_t>(c));
        if (it->second <= target || d + 1 == n)
          out.push_back(Chunk{prefix, static_cast<int>(combo)});
        else
          split(d + 1, *next);
        prefix.pop_back();
      }
    }
    for (auto& s : spans) s[du] = 1;
  };
  // One set of chunks per keep/bypass combination (capacity differs).
  for (combo = 0; combo < impl.keep_combos.size() && out.size() < max_chunks; ++combo)
    split(0, impl.init_state(t));
  return out;
}

// --- Cursor -------------------------------------------------------------------

struct Mapspace::Cursor::State {
  const Mapspace* space;
  std::vector<std::uint32_t> prefix;
  /// The keep/bypass combination being walked, and the last one to walk.
  std::size_t combo = 0;
  std::size_t last_combo = 0;
  std::optional<Walker> walker;
  bool have_leaf = false;
  bool done = false;
  /// Per data slot: free set, and the current order (index into the allowed
  /// list for rule-bound slots, a permutation otherwise).
  std::vector<std::uint32_t> masks;
  std::vector<std::size_t> order_index;
  std::vector<std::vector<DimId>> perms;

  /// The count table (looked up once: counted() is a call_once per call).
  Impl::Table* table;

  State(const Mapspace& s, const Chunk& chunk)
      : space(&s), prefix(chunk.prefix), table(&s.impl_->counted()) {
    const std::size_t combos = s.impl_->keep_combos.size();
    combo = chunk.keep_combo < 0 ? 0 : static_cast<std::size_t>(chunk.keep_combo);
    last_combo = chunk.keep_combo < 0 ? combos - 1 : combo;
    start_walker();
  }
  void start_walker() {
    walker.emplace(*space->impl_, *table, prefix, space->op().num_dims(), combo);
  }

  /// The change-reporting next has written a whole mapping, under keep
  /// combination `written_combo`.
  bool kept_written = false;
  std::size_t written_combo = 0;

  struct Step {
    bool done = false;
    bool new_leaf = false;  ///< a new chain choice: every part moved
    size_t first_slot = 0;  ///< else: the slot whose order advanced
  };

  /// Moves to the next mapping: the orders of the current leaf, the last
  /// slot fastest, then the next leaf. Counts capacity rejections into
  /// `rejected`.
  Step advance(std::uint64_t& rejected) {
    Step step;
    if (done) {
      step.done = true;
      return step;
    }
    const Impl& impl = *space->impl_;
    Impl::Table& t = *table;
    const size_t slots = impl.order_levels.size();
    if (have_leaf) {
      for (size_t k = slots; k-- > 0;) {
        bool advanced = false;
        if (t.masked[k]) {
          const auto& list = impl.allowed_orders(t, k, masks[k]);
          if (++order_index[k] < list.size())
            advanced = true;
          else
            order_index[k] = 0;
        } else if (std::next_permutation(perms[k].begin(), perms[k].end())) {
          advanced = true;
        }
        if (advanced) {
          step.first_slot = k;
          return step;
        }
      }
    }
    bool leaf = false;
    for (;;) {
      const BigInt before = walker->rejected();
      leaf = walker->next_leaf();
      const std::uint64_t add = saturate(walker->rejected() - before);
      rejected = add > std::numeric_limits<std::uint64_t>::max() - rejected
                     ? std::numeric_limits<std::uint64_t>::max()
                     : rejected + add;
      if (leaf || combo >= last_combo) break;
      ++combo;  // the next keep/bypass combination
      start_walker();
    }
    if (!leaf) {
      done = true;
      step.done = true;
      return step;
    }
    have_leaf = true;
    masks.assign(slots, 0);
    order_index.assign(slots, 0);
    perms.assign(slots, {});
    for (size_t k = 0; k < slots; ++k) {
      masks[k] = impl.free_mask(walker->pos(), k);
      if (!t.masked[k]) perms[k] = dims_of(masks[k]);
    }
    step.new_leaf = true;
    return step;
  }

  /// Writes the current order of slot k into `out`.
  void write_order(Mapping& out, size_t k) const {
    const Impl& impl = *space->impl_;
    Impl::Table& t = *table;
    if (t.masked[k])
      impl.set_order(out, k, masks[k], impl.allowed_orders(t, k, masks[k])[order_index[k]]);
    else
      impl.set_order(out, k, masks[k], perms[k]);
  }

  /// Writes the whole current mapping into `out`.
  void write_all(Mapping& out) const {
    const Impl& impl = *space->impl_;
    if (out.levels().size() != static_cast<size_t>(impl.L))
      out = Mapping::trivial(impl.op, impl.arch);
    impl.set_chains(out, walker->pos());
    impl.set_keep(out, combo);
    for (size_t k = 0; k < impl.order_levels.size(); ++k) write_order(out, k);
  }
};

Mapspace::Cursor::Cursor(const Mapspace& space) : Cursor(space, Chunk{}) {}

Mapspace::Cursor::Cursor(const Mapspace& space, const Chunk& chunk)
    : s_(std::make_unique<State>(space, chunk)) {}

Mapspace::Cursor::Cursor(Cursor&&) noexcept = default;
Mapspace::Cursor& Mapspace::Cursor::operator=(Cursor&&) noexcept = default;
Mapspace::Cursor::~Cursor() = default;

bool Mapspace::Cursor::next(Mapping& out) {
  State& st = *s_;
  const State::Step step = st.advance(rejected_);
  if (step.done) return false;
  // `out` may be a different object on every call (a batch being filled).
  st.write_all(out);
  ++visited_;
  return true;
}

bool Mapspace::Cursor::next(Mapping& out, MappingChange& change) {
  State& st = *s_;
  const State::Step step = st.advance(rejected_);
  if (step.done) return false;
  const Impl& impl = *st.space->impl_;
  if (step.new_leaf || !st.kept_written) {
    change = MappingChange{};
    change.keep = !st.kept_written || st.combo != st.written_combo;
    st.write_all(out);
    st.kept_written = true;
    st.written_combo = st.combo;
  } else {
    // Only the slots from the one that advanced onwards moved (the slots
    // after it started over); the chains and the keep choice did not.
    change.tiling = false;
    change.keep = false;
    change.lowest_order = impl.L;
    for (size_t k = step.first_slot; k < impl.order_levels.size(); ++k) {
      st.write_order(out, k);
      change.lowest_order = std::min(change.lowest_order, impl.order_levels[k]);
    }
  }
  ++visited_;
  return true;
}

// --- sampling -------------------------------------------------------------------

std::optional<Mapping> Mapspace::sample(std::mt19937_64& rng, int max_attempts) const {
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  if (t.total == 0) return std::nullopt;
  const int n = impl.n;
  std::vector<std::uint32_t> pos(static_cast<size_t>(n));
  std::vector<std::vector<std::int64_t>> spans(static_cast<size_t>(impl.L));
  const std::size_t combos = impl.keep_combos.size();
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    // Every combination has the same space before capacity, so a uniform
    // combination then a uniform rank is uniform over size(); a space
    // without keep/bypass choices draws exactly what it drew before.
    const std::size_t combo = combos > 1 ? static_cast<std::size_t>(uniform_below(rng, combos)) : 0;
    BigInt r = uniform_below(rng, t.total);
    std::uint64_t s = impl.init_state(t);
    for (auto& level : spans) level.assign(static_cast<size_t>(n), 1);
    bool overflows = false;
    for (DimId d = 0; d < n && !overflows; ++d) {
      const auto du = static_cast<size_t>(d);
      // Reject as soon as the chains drawn so far overflow a buffer with
      // the other dimensions at their smallest span (footprints grow with
      // every tile): the whole draw would be rejected at the end anyway,
      // and the attempt has already drawn all it will draw, so the samples
      // are the same, only found sooner. With edge tiles nearly every draw
      // overflows (issue 18: 98% on a 256^3 GEMM on flash_edge).
      const auto drawn = impl.draw_chain(t, d, s, r);
      if (!drawn) return std::nullopt;  // cannot happen: r < W[d][s]
      pos[du] = drawn->first;
      s = drawn->second;
      if (!options_.check_capacity) continue;
      for (int i = 0; i < impl.L; ++i)
        spans[static_cast<size_t>(i)][du] = impl.span(d, drawn->first, i);
      overflows = impl.overflow(spans, combo) >= 0;
    }
    if (overflows) continue;
    // Orders: unrank r within the product of per-slot order counts.
    Mapping m = Mapping::trivial(impl.op, impl.arch);
    impl.set_chains(m, pos);
    impl.set_keep(m, combo);
    for (size_t k = 0; k < impl.order_levels.size(); ++k) {
      const std::uint32_t mask = impl.free_mask(pos, k);
      if (t.masked[k]) {
        const auto& list = impl.allowed_orders(t, k, mask);
        const BigInt count = list.size();
        const auto index = static_cast<std::size_t>(r % count);
        r /= count;
        impl.set_order(m, k, mask, list[index]);
      } else {
        std::vector<DimId> pool = dims_of(mask);
        std::vector<DimId> perm;
        while (!pool.empty()) {
          const BigInt size = pool.size();
          const auto index = static_cast<std::size_t>(r % size);
          r /= size;
          perm.push_back(pool[index]);
          pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(index));
        }
        impl.set_order(m, k, mask, perm);
      }
    }
    if (options_.check_capacity && capacity_error(*op_, *arch_, m)) continue;
    return m;
  }
  return std::nullopt;
}

// --- Marvel's sub-spaces ---------------------------------------------------------

SubspaceCounts Mapspace::subspaces(const std::vector<std::int64_t>& outer_tile) const {
  const Impl& impl = *impl_;
  const int n = impl.n;
  SubspaceCounts out;
  out.layouts = 1;
  for (const auto& t : op_->tensors())
    out.layouts *= factorial(static_cast<int>(t.subscripts.size()));
  if (outer_buffer_ < 0) return out;
  const int ob = outer_buffer_;
  const size_t dram_slot = impl.data_levels.size() - 1;
  const LevelRule* dram_rule = impl.rule(impl.L - 1);

  // Distinct outer tiles per dimension among the allowed chains.
  std::vector<std::vector<std::int64_t>> tiles(static_cast<size_t>(n));
  for (DimId d = 0; d < n; ++d) {
    for (std::size_t c = 0; c < impl.chains[static_cast<size_t>(d)].count; ++c)
      if (impl.chain_allowed(impl.counted(), d, c))
        tiles[static_cast<size_t>(d)].push_back(impl.value(d, c, ob));
    auto& v = tiles[static_cast<size_t>(d)];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  auto dram_orders = [&](std::uint32_t mask) -> BigInt {
    if (dram_rule && dram_rule->order_constrained())
      return impl.allowed_orders(impl.counted(), dram_slot, mask).size();
    return factorial(std::popcount(mask));
  };
  // All outer tiles x DRAM orders: a dynamic programme over dimensions on
  // the set of loops left at DRAM (a tile below the bound leaves a loop).
  std::map<std::uint32_t, BigInt> sets{{0u, 1}};
  for (DimId d = 0; d < n; ++d) {
    const auto& v = tiles[static_cast<size_t>(d)];
    const std::int64_t bound = op_->dims()[static_cast<size_t>(d)].bound;
    const auto full = static_cast<std::uint64_t>(std::count(v.begin(), v.end(), bound));
    const std::uint64_t partial = v.size() - full;
    std::map<std::uint32_t, BigInt> next;
    for (const auto& [mask, count] : sets) {
      if (full) next[mask] += count * full;
      if (partial) next[mask | (1u << d)] += count * partial;
    }
    sets = std::move(next);
  }
  out.offchip = 0;
  for (const auto& [mask, count] : sets) out.offchip += count * dram_orders(mask);

  // Those that fit: depth-first over the tiles in ascending order, cut at
  // the first overflow (footprints grow with every tile).
  const Level& outer = arch_->levels()[static_cast<size_t>(ob)];
  std::vector<std::int64_t> span(static_cast<size_t>(n), 1);
  std::map<std::uint32_t, std::uint64_t> fitting;
  std::function<void(int, std::uint32_t)> walk = [&](int d, std::uint32_t mask) {
    if (d == n) {
      ++fitting[mask];
      return;
    }
    const auto du = static_cast<size_t>(d);
    for (std::int64_t t : tiles[du]) {
      span[du] = t;
      if (required_bytes(*op_, *arch_, ob, span) > static_cast<double>(outer.size_bytes)) break;
      walk(d + 1, t < op_->dims()[du].bound ? mask | (1u << d) : mask);
    }
    span[du] = 1;
  };
  walk(0, 0);
  out.offchip_fitting = 0;
  out.offchip_fitting_tiles = 0;
  for (const auto& [mask, count] : fitting) {
    out.offchip_fitting += dram_orders(mask) * count;
    out.offchip_fitting_tiles += count;
  }

  // On-chip: the space with the outer tile fixed, without the DRAM order.
  MapspaceOptions fixed = options_;
  if (fixed.levels.empty())
    fixed.levels.assign(static_cast<size_t>(arch_->num_levels()), LevelRule{});
  auto& rule = fixed.levels[static_cast<size_t>(ob)];
  rule.fixed = outer_tile;
  const Mapspace onchip(*op_, *arch_, fixed);
  std::uint32_t mask = 0;
  for (DimId d = 0; d < n; ++d)
    if (outer_tile[static_cast<size_t>(d)] < op_->dims()[static_cast<size_t>(d)].bound)
      mask |= 1u << d;
  const BigInt orders = dram_orders(mask);
  out.onchip = onchip.size() / orders;
  out.onchip_valid = onchip.count_valid() / orders;
  return out;
}

std::vector<std::int64_t> Mapspace::largest_outer_tile() const {
  const Impl& impl = *impl_;
  const int n = impl.n;
  if (outer_buffer_ < 0) return {};
  const int ob = outer_buffer_;
  std::vector<std::vector<std::int64_t>> tiles(static_cast<size_t>(n));
  for (DimId d = 0; d < n; ++d) {
    auto& v = tiles[static_cast<size_t>(d)];
    for (std::size_t c = 0; c < impl.chains[static_cast<size_t>(d)].count; ++c)
      if (impl.chain_allowed(impl.counted(), d, c)) v.push_back(impl.value(d, c, ob));
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.empty()) return {};
  }
  const double capacity = static_cast<double>(arch_->levels()[static_cast<size_t>(ob)].size_bytes);
  std::vector<std::int64_t> span(static_cast<size_t>(n), 1), best;
  double best_bytes = -1;
  // Depth-first over the distinct tiles, cutting where even the smallest
  // completion overflows (footprints grow with every tile).
  std::function<void(int)> walk = [&](int d) {
    const double bytes = required_bytes(*op_, *arch_, ob, span);
    if (bytes > capacity) return;
    if (d == n) {
      if (bytes > best_bytes) {
        best_bytes = bytes;
        best = span;
      }
      return;
    }
    for (std::int64_t t : tiles[static_cast<size_t>(d)]) {
      span[static_cast<size_t>(d)] = t;
      if (required_bytes(*op_, *arch_, ob, span) > capacity) break;  // sorted ascending
      walk(d + 1);
    }
    span[static_cast<size_t>(d)] = 1;
  };
  walk(0);
  return best;
}

// --- level-by-level enumeration ------------------------------------------------

bool Mapspace::supports_level_enumeration() const {
  for (int k : impl_->cluster_slot)
    if (k >= 0) return false;
  return true;
}

namespace {

/// The value a mapping holds at chain level `level` for dimension d: a
/// buffer's tile or a spatial level's split.
std::int64_t chain_value(const Architecture& arch, const Mapping& m, int level, DimId d) {
  const LevelMapping& lm = m.level(level);
  const bool spatial = arch.levels()[static_cast<size_t>(level)].kind == LevelKind::kSpatial;
  return (spatial ? lm.split : lm.tile)[static_cast<size_t>(d)];
}

}  // namespace

std::vector<std::int64_t> Mapspace::allowed_values(DimId d, int level,
                                                   const Mapping& partial) const {
  const Impl& impl = *impl_;
  const Impl::Table& t = impl.counted();
  std::vector<std::int64_t> out;
  const auto& ch = impl.chains[static_cast<size_t>(d)];
  for (std::size_t c = 0; c < ch.count; ++c) {
    if (!impl.chain_allowed(t, d, c)) continue;
    bool match = true;
    for (int i = level + 1; i + 1 < impl.L && match; ++i)
      match = impl.value(d, c, i) == chain_value(*arch_, partial, i, d);
    if (match) out.push_back(impl.value(d, c, level));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::int64_t> Mapspace::level_values(DimId d, int level) const {
  const Impl& impl = *impl_;
  const auto& ch = impl.chains[static_cast<size_t>(d)];
  std::vector<std::int64_t> out;
  // The main table's rules (all on): chain_allowed without the table.
  for (std::size_t c = 0; c < ch.count; ++c)
    if (ch.fixed_ok[c] && ch.parallel_ok[c] && ch.limit_ok[c])
      out.push_back(impl.value(d, c, level));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::vector<DimId>> Mapspace::level_orders(int level, std::uint32_t free_mask) const {
  const Impl& impl = *impl_;
  const LevelRule& rule =
      impl.order_rules[static_cast<size_t>(impl.slot[static_cast<size_t>(level)])];
  std::vector<DimId> fixed;
  for (DimId d = 0; d < impl.n; ++d)
    if (!(free_mask >> d & 1u)) fixed.push_back(d);
  std::vector<std::vector<DimId>> out;
  std::vector<DimId> perm = dims_of(free_mask);
  do {
    if (!order_allowed(rule, *op_, perm)) continue;
    auto& order = out.emplace_back(fixed);
    order.insert(order.end(), perm.begin(), perm.end());
  } while (std::next_permutation(perm.begin(), perm.end()));
  return out;
}

std::uint32_t Mapspace::free_loops(const Mapping& partial, int level) const {
  const std::vector<std::int64_t> child =
      level > 0 ? partial.span(*op_, *arch_, level - 1)
                : std::vector<std::int64_t>(static_cast<size_t>(impl_->n), 1);
  const auto& lm = partial.level(level);
  std::uint32_t mask = 0;
  for (DimId d = 0; d < impl_->n; ++d) {
    const auto du = static_cast<size_t>(d);
    const std::int64_t tile = level + 1 == impl_->L ? op_->dims()[du].bound : lm.tile[du];
    if (ceil_div(tile, child[du]) > 1) mask |= 1u << d;
  }
  return mask;
}

std::size_t Mapspace::keep_choices() const { return impl_->keep_combos.size(); }

void Mapspace::apply_keep_choice(Mapping& mapping, std::size_t k) const {
  impl_->set_keep(mapping, k);
}

namespace {

/// count_completions' and has_completion's first step: per order slot of
/// the count table, whether `order_fixed` fixes it. A fixed order counts
/// once when it is one of the level's distinct allowed orders (one-trip
/// loops first in dimension order), else never: nothing then.
std::optional<std::vector<char>> fixed_order_slots(const Mapspace& space,
                                                   const Mapspace::Impl& impl,
                                                   const Mapping& partial,
                                                   const std::vector<char>& order_fixed) {
  std::vector<char> fixed_slot(impl.order_levels.size(), 0);
  for (size_t k = 0; k < impl.data_levels.size(); ++k) {
    const int level = impl.data_levels[k];
    if (static_cast<size_t>(level) >= order_fixed.size() ||
        !order_fixed[static_cast<size_t>(level)])
      continue;
    const auto allowed = space.level_orders(level, space.free_loops(partial, level));
    if (std::find(allowed.begin(), allowed.end(), partial.level(level).order) == allowed.end())
      return std::nullopt;
    fixed_slot[k] = 1;
  }
  return fixed_slot;
}

/// The chains of dimension d that match `partial` at the levels from
/// `first_fixed` up, grouped by what the forward pass reads of them (the
/// free set and the splits): per group, its first chain and its size.
std::map<std::vector<std::int64_t>, std::pair<std::size_t, std::uint64_t>> matching_chain_groups(
    const Mapspace::Impl& impl, Mapspace::Impl::Table& t, const Architecture& arch,
    const Mapping& partial, int first_fixed, DimId d) {
  const auto& ch = impl.chains[static_cast<size_t>(d)];
  std::map<std::vector<std::int64_t>, std::pair<std::size_t, std::uint64_t>> groups;
  std::vector<std::int64_t> key;
  for (std::size_t c = 0; c < ch.count; ++c) {
    if (!impl.chain_allowed(t, d, c)) continue;
    bool match = true;
    for (int i = first_fixed; i + 1 < impl.L && match; ++i)
      match = impl.value(d, c, i) == chain_value(arch, partial, i, d);
    if (!match) continue;
    key.assign(1, ch.free[c]);
    for (size_t j = 0; j < impl.spatial_levels.size(); ++j) {
      key.push_back(impl.split(d, c, j));
      key.push_back(impl.csplit(d, c, j));
    }
    auto [it, inserted] = groups.emplace(key, std::make_pair(c, std::uint64_t{0}));
    ++it->second.second;
  }
  return groups;
}

/// Whether a final state of the forward pass meets the space's least
/// utilisation (always, without that rule).
bool utilization_met(const Mapspace::Impl::Table& t, std::uint64_t s,
                     const MapspaceOptions& options, const Architecture& arch) {
  if (!t.rules.utilization || options.min_utilization <= 0) return true;
  double used = 1;
  for (const auto& f : t.prod_field) used *= static_cast<double>(t.get(s, f));
  return used >= options.min_utilization * static_cast<double>(arch.num_pes()) - 1e-9;
}

}  // namespace

BigInt Mapspace::count_completions(const Mapping& partial, int first_fixed,
                                   const std::vector<char>& order_fixed) const {
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  if (!impl.combo_of(partial)) return 0;
  const size_t slots = impl.order_levels.size();
  const auto fixed_slot = fixed_order_slots(*this, impl, partial, order_fixed);
  if (!fixed_slot) return 0;
  // Forward over the dimensions, states weighted by their number of ways.
  std::map<std::uint64_t, BigInt> cur{{impl.init_state(t), BigInt{1}}};
  for (DimId d = 0; d < impl.n && !cur.empty(); ++d) {
    const auto groups = matching_chain_groups(impl, t, *arch_, partial, first_fixed, d);
    std::map<std::uint64_t, BigInt> next;
    for (const auto& [s, w] : cur)
      for (const auto& [k, g] : groups)
        if (auto ns = impl.step(t, s, d, g.first)) next[*ns] += w * g.second;
    cur = std::move(next);
  }
  std::map<std::pair<size_t, std::uint64_t>, BigInt> orders_of;  // masked slot, free set
  BigInt total = 0;
  for (const auto& [s, w] : cur) {
    if (!utilization_met(t, s, options_, *arch_)) continue;
    BigInt orders = 1;
    for (size_t k = 0; k < slots; ++k) {
      if ((*fixed_slot)[k]) continue;
      const std::uint64_t v = t.get(s, t.data_field[k]);
      if (!t.masked[k]) {
        orders *= factorial(static_cast<int>(v));
        continue;
      }
      auto [it, inserted] = orders_of.emplace(std::make_pair(k, v), BigInt{0});
      if (inserted)
        it->second = level_orders(impl.order_levels[k], static_cast<std::uint32_t>(v)).size();
      orders *= it->second;
    }
    total += w * orders;
  }
  return total;
}

bool Mapspace::has_completion(const Mapping& partial, int first_fixed,
                              const std::vector<char>& order_fixed) const {
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  if (!impl.combo_of(partial)) return false;
  const auto fixed_slot = fixed_order_slots(*this, impl, partial, order_fixed);
  if (!fixed_slot) return false;
  // count_completions' forward pass with sets of states for weights: one
  // chain per group is enough to reach a state.
  std::set<std::uint64_t> cur{impl.init_state(t)};
  for (DimId d = 0; d < impl.n && !cur.empty(); ++d) {
    const auto groups = matching_chain_groups(impl, t, *arch_, partial, first_fixed, d);
    std::set<std::uint64_t> next;
    for (const std::uint64_t s : cur)
      for (const auto& [k, g] : groups)
        if (auto ns = impl.step(t, s, d, g.first)) next.insert(*ns);
    cur = std::move(next);
  }
  for (const std::uint64_t s : cur) {
    if (!utilization_met(t, s, options_, *arch_)) continue;
    bool orders = true;
    for (size_t k = 0; k < impl.order_levels.size() && orders; ++k)
      if (!(*fixed_slot)[k] && t.masked[k])
        orders = !level_orders(impl.order_levels[k],
                               static_cast<std::uint32_t>(t.get(s, t.data_field[k])))
                      .empty();
    if (orders) return true;
  }
  return false;
}

// --- rank and unrank ------------------------------------------------------------

namespace {

/// (k-1)! ... 0!: the weights of a permutation's Lehmer code.
BigInt lehmer_weight(std::size_t remaining) { return factorial(static_cast<int>(remaining)); }

/// The index of `perm` among the permutations of its elements in
/// lexicographic order (std::next_permutation's order from ascending).
BigInt permutation_index(const std::vector<DimId>& perm) {
  BigInt index = 0;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    std::size_t smaller = 0;
    for (std::size_t j = i + 1; j < perm.size(); ++j) smaller += perm[j] < perm[i] ? 1 : 0;
    index += lehmer_weight(perm.size() - 1 - i) * smaller;
  }
  return index;
}

/// The permutation of `pool` (ascending) with lexicographic index `index`.
std::vector<DimId> permutation_at(std::vector<DimId> pool, BigInt index) {
  std::vector<DimId> perm;
  while (!pool.empty()) {
    const BigInt w = lehmer_weight(pool.size() - 1);
    const auto at = static_cast<std::size_t>(index / w);
    index %= w;
    perm.push_back(pool[at]);
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return perm;
}

}  // namespace

/// The chain of dimension d whose values (tiles, splits, cluster splits and
/// tiles) are the mapping's; nothing when none is. An inactive cluster level
/// is the chain whose cluster is one unit per cluster over one step.
std::optional<std::size_t> Mapspace::chain_index(const Mapping& m, DimId d) const {
  const Impl& impl = *impl_;
  const auto du = static_cast<size_t>(d);
  const auto& ch = impl.chains[du];
  for (std::size_t c = 0; c < ch.count; ++c) {
    bool match = true;
    for (int i = 0; i + 1 < impl.L && match; ++i) {
      match = impl.value(d, c, i) == chain_value(*arch_, m, i, d);
      const int j = impl.slot[static_cast<size_t>(i)];
      if (!match || impl.arch.levels()[static_cast<size_t>(i)].kind != LevelKind::kSpatial ||
          impl.cluster_slot[static_cast<size_t>(j)] < 0)
        continue;
      const ClusterMapping& cm = m.level(i).cluster;
      const auto ju = static_cast<size_t>(j);
      if (cm.active()) {
        match = du < cm.split.size() && du < cm.tile.size() &&
                impl.csplit(d, c, ju) == cm.split[du] && impl.ctile(d, c, ju) == cm.tile[du];
      } else {
        const std::int64_t below = i > 0 ? impl.span(d, c, i - 1) : 1;
        match = impl.csplit(d, c, ju) == 1 && impl.ctile(d, c, ju) == below;
      }
    }
    if (match) return c;
  }
  return std::nullopt;
}

std::optional<Mapping> Mapspace::unrank(const BigInt& rank_in) const {
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  if (rank_in < 0 || rank_in >= size()) return std::nullopt;
  const auto combo = static_cast<std::size_t>(rank_in / t.total);
  BigInt r = rank_in % t.total;
  std::vector<std::uint32_t> pos(static_cast<size_t>(impl.n));
  std::uint64_t s = impl.init_state(t);
  // Chains: the first chain whose running total of completions passes r.
  for (DimId d = 0; d < impl.n; ++d) {
    const auto drawn = impl.draw_chain(t, d, s, r);
    if (!drawn) return std::nullopt;  // cannot happen: r < W[d][s]
    pos[static_cast<size_t>(d)] = drawn->first;
    s = drawn->second;
  }
  // Orders: r is a mixed-radix number over the slots, the last slot fastest
  // (the Cursor advances the innermost slot first).
  const size_t slots = impl.order_levels.size();
  std::vector<std::uint32_t> masks(slots);
  std::vector<BigInt> digits(slots);
  for (size_t k = slots; k-- > 0;) {
    masks[k] = impl.free_mask(pos, k);
    const BigInt count = t.masked[k] ? BigInt(impl.allowed_orders(t, k, masks[k]).size())
                                     : factorial(std::popcount(masks[k]));
    digits[k] = r % count;
    r /= count;
  }
  Mapping m = Mapping::trivial(impl.op, impl.arch);
  impl.set_chains(m, pos);
  impl.set_keep(m, combo);
  for (size_t k = 0; k < slots; ++k) {
    if (t.masked[k])
      impl.set_order(m, k, masks[k],
                     impl.allowed_orders(t, k, masks[k])[static_cast<size_t>(digits[k])]);
    else
      impl.set_order(m, k, masks[k], permutation_at(dims_of(masks[k]), digits[k]));
  }
  return m;
}

std::optional<BigInt> Mapspace::rank(const Mapping& m) const {
  const Impl& impl = *impl_;
  Impl::Table& t = impl.counted();
  if (m.levels().size() != static_cast<size_t>(impl.L) || m.structural_error(*op_, *arch_))
    return std::nullopt;
  const auto combo = impl.combo_of(m);
  if (!combo) return std::nullopt;
  std::vector<std::uint32_t> pos(static_cast<size_t>(impl.n));
  for (DimId d = 0; d < impl.n; ++d) {
    const auto c = chain_index(m, d);
    if (!c) return std::nullopt;
    pos[static_cast<size_t>(d)] = static_cast<std::uint32_t>(*c);
  }
  // Chains: the completions of every earlier chain at each dimension.
  BigInt r = 0;
  std::uint64_t s = impl.init_state(t);
  for (DimId d = 0; d < impl.n; ++d) {
    const auto next = impl.rank_chain(t, d, s, pos[static_cast<size_t>(d)], r);
    if (!next) return std::nullopt;  // a rule is broken
    s = *next;
  }
  // Orders: each slot's index among its distinct orders, mixed radix.
  struct SlotOrder {
    int level;
    bool cluster;
    std::uint32_t mask;
    std::vector<DimId> perm;
  };
  std::vector<SlotOrder> canonical;
  BigInt orders = 0;
  for (size_t k = 0; k < impl.order_levels.size(); ++k) {
    const std::uint32_t mask = impl.free_mask(pos, k);
    const int level = impl.order_levels[k];
    const bool cluster = k >= impl.data_levels.size();
    const LevelMapping& lm = m.level(level);
    const std::vector<DimId>& order = cluster ? lm.cluster.order : lm.order;
    const auto free = static_cast<size_t>(std::popcount(mask));
    // The loops that run, in the mapping's order (where one-trip loops sit
    // does not matter: the space counts such orders once).
    std::vector<DimId> perm;
    for (DimId d : order)
      if (d >= 0 && d < impl.n && (mask >> d & 1u)) perm.push_back(d);
    if (perm.size() != free) return std::nullopt;
    if (!cluster || lm.cluster.active()) canonical.push_back({level, cluster, mask, perm});
    if (t.masked[k]) {
      const auto& list = impl.allowed_orders(t, k, mask);
      const auto it = std::find(list.begin(), list.end(), perm);
      if (it == list.end()) return std::nullopt;
      orders = orders * list.size() + (it - list.begin());
    } else {
      orders = orders * factorial(static_cast<int>(free)) + permutation_index(perm);
    }
  }
  r += orders + BigInt(*combo) * t.total;
  // The mapping in the form the space writes (one-trip loops outermost in
  // dimension order, keep/bypass as the combination's) must be what the
  // rank unranks to; anything else (an active cluster level that is
  // trivial, a field the space never sets) is not a mapping of the space.
  Mapping form = m;
  impl.set_keep(form, *combo);
  for (const SlotOrder& o : canonical) {
    auto& order = o.cluster ? form.level(o.level).cluster.order : form.level(o.level).order;
    order.clear();
    for (DimId d = 0; d < impl.n; ++d)
      if (!(o.mask >> d & 1u)) order.push_back(d);
    order.insert(order.end(), o.perm.begin(), o.perm.end());
  }
  const auto back = unrank(r);
  if (!back || !(*back == form)) return std::nullopt;
  return r;
}

}  // namespace mapex
