// Branch and bound over the mapspace (issue 22; the pruning follows the
// Turbo-Charged Mapper, arXiv 2602.15172: bound partial mappings, drop
// dominated ones). The mapping is fixed from DRAM inward, one level at a
// time (Mapspace's level-by-level enumeration): a level's tiles or splits,
// then each loop order whose trip counts have become known. Every partial
// mapping gets the cost model's lower bound (BoundCostModel::lower_bound);
// siblings are searched best bound first, depth first, and a subtree whose
// bound is no better than the best mapping found is dropped. The rules and
// their proofs are in README.md. Sibling bounds are computed in parallel and
// leaves are evaluated in batches through the context, so the search, its
// result and its counts are the same at any thread count.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mapex/analysis.hpp>
#include <mapex/bounds.hpp>
#include <mapex/checked.hpp>
#include <mapex/moves.hpp>
#include <mapex/parallel.hpp>
#include <mapex/plugin.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

namespace {

using mapex::BigInt;
using mapex::DimId;
using mapex::Mapping;

/// One step of the level-by-level descent: a level's values (tiles or
/// splits), or a data level's loop order.
struct Stage {
  bool order = false;
  int level = 0;
};

/// A choice at one stage: the level's values or its order, and its bound.
struct Child {
  std::vector<std::int64_t> values;
  std::vector<DimId> order;
  double bound = 0;
  /// Orders this one stands for under the reuse-class rule (1 otherwise).
  std::uint64_t stands_for = 1;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Bounds and values come from different sums of the same terms: a bound
/// within this relative distance of the best counts as no better.
constexpr double kTolerance = 1e-9;
/// The most value combinations of one level the search branches on (2^20).
constexpr std::uint64_t kMaxLevelCombinations = std::uint64_t{1} << 20;

class BranchAndBound {
 public:
  BranchAndBound(mapex::SearchContext& ctx, bool reuse_orders, bool tile_dominance,
                 bool count_pruned, std::int64_t seed_samples, std::int64_t max_nodes)
      : ctx_(ctx),
        space_(ctx.mapspace()),
        op_(ctx.op()),
        arch_(ctx.arch()),
        reuse_orders_(reuse_orders),
        tile_dominance_(tile_dominance),
        count_pruned_(count_pruned),
        seed_samples_(seed_samples),
        max_nodes_(static_cast<std::uint64_t>(std::max<std::int64_t>(max_nodes, 0))),
        relevant_(mapex::relevant_dims(ctx.op())) {
    build_stages();
    bounded_at_.assign(stages_.size(), 0);
  }

  mapex::SearchOutcome run() {
    if (!space_.supports_level_enumeration())
      throw mapex::InputError(mapex::SourceLocation{}, "searcher",
                              "optimal: the mapspace has cluster levels, which its level-by-level "
                              "enumeration does not cover (use exhaustive)");
    const int L = arch_.num_levels();
    {
      Mapping root = Mapping::trivial(op_, arch_);
      model_bounds_ =
          ctx_.model()
              .lower_bound(mapex::PartialMapping{
                  &root, L - 1, std::vector<char>(static_cast<size_t>(L), 0), divisor_spans()})
              .has_value();
    }
    seed_incumbent();
    if (out_of_budget()) {
      // The budget ran out before the tree was entered: the whole space
      // stays open, under the root's bound.
      stopped_ = true;
      open_bound_ = root_bound();
      open_node_ = "the whole space";
    }
    for (std::size_t k = 0; k < space_.keep_choices() && !stopped_; ++k) {
      Mapping m = Mapping::trivial(op_, arch_);
      space_.apply_keep_choice(m, k);
      std::vector<char> order_fixed(static_cast<size_t>(L), 0);
      descend(0, m, L - 1, order_fixed);
    }
    return outcome();
  }

 private:
  // --- the first incumbent -------------------------------------------------

  /// A good mapping before the tree is entered, so the bound prunes from
  /// the first node: the best of a seeded uniform batch, then greedy
  /// descent (the best neighbour, mapex/moves.hpp, while it improves).
  /// Both go through the context like every leaf, so they count, are
  /// budgeted and are the same at any thread count. They change what is
  /// pruned, never the optimum: the bound rule only drops subtrees no
  /// better than a mapping actually evaluated.
  void seed_incumbent() {
    if (seed_samples_ <= 0) return;
    std::mt19937_64 rng(ctx_.seed());
    std::vector<Mapping> batch;
    for (std::int64_t k = 0; k < seed_samples_; ++k)
      if (auto m = space_.sample(rng, 16)) batch.push_back(std::move(*m));
    ctx_.evaluate(batch);
    const mapex::MapspaceMoves moves(space_);
    while (ctx_.best_mapping() && !ctx_.exhausted()) {
      const double before = ctx_.best_value();
      const auto neighbours = moves.neighbours(*ctx_.best_mapping());
      ctx_.evaluate(neighbours);
      if (!(ctx_.best_value() < before)) break;
    }
  }

  /// The bound of the whole space (nothing fixed but DRAM's bounds).
  double root_bound() const {
    const int L = arch_.num_levels();
    Mapping m = Mapping::trivial(op_, arch_);
    const auto b = ctx_.model().lower_bound(mapex::PartialMapping{
        &m, L - 1, std::vector<char>(static_cast<size_t>(L), 0), divisor_spans()});
    return b ? mapex::objective_value(*b, ctx_.objective()) : 0;
  }

  // --- stages -----------------------------------------------------------

  /// Whether data level j's loops are known once levels >= first_fixed are:
  /// its child's span is, i.e. every level from the data level below it
  /// (level 0 for the MACs) up is fixed.
  bool order_known(int j, int first_fixed) const {
    int below = j - 1;
    while (below >= 0 && !arch_.levels()[static_cast<size_t>(below)].holds_data()) --below;
    return first_fixed <= std::max(below, 0);
  }

  void build_stages() {
    const int L = arch_.num_levels();
    std::vector<char> done(static_cast<size_t>(L), 0);
    for (int i = L - 2; i >= 0; --i) {
      stages_.push_back({false, i});
      for (int j = L - 1; j >= i; --j)
        if (arch_.levels()[static_cast<size_t>(j)].holds_data() && !done[static_cast<size_t>(j)] &&
            order_known(j, i)) {
          stages_.push_back({true, j});
          done[static_cast<size_t>(j)] = 1;
        }
    }
  }

  // --- children -----------------------------------------------------------

  static std::vector<std::int64_t>& values_of(const mapex::Architecture& arch, Mapping& m, int i) {
    auto& lm = m.level(i);
    return arch.levels()[static_cast<size_t>(i)].kind == mapex::LevelKind::kSpatial ? lm.split
                                                                                    : lm.tile;
  }

  /// Every value combination of level i the chains allow, without the ones
  /// that leave the space (fan-out, split rules: count zero) or overflow
  /// the level's buffer (rule "capacity", counted).
  std::vector<Child> value_children(Mapping& m, int i, const std::vector<char>& order_fixed) {
    const int n = op_.num_dims();
    std::vector<std::vector<std::int64_t>> lists;
    // Largest values first: among children of equal bound the search dives
    // into the largest tiles and splits, which reuse and parallelise most,
    // so a good incumbent comes early (the order changes nothing else).
    for (DimId d = 0; d < n; ++d) {
      lists.push_back(space_.allowed_values(d, i, m));
      std::reverse(lists.back().begin(), lists.back().end());
    }
    std::uint64_t combinations = 1;
    for (const auto& l : lists) {
      if (l.empty()) return {};
      combinations = l.size() > kMaxLevelCombinations / combinations ? kMaxLevelCombinations + 1
                                                                     : combinations * l.size();
    }
    // A level with more value combinations than the searcher branches on
    // (edge tiles on large dimensions: 256^3 for a GEMM) is not enumerated:
    // the search stops with its incumbent and the whole space's bound left
    // open, so a budget bounds its time whatever the space (issue
    // "Robustness": a search must return).
    if (combinations > kMaxLevelCombinations) {
      too_wide_ = true;
      abandon();
      return {};
    }
    const mapex::Level& level = arch_.levels()[static_cast<size_t>(i)];
    const bool spatial = level.kind == mapex::LevelKind::kSpatial;
    const bool capacity = !spatial && space_.options().check_capacity;
    const std::vector<std::int64_t> saved = values_of(arch_, m, i);
    std::vector<Child> out;
    std::vector<size_t> pos(static_cast<size_t>(n), 0);
    for (std::uint64_t visited = 1;; ++visited) {
      // Enumerating a wide level evaluates nothing: the budget and a stop
      // request are checked here too.
      if (visited % 4096 == 0 && out_of_budget()) {
        abandon();
        break;
      }
      auto& values = values_of(arch_, m, i);
      std::int64_t product = 1;
      for (DimId d = 0; d < n; ++d) {
        values[static_cast<size_t>(d)] = lists[static_cast<size_t>(d)][pos[static_cast<size_t>(d)]];
        product = mapex::mul_saturating(product, values[static_cast<size_t>(d)]);
      }
      bool keep = true;
      if (spatial) {
        keep = product <= level.fanout() && has_completion(m, i, order_fixed);
      } else if (capacity && mapex::level_capacity_error(op_, arch_, m, i, values)) {
        keep = false;
        if (count_pruned_) pruned_capacity_ += completions(m, i, order_fixed);
        ++nodes_capacity_;
      }
      if (keep) out.push_back(Child{values, {}, 0, 1});
      size_t d = 0;
      while (d < pos.size() && ++pos[d] == lists[d].size()) pos[d++] = 0;
      if (d == pos.size()) break;
    }
    values_of(arch_, m, i) = saved;
    return out;
  }

  /// The distinct orders of data level j, one per reuse class when the
  /// rule is on (README, rule "reuse classes"), over every loop whose place
  /// the cost model tells apart (README, rule "one-trip loops"): the
  /// mapspace's orders of the running loops, each with the places of the
  /// other loops the model reads.
  std::vector<Child> order_children(const Mapping& m, int j) const {
    const std::uint32_t running = space_.free_loops(m, j);
    const std::uint32_t ordered = ctx_.model().ordered_loops(m, j, running) | running;
    const auto orders = ordered == running ? space_.level_orders(j, running)
                                           : orders_with_places(j, running, ordered);
    std::vector<Child> out;
    std::map<std::vector<std::uint32_t>, size_t> classes;
    for (const auto& order : orders) {
      if (reuse_orders_) {
        auto [it, inserted] =
            classes.emplace(mapex::reuse_signature(order, ordered, relevant_), out.size());
        if (!inserted) {
          ++out[it->second].stands_for;
          continue;
        }
      }
      out.push_back(Child{{}, order, 0, 1});
    }
    return out;
  }

  /// Every order of the `ordered` loops (the others outermost, in dimension
  /// order) whose running loops stand in an order the space allows: each of
  /// the mapspace's orders with every place of the loops that run once but
  /// whose place the model reads.
  std::vector<std::vector<DimId>> orders_with_places(int j, std::uint32_t running,
                                                     std::uint32_t ordered) const {
    auto allowed = space_.level_orders(j, running);
    std::sort(allowed.begin(), allowed.end());
    std::vector<DimId> fixed, perm;
    for (DimId d = 0; d < op_.num_dims(); ++d) (ordered >> d & 1u ? perm : fixed).push_back(d);
    std::vector<std::vector<DimId>> out;
    do {
      if (!std::binary_search(allowed.begin(), allowed.end(), canonical(perm, running))) continue;
      auto& order = out.emplace_back(fixed);
      order.insert(order.end(), perm.begin(), perm.end());
    } while (std::next_permutation(perm.begin(), perm.end()));
    return out;
  }

  /// The mapspace's form of an order: loops of one trip outermost in
  /// dimension order, then the running loops in the order's order.
  std::vector<DimId> canonical(const std::vector<DimId>& order, std::uint32_t running) const {
    std::vector<DimId> out;
    for (DimId d = 0; d < op_.num_dims(); ++d)
      if (!(running >> d & 1u)) out.push_back(d);
    for (DimId d : order)
      if (running >> d & 1u) out.push_back(d);
    return out;
  }

  /// Stops the search where the children of a node are not all known: what
  /// is left open is bounded only by the whole space's bound.
  void abandon() {
    stopped_ = true;
    const double root = root_bound();
    if (root < open_bound_) {
      open_bound_ = root;
      open_node_ = "the whole space";
    }
  }

  void apply(Mapping& m, const Stage& s, const Child& c) const {
    if (s.order)
      m.level(s.level).order = c.order;
    else
      values_of(arch_, m, s.level) = c.values;
  }

  /// Whether every mapping of the space has tiles and spans that divide the
  /// layer and no cluster tile (PartialMapping::divisor_spans): a
  /// factors-only space, which the search only enters without cluster
  /// levels (run).
  bool divisor_spans() const {
    return space_.options().factors_only && space_.supports_level_enumeration();
  }

  /// The model's bound of each child as an objective value, in parallel
  /// (each on its own copy of the mapping); 0 when the model has none.
  void bound_children(const Mapping& m, std::size_t stage, int first_fixed,
                      const std::vector<char>& order_fixed, std::vector<Child>& children) {
    const Stage& s = stages_[stage];
    bounded_ += children.size();
    bounded_at_[stage] += children.size();
    // For latency, a child whose compute bound (the MACs over the units it
    // can engage: below every bounded model's latency, README "The bounds")
    // is already no better than the incumbent is dropped on that figure:
    // the model's bound, at least as high, would drop it too, so the search
    // is the same, only without the model's work (most splits of a large
    // array engage too few PEs).
    const bool quick = model_bounds_ && ctx_.objective() == mapex::Objective::kLatency;
    const double best = incumbent();
    // The model is told which figure the objective reads and where a child
    // is dropped (`dominated`), so that it can leave the other figure loose
    // and stop tightening a bound that already drops the child: each child
    // is then dropped or kept as with the tightest bound, since the bound of
    // a kept child is tightened in full (the incumbent only falls while the
    // siblings are searched).
    const mapex::Objective objective = ctx_.objective();
    const double cutoff = best * (1 - kTolerance);
    mapex::parallel_for_many(children.size(), [&](std::size_t k) {
      thread_local Mapping scratch;
      scratch = m;
      apply(scratch, s, children[k]);
      mapex::PartialMapping partial{&scratch, first_fixed, order_fixed, divisor_spans()};
      partial.reads_latency = objective != mapex::Objective::kEnergy;
      partial.reads_energy = objective != mapex::Objective::kLatency;
      if (objective == mapex::Objective::kLatency) partial.latency_cutoff = cutoff;
      if (objective == mapex::Objective::kEnergy) partial.energy_cutoff = cutoff;
      if (quick) {
        const double compute = mapex::compute_cycles_bound(op_, arch_, partial);
        if (compute >= best * (1 - kTolerance)) {
          children[k].bound = compute;
          return;
        }
      }
      const auto b = ctx_.model().lower_bound(partial);
      children[k].bound = b ? mapex::objective_value(*b, ctx_.objective()) : 0;
    });
    std::stable_sort(children.begin(), children.end(),
                     [](const Child& a, const Child& b) { return a.bound < b.bound; });
  }

  /// Rule "separable orders" (README): when the model reads a level's order
  /// only through that level's own traffic (BoundCostModel::
  /// order_read_only_by_own_traffic) and that traffic is fixed, every
  /// completion costs the same under each order but for that traffic, and
  /// the value grows with its energy and with its transfer cycles. So only
  /// the orders that no other order beats are kept: the first of the least
  /// transfer cycles for latency, of the least energy for energy, and for
  /// EDP each order that no other beats in both (the first of equal ones).
  void keep_cheapest_orders(const Mapping& m, const Stage& s, int first_fixed,
                            const std::vector<char>& order_fixed, std::vector<Child>& children) {
    if (children.size() < 2 || !ctx_.model().order_read_only_by_own_traffic(s.level)) return;
    const auto level = static_cast<std::size_t>(s.level);
    std::vector<std::pair<double, double>> cost(children.size());  // (cycles, energy)
    std::vector<char> determined(children.size(), 0);
    mapex::parallel_for_many(children.size(), [&](std::size_t k) {
      thread_local Mapping scratch;
      scratch = m;
      apply(scratch, s, children[k]);
      const auto nest =
          mapex::nest_bound(op_, arch_, mapex::PartialMapping{&scratch, first_fixed, order_fixed});
      determined[k] = nest.determined[level];
      cost[k] = {nest.transfer_cycles[level], nest.energy_pj[level]};
    });
    for (char d : determined)
      if (!d) return;
    // Dropped: an order with another before it in (cycles, energy,
    // enumeration) order whose energy is no higher; the figure the
    // objective ignores counts as 0.
    const auto objective = ctx_.objective();
    for (auto& [cycles, energy] : cost) {
      if (objective == mapex::Objective::kLatency) energy = 0;
      if (objective == mapex::Objective::kEnergy) cycles = 0;
    }
    std::vector<std::size_t> sorted(children.size());
    for (std::size_t k = 0; k < sorted.size(); ++k) sorted[k] = k;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](std::size_t a, std::size_t b) { return cost[a] < cost[b]; });
    std::vector<char> dropped(children.size(), 0);
    double lowest_energy = kInf;
    for (std::size_t k : sorted) {
      dropped[k] = cost[k].second >= lowest_energy;
      lowest_energy = std::min(lowest_energy, cost[k].second);
    }
    std::vector<Child> kept;
    for (std::size_t k = 0; k < children.size(); ++k) {
      if (!dropped[k]) {
        kept.push_back(std::move(children[k]));
        continue;
      }
      nodes_separable_ += children[k].stands_for;
      if (count_pruned_) {
        thread_local Mapping scratch;
        scratch = m;
        apply(scratch, s, children[k]);
        pruned_separable_ +=
            completions(scratch, first_fixed, order_fixed) * children[k].stands_for;
      }
    }
    children = std::move(kept);
  }

  /// Rule "dominated tiles" (README, rule 6): when the model reads the tile
  /// of the data level below DRAM only through DRAM's traffic (BoundCostModel::
  /// tile_read_only_by_traffic_above), in a space of divisors whose order
  /// rules leave that level's orders free, a tile is dropped when the tile
  /// that multiplies one of its dimensions by a prime is a sibling (in the
  /// space, within capacity) whose DRAM traffic under its cheapest order is
  /// no dearer in the objective's figure: every completion of the dropped
  /// tile is a completion of the larger one with the same on-chip value and
  /// no dearer DRAM order (rule 5 keeps that order). Chains of such steps
  /// end at a kept tile, so an optimum survives. Not for EDP (the cheapest
  /// orders in cycles and in energy may differ).
  void drop_dominated_tiles(const Mapping& m, const Stage& s, int first_fixed,
                            const std::vector<char>& order_fixed, std::vector<Child>& children) {
    const int dram = arch_.num_levels() - 1;
    if (!tile_dominance_ || s.order || s.level != dram - 1 || children.size() < 2 ||
        !divisor_spans() || ctx_.objective() == mapex::Objective::kEdp ||
        !ctx_.model().tile_read_only_by_traffic_above(s.level) || !free_orders(s.level))
      return;
    const auto D = static_cast<std::size_t>(dram);
    const bool latency = ctx_.objective() == mapex::Objective::kLatency;
    // DRAM's cheapest figure per child: exact (determined) or unknown (-1).
    std::vector<double> cost(children.size(), -1);
    mapex::parallel_for_many(children.size(), [&](std::size_t k) {
      thread_local Mapping scratch;
      scratch = m;
      apply(scratch, s, children[k]);
      std::vector<char> orders = order_fixed;
      orders.resize(D + 1, 0);
      orders[D] = 0;
      const mapex::NestBound nest = mapex::nest_bound_any_dram_order(
          op_, arch_, mapex::PartialMapping{&scratch, first_fixed, orders});
      if (nest.determined[D]) cost[k] = latency ? nest.transfer_cycles[D] : nest.energy_pj[D];
    });
    std::map<std::vector<std::int64_t>, std::size_t> index;
    for (std::size_t k = 0; k < children.size(); ++k) index.emplace(children[k].values, k);
    std::vector<char> dropped(children.size(), 0);
    for (std::size_t k = 0; k < children.size(); ++k) {
      if (cost[k] < 0) continue;
      std::vector<std::int64_t> larger = children[k].values;
      for (std::size_t d = 0; d < larger.size() && !dropped[k]; ++d) {
        const std::int64_t room = op_.dims()[d].bound / std::max<std::int64_t>(1, larger[d]);
        for (std::int64_t p = 2; p <= room && !dropped[k]; ++p) {
          if (room % p != 0 || !prime(p)) continue;
          larger[d] = children[k].values[d] * p;
          const auto it = index.find(larger);
          if (it != index.end() && cost[it->second] >= 0 && cost[it->second] <= cost[k])
            dropped[k] = 1;
          larger[d] = children[k].values[d];
        }
      }
    }
    std::vector<Child> kept;
    for (std::size_t k = 0; k < children.size(); ++k) {
      if (!dropped[k]) {
        kept.push_back(std::move(children[k]));
        continue;
      }
      ++nodes_dominated_;
      if (count_pruned_) {
        thread_local Mapping scratch;
        scratch = m;
        apply(scratch, s, children[k]);
        pruned_dominated_ += completions(scratch, first_fixed, order_fixed);
      }
    }
    children = std::move(kept);
  }

  static bool prime(std::int64_t p) {
    for (std::int64_t q = 2; q * q <= p; ++q)
      if (p % q == 0) return false;
    return true;
  }

  /// Whether the space's order rules leave data level j's orders free (every
  /// permutation of all its loops allowed), so that which loops run there
  /// changes nothing of which orders a completion can take.
  bool free_orders(int j) const {
    const int n = op_.num_dims();
    const std::uint32_t all = (std::uint32_t{1} << n) - 1;
    std::uint64_t factorial = 1;
    for (int k = 2; k <= n; ++k) factorial *= static_cast<std::uint64_t>(k);
    return space_.level_orders(j, all).size() == factorial;
  }

  // --- the descent ------------------------------------------------------------

  /// The context's budget (evaluations, time, a stop request) or the
  /// searcher's own budget of bounded nodes (`max_nodes`), which, unlike
  /// time, gives the same search on any machine under any load.
  bool out_of_budget() const {
    return ctx_.exhausted() || (max_nodes_ > 0 && bounded_ >= max_nodes_);
  }

  double incumbent() const { return ctx_.best_mapping() ? ctx_.best_value() : kInf; }
  bool dominated(double bound) const { return bound >= incumbent() * (1 - kTolerance); }

  /// The mappings of the space below a node. An order that places a
  /// one-trip loop elsewhere than the space's form (rule "one-trip loops")
  /// is counted as its form: each place counts as a mapping of its own.
  BigInt completions(const Mapping& m, int first_fixed,
                     const std::vector<char>& order_fixed) const {
    const auto form = in_form(m, order_fixed);
    return space_.count_completions(form ? *form : m, first_fixed, order_fixed);
  }

  /// Whether a node has a mapping of the space below it (completions > 0),
  /// without counting them.
  bool has_completion(const Mapping& m, int first_fixed,
                      const std::vector<char>& order_fixed) const {
    const auto form = in_form(m, order_fixed);
    return space_.has_completion(form ? *form : m, first_fixed, order_fixed);
  }

  /// The node with its fixed orders in the space's form (one-trip loops
  /// outermost), or nothing when they already are: a copy only then.
  std::optional<Mapping> in_form(const Mapping& m, const std::vector<char>& order_fixed) const {
    std::optional<Mapping> form;
    for (std::size_t j = 0; j < order_fixed.size(); ++j) {
      if (!order_fixed[j]) continue;
      const int level = static_cast<int>(j);
      auto order = canonical(m.level(level).order, space_.free_loops(m, level));
      if (order == m.level(level).order) continue;
      if (!form) form = m;
      form->level(level).order = std::move(order);
    }
    return form;
  }

  void descend(std::size_t stage, Mapping& m, int first_fixed, std::vector<char>& order_fixed) {
    const Stage& s = stages_[stage];
    const int child_fixed = s.order ? first_fixed : s.level;
    std::vector<Child> children;
    if (s.order) {
      order_fixed[static_cast<size_t>(s.level)] = 1;
      children = order_children(m, s.level);
      keep_cheapest_orders(m, s, child_fixed, order_fixed, children);
    } else {
      children = value_children(m, s.level, order_fixed);
      drop_dominated_tiles(m, s, child_fixed, order_fixed, children);
    }
    ++nodes_;
    bound_children(m, stage, child_fixed, order_fixed, children);
    const Mapping saved = m;
    const bool leaf_stage = stage + 1 == stages_.size();
    std::vector<Mapping> batch;
    std::vector<double> batch_bounds;
    for (std::size_t k = 0; k < children.size(); ++k) {
      const Child& c = children[k];
      // The budget is checked per child, not only after evaluations: a
      // stretch of the tree whose leaves are all pruned evaluates nothing.
      if (!stopped_ && out_of_budget()) stopped_ = true;
      // Once stopped, a child is left open unless it is dominated: that one
      // and every later sibling are dropped as they would be with budget
      // left (below), so nothing of them stays open.
      if (stopped_ && !dominated(c.bound)) {
        apply(m, s, c);
        leave_open(c.bound, stage, m);
        continue;
      }
      apply(m, s, c);
      if (c.stands_for > 1 && count_pruned_)
        pruned_reuse_ += completions(m, child_fixed, order_fixed) * (c.stands_for - 1);
      nodes_reuse_ += c.stands_for - 1;
      if (dominated(c.bound)) {
        // Children are sorted by bound: every later one is dominated too.
        for (std::size_t r = k; r < children.size(); ++r) {
          ++nodes_bound_;
          if (!count_pruned_) continue;
          apply(m, s, children[r]);
          pruned_bound_ += completions(m, child_fixed, order_fixed) * children[r].stands_for;
        }
        break;
      }
      if (leaf_stage) {
        if (!space_.reject_reason(m)) {
          batch.push_back(m);
          batch_bounds.push_back(c.bound);
        }
        continue;
      }
      descend(stage + 1, m, child_fixed, order_fixed);
    }
    if (!batch.empty()) {
      const auto done = ctx_.evaluate(batch).size();
      if (out_of_budget()) {
        stopped_ = true;
        // The leaves the budget cut off stay open, but those no better
        // than the best mapping found.
        for (std::size_t k = done; k < batch.size(); ++k)
          if (!dominated(batch_bounds[k])) leave_open(batch_bounds[k], stage, batch[k]);
      }
    }
    m = saved;
    if (s.order) order_fixed[static_cast<size_t>(s.level)] = 0;
  }

  /// A subtree the budget left unsearched: its bound may be the lowest
  /// open one, and then where it stands in the tree is reported (what a
  /// tighter bound would have to close).
  void leave_open(double bound, std::size_t stage, const Mapping& m) {
    if (!(bound < open_bound_)) return;
    open_bound_ = bound;
    std::ostringstream os;
    const Stage& s = stages_[stage];
    os << (s.order ? "order of " : "values of ")
       << arch_.levels()[static_cast<size_t>(s.level)].name << " (stage " << stage + 1 << " of "
       << stages_.size() << ")";
    for (std::size_t k = 0; k <= stage; ++k) {
      const Stage& f = stages_[k];
      const auto& lm = m.level(f.level);
      os << (k == 0 ? ": " : ", ") << arch_.levels()[static_cast<size_t>(f.level)].name;
      if (f.order) {
        os << " order ";
        for (DimId d : lm.order) os << op_.dims()[static_cast<size_t>(d)].name;
      } else {
        os << (arch_.levels()[static_cast<size_t>(f.level)].kind == mapex::LevelKind::kSpatial
                   ? " split "
                   : " tile ");
        const auto& v = values_of_const(f.level, lm);
        for (std::size_t d = 0; d < v.size(); ++d) os << (d ? "x" : "") << v[d];
      }
    }
    open_node_ = os.str();
  }

  /// A stage as the report names it: "L2 tile", "PE_array split", "DRAM order".
  std::string stage_name(const Stage& s) const {
    const auto& level = arch_.levels()[static_cast<size_t>(s.level)];
    return level.name + (s.order                                    ? " order"
                         : level.kind == mapex::LevelKind::kSpatial ? " split"
                                                                    : " tile");
  }

  const std::vector<std::int64_t>& values_of_const(int i, const mapex::LevelMapping& lm) const {
    return arch_.levels()[static_cast<size_t>(i)].kind == mapex::LevelKind::kSpatial ? lm.split
                                                                                     : lm.tile;
  }

  // --- the report --------------------------------------------------------------

  std::string statistics() const {
    std::ostringstream os;
    os << "pruned nodes: capacity=" << nodes_capacity_ << " bound=" << nodes_bound_
       << " reuse_orders=" << nodes_reuse_ << " dominated_tiles=" << nodes_dominated_
       << " separable_orders=" << nodes_separable_;
    if (count_pruned_)
      os << "; pruned mappings: capacity=" << mapex::format_count(pruned_capacity_)
         << " bound=" << mapex::format_count(pruned_bound_)
         << " reuse_orders=" << mapex::format_count(pruned_reuse_)
         << " dominated_tiles=" << mapex::format_count(pruned_dominated_)
         << " separable_orders=" << mapex::format_count(pruned_separable_);
    os << "; nodes=" << nodes_ << " bounded=" << bounded_;
    // Where the bounded children stand: the stages a tighter bound or a
    // dominance rule would have to thin out.
    os << "; bounded per stage:";
    for (std::size_t k = 0; k < stages_.size(); ++k)
      os << (k ? ", " : " ") << stage_name(stages_[k]) << "=" << bounded_at_[k];
    return os.str();
  }

  mapex::SearchOutcome outcome() const {
    // A budget that stopped the search where every subtree still open is
    // dominated (none was left open: leave_open and abandon record the
    // others) stopped nothing that could beat the best: a proof all the same.
    const bool nothing_open = !(open_bound_ < kInf);
    if (!stopped_ || (nothing_open && !too_wide_ && ctx_.best_mapping())) {
      if (!ctx_.best_mapping()) return {true, std::string(mapex::kEmptyMapspace)};
      return {true, "optimal; " + statistics()};
    }
    std::ostringstream os;
    os << "budget; ";
    if (too_wide_)
      os << "a level has more than " << kMaxLevelCombinations
         << " value combinations, which the search does not enumerate; ";
    if (!ctx_.best_mapping()) {
      os << "no mapping found";
    } else {
      const double best = ctx_.best_value();
      const double low = std::min(open_bound_, best);
      os << "gap " << (best > 0 ? 100.0 * (best - low) / best : 0.0) << "% (best " << best
         << ", lowest open bound " << low << ")";
      if (!open_node_.empty() && open_bound_ < best) os << "; lowest open node: " << open_node_;
    }
    os << "; " << statistics();
    return {false, os.str()};
  }

  mapex::SearchContext& ctx_;
  const mapex::Mapspace& space_;
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  bool reuse_orders_;
  bool tile_dominance_;
  bool count_pruned_;
  std::int64_t seed_samples_;
  std::uint64_t max_nodes_;
  std::uint64_t bounded_ = 0;              // children bounded so far (max_nodes)
  std::vector<std::uint64_t> bounded_at_;  // the same per stage
  std::vector<std::uint32_t> relevant_;
  std::vector<Stage> stages_;
  bool model_bounds_ = false;  // whether the model bounds partial mappings at all
  bool stopped_ = false;
  bool too_wide_ = false;
  double open_bound_ = kInf;
  std::string open_node_;
  std::uint64_t nodes_ = 0, nodes_capacity_ = 0, nodes_bound_ = 0, nodes_reuse_ = 0,
                nodes_separable_ = 0, nodes_dominated_ = 0;
  BigInt pruned_capacity_ = 0, pruned_bound_ = 0, pruned_reuse_ = 0, pruned_separable_ = 0,
         pruned_dominated_ = 0;
};

class Optimal final : public mapex::Searcher {
 public:
  explicit Optimal(const mapex::Params& params)
      : reuse_orders_(params.get_bool("reuse_orders")),
        tile_dominance_(params.get_bool("tile_dominance")),
        count_pruned_(params.get_bool("count_pruned")),
        seed_samples_(params.get_int("seed_samples")),
        max_nodes_(params.get_int("max_nodes")) {}

  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    BranchAndBound bb(ctx, reuse_orders_, tile_dominance_, count_pruned_, seed_samples_,
                      max_nodes_);
    return bb.run();
  }

 private:
  bool reuse_orders_;
  bool tile_dominance_;
  bool count_pruned_;
  std::int64_t seed_samples_;
  std::int64_t max_nodes_;
};

const mapex::ParamSpec kParams[] = {
    {"reuse_orders", mapex::ParamType::kBool, "true",
     "Search one loop order per reuse class (README, rule 2)."},
    {"tile_dominance", mapex::ParamType::kBool, "true",
     "Drop a tile of the level below DRAM that a sibling multiple dominates (README, rule 6)."},
    {"count_pruned", mapex::ParamType::kBool, "false",
     "Count exactly how many mappings each rule prunes (costs a count per pruned subtree)."},
    {"seed_samples", mapex::ParamType::kInt, "256",
     "Uniform samples whose best, improved by greedy descent, is the first incumbent (0: none)."},
    {"max_nodes", mapex::ParamType::kInt, "0",
     "Budget of nodes bounded (0: none); the same search on any machine, unlike a time budget."},
};

mapex::Searcher* make(const mapex::Params& params) { return new Optimal(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "optimal",
    "1.0.0",
    "Branch and bound over the mapspace: the optimum with a proof, or the gap left",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
