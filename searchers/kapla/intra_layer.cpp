// KAPLA's intra-layer solver (KAPLA §IV-C, Algorithm 1): bottom-up stacking
// and caching with greedy cost descending.
//
// Starting from unit tensors (every tile 1), each buffer level is solved in
// turn from the innermost outwards. For every candidate loop order of the
// level's updates (genLoopOrder), a stacking pass spreads the unit tensors
// over the array above the level (the spatial split) and a caching pass
// enlarges the tensors held in each buffer (the tile), one step at a time:
// each step enlarges one dimension to its next blocked size, choosing the
// dimension that most reduces the access count of the most-accessed tensor
// at the next level (ties to the second most accessed, then the
// objective), and stops when no step reduces it or nothing more fits.
// Among the orders, the best scheme by the objective (evalCost) is kept and
// the next level starts from its stacked tensors.
//
// While a level is solved, the levels above it are still unit tensors, so
// every remaining loop runs at DRAM in the order being tried: the access
// counts at the next level are those of the remaining loop factors, as in
// Fig. 6 ("the remaining factors ... are correspondingly reduced").
//
// Every candidate is a member of the framework's mapspace (so the result is
// comparable with exhaustive and random search on the same space) and is
// evaluated by the job's cost model through the framework, which owns the
// budget and the best-so-far.
//
// Caching alone (mapex's addition, not in the paper's Algorithm 1; on by
// default, parameter `cache_alone`): at the innermost level below an array,
// every loop order is also solved by the caching pass without stacking, one
// more candidate for evalCost to choose from (Algorithm 1, lines 6-12).
// §IV-C stacks first "as stacking also improves parallelism"; but spreading
// the unit tensors replicates some of them over the array and leaves partial
// sums to be reduced out of every PE, register-file traffic that an energy
// objective may not want, and the stacking pass, which only sees the access
// counts at the next level, cannot decline it. On the edge chip's fc layers
// the stacked scheme ended 0.08% above random search with 2,000 samples, and
// no refinement move leads from it to the unstacked optimum (the split has
// to go and the batch has to move into the registers at once). At the outer
// levels the extra candidate found no better scheme on any layer of
// experiments/kapla/ and cost 38% more evaluations on the ResNet-50 training
// graph, so it is tried only at the innermost level.
//
// Refinement (mapex's addition, not in the paper's Algorithm 1; on by
// default, parameter `refine`): the level-by-level solver fixes each level
// before the ones above exist, so a tile or split chosen while the upper
// levels were unit tensors is never revisited, and on small layers it ends a
// few percent above random search with 2,000 samples. A final steepest
// descent starts from the best scheme found and tries its neighbours: for
// each buffer level and dimension the next larger and next smaller tile in
// the mapspace, each split one step up or down (the factor moves to or from
// the adjacent levels, which adapt so the scheme stays legal), each pair of
// dimensions at a level exchanging a step (one up, the other down: a buffer
// full in capacity, or a split using all the dimensions the array allows,
// can only change that way), and each other genLoopOrder order at each
// level. The best improving neighbour is taken until none improves; at such
// a point the tile and split moves are widened once to every size in the
// mapspace before stopping. Candidates are mapspace members evaluated
// through the framework like the rest, so budgets hold and evaluations are
// counted; the order of the moves is fixed, so it is deterministic, and it
// only ever accepts a lower cost.

#include "intra_layer.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mapex/directives.hpp>
#include <mapex/moves.hpp>
#include <mapex/search.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using mapex::DimId;
using mapex::LevelKind;
using mapex::Mapping;
using mapex::Metrics;

/// Buffer levels, innermost first, each with the spatial level right above
/// it (-1 when none), and the data level above it.
struct Plan {
  std::vector<int> buffers;
  std::vector<int> array_above;
  std::vector<int> parent;
};

Plan make_plan(const mapex::Architecture& arch) {
  Plan p;
  for (int i = 0; i < arch.num_levels(); ++i) {
    const auto kind = arch.levels()[static_cast<size_t>(i)].kind;
    if (kind == LevelKind::kSpatial) {
      if (!p.buffers.empty() && p.array_above.back() < 0) p.array_above.back() = i;
      continue;
    }
    if (!p.buffers.empty() && p.parent.back() < 0) p.parent.back() = i;
    if (kind == LevelKind::kBuffer) {
      p.buffers.push_back(i);
      p.array_above.push_back(-1);
      p.parent.push_back(-1);
    }
  }
  return p;
}

/// genLoopOrder (Algorithm 1, line 6): the orders that decide reuse. For
/// every ranking of the tensors, the loops that do not index the first
/// tensor go innermost (it stays stationary), then those that do not index
/// the second, and so on; the result is outermost first. At most 3! orders
/// for a convolution, the loop-order choices KAPLA's nn_dataflow base
/// explores.
std::vector<std::vector<DimId>> loop_orders(const mapex::Operator& op) {
  std::vector<int> tensors(op.tensors().size());
  std::iota(tensors.begin(), tensors.end(), 0);
  std::set<std::vector<DimId>> seen;
  std::vector<std::vector<DimId>> out;
  do {
    std::vector<DimId> inner_first;
    std::vector<bool> placed(static_cast<size_t>(op.num_dims()), false);
    for (int t : tensors)
      for (DimId d = 0; d < op.num_dims(); ++d)
        if (!placed[static_cast<size_t>(d)] && !op.relevant(t, d)) {
          inner_first.push_back(d);
          placed[static_cast<size_t>(d)] = true;
        }
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (!placed[static_cast<size_t>(d)]) inner_first.push_back(d);
    std::vector<DimId> order(inner_first.rbegin(), inner_first.rend());
    if (seen.insert(order).second) out.push_back(order);
  } while (std::next_permutation(tensors.begin(), tensors.end()));
  return out;
}

/// Thrown inside the search when the framework's budget runs out.
struct BudgetExhausted {};

class Solver {
 public:
  Solver(mapex::SearchContext& ctx, bool refine, bool cache_alone)
      : ctx_(ctx),
        refine_(refine),
        cache_alone_(cache_alone),
        op_(ctx.op()),
        arch_(ctx.arch()),
        plan_(make_plan(ctx.arch())),
        factors_only_(ctx.mapspace().options().factors_only),
        moves_(ctx.mapspace()) {}

  mapex::SearchOutcome run() {
    try {
      Mapping cur = Mapping::trivial(op_, arch_);
      for (size_t k = 0; k < plan_.buffers.size(); ++k) {
        std::optional<Mapping> level_best;
        double level_best_value = 0;
        // Caching alone is a further candidate at the innermost level
        // below an array (see the header comment).
        const bool stack = plan_.array_above[k] >= 0;
        const int variants = stack && k == 0 && cache_alone_ ? 2 : 1;
        for (const auto& order : loop_orders(op_))
          for (int variant = 0; variant < variants; ++variant) {
            Mapping m = cur;
            for (size_t j = k; j < plan_.buffers.size(); ++j)
              m.level(plan_.parent[j]).order = pinned(order, plan_.parent[j]);
            propagate(m, k);
            if (stack && variant == 0) m = descend(m, k, /*stacking=*/true);
            m = descend(m, k, /*stacking=*/false);
            const Metrics& r = evaluate_one(m);
            const double v = mapex::objective_value(r, ctx_.objective());
            if (r.valid && (!level_best || v < level_best_value)) {
              level_best = m;
              level_best_value = v;
            }
          }
        if (!level_best) return {false, "no valid scheme at level " + level_name(k)};
        cur = *level_best;
      }
      if (refine_ && ctx_.best_mapping())
        refine(*ctx_.best_mapping(), mapex::objective_value(ctx_.best_metrics(), ctx_.objective()));
    } catch (const BudgetExhausted&) {
      return {false, "budget"};
    }
    return {false, "solved"};
  }

 private:
  mapex::SearchContext& ctx_;
  bool refine_;
  bool cache_alone_;
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  Plan plan_;
  bool factors_only_;
  /// The space's candidate tile sizes per dimension (mapex/moves.hpp).
  mapex::MapspaceMoves moves_;

  /// One of KAPLA's loop orders with the level's pinned innermost loops
  /// (a constraint, README "Mapspace constraints") moved innermost, in
  /// their order: the candidate orders stay KAPLA's where the pins allow.
  std::vector<DimId> pinned(std::vector<DimId> order, int level) const {
    const auto& rules = ctx_.mapspace().options().levels;
    if (rules.empty()) return order;
    const auto& pins = rules[static_cast<size_t>(level)].innermost;
    std::erase_if(order,
                  [&](DimId d) { return std::find(pins.begin(), pins.end(), d) != pins.end(); });
    order.insert(order.end(), pins.begin(), pins.end());
    return order;
  }

  const std::string& level_name(size_t k) const {
    return arch_.levels()[static_cast<size_t>(plan_.buffers[k])].name;
  }

  /// Upper buffer levels not solved yet hold exactly the span below them
  /// (unit tensors), so the remaining loops all run at DRAM.
  void propagate(Mapping& m, size_t k) const {
    for (size_t j = k + 1; j < plan_.buffers.size(); ++j) {
      const int b = plan_.buffers[j];
      m.level(b).tile = m.span(op_, arch_, b - 1);
    }
  }

  const Metrics& evaluate_one(const Mapping& m) {
    last_ = evaluate({m});
    return last_.front();
  }

  std::vector<Metrics> evaluate(const std::vector<Mapping>& batch) {
    if (ctx_.exhausted()) throw BudgetExhausted{};
    auto results = ctx_.evaluate(batch);
    if (results.size() < batch.size()) throw BudgetExhausted{};
    return results;
  }

  /// The greedy key: access counts per tensor at the next level, largest
  /// first, then the objective; +inf for an invalid mapping.
  std::vector<double> key(const Metrics& r, size_t k) const {
    const auto& parent = arch_.levels()[static_cast<size_t>(plan_.parent[k])].name;
    std::vector<double> counts;
    if (!r.valid) return {std::numeric_limits<double>::infinity()};
    for (const auto& level : r.levels)
      if (level.level == parent)
        for (const auto& t : level.tensors) counts.push_back(t.reads + t.writes);
    std::sort(counts.rbegin(), counts.rend());
    counts.push_back(mapex::objective_value(r, ctx_.objective()));
    return counts;
  }

  /// One enlargement per dimension to its next blocked size that stays in
  /// the mapspace: the split of the array above level k (stacking) or the
  /// tile of level k (caching).
  std::vector<Mapping> candidates(const Mapping& cur, size_t k, bool stacking) const {
    std::vector<Mapping> out;
    const int b = plan_.buffers[k];
    for (DimId d = 0; d < op_.num_dims(); ++d) {
      const auto du = static_cast<size_t>(d);
      const std::int64_t bound = op_.dims()[du].bound;
      const std::int64_t now =
          stacking ? cur.level(plan_.array_above[k]).split[du] : cur.level(b).tile[du];
      const std::int64_t split =
          plan_.array_above[k] >= 0 ? cur.level(plan_.array_above[k]).split[du] : 1;
      const std::int64_t tile = cur.level(b).tile[du];
      const std::int64_t below = b > 0 ? cur.span(op_, arch_, b - 1)[du] : 1;
      for (std::int64_t v = now + 1; v <= bound; ++v) {
        // In a factors-only space the stacked span must divide the bound
        // and the tile must be a multiple of the span below: skip the
        // sizes the mapspace would refuse without building them.
        if (factors_only_) {
          const std::int64_t span = stacking ? tile * v : v * split;
          if (span <= bound && bound % span != 0) continue;
          if (!stacking && v % below != 0) continue;
        }
        Mapping m = cur;
        (stacking ? m.level(plan_.array_above[k]).split[du] : m.level(b).tile[du]) = v;
        propagate(m, k);
        const auto reason = ctx_.mapspace().reject_reason(m);
        if (!reason) {
          out.push_back(std::move(m));
          break;
        }
        // A non-dividing size may be followed by one that divides, and a
        // factor outside its bounds by one inside (a larger tile lowers the
        // trip count above it); any other rule (capacity, fan-out, parallel
        // dimensions, structure) only gets worse with a larger size.
        if (reason->rfind("tiles", 0) != 0 && reason->rfind("limit", 0) != 0) break;
      }
    }
    return out;
  }

  /// Cost descending (§IV-C): enlarge while the key improves. Returns the
  /// point of the descent with the lowest objective (evalCost), so that a
  /// step that cut accesses at the price of more energy elsewhere (hops,
  /// idle units) is not carried into the next level.
  Mapping descend(Mapping cur, size_t k, bool stacking) {
    const Metrics& start = evaluate_one(cur);
    std::vector<double> cur_key = key(start, k);
    Mapping best_point = cur;
    double best_value = mapex::objective_value(start, ctx_.objective());
    for (;;) {
      auto cands = candidates(cur, k, stacking);
      if (cands.empty()) break;
      const auto results = evaluate(cands);
      size_t best = cands.size();
      std::vector<double> best_key;
      for (size_t i = 0; i < results.size(); ++i) {
        auto k_i = key(results[i], k);
        if (best == cands.size() || k_i < best_key) {
          best = i;
          best_key = std::move(k_i);
        }
      }
      if (!(best_key < cur_key)) break;
      const double v = mapex::objective_value(results[best], ctx_.objective());
      cur = std::move(cands[best]);
      cur_key = std::move(best_key);
      if (v < best_value) {
        best_value = v;
        best_point = cur;
      }
    }
    return best_point;
  }

  /// The values of dimension `d` after `now` in direction `step` (+1 or
  /// -1), at most `max` of them: a tile's from the space's candidate sizes
  /// (MapspaceMoves::values: the divisors of the bound with factors-only
  /// tiles), a split's every count up to the bound (a count the space
  /// refuses is skipped by the caller; the exchange of two steps then pairs
  /// only adjacent counts, as it always has).
  std::vector<std::int64_t> values(DimId d, std::int64_t now, int step, bool tile,
                                   size_t max) const {
    std::vector<std::int64_t> out;
    if (tile) {
      const auto& all = moves_.values(d);
      if (step > 0)
        for (auto it = std::upper_bound(all.begin(), all.end(), now);
             it != all.end() && out.size() < max; ++it)
          out.push_back(*it);
      else
        for (auto it = std::lower_bound(all.begin(), all.end(), now);
             it != all.begin() && out.size() < max;)
          out.push_back(*--it);
      return out;
    }
    const std::int64_t bound = op_.dims()[static_cast<size_t>(d)].bound;
    for (std::int64_t v = now + step; v >= 1 && v <= bound && out.size() < max; v += step)
      out.push_back(v);
    return out;
  }

  /// Sets the tile (buffer) or split (spatial) of level `i` along `d` and
  /// moves the factor to or from the adjacent levels: the levels above adapt
  /// (fix_up), and the levels below shrink until each holds the span below
  /// it (shrink).
  void set_value(Mapping& m, int i, DimId d, std::int64_t v, bool tiles_first = false) const {
    const auto du = static_cast<size_t>(d);
    (arch_.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer ? m.level(i).tile[du]
                                                                       : m.level(i).split[du]) = v;
    fix_up(m, i, d);
    shrink(m, i, d, tiles_first);
  }

  /// Whether level `i` holds the span below it along `d`: a buffer tile is a
  /// multiple of it, a split does not exceed the children it leaves.
  bool fits(const Mapping& m, int i, DimId d) const {
    if (i == 0) return true;
    const auto du = static_cast<size_t>(d);
    const std::int64_t bound = op_.dims()[du].bound;
    const std::int64_t span = m.span(op_, arch_, i - 1)[du];
    if (arch_.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer) {
      const std::int64_t t = m.level(i).tile[du];
      return span <= t && t % span == 0;
    }
    const std::int64_t sp = m.level(i).split[du];
    return sp <= (bound + span - 1) / span &&
           !(factors_only_ && span * sp < bound && bound % (span * sp) != 0);
  }

  /// Shrinks the levels below `i` along `d` until `i` holds their span:
  /// nearest first, buffers before splits with `tiles_first`; then each
  /// level below in turn, from the top.
  void shrink(Mapping& m, int i, DimId d, bool tiles_first) const {
    const auto du = static_cast<size_t>(d);
    const std::int64_t bound = op_.dims()[du].bound;
    for (int pass = tiles_first ? 0 : 1; pass < 2; ++pass)
      for (int j = i - 1; j >= 0 && !fits(m, i, d); --j) {
        const auto kind = arch_.levels()[static_cast<size_t>(j)].kind;
        if (kind == LevelKind::kSpatial && pass == 1) {
          auto& sp = m.level(j).split[du];
          while (sp > 1 && !fits(m, i, d)) --sp;
        } else if (kind == LevelKind::kBuffer) {
          auto& t = m.level(j).tile[du];
          while (t > 1 && !fits(m, i, d)) {
            --t;
            while (t > 1 && factors_only_ && bound % t != 0) --t;
          }
        }
      }
    for (int j = i - 1; j > 0; --j)
      if (!fits(m, j, d)) shrink(m, j, d, tiles_first);
  }

  /// The levels above `i` along `d` adapt to its span: splits shrink to
  /// the children the span leaves (dividing the bound in a factors-only
  /// space), buffer tiles grow to the smallest size holding the span below.
  void fix_up(Mapping& m, int i, DimId d) const {
    const auto du = static_cast<size_t>(d);
    const std::int64_t bound = op_.dims()[du].bound;
    for (int j = i + 1; j < arch_.num_levels(); ++j) {
      const auto kind = arch_.levels()[static_cast<size_t>(j)].kind;
      const std::int64_t below = std::min(m.span(op_, arch_, j - 1)[du], bound);
      if (kind == LevelKind::kSpatial) {
        auto& s = m.level(j).split[du];
        while (s > 1 && (s > (bound + below - 1) / below ||
                         (factors_only_ && below * s < bound && bound % (below * s) != 0)))
          --s;
      } else if (kind == LevelKind::kBuffer) {
        auto& t = m.level(j).tile[du];
        if (t >= below && t % below == 0) continue;
        std::int64_t n = below;
        while (n < bound && (factors_only_ && bound % n != 0)) n += below;
        t = std::min(n, bound);
      }
    }
  }

  std::int64_t value(const Mapping& m, int i, DimId d) const {
    const auto du = static_cast<size_t>(d);
    return arch_.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer ? m.level(i).tile[du]
                                                                             : m.level(i).split[du];
  }

  /// The neighbours of `cur` (see the header comment) in a fixed order, not
  /// yet tried by the refinement: per tiled or split level, each dimension
  /// one step up and down (`wide`: to every size in the mapspace), each pair
  /// of dimensions exchanging a step (one up, the other down), and each
  /// other loop order. Every move is built twice, the levels below shrinking
  /// nearest first or buffers first.
  std::vector<Mapping> neighbours(const Mapping& cur, bool wide) const {
    std::vector<Mapping> out;
    std::set<Key> seen;
    auto add = [&](Mapping&& m) {
      if (ctx_.mapspace().reject_reason(m)) return false;
      auto k = identity(m);
      if (tried_.count(k) || !seen.insert(std::move(k)).second) return true;
      out.push_back(std::move(m));
      return true;
    };
    seen.insert(identity(cur));
    const auto orders = loop_orders(op_);
    const int n = op_.num_dims();
    constexpr size_t kScan = std::numeric_limits<size_t>::max();
    for (int i = 0; i < arch_.num_levels(); ++i) {
      const auto kind = arch_.levels()[static_cast<size_t>(i)].kind;
      if (kind == LevelKind::kBuffer || kind == LevelKind::kSpatial) {
        const bool tile = kind == LevelKind::kBuffer;
        for (DimId d = 0; d < n; ++d) {
          for (int step : {+1, -1})
            for (bool tiles_first : {false, true})
              for (std::int64_t v : values(d, value(cur, i, d), step, tile, kScan)) {
                Mapping m = cur;
                set_value(m, i, d, v, tiles_first);
                if (add(std::move(m)) && !wide) break;
              }
        }
        for (DimId up = 0; up < n; ++up)
          for (DimId down = 0; down < n; ++down) {
            if (up == down) continue;
            for (bool tiles_first : {false, true})
              for (std::int64_t vd : values(down, value(cur, i, down), -1, tile, 1))
                for (std::int64_t vu : values(up, value(cur, i, up), +1, tile, 1)) {
                  Mapping m = cur;
                  set_value(m, i, down, vd, tiles_first);
                  set_value(m, i, up, vu, tiles_first);
                  add(std::move(m));
                }
          }
      }
      if (kind != LevelKind::kSpatial && !cur.level(i).order.empty())
        for (const auto& order : orders) {
          if (pinned(order, i) == cur.level(i).order) continue;
          Mapping m = cur;
          m.level(i).order = pinned(order, i);
          add(std::move(m));
        }
    }
    return out;
  }

  /// Steepest descent from the best scheme so far: take the best improving
  /// neighbour (ties to the first in `neighbours` order) until none improves.
  void refine(Mapping cur, double cur_value) {
    bool wide = false;
    for (;;) {
      auto cands = neighbours(cur, wide);
      size_t best = cands.size();
      double best_value = cur_value;
      if (!cands.empty()) {
        const auto results = evaluate(cands);
        for (size_t i = 0; i < results.size(); ++i) {
          tried_.insert(identity(cands[i]));
          if (!results[i].valid) continue;
          const double v = mapex::objective_value(results[i], ctx_.objective());
          if (v < best_value) {
            best = i;
            best_value = v;
          }
        }
      }
      if (best == cands.size()) {
        // A local minimum of the one-step moves: widen to every size of
        // each tile and split once before stopping.
        if (wide) return;
        wide = true;
        continue;
      }
      cur = std::move(cands[best]);
      cur_value = best_value;
      wide = false;
    }
  }

  /// What tells two schemes apart: per level, the split of a spatial level,
  /// the tile and loop order of a buffer, the loop order of DRAM (whose tile
  /// is always the whole layer), each preceded by its length. It separates
  /// exactly the mappings whose YAML differs, without formatting any text:
  /// the refinement checks every neighbour it builds against what it has
  /// tried, and emitting YAML for that took most of its time.
  using Key = std::vector<std::int64_t>;
  Key identity(const Mapping& m) const {
    Key k;
    for (int i = 0; i < arch_.num_levels(); ++i) {
      const auto& lm = m.level(i);
      const auto kind = arch_.levels()[static_cast<size_t>(i)].kind;
      auto put = [&k](const auto& v) {
        k.push_back(static_cast<std::int64_t>(v.size()));
        k.insert(k.end(), v.begin(), v.end());
      };
      if (kind == LevelKind::kSpatial) {
        put(lm.split);
        continue;
      }
      if (kind != LevelKind::kDram) put(lm.tile);
      put(lm.order);
    }
    return k;
  }

  std::vector<Metrics> last_;
  /// Schemes the refinement evaluated, not to be evaluated again.
  std::set<Key> tried_;
};

}  // namespace

namespace kapla {

mapex::SearchOutcome solve_intra_layer(mapex::SearchContext& ctx, bool refine, bool cache_alone) {
  return Solver(ctx, refine, cache_alone).run();
}

}  // namespace kapla
