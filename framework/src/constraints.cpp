#include <algorithm>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/constraints.hpp>
#include <mapex/mapping.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "join_names.hpp"

namespace mapex {

using detail::join;

namespace {

std::vector<std::string> dim_names(const Operator& op) {
  std::vector<std::string> out;
  for (const auto& d : op.dims()) out.push_back(d.name);
  return out;
}

DimId find_dim(const Operator& op, const std::string& name, const SourceLocation& where,
               const std::string& key) {
  const DimId d = op.find_dim(name);
  if (d < 0)
    throw InputError(where, key,
                     "operator '" + op.name() + "' has no dimension '" + name +
                         "' (dimensions: " + join(dim_names(op)) + ")");
  return d;
}

int find_tensor(const Operator& op, const std::string& name, const SourceLocation& where) {
  std::vector<std::string> names;
  for (size_t t = 0; t < op.tensors().size(); ++t) {
    if (op.tensors()[t].name == name) return static_cast<int>(t);
    names.push_back(op.tensors()[t].name);
  }
  throw InputError(
      where, "stationary",
      "operator '" + op.name() + "' has no tensor '" + name + "' (tensors: " + join(names) + ")");
}

/// The role a style speaks of, named per operator kind: convolutions and
/// fc layers (K output, C input channels, P x Q output pixels, R x S
/// filter) and GEMM (C[M][N] += A[M][K] B[K][N]: N plays the output
/// channels, K the input channels, M the output rows).
std::string role_dim(const Operator& op, const std::string& role) {
  const bool gemm = op.kind() == "gemm";
  const bool depthwise = op.kind() == "conv2d" && op.find_dim("K") < 0;
  if (role == "out_channels") return gemm ? "N" : depthwise ? "C" : "K";
  if (role == "in_channels") return gemm ? "K" : "C";
  if (role == "out_rows") return gemm ? "M" : "P";
  if (role == "out_cols") return gemm ? "" : "Q";
  if (role == "filter_rows") return gemm ? "" : "R";
  return "";
}

int weight_tensor(const Operator& op) {
  // The input that does not depend on the batch/row dimension: Weight for
  // convolutions and fc, B for GEMM.
  for (size_t t = 0; t < op.tensors().size(); ++t) {
    const Tensor& tensor = op.tensors()[t];
    if (tensor.role != TensorRole::kInput) continue;
    const std::string row = op.kind() == "gemm" ? "M" : "N";
    const DimId d = op.find_dim(row);
    if (d >= 0 && !tensor.relevant(d)) return static_cast<int>(t);
  }
  return -1;
}

int output_tensor(const Operator& op) {
  for (size_t t = 0; t < op.tensors().size(); ++t)
    if (op.tensors()[t].role == TensorRole::kOutput) return static_cast<int>(t);
  return -1;
}

std::uint64_t mask_of(const Operator& op, const std::vector<std::string>& roles) {
  std::uint64_t mask = 0;
  for (const auto& role : roles) {
    const std::string name = role_dim(op, role);
    if (name.empty()) continue;
    const DimId d = op.find_dim(name);
    if (d >= 0) mask |= std::uint64_t{1} << d;
  }
  return mask;
}

/// Applies a mapping-style preset (Marvel §6's baselines) to the rules. The
/// parallel dimensions go on the innermost spatial level (the PE array);
/// stationarity on the buffers below DRAM.
void apply_style(const std::string& style, const SourceLocation& where, const Operator& op,
                 const Architecture& arch, std::vector<LevelRule>& rules) {
  const auto& names = style_names();
  if (std::find(names.begin(), names.end(), style) == names.end())
    throw InputError(where, "style",
                     "unknown mapping style '" + style + "' (expected one of " + join(names) + ")");
  const bool conv_like = op.kind() == "conv2d" || op.kind() == "fc" || op.kind() == "gemm";
  if (!conv_like)
    throw InputError(where, "style",
                     "style '" + style + "' is defined for conv2d, fc and gemm operators, not '" +
                         op.kind() + "' ('" + op.name() + "')");
  int pe_array = -1;
  for (int i = 0; i < arch.num_levels() && pe_array < 0; ++i)
    if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial) pe_array = i;
  if (pe_array < 0)
    throw InputError(where, "style", "architecture '" + arch.name() + "' has no spatial level");

  std::uint64_t parallel = 0;
  std::vector<int> stationary;
  bool all_levels_stationary = false;
  const int weight = weight_tensor(op), output = output_tensor(op);
  if (style == "weight_stationary") {  // NVDLA-like: K-C parallel, weights stay
    parallel = mask_of(op, {"out_channels", "in_channels"});
    stationary = {weight};
  } else if (style == "output_stationary") {  // ShiDianNao-like: pixels parallel
    parallel = mask_of(op, {"out_rows", "out_cols"});
    stationary = {output};
  } else if (style == "row_stationary") {  // Eyeriss-like: filter and output rows
    if (op.kind() != "conv2d")
      throw InputError(where, "style",
                       "style 'row_stationary' maps filter rows and needs a convolution, not '" +
                           op.kind() + "' ('" + op.name() + "')");
    parallel = mask_of(op, {"filter_rows", "out_rows"});
    stationary = {weight};
    // Each PE holds whole filter rows (Eyeriss's 1-D row primitive).
    auto& l1 = rules[0];
    if (arch.levels()[0].kind == LevelKind::kBuffer) {
      const DimId s = op.find_dim("S");
      if (l1.fixed.empty()) l1.fixed.assign(static_cast<size_t>(op.num_dims()), 0);
      l1.fixed[static_cast<size_t>(s)] = op.dims()[static_cast<size_t>(s)].bound;
    }
  } else if (style == "interstellar") {  // parallel C and K only, any order
    parallel = mask_of(op, {"out_channels", "in_channels"});
  } else if (style == "dmazerunner") {  // parallel K only, reuse-preserving orders
    parallel = mask_of(op, {"out_channels"});
    for (size_t t = 0; t < op.tensors().size(); ++t) stationary.push_back(static_cast<int>(t));
    all_levels_stationary = true;
  }
  stationary.erase(std::remove(stationary.begin(), stationary.end(), -1), stationary.end());
  if (parallel == 0)
    throw InputError(where, "style",
                     "style '" + style + "' parallelises dimensions that operator '" + op.name() +
                         "' does not have");
  rules[static_cast<size_t>(pe_array)].parallel_mask = parallel;
  if (!stationary.empty())
    for (int i = 0; i < arch.num_levels(); ++i) {
      const Level& l = arch.levels()[static_cast<size_t>(i)];
      if (l.kind == LevelKind::kBuffer || (all_levels_stationary && l.kind == LevelKind::kDram))
        rules[static_cast<size_t>(i)].stationary = stationary;
    }
}

/// Fixed tiles and splits that no mapping can satisfy together are bad
/// input, not an empty space: the user wrote a contradiction, and the
/// message says which key and why (issue "Mapspace at full strength", Bad
/// input). Checked per spatial level (the splits must fit its fan-out and
/// its number of split dimensions) and per dimension up the chain of levels
/// (spans grow outwards; with factors-only tiles each span divides the next
/// and the bound, Marvel §5.2).
void check_fixed_values(const ConstraintSpec& spec, const Operator& op, const Architecture& arch,
                        const std::vector<LevelRule>& rules,
                        const std::vector<SourceLocation>& where) {
  const int n = op.num_dims();
  const int L = arch.num_levels();
  auto fixed = [&](int level, DimId d) -> std::int64_t {
    const LevelRule& r = rules[static_cast<size_t>(level)];
    return r.fixed.empty() ? 0 : r.fixed[static_cast<size_t>(d)];
  };
  auto dim = [&](DimId d) { return op.dims()[static_cast<size_t>(d)].name; };
  for (int i = 0; i + 1 < L; ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    if (l.kind != LevelKind::kSpatial) continue;
    std::int64_t product = 1;
    std::vector<std::string> split;
    for (DimId d = 0; d < n; ++d)
      if (fixed(i, d) > 1) {
        product = mul_saturating(product, fixed(i, d));  // past int64: past every fan-out
        split.push_back(dim(d) + "=" + std::to_string(fixed(i, d)));
      }
    std::string factors;
    for (const auto& s : split) factors += (factors.empty() ? "" : " x ") + s;
    if (product > l.fanout())
      throw InputError(where[static_cast<size_t>(i)], "fixed",
                       "the fixed splits on '" + l.name + "' (" + factors + ") need " +
                           std::to_string(product) + " children, more than its fan-out of " +
                           std::to_string(l.fanout()));
    std::vector<std::int64_t> values;
    for (DimId d = 0; d < n; ++d) values.push_back(std::max<std::int64_t>(fixed(i, d), 1));
    if (!splits_fit_array(values, l))
      throw InputError(where[static_cast<size_t>(i)], "fixed",
                       "the fixed splits on '" + l.name + "' (" + factors +
                           ") cannot be placed on its array (split_placement: " +
                           to_string(l.split_placement) + ")");
    const int max_parallel =
        spec.max_parallel_dims > 0 ? spec.max_parallel_dims : static_cast<int>(l.shape.size());
    if (static_cast<int>(split.size()) > max_parallel)
      throw InputError(
          where[static_cast<size_t>(i)], "fixed",
          "'" + l.name + "' must split " + std::to_string(split.size()) + " dimensions (" +
              factors + ") but may split at most " + std::to_string(max_parallel) +
              (spec.max_parallel_dims > 0 ? " (max_parallel_dims)"
                                          : " (the rank of its array; raise max_parallel_dims)"));
  }
  for (DimId d = 0; d < n; ++d) {
    const std::int64_t bound = op.dims()[static_cast<size_t>(d)].bound;
    // Every span at the current level is at least `least` and, with
    // factors-only tiles, a multiple of it: the last fixed tile below times
    // the fixed splits since (Mapping::span).
    std::int64_t least = 1;
    std::string why;  // where `least` comes from, for messages
    for (int i = 0; i + 1 < L; ++i) {
      const Level& l = arch.levels()[static_cast<size_t>(i)];
      const std::int64_t v = fixed(i, d);
      if (v == 0) continue;
      const bool spatial = l.kind == LevelKind::kSpatial;
      const std::string what = std::string(spatial ? "split " : "tile ") + std::to_string(v) +
                               " of '" + dim(d) + "' on '" + l.name + "'";
      if (spec.factors_only && bound % v != 0)
        throw InputError(where[static_cast<size_t>(i)], "fixed",
                         what + " does not divide the bound " + std::to_string(bound) +
                             ", and factors_only allows only tiles and splits that do (set "
                             "factors_only: false, or --edge-tiles, for edge tiles)");
      if (spatial) {
        const auto exact = checked_mul(least, v);  // past int64: past the bound
        const std::int64_t spans = exact.value_or(std::numeric_limits<std::int64_t>::max());
        if (spec.factors_only && bound % spans != 0)
          throw InputError(
              where[static_cast<size_t>(i)], "fixed",
              what + " on top of the " + std::to_string(least) + " below it (" + why + ") spans " +
                  (exact ? std::to_string(spans) : "more than the bound") +
                  ", which does not divide the bound " + std::to_string(bound) + " (factors_only)");
        least = std::min(spans, bound);
        why += (why.empty() ? "" : " x ") + ("split " + std::to_string(v) + " on '" + l.name + "'");
        continue;
      }
      if (v < least)
        throw InputError(
            where[static_cast<size_t>(i)], "fixed",
            what + " is smaller than the " + std::to_string(least) + " it must hold (" + why + ")");
      if (spec.factors_only && v % least != 0)
        throw InputError(where[static_cast<size_t>(i)], "fixed",
                         what + " is not a multiple of the " + std::to_string(least) +
                             " it holds (" + why +
                             "), and factors_only needs each tile to divide the next");
      least = v;
      why = "tile " + std::to_string(v) + " on '" + l.name + "'";
    }
  }
}

}  // namespace

const std::vector<std::string>& style_names() {
  static const std::vector<std::string> names{"row_stationary", "weight_stationary",
                                              "output_stationary", "interstellar", "dmazerunner"};
  return names;
}

// ---- keep/bypass rules ----

namespace {

// `keep: [..]` / `bypass: [..]` of one level: only buffers keep or bypass;
// no tensor in both lists; a partitioned level keeps only tensors a
// partition holds.
void resolve_keep(const LevelConstraintSpec& ls, const Operator& op, const Level& l, LevelRule& r) {
  if (ls.keep.empty() && ls.bypass.empty()) return;
  const char* key = ls.keep.empty() ? "bypass" : "keep";
  if (l.kind != LevelKind::kBuffer)
    throw InputError(ls.where, key,
                     "level '" + l.name +
                         "' is not a buffer; only buffer levels keep or bypass "
                         "tensors (DRAM holds every tensor, a spatial level none)");
  r.keep.assign(op.tensors().size(), -1);
  for (const auto& name : ls.keep) {
    const int t = find_tensor(op, name, ls.where);
    if (!l.partitions.empty() && !l.partition_of(name))
      throw InputError(ls.where, "keep",
                       "level '" + l.name + "' has no partition holding tensor '" + name + "'");
    r.keep[static_cast<size_t>(t)] = 1;
  }
  for (const auto& name : ls.bypass) {
    const int t = find_tensor(op, name, ls.where);
    if (r.keep[static_cast<size_t>(t)] == 1)
      throw InputError(ls.where, "bypass",
                       "tensor '" + name + "' is both kept and bypassed at level '" + l.name + "'");
    r.keep[static_cast<size_t>(t)] = 0;
  }
}

// ---- cluster levels ----

/// `cluster:` of a spatial level: dimensions, fixed values in range, orders
/// that are permutations; a fixed cluster split must fit the fan-out and
/// be placeable on the array (splits_fit_array).
void resolve_cluster(const ClusterConstraintSpec& cs, const Operator& op, const Level& l,
                     ClusterRule& c) {
  const int n = op.num_dims();
  if (l.kind != LevelKind::kSpatial)
    throw InputError(cs.where, "cluster",
                     "level '" + l.name + "' is not spatial; only spatial levels have clusters");
  c.enabled = true;
  if (cs.parallel) {
    c.parallel_mask = 0;
    for (const auto& name : *cs.parallel)
      c.parallel_mask |= std::uint64_t{1} << find_dim(op, name, cs.where, "parallel");
  }
  auto fixed = [&](const std::map<std::string, std::int64_t>& values, const char* key,
                   std::vector<std::int64_t>& out) {
    for (const auto& [name, v] : values) {
      const DimId d = find_dim(op, name, cs.where, key);
      const std::int64_t bound = op.dims()[static_cast<size_t>(d)].bound;
      const std::int64_t top = std::string(key) == "split" ? std::min(bound, l.fanout()) : bound;
      if (v < 1 || v > top)
        throw InputError(cs.where, key,
                         std::string("cluster ") + key + " " + std::to_string(v) + " of '" + name +
                             "' on '" + l.name + "' is out of range (at most " +
                             std::to_string(top) + ")");
      if (std::string(key) == "split" && v > 1 && !(c.parallel_mask >> d & 1u))
        throw InputError(cs.where, key,
                         "the cluster of '" + l.name + "' must split '" + name +
                             "' but may not split it (parallel)");
      if (out.empty()) out.assign(static_cast<size_t>(n), 0);
      out[static_cast<size_t>(d)] = v;
    }
  };
  fixed(cs.split, "split", c.fixed_split);
  fixed(cs.tile, "tile", c.fixed_tile);
  if (!c.fixed_split.empty()) {
    std::vector<std::int64_t> units(c.fixed_split);
    for (auto& u : units) u = std::max<std::int64_t>(u, 1);
    if (!splits_fit_array(units, l))
      throw InputError(cs.where, "split",
                       "the fixed cluster splits on '" + l.name +
                           "' cannot be placed on its array (split_placement: " +
                           to_string(l.split_placement) + ")");
  }
  for (const auto& names : cs.orders) {
    std::vector<DimId> order;
    for (const auto& name : names) order.push_back(find_dim(op, name, cs.where, "orders"));
    std::set<DimId> distinct(order.begin(), order.end());
    if (static_cast<int>(order.size()) != n || static_cast<int>(distinct.size()) != n)
      throw InputError(cs.where, "orders",
                       "an order must name every dimension once (" + join(dim_names(op)) + ")");
    c.orders.push_back(std::move(order));
  }
}

// ---- factor limits and pinned innermost loops ----

/// Where each level's factor limits were written: [level][dimension].
using LimitWhere = std::vector<std::vector<SourceLocation>>;

/// `max_factor: {K: 4}` / `min_factor: {C: 2}` of one level, by dimension.
void resolve_limits(const LevelConstraintSpec& ls, const Operator& op, const Level& l, LevelRule& r,
                    std::vector<SourceLocation>& max_where,
                    std::vector<SourceLocation>& min_where) {
  auto read = [&](const std::map<std::string, FactorLimitSpec>& in, const char* key,
                  std::vector<std::int64_t>& out, std::vector<SourceLocation>& where) {
    for (const auto& [name, limit] : in) {
      const DimId d = find_dim(op, name, limit.where, key);
      if (limit.value < 1)
        throw InputError(limit.where, key,
                         "a factor bound is at least 1, got " + std::to_string(limit.value) +
                             " for '" + name + "' on '" + l.name + "'");
      if (out.empty()) out.assign(static_cast<size_t>(op.num_dims()), 0);
      out[static_cast<size_t>(d)] = limit.value;
      where[static_cast<size_t>(d)] = limit.where;
    }
  };
  read(ls.max_factor, "max_factor", r.max_factor, max_where);
  read(ls.min_factor, "min_factor", r.min_factor, min_where);
}

/// `innermost: [K, C]` of one level: a data level, known dimensions, each
/// named once.
void resolve_innermost(const LevelConstraintSpec& ls, const Operator& op, const Level& l,
                       LevelRule& r) {
  if (ls.innermost.empty()) return;
  auto where = [&](size_t k) {
    return k < ls.innermost_where.size() ? ls.innermost_where[k] : ls.where;
  };
  if (l.kind == LevelKind::kSpatial)
    throw InputError(where(0), "innermost",
                     "level '" + l.name + "' is spatial and has no loop order");
  r.innermost.clear();
  for (size_t k = 0; k < ls.innermost.size(); ++k) {
    const DimId d = find_dim(op, ls.innermost[k], where(k), "innermost");
    if (std::find(r.innermost.begin(), r.innermost.end(), d) != r.innermost.end())
      throw InputError(where(k), "innermost",
                       "'" + ls.innermost[k] + "' is pinned twice on '" + l.name +
                           "' (each loop may be named once)");
    r.innermost.push_back(d);
  }
}

/// The span of dimension d at level i when fixed values (and levels that
/// may not split d) determine it, else nothing. Level -1 is the MAC (1).
std::optional<std::int64_t> fixed_span(const Operator& op, const Architecture& arch,
                                       const std::vector<LevelRule>& rules, int i, DimId d) {
  const std::int64_t bound = op.dims()[static_cast<size_t>(d)].bound;
  if (i < 0) return 1;
  const Level& l = arch.levels()[static_cast<size_t>(i)];
  const LevelRule& r = rules[static_cast<size_t>(i)];
  const std::int64_t v = r.fixed.empty() ? 0 : r.fixed[static_cast<size_t>(d)];
  if (l.kind == LevelKind::kDram) return bound;
  if (l.kind == LevelKind::kBuffer) return v > 0 ? std::optional<std::int64_t>(v) : std::nullopt;
  if (r.cluster.enabled) return std::nullopt;  // the cluster tile sits between
  const std::int64_t split = v > 0 ? v : (r.parallel_mask >> d & 1u) ? 0 : 1;
  const auto below = fixed_span(op, arch, rules, i - 1, d);
  if (split == 0 || !below) return std::nullopt;
  return mul_capped(*below, split, bound);
}

/// The factor of dimension d at level i when fixed values determine it
/// (with where it comes from, for messages), else nothing.
std::optional<std::pair<std::int64_t, std::string>> fixed_factor(
    const Operator& op, const Architecture& arch, const std::vector<LevelRule>& rules, int i,
    DimId d) {
  const Level& l = arch.levels()[static_cast<size_t>(i)];
  const LevelRule& r = rules[static_cast<size_t>(i)];
  const std::int64_t v = r.fixed.empty() ? 0 : r.fixed[static_cast<size_t>(d)];
  if (l.kind == LevelKind::kSpatial) {
    if (v > 0) return std::make_pair(v, std::string("its fixed split"));
    if (!(r.parallel_mask >> d & 1u))
      return std::make_pair(std::int64_t{1}, std::string("the level may not split it: parallel"));
    return std::nullopt;
  }
  const auto tile = fixed_span(op, arch, rules, i, d);
  const auto below = fixed_span(op, arch, rules, i - 1, d);
  if (!tile || !below) return std::nullopt;
  const std::int64_t trips = (*tile + *below - 1) / *below;
  return std::make_pair(
      trips, std::string(l.kind == LevelKind::kDram ? "the bound " : "a fixed tile of ") +
                 std::to_string(*tile) + " over a span of " + std::to_string(*below) +
                 " fixed below");
}

/// Factor bounds no mapping can meet are bad input, like contradicting
/// fixed values: a minimum above the maximum, above what the level can
/// reach (its fan-out, the bound, no split where it may not split), or a
/// bound that the fixed tiles and splits already break.
void check_factor_limits(const Operator& op, const Architecture& arch,
                         const std::vector<LevelRule>& rules, const LimitWhere& max_where,
                         const LimitWhere& min_where) {
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    const LevelRule& r = rules[static_cast<size_t>(i)];
    if (!r.has_factor_limits()) continue;
    for (DimId d = 0; d < op.num_dims(); ++d) {
      const auto du = static_cast<size_t>(d);
      const std::int64_t hi = r.max_factor.empty() ? 0 : r.max_factor[du];
      const std::int64_t lo = r.min_factor.empty() ? 0 : r.min_factor[du];
      if (hi == 0 && lo == 0) continue;
      const std::string& name = op.dims()[du].name;
      const std::string on = " of '" + name + "' on '" + l.name + "'";
      const SourceLocation& hi_at = max_where[static_cast<size_t>(i)][du];
      const SourceLocation& lo_at = min_where[static_cast<size_t>(i)][du];
      if (hi && lo > hi)
        throw InputError(lo_at, "min_factor",
                         "min_factor " + std::to_string(lo) + on + " is above its max_factor " +
                             std::to_string(hi));
      const std::int64_t bound = op.dims()[du].bound;
      const std::int64_t reach =
          l.kind == LevelKind::kSpatial ? std::min(bound, l.fanout()) : bound;
      if (lo > reach)
        throw InputError(
            lo_at, "min_factor",
            "min_factor " + std::to_string(lo) + on + " is above the largest " +
                (l.kind == LevelKind::kSpatial ? "split" : "trip count") + " " +
                std::to_string(reach) + " (bound " + std::to_string(bound) + " in '" + op.name() +
                "'" +
                (l.kind == LevelKind::kSpatial ? ", fan-out " + std::to_string(l.fanout())
                                               : std::string()) +
                ")");
      const auto exact = fixed_factor(op, arch, rules, i, d);
      if (!exact) continue;
      if (hi && exact->first > hi)
        throw InputError(hi_at, "max_factor",
                         "max_factor " + std::to_string(hi) + on + " contradicts its factor " +
                             std::to_string(exact->first) + " (" + exact->second + ")");
      if (lo && exact->first < lo)
        throw InputError(lo_at, "min_factor",
                         "min_factor " + std::to_string(lo) + on + " contradicts its factor " +
                             std::to_string(exact->first) + " (" + exact->second + ")");
    }
  }
}

}  // namespace

// ---- end of keep/bypass and cluster rules ----

std::optional<std::string> rule_outside_limits(const MapspaceOptions& options,
                                               const Architecture& arch) {
  if (!options.style.empty()) return "style '" + options.style + "'";
  auto any_set = [](const auto& values, auto unset) {
    for (const auto& v : values)
      if (v != unset) return true;
    return false;
  };
  for (size_t i = 0; i < options.levels.size() && i < arch.levels().size(); ++i) {
    const LevelRule& r = options.levels[i];
    const std::string at = "level '" + arch.levels()[i].name + "': ";
    if (r.parallel_mask != ~std::uint64_t{0}) return at + "parallel";
    if (any_set(r.fixed, std::int64_t{0})) return at + "fixed";
    if (!r.orders.empty()) return at + "orders";
    if (!r.stationary.empty()) return at + "stationary";
    if (any_set(r.keep, std::int8_t{-1})) return at + "keep/bypass";
    if (r.cluster.enabled) return at + "cluster";
  }
  return std::nullopt;
}

MapspaceOptions resolve(const ConstraintSpec& spec, const Operator& op, const Architecture& arch) {
  MapspaceOptions out;
  out.factors_only = spec.factors_only;
  out.check_capacity = spec.check_capacity;
  out.max_parallel_dims = spec.max_parallel_dims;
  out.style = spec.style;
  if (spec.max_parallel_dims < 0)
    throw InputError(spec.utilization_where, "max_parallel_dims",
                     "expected 0 (the array's rank) or more");
  if (!(spec.min_utilization >= 0 && spec.min_utilization <= 1)) {
    std::ostringstream v;
    v << spec.min_utilization;
    throw InputError(spec.utilization_where, "min_utilization",
                     "expected a fraction of the PEs in [0, 1], got " + v.str());
  }
  out.min_utilization = spec.min_utilization;
  out.explore_bypass = spec.explore_bypass;

  const int n = op.num_dims();
  std::vector<LevelRule> rules(static_cast<size_t>(arch.num_levels()));
  if (!spec.style.empty()) apply_style(spec.style, spec.style_where, op, arch, rules);
  // Where each level's rules were written, for messages: the level's entry
  // in the spec, else the style that set them.
  std::vector<SourceLocation> where(static_cast<size_t>(arch.num_levels()), spec.style_where);
  LimitWhere max_where(static_cast<size_t>(arch.num_levels()),
                       std::vector<SourceLocation>(static_cast<size_t>(n)));
  LimitWhere min_where = max_where;

  for (const auto& ls : spec.levels) {
    const int index = arch.find_level(ls.level);
    if (index < 0) {
      std::vector<std::string> names;
      for (const auto& l : arch.levels()) names.push_back(l.name);
      throw InputError(ls.where, "level",
                       "architecture '" + arch.name() + "' has no level '" + ls.level +
                           "' (levels: " + join(names) + ")");
    }
    const Level& l = arch.levels()[static_cast<size_t>(index)];
    LevelRule& r = rules[static_cast<size_t>(index)];
    where[static_cast<size_t>(index)] = ls.where;
    const bool spatial = l.kind == LevelKind::kSpatial;
    if (ls.parallel) {
      if (!spatial)
        throw InputError(
            ls.where, "parallel",
            "level '" + l.name + "' is not spatial; only spatial levels split dimensions");
      r.parallel_mask = 0;
      for (const auto& name : *ls.parallel)
        r.parallel_mask |= std::uint64_t{1} << find_dim(op, name, ls.where, "parallel");
    }
    for (const auto& [name, v] : ls.fixed) {
      const DimId d = find_dim(op, name, ls.where, "fixed");
      const std::int64_t bound = op.dims()[static_cast<size_t>(d)].bound;
      if (l.kind == LevelKind::kDram)
        throw InputError(ls.where, "fixed", "DRAM holds the whole problem; fix tiles on buffers");
      if (v < 1 || (spatial && v > l.fanout()) || v > bound)
        throw InputError(ls.where, "fixed",
                         std::string(spatial ? "split" : "tile") + " " + std::to_string(v) +
                             " of '" + name + "' on '" + l.name + "' is out of range (bound " +
                             std::to_string(bound) +
                             (spatial ? ", fan-out " + std::to_string(l.fanout()) : "") + ")");
      if (r.fixed.empty()) r.fixed.assign(static_cast<size_t>(n), 0);
      r.fixed[static_cast<size_t>(d)] = v;
    }
    if ((!ls.orders.empty() || !ls.stationary.empty()) && spatial)
      throw InputError(ls.where, ls.orders.empty() ? "stationary" : "orders",
                       "level '" + l.name + "' is spatial and has no loop order");
    if (!ls.orders.empty()) r.orders.clear();
    for (const auto& names : ls.orders) {
      std::vector<DimId> order;
      for (const auto& name : names) order.push_back(find_dim(op, name, ls.where, "orders"));
      std::set<DimId> distinct(order.begin(), order.end());
      if (static_cast<int>(order.size()) != n || static_cast<int>(distinct.size()) != n)
        throw InputError(ls.where, "orders",
                         "an order must name every dimension once (" + join(dim_names(op)) + ")");
      r.orders.push_back(std::move(order));
    }
    if (!ls.stationary.empty()) {
      r.stationary.clear();
      for (const auto& name : ls.stationary)
        r.stationary.push_back(find_tensor(op, name, ls.where));
    }
    resolve_keep(ls, op, l, r);
    resolve_limits(ls, op, l, r, max_where[static_cast<size_t>(index)],
                   min_where[static_cast<size_t>(index)]);
    resolve_innermost(ls, op, l, r);
    if (ls.cluster) resolve_cluster(*ls.cluster, op, l, r.cluster);
  }
  // A fixed split on a dimension the level may not split contradicts.
  for (int i = 0; i < arch.num_levels(); ++i) {
    const LevelRule& r = rules[static_cast<size_t>(i)];
    if (r.fixed.empty()) continue;
    for (DimId d = 0; d < n; ++d)
      if (r.fixed[static_cast<size_t>(d)] > 1 &&
          arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial &&
          !(r.parallel_mask >> d & 1u))
        throw InputError(spec.style_where, "fixed",
                         "level '" + arch.levels()[static_cast<size_t>(i)].name + "' must split '" +
                             op.dims()[static_cast<size_t>(d)].name +
                             "' but may not split it (parallel dimensions)");
  }
  check_fixed_values(spec, op, arch, rules, where);
  check_factor_limits(op, arch, rules, max_where, min_where);
  const bool any = std::any_of(rules.begin(), rules.end(), [](const LevelRule& r) {
    return r.parallel_mask != ~std::uint64_t{0} || !r.fixed.empty() || r.order_constrained() ||
           !r.keep.empty() || r.cluster.enabled || r.has_factor_limits();
  });
  if (any) out.levels = std::move(rules);
  return out;
}

}  // namespace mapex
