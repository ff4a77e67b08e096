#include <algorithm>
#include <mapex/checked.hpp>
#include <mapex/mapping.hpp>
#include <mapex/timeloop.hpp>
#include <numeric>
#include <sstream>

#include "mapping_checks.hpp"

namespace mapex {

using detail::cluster_error;
using detail::identity_order;
using detail::keep_error;

bool operator==(const LevelMapping& a, const LevelMapping& b) {
  return a.tile == b.tile && a.order == b.order && a.split == b.split && a.axes == b.axes &&
         a.cluster == b.cluster && a.keep == b.keep;
}

std::vector<std::int64_t> spatial_span(const Operator& op, const LevelMapping& lm,
                                       const std::vector<std::int64_t>& child,
                                       std::vector<std::int64_t>* inner) {
  const auto n = static_cast<size_t>(op.num_dims());
  std::vector<std::int64_t> span(n);
  if (inner) inner->resize(n);
  for (size_t d = 0; d < n; ++d) {
    const std::int64_t bound = op.dims()[d].bound;
    // Capped products: splits come from files and searchers unchecked, and
    // a span never exceeds the bound (overflow would wrap below it).
    const std::int64_t step =
        lm.cluster.active() ? mul_capped(child[d], lm.cluster.split[d], bound) : child[d];
    if (inner) (*inner)[d] = step;
    const std::int64_t covered = lm.cluster.active() ? lm.cluster.tile[d] : step;
    span[d] = mul_capped(covered, lm.split[d], bound);
  }
  return span;
}

std::int64_t units_used(const LevelMapping& lm) {
  std::int64_t used = 1;
  for (auto s : lm.split) used = mul_saturating(used, s);
  if (lm.cluster.active())
    for (auto s : lm.cluster.split) used = mul_saturating(used, s);
  return used;
}

bool Mapping::operator==(const Mapping& other) const { return levels_ == other.levels_; }

namespace detail {

std::vector<DimId> identity_order(int n) {
  std::vector<DimId> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

}  // namespace detail

namespace {

/// A spatial level's explicit placement (`axes`, `order`) is either absent
/// or complete: every split on the array's axes within their sizes, and on
/// one axis each where the level says so.
std::optional<std::string> explicit_placement_error(const Operator& op, const Level& level,
                                                    const LevelMapping& lm) {
  const auto n = static_cast<size_t>(op.num_dims());
  if (!lm.order.empty()) {
    std::vector<DimId> sorted = lm.order;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != identity_order(op.num_dims()))
      return std::string("order must name every dimension exactly once");
  }
  if (lm.axes.empty()) return std::nullopt;
  if (lm.axes.size() != n) return std::string("axes need one entry per dimension");
  std::vector<std::int64_t> used(level.shape.size(), 1);
  for (size_t d = 0; d < n; ++d) {
    const auto& name = op.dims()[d].name;
    if (lm.axes[d].size() != level.shape.size())
      return "axes of " + name + " give " + std::to_string(lm.axes[d].size()) +
             " factors; the array has " + std::to_string(level.shape.size()) + " axes";
    std::int64_t product = 1;
    int axes_used = 0;
    for (size_t a = 0; a < level.shape.size(); ++a) {
      if (lm.axes[d][a] > 1) ++axes_used;
      if (lm.axes[d][a] < 1) return "axes of " + name + " must be at least 1";
      product = mul_saturating(product, lm.axes[d][a]);
      used[a] = mul_saturating(used[a], lm.axes[d][a]);
    }
    if (product != lm.split[d])
      return "axes of " + name + " multiply to " + std::to_string(product) + ", its split is " +
             std::to_string(lm.split[d]);
    if (axes_used > 1 && level.split_placement == SplitPlacement::kOneAxis)
      return "axes of " + name + " spread its split over " + std::to_string(axes_used) +
             " axes; the level's split_placement is one_axis (say across_axes to allow it)";
  }
  for (size_t a = 0; a < level.shape.size(); ++a)
    if (used[a] > level.shape[a])
      return "splits placed on axis " + std::to_string(a) + " need " + std::to_string(used[a]) +
             " children, the axis has " + std::to_string(level.shape[a]);
  return std::nullopt;
}

}  // namespace

namespace detail {

/// A cluster level (ClusterMapping) is complete and consistent: its split
/// fits the bounds over the children's span, its tile lies between the span
/// of one step and the bound, its order is a permutation.
std::optional<std::string> cluster_error(const Operator& op, const LevelMapping& lm,
                                         const std::vector<std::int64_t>& child) {
  const auto n = static_cast<size_t>(op.num_dims());
  const ClusterMapping& c = lm.cluster;
  if (c.split.size() != n || c.tile.size() != n)
    return std::string("cluster split and tile need one entry per dimension");
  std::vector<DimId> sorted = c.order;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != identity_order(op.num_dims()))
    return std::string("cluster order must name every dimension exactly once");
  for (size_t d = 0; d < n; ++d) {
    const auto& dim = op.dims()[d];
    if (c.split[d] < 1) return "cluster split of " + dim.name + " must be at least 1";
    if (mul_saturating(child[d], c.split[d] - 1) >= dim.bound)
      return "cluster split of " + dim.name + " is " + std::to_string(c.split[d]) +
             " but tiles of " + std::to_string(child[d]) + " cover its bound " +
             std::to_string(dim.bound) + " with fewer units";
    const std::int64_t step = mul_capped(child[d], c.split[d], dim.bound);
    if (c.tile[d] < step || c.tile[d] > dim.bound)
      return "cluster tile of " + dim.name + " is " + std::to_string(c.tile[d]) +
             "; expected between " + std::to_string(step) + " (the span of one cluster step) and " +
             std::to_string(dim.bound) + " (the bound)";
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

/// Depth-first placement of factors[i..] on the room left on each axis
/// (room[a]: the largest product axis a still takes, so a factor f fits
/// when f <= room[a] and leaves room[a] / f). Largest factors first keeps
/// the search short; there are a handful of factors and axes at most.
bool place_factors(const std::vector<std::int64_t>& factors, size_t i,
                   std::vector<std::int64_t>& room, bool across) {
  if (i == factors.size()) return true;
  const std::int64_t f = factors[i];
  if (!across) {
    for (auto& r : room) {
      if (f > r) continue;
      const std::int64_t before = r;
      r /= f;
      if (place_factors(factors, i + 1, room, across)) return true;
      r = before;
    }
    return false;
  }
  // Across axes: give axis a a divisor g of what is left of f, then go on
  // with the next axis; the factor is placed when nothing is left.
  auto spread = [&](auto&& self, size_t a, std::int64_t left) -> bool {
    if (left == 1) return place_factors(factors, i + 1, room, across);
    if (a == room.size()) return false;
    for (std::int64_t g = std::min(left, room[a]); g >= 1; --g) {
      if (left % g != 0) continue;
      const std::int64_t before = room[a];
      room[a] /= g;
      if (self(self, a + 1, left / g)) return true;
      room[a] = before;
    }
    return false;
  };
  return spread(spread, 0, f);
}

std::string split_list(const Operator& op, const std::vector<std::int64_t>& split) {
  std::string out;
  for (size_t d = 0; d < split.size(); ++d)
    if (split[d] > 1)
      out += (out.empty() ? "" : " x ") + op.dims()[d].name + std::to_string(split[d]);
  return out;
}

}  // namespace

bool splits_fit_array(std::vector<std::int64_t> factors, const Level& level) {
  std::erase(factors, std::int64_t{1});
  if (level.split_placement == SplitPlacement::kFlat || level.shape.size() <= 1) {
    std::int64_t product = 1;
    for (auto f : factors) {
      product = mul_saturating(product, f);
      if (product > level.fanout()) return false;
    }
    return true;
  }
  std::sort(factors.rbegin(), factors.rend());
  std::vector<std::int64_t> room = level.shape;
  return place_factors(factors, 0, room, level.split_placement == SplitPlacement::kAcrossAxes);
}

std::optional<std::string> placement_error(const Operator& op, const Level& level,
                                           const LevelMapping& lm) {
  if (auto error = explicit_placement_error(op, level, lm)) return error;
  if (!lm.axes.empty()) return std::nullopt;
  std::vector<std::int64_t> factors = lm.split;
  if (lm.cluster.active())
    factors.insert(factors.end(), lm.cluster.split.begin(), lm.cluster.split.end());
  if (splits_fit_array(factors, level)) return std::nullopt;
  std::string shape;
  for (size_t a = 0; a < level.shape.size(); ++a)
    shape += (a ? " x " : "") + std::to_string(level.shape[a]);
  std::string what = split_list(op, lm.split);
  if (lm.cluster.active()) what += " (cluster " + split_list(op, lm.cluster.split) + ")";
  return "splits " + what + " cannot be placed on the " + shape +
         " array (split_placement: " + to_string(level.split_placement) + ")";
}

// ---- Per-tensor keep/bypass ----

namespace {

bool default_keep(const Level& level, const Tensor& tensor) {
  return level.partitions.empty() || level.partition_of(tensor.name) != nullptr;
}

}  // namespace

namespace detail {

/// Why a level's `keep` does not fit the architecture and operator.
std::optional<std::string> keep_error(const Operator& op, const Level& level,
                                      const LevelMapping& lm) {
  const auto& tensors = op.tensors();
  if (level.kind == LevelKind::kBuffer && !level.partitions.empty()) {
    bool any = false;
    for (const auto& t : tensors) any = any || level.partition_of(t.name) != nullptr;
    if (!any) {
      std::string names;
      for (const auto& t : tensors) names += (names.empty() ? "" : ", ") + t.name;
      return "none of its partitions holds a tensor of operator '" + op.name() + "' (" + names +
             ")";
    }
  }
  if (lm.keep.empty()) return std::nullopt;
  if (level.kind != LevelKind::kBuffer)
    return std::string("only buffer levels keep or bypass tensors (") +
           (level.kind == LevelKind::kDram ? "DRAM holds every tensor"
                                           : "a spatial level holds none") +
           ")";
  if (lm.keep.size() != tensors.size())
    return "keep needs one entry per tensor (" + std::to_string(tensors.size()) + ")";
  for (size_t t = 0; t < tensors.size(); ++t)
    if (lm.keep[t] && !level.partitions.empty() && !level.partition_of(tensors[t].name))
      return "keeps " + tensors[t].name + " but no partition of the level holds it";
  return std::nullopt;
}

}  // namespace detail

bool Mapping::keeps(const Operator& op, const Architecture& arch, int level, int tensor) const {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  if (l.kind == LevelKind::kDram) return true;
  if (l.kind == LevelKind::kSpatial) return false;
  const auto& keep = levels_[static_cast<size_t>(level)].keep;
  if (!keep.empty()) return keep[static_cast<size_t>(tensor)];
  return default_keep(l, op.tensors()[static_cast<size_t>(tensor)]);
}

std::vector<int> Mapping::keeping_levels(const Operator& op, const Architecture& arch,
                                         int tensor) const {
  std::vector<int> out;
  for (int i = 0; i < arch.num_levels(); ++i)
    if (keeps(op, arch, i, tensor)) out.push_back(i);
  return out;
}

// ---- end of keep/bypass ----

Mapping Mapping::trivial(const Operator& op, const Architecture& arch) {
  const auto n = static_cast<size_t>(op.num_dims());
  std::vector<LevelMapping> levels;
  for (const auto& level : arch.levels()) {
    LevelMapping lm;
    switch (level.kind) {
      case LevelKind::kBuffer:
        lm.tile.assign(n, 1);
        lm.order = identity_order(op.num_dims());
        break;
      case LevelKind::kSpatial:
        lm.split.assign(n, 1);
        break;
      case LevelKind::kDram:
        for (const auto& d : op.dims()) lm.tile.push_back(d.bound);
        lm.order = identity_order(op.num_dims());
        break;
    }
    levels.push_back(std::move(lm));
  }
  return Mapping(std::move(levels));
}

std::vector<std::int64_t> Mapping::span(const Operator& op, const Architecture& arch,
                                        int level) const {
  const auto n = static_cast<size_t>(op.num_dims());
  std::vector<std::int64_t> child(n, 1);
  for (int i = 0; i <= level; ++i) {
    const auto& lm = levels_[static_cast<size_t>(i)];
    if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial)
      child = spatial_span(op, lm, child);
    else
      child = lm.tile;
  }
  return child;
}

std::optional<std::string> Mapping::structural_error(const Operator& op,
                                                     const Architecture& arch) const {
  const auto n = static_cast<size_t>(op.num_dims());
  if (levels_.size() != arch.levels().size())
    return "mapping has " + std::to_string(levels_.size()) + " levels, architecture '" +
           arch.name() + "' has " + std::to_string(arch.levels().size());
  std::vector<std::int64_t> child(n, 1);
  for (size_t i = 0; i < levels_.size(); ++i) {
    const Level& level = arch.levels()[i];
    const LevelMapping& lm = levels_[i];
    const std::string where = "level '" + level.name + "'";
    if (level.kind == LevelKind::kSpatial) {
      if (lm.split.size() != n) return where + ": split needs one entry per dimension";
      if (lm.cluster.active()) {
        if (auto error = cluster_error(op, lm, child)) return where + ": " + *error;
        if (!lm.axes.empty())
          return where + ": a placement (axes) of a level with a cluster level is not supported";
        child = lm.cluster.tile;
      }
      std::int64_t used = 1;
      for (size_t d = 0; d < n; ++d) {
        const auto& dim = op.dims()[d];
        if (lm.split[d] < 1) return where + ": split of " + dim.name + " must be at least 1";
        if (mul_saturating(child[d], lm.split[d] - 1) >= dim.bound)
          return where + ": split of " + dim.name + " is " + std::to_string(lm.split[d]) +
                 " but tiles of " + std::to_string(child[d]) + " cover its bound " +
                 std::to_string(dim.bound) + " with fewer children";
        used = mul_saturating(used, lm.split[d]);
        child[d] = mul_capped(child[d], lm.split[d], dim.bound);
      }
      if (lm.cluster.active())
        for (auto c : lm.cluster.split) used = mul_saturating(used, c);
      if (used > level.fanout())
        return where + ": splits use " + std::to_string(used) + " children, fan-out is " +
               std::to_string(level.fanout());
      if (auto error = placement_error(op, level, lm)) return where + ": " + *error;
      if (auto error = keep_error(op, level, lm)) return where + ": " + *error;
      continue;
    }
    if (auto error = keep_error(op, level, lm)) return where + ": " + *error;
    if (lm.tile.size() != n) return where + ": tile needs one entry per dimension";
    for (size_t d = 0; d < n; ++d) {
      const auto& dim = op.dims()[d];
      if (lm.tile[d] < child[d] || lm.tile[d] > dim.bound)
        return where + ": tile of " + dim.name + " is " + std::to_string(lm.tile[d]) +
               "; expected between " + std::to_string(child[d]) + " (the span below) and " +
               std::to_string(dim.bound) + " (the bound)";
      if (level.kind == LevelKind::kDram && lm.tile[d] != dim.bound)
        return where + ": DRAM holds the whole tensor; tile of " + dim.name + " must be " +
               std::to_string(dim.bound);
    }
    std::vector<DimId> sorted = lm.order;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != identity_order(op.num_dims()))
      return where + ": order must name every dimension exactly once";
    child = lm.tile;
  }
  return std::nullopt;
}

std::string Mapping::summary(const Operator& op, const Architecture& arch) const {
  std::ostringstream out;
  std::vector<std::int64_t> child(static_cast<size_t>(op.num_dims()), 1);
  for (size_t i = 0; i < levels_.size(); ++i) {
    const Level& level = arch.levels()[i];
    const LevelMapping& lm = levels_[i];
    if (i) out << ' ';
    out << level.name << '[';
    bool first = true;
    auto item = [&](DimId d, std::int64_t v) {
      out << (first ? "" : " ") << op.dims()[static_cast<size_t>(d)].name << v;
      first = false;
    };
    if (level.kind == LevelKind::kSpatial) {
      for (size_t d = 0; d < lm.split.size(); ++d)
        if (lm.split[d] > 1) item(static_cast<DimId>(d), lm.split[d]);
      if (lm.cluster.active()) {
        // The cluster level: its temporal loops (trip counts, outermost
        // first), then its split, e.g. `cluster(M8 N2 / K16)`.
        std::vector<std::int64_t> inner;
        spatial_span(op, lm, child, &inner);
        std::string loops, units;
        for (auto d : lm.cluster.order) {
          const auto du = static_cast<size_t>(d);
          const std::int64_t trips = ceil_div(lm.cluster.tile[du], inner[du]);
          if (trips > 1) loops += " " + op.dims()[du].name + std::to_string(trips);
        }
        for (size_t d = 0; d < lm.cluster.split.size(); ++d)
          if (lm.cluster.split[d] > 1)
            units += " " + op.dims()[d].name + std::to_string(lm.cluster.split[d]);
        out << (first ? "" : " ") << "cluster(" << (loops.empty() ? "" : loops.substr(1)) << " /"
            << units << ')';
      }
    } else {
      // Loops of this level, outermost first, with their trip counts.
      for (auto d : lm.order) {
        const auto du = static_cast<size_t>(d);
        const std::int64_t trips = ceil_div(lm.tile[du], child[du]);
        if (trips > 1) item(d, trips);
      }
      child = lm.tile;
    }
    out << ']';
    if (level.kind == LevelKind::kSpatial) child = spatial_span(op, lm, child);
  }
  return out.str();
}

}  // namespace mapex
