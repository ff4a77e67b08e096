#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <mapex/analysis.hpp>
#include <sstream>

namespace mapex {

ExtentCounts partition(const ExtentCounts& parent, std::int64_t chunk, bool parallel) {
  ExtentCounts out;
  for (const auto& [extent, count] : parent) {
    if (parallel) {
      out[std::min(chunk, extent)] += count;
      continue;
    }
    const std::int64_t full = extent / chunk;
    const std::int64_t rest = extent % chunk;
    if (full > 0) out[chunk] += count * static_cast<double>(full);
    if (rest > 0) out[rest] += count;
  }
  return out;
}

double total_count(const ExtentCounts& counts) {
  double n = 0;
  for (const auto& [extent, count] : counts) n += count;
  return n;
}

double required_bytes(const Operator& op, const Architecture& arch, int level,
                      const std::vector<std::int64_t>& span) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  const boost::container::small_vector<double, 16> extent(span.begin(), span.end());
  double bytes = 0;
  for (const auto& t : op.tensors())
    bytes +=
        t.footprint(std::span<const double>(extent.data(), extent.size())) * arch.word_bytes_of(t);
  return bytes * (l.double_buffered ? 2.0 : 1.0);
}

double kept_bytes(const Operator& op, const Architecture& arch, const Mapping& mapping, int level,
                  const std::vector<std::int64_t>& span, const Partition* partition) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  const boost::container::small_vector<double, 16> extent(span.begin(), span.end());
  double bytes = 0;
  for (size_t t = 0; t < op.tensors().size(); ++t) {
    const Tensor& tensor = op.tensors()[t];
    if (!mapping.keeps(op, arch, level, static_cast<int>(t))) continue;
    if (partition && l.partition_of(tensor.name) != partition) continue;
    bytes += tensor.footprint(std::span<const double>(extent.data(), extent.size())) *
             arch.word_bytes_of(tensor);
  }
  return bytes * (l.double_buffered ? 2.0 : 1.0);
}

std::optional<std::string> level_capacity_error(const Operator& op, const Architecture& arch,
                                                const Mapping& mapping, int level,
                                                const std::vector<std::int64_t>& span) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  const char* buffering = l.double_buffered ? " (double-buffered)" : "";
  if (l.partitions.empty()) {
    const double need = kept_bytes(op, arch, mapping, level, span);
    if (need <= static_cast<double>(l.size_bytes)) return std::nullopt;
    std::ostringstream out;
    out << l.name << ": tiles need " << need << " B" << buffering << ", capacity " << l.size_bytes
        << " B";
    return out.str();
  }
  // Partitioned: each partition holds its own tensors;
  // one overflowing partition makes the mapping illegal even when the
  // level as a whole would have room.
  for (const auto& p : l.partitions) {
    const double need = kept_bytes(op, arch, mapping, level, span, &p);
    if (need <= static_cast<double>(p.size_bytes)) continue;
    std::string held;
    for (size_t t = 0; t < op.tensors().size(); ++t)
      if (l.partition_of(op.tensors()[t].name) == &p &&
          mapping.keeps(op, arch, level, static_cast<int>(t)))
        held += (held.empty() ? "" : ", ") + op.tensors()[t].name;
    std::ostringstream out;
    out << l.name << "/" << p.name << ": tiles of " << held << " need " << need << " B" << buffering
        << ", partition capacity " << p.size_bytes << " B";
    return out.str();
  }
  return std::nullopt;
}

std::optional<std::string> capacity_error(const Operator& op, const Architecture& arch,
                                          const Mapping& mapping) {
  for (int i = 0; i < arch.num_levels(); ++i) {
    if (arch.levels()[static_cast<size_t>(i)].kind != LevelKind::kBuffer) continue;
    if (auto error = level_capacity_error(op, arch, mapping, i, mapping.level(i).tile))
      return error;
  }
  return std::nullopt;
}

namespace {

constexpr double kEps = 1e-9;

struct Context {
  const Operator& op;
  const Architecture& arch;
  const Mapping& mapping;
  size_t n;
  const std::vector<std::vector<double>>& count;  // NestAnalysis::tile_counts
  const NestAnalysis& a;

  double tiles(int level, size_t d) const { return count[static_cast<size_t>(level + 1)][d]; }
  /// Trip count of the loops (temporal or spatial) of `level` along d,
  /// averaged over edge tiles: children per tile.
  double trips(int level, size_t d) const { return tiles(level - 1, d) / tiles(level, d); }
  /// Of a spatial level: the units side by side along d (the split over
  /// the clusters times the split inside a cluster), leaving out the
  /// cluster level's temporal steps.
  double spatial_trips(int level, size_t d) const {
    const auto l = static_cast<size_t>(level);
    return a.cluster_counts[l][d] / tiles(level, d) * (tiles(level - 1, d) / a.step_counts[l][d]);
  }
  /// Of a spatial level: the temporal steps of its cluster level along d.
  double cluster_trips(int level, size_t d) const {
    const auto l = static_cast<size_t>(level);
    return a.step_counts[l][d] / a.cluster_counts[l][d];
  }
  bool spatial(int level) const {
    return arch.levels()[static_cast<size_t>(level)].kind == LevelKind::kSpatial;
  }
};

// Traffic of tensor t between data level `child` (or -1: the MACs) and the
// data level `parent` above it that next keeps t (levels in between bypass
// it: their loops still run, so reuse is read through them). Reuse (Marvel §5's temporal reuse,
// Timeloop's stationarity): a child's tile of t stays put across the innermost loops above it,
// flattened over the levels, that do not index t; the first loop that indexes t ends the reuse.
// Spatial levels in between multicast inputs and reduce outputs along dimensions that do not index
// t. Computed in parts so a mapping that changes only loop orders redoes only the later ones, and
// only from the lowest level whose order changed: boundary_tiling (footprint, distinct tiles,
// sharing: tiling and keep chain), the scan's outcome (LevelScans, ending_mask: which reuse each
// level multiplies, where it ends), apply_reuse (the reuse) and boundary_result (the words);
// reorder_boundary stops after the outcome when it did not change, boundary_words restores
// words seen before.
using Boundary = TrafficMemo::Boundary;

void boundary_tiling(const Context& cx, size_t tensor, Boundary& b) {
  const Tensor& t = cx.op.tensors()[tensor];
  const int ti = static_cast<int>(tensor);
  const size_t n = cx.n;
  const int child = b.child;
  boost::container::small_vector<double, 16> avg_extent(n, 1.0);
  for (size_t d = 0; d < n; ++d)
    avg_extent[d] = static_cast<double>(cx.op.dims()[d].bound) / cx.tiles(child, d);
  b.footprint = 1;
  for (const auto& sub : t.subscripts) {
    double extent = 1;
    for (const auto& term : sub.terms)
      extent += std::abs(static_cast<double>(term.coeff)) *
                (avg_extent[static_cast<size_t>(term.dim)] - 1);
    b.footprint *= extent;
  }
  b.distinct = 1;
  for (size_t d = 0; d < n; ++d) {
    if (cx.op.relevant(ti, static_cast<DimId>(d))) {
      b.distinct *= cx.tiles(child, d);
    } else {
      for (int s = child + 1; s < cx.arch.num_levels(); ++s)
        if (cx.spatial(s)) b.distinct *= cx.spatial_trips(s, d);
    }
  }
  // Per spatial level between child and parent, the factor by which it
  // shares traffic (multicast for inputs, reduction for outputs).
  const bool is_output = t.role == TensorRole::kOutput;
  b.shared = 1;
  b.shared_if_reduced = 1;
  b.cumulative.clear();
  for (int s = child + 1; s < b.parent; ++s) {
    if (!cx.spatial(s)) continue;  // a buffer that bypasses t
    const Noc& noc = cx.arch.levels()[static_cast<size_t>(s)].noc;
    double factor = 1;
    for (size_t d = 0; d < n; ++d)
      if (!cx.op.relevant(ti, static_cast<DimId>(d))) factor *= cx.spatial_trips(s, d);
    if (is_output ? noc.reduction : noc.multicast) b.shared *= factor;
    b.shared_if_reduced *= factor;
    b.cumulative.emplace_back(s, b.shared);
  }
  b.reuse_at.assign(static_cast<size_t>(cx.arch.num_levels()) * n, 1.0);
  b.reused.assign(static_cast<size_t>(cx.arch.num_levels()), 0);
  b.seen.clear();
  b.next_evicted = 0;
}

// What the reuse scan does at each level, for each tensor: it
// walks a level's loops innermost first (a spatial level: its cluster
// level's temporal loops, FLASH's inner steps over T^out, which refill the
// child from the parent; the spatial splits themselves are not loops in
// time); a loop with one trip neither reuses nor ends it, a loop indexing
// the tensor ends it, any other multiplies the tensor's reuse along its
// dimension (Marvel §5's temporal reuse). mask[m * tensors + t]: the
// dimensions whose reuse of t level m multiplies; ends[...]: the scan of t
// ends at m. Every boundary of t that scans level m reads the same entry,
// so a level's order is walked once per tensor, not once per boundary.
struct LevelScans {
  size_t tensors = 0;
  boost::container::small_vector<std::uint64_t, 32> mask;
  boost::container::small_vector<char, 32> ends;

  // The entries of levels `from` and up.
  LevelScans(const Context& cx, int from) : tensors(cx.op.tensors().size()) {
    const size_t n = cx.n;
    const int L = cx.arch.num_levels();
    mask.assign(static_cast<size_t>(L) * tensors, 0);
    ends.assign(static_cast<size_t>(L) * tensors, 0);
    for (int m = from; m < L; ++m) {
      const std::vector<DimId>* order = &cx.mapping.level(m).order;
      if (cx.spatial(m)) {
        const auto& cluster = cx.mapping.level(m).cluster;
        order = cluster.active() ? &cluster.order : nullptr;
      }
      if (!order) continue;
      const double* trips = cx.a.memo.trips.data() + static_cast<size_t>(m) * n;
      for (size_t t = 0; t < tensors; ++t) {
        const size_t k = static_cast<size_t>(m) * tensors + t;
        for (auto it = order->rbegin(); it != order->rend(); ++it) {
          if (trips[static_cast<size_t>(*it)] <= 1 + kEps) continue;
          if (cx.op.relevant(static_cast<int>(t), *it)) {
            ends[k] = 1;
            break;
          }
          mask[k] |= std::uint64_t{1} << *it;
        }
      }
    }
  }
};

// The reuse of a scan whose outcome b.reused and b.stop hold, from the row
// of level `from` upwards (each dimension's reuse is a product over the
// levels, in level order, as the scan multiplies it): b.reuse, and the rows
// reuse_at[m] of the levels it enters on the way.
void apply_reuse(const Context& cx, int from, Boundary& b) {
  const size_t n = cx.n;
  const int L = cx.arch.num_levels();
  b.reuse.assign(
      b.reuse_at.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(from) * n),
      b.reuse_at.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(from + 1) * n));
  for (int m = from; m <= b.stop && m < L; ++m) {
    if (m > from)
      std::copy(b.reuse.begin(), b.reuse.end(),
                b.reuse_at.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(m) * n));
    const double* trips = cx.a.memo.trips.data() + static_cast<size_t>(m) * n;
    for (std::uint64_t mask = b.reused[static_cast<size_t>(m)]; mask != 0; mask &= mask - 1) {
      const auto d = static_cast<size_t>(std::countr_zero(mask));
      b.reuse[d] *= trips[d];
    }
  }
}

// a / b, skipping the division when b is 1 (most reuse and sharing
// factors are): x / 1 is x exactly, so the figures are the same, and along
// the stream the divisions were most of a recomputed boundary's time.
double over(double a, double b) { return b == 1.0 ? a : a / b; }

// The words that cross the boundary, from its tiling part and its reuse.
void boundary_result(const Context& cx, size_t tensor, Boundary& b) {
  const size_t n = cx.n;
  double loads = 1;  // tile (re)loads over all child instances
  for (size_t d = 0; d < n; ++d) loads *= over(cx.tiles(b.child, d), b.reuse[d]);
  TensorTraffic out;
  if (cx.op.tensors()[tensor].role != TensorRole::kOutput) {
    out.fills = loads * b.footprint;
    out.parent_reads = over(out.fills, b.shared);
    b.traffic = out;
    return;
  }
  // Outputs: every residency sends its partial sums up; every residency but
  // the first of a tile reads the partial sums back.
  out.updates = loads * b.footprint;
  out.parent_writes = over(out.updates, b.shared);
  b.readback = over(std::max(0.0, loads - b.distinct) * b.footprint, b.shared);
  out.fills = b.readback;
  // A network without spatial reduction (MAESTRO Table 1) delivers the
  // partial sums an adder tree would have merged one by one; the parent
  // adds each to its running sum by a read-modify-write.
  const double unreduced = out.parent_writes - over(out.updates, b.shared_if_reduced);
  out.parent_reads = b.readback + unreduced;
  b.traffic = out;
}

// What the boundary's words put on the networks between child and parent.
void add_noc_traffic(const Boundary& b, bool is_output, size_t tensor, NestAnalysis& a) {
  if (!is_output) {
    for (const auto& [s, factor] : b.cumulative)
      a.noc_down[static_cast<size_t>(s)][tensor] += over(b.traffic.fills, factor);
    return;
  }
  for (const auto& [s, factor] : b.cumulative) {
    a.noc_up[static_cast<size_t>(s)][tensor] += over(b.traffic.updates, factor);
    a.noc_down[static_cast<size_t>(s)][tensor] += b.readback;
  }
}

// Where a boundary's reuse scan ends does not depend on any loop order: a
// level ends it when one of its loops with more than one trip indexes the
// tensor, wherever that loop sits. Nor does what a level it passes through
// multiplies (all of its loops with more than one trip). Only the level
// where it ends reads its order: the loops inside the first one indexing
// the tensor. So within a tiling and keep chain a boundary moves only with
// the order of its `stop` level, and its reuse only by the dimensions that
// level multiplies (Boundary::reused[stop]).

// What the scan of tensor t multiplies at level m, which ends it: the
// dimensions of the loops inside the first one (innermost first) with more
// than one trip that indexes t.
std::uint64_t ending_mask(const Context& cx, size_t tensor, int m) {
  const LevelMapping& lm = cx.mapping.level(m);
  // A spatial level ends a scan only through an active cluster level.
  const std::vector<DimId>& order = cx.spatial(m) ? lm.cluster.order : lm.order;
  const double* trips = cx.a.memo.trips.data() + static_cast<size_t>(m) * cx.n;
  std::uint64_t mask = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (trips[static_cast<size_t>(*it)] <= 1 + kEps) continue;
    if (cx.op.relevant(static_cast<int>(tensor), *it)) break;
    mask |= std::uint64_t{1} << *it;
  }
  return mask;
}

// The words of boundary b from its scan's outcome: restored when the
// outcome at its stop level was seen before for this tiling and keep chain
// (along the stream the same few come back again and again), otherwise
// computed from the reuse it enters the stop level with, and kept.
void boundary_words(const Context& cx, size_t tensor, Boundary& b) {
  const int L = cx.arch.num_levels();
  const std::uint64_t key = b.stop < L ? b.reused[static_cast<size_t>(b.stop)] : 0;
  for (const auto& o : b.seen)
    if (o.key == key) {
      b.traffic = o.traffic;
      b.readback = o.readback;
      return;
    }
  apply_reuse(cx, std::min(b.stop, L - 1), b);
  boundary_result(cx, tensor, b);
  const TrafficMemo::Boundary::Outcome o{key, b.traffic, b.readback};
  if (b.seen.size() < 16)
    b.seen.push_back(o);
  else
    b.seen[b.next_evicted++ % b.seen.size()] = o;
}

// Boundary b after boundary_tiling: the whole scan, the rows of reuse it
// enters each level with (fixed for the tiling and keep chain), the words.
void rebuild_boundary(const Context& cx, const LevelScans& scans, size_t tensor, Boundary& b) {
  const int L = cx.arch.num_levels();
  const int from = b.child + 1;
  b.stop = L;
  for (int m = from; m < L; ++m) {
    const size_t k = static_cast<size_t>(m) * scans.tensors + tensor;
    b.reused[static_cast<size_t>(m)] = scans.mask[k];
    if (scans.ends[k]) {
      b.stop = m;
      break;
    }
  }
  apply_reuse(cx, from, b);
  boundary_result(cx, tensor, b);
  const std::uint64_t key = b.stop < L ? b.reused[static_cast<size_t>(b.stop)] : 0;
  b.seen.assign(1, TrafficMemo::Boundary::Outcome{key, b.traffic, b.readback});
  b.next_evicted = 0;
}

// Boundary b after the orders of levels `low` and up moved (b.stop >= low):
// false when the dimensions its stop level multiplies stayed the same.
bool reorder_boundary(const Context& cx, size_t tensor, Boundary& b) {
  if (b.stop >= cx.arch.num_levels()) return false;  // no level ends it: no order read
  const std::uint64_t mask = ending_mask(cx, tensor, b.stop);
  if (mask == b.reused[static_cast<size_t>(b.stop)]) return false;
  b.reused[static_cast<size_t>(b.stop)] = mask;
  boundary_words(cx, tensor, b);
  return true;
}

// Equality of two short vectors of integers, compared inline: a handful of
// elements, for which a call into the C library's memcmp cost more than
// the comparison (a sixth of a score along the stream).
template <class T>
bool same_values(const std::vector<T>& x, const std::vector<T>& y) {
  if (x.size() != y.size()) return false;
  const T* a = x.data();
  const T* b = y.data();
  for (size_t i = 0; i < x.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// The trip counts the reuse scan reads (TrafficMemo::trips).
void fill_trips(const Context& cx, std::vector<double>& trips) {
  const size_t n = cx.n;
  const int L = cx.arch.num_levels();
  trips.assign(static_cast<size_t>(L) * n, 1.0);
  for (int m = 0; m < L; ++m)
    for (size_t d = 0; d < n; ++d)
      trips[static_cast<size_t>(m) * n + d] =
          cx.spatial(m) ? cx.cluster_trips(m, d) : cx.trips(m, d);
}

// What level `level`'s accounts take from the operator and architecture.
TrafficMemo::LevelConstants level_constants(const Operator& op, const Architecture& arch,
                                            int level) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  TrafficMemo::LevelConstants k;
  k.kind = l.kind;
  k.hop_energy_pj = l.noc.hop_energy_pj;
  for (const Tensor& t : op.tensors()) {
    k.read_energy_pj.push_back(l.read_energy_of(t.name));
    k.write_energy_pj.push_back(l.write_energy_of(t.name));
    k.word_bytes.push_back(arch.word_bytes_of(t));
  }
  const double instances = static_cast<double>(arch.instances(level));
  // Bytes per cycle of a port of `gbps` shared by the instances.
  auto rate = [&](double gbps) { return arch.bytes_per_cycle(gbps) * instances; };
  if (l.kind == LevelKind::kSpatial) {
    k.has_port = l.noc.bandwidth_gbps > 0;
    if (k.has_port) k.port = rate(l.noc.bandwidth_gbps);
    return k;
  }
  k.has_port = l.bandwidth_gbps.has_value();
  if (k.has_port) k.port = rate(*l.bandwidth_gbps);
  k.has_read_port = l.read_bandwidth_gbps.has_value();
  if (k.has_read_port) k.read_port = rate(*l.read_bandwidth_gbps);
  k.has_write_port = l.write_bandwidth_gbps.has_value();
  if (k.has_write_port) k.write_port = rate(*l.write_bandwidth_gbps);
  return k;
}

// The loop order the reuse scan reads at `level`.
const std::vector<DimId>& scanned_order(const Context& cx, int level) {
  static const std::vector<DimId> kNone;
  const LevelMapping& lm = cx.mapping.level(level);
  if (!cx.spatial(level)) return lm.order;
  return lm.cluster.active() ? lm.cluster.order : kNone;
}

}  // namespace

namespace {

// Sizes `v` as rows x cols, reusing its storage (the analysis runs once per
// mapping in a sweep; reallocating every row each time dominated its cost).
template <class T>
void reshape(std::vector<std::vector<T>>& v, size_t rows, size_t cols, const T& value) {
  v.resize(rows);
  for (auto& row : v) row.assign(cols, value);
}

}  // namespace

bool same_tiling(const Mapping& x, const Mapping& y) {
  if (x.levels().size() != y.levels().size()) return false;
  for (size_t i = 0; i < x.levels().size(); ++i) {
    const LevelMapping& a = x.levels()[i];
    const LevelMapping& b = y.levels()[i];
    if (!same_values(a.tile, b.tile) || !same_values(a.split, b.split) ||
        !same_values(a.cluster.split, b.cluster.split) ||
        !same_values(a.cluster.tile, b.cluster.tile))
      return false;
  }
  return true;
}

void analyse_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                  NestAnalysis& a) {
  analyse_tiling_into(op, arch, mapping, a);
  analyse_traffic_into(op, arch, mapping, a);
}

void analyse_tiling_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                         NestAnalysis& a) {
  const size_t n = static_cast<size_t>(op.num_dims());
  const int L = arch.num_levels();
  const auto Lu = static_cast<size_t>(L);
  a.macs = static_cast<double>(op.macs());
  a.memo.valid = false;  // the traffic part depends on the tiling
  // Spans, innermost first (Mapping::span, without a vector per level).
  a.span.resize(Lu);
  for (size_t i = 0; i < Lu; ++i) {
    auto& span = a.span[i];
    if (arch.levels()[i].kind == LevelKind::kSpatial) {
      const auto& lm = mapping.level(static_cast<int>(i));
      if (lm.cluster.active()) {
        span = spatial_span(op, lm, i == 0 ? std::vector<std::int64_t>(n, 1) : a.span[i - 1]);
        continue;
      }
      span.resize(n);
      for (size_t d = 0; d < n; ++d)
        span[d] = std::min((i == 0 ? 1 : a.span[i - 1][d]) * lm.split[d], op.dims()[d].bound);
    } else {
      span = mapping.level(static_cast<int>(i)).tile;
    }
  }

  // Tile distributions, outermost first (data view and time view).
  reshape(a.tiles, Lu, n, ExtentCounts{});
  reshape(a.time, Lu, n, ExtentCounts{});
  for (size_t d = 0; d < n; ++d) {
    a.tiles[Lu - 1][d] = {{op.dims()[d].bound, 1.0}};
    a.time[Lu - 1][d] = {{op.dims()[d].bound, 1.0}};
  }
  reshape(a.cluster_counts, Lu, n, 0.0);
  reshape(a.step_counts, Lu, n, 0.0);
  ExtentCounts clusters_data, clusters_time, steps_data, steps_time;
  for (int i = L - 2; i >= 0; --i) {
    const auto iu = static_cast<size_t>(i);
    const bool parallel = arch.levels()[iu + 1].kind == LevelKind::kSpatial;
    const LevelMapping& above = mapping.level(i + 1);
    if (!parallel || !above.cluster.active()) {
      for (size_t d = 0; d < n; ++d) {
        a.tiles[iu][d] = partition(a.tiles[iu + 1][d], a.span[iu][d], false);
        a.time[iu][d] = partition(a.time[iu + 1][d], a.span[iu][d], parallel);
      }
      continue;
    }
    // A cluster level (FLASH Table 2, MAESTRO's Cluster): the clusters run
    // side by side over tiles of T^out, step through them in time by the
    // span of one step, whose children run side by side again.
    std::vector<std::int64_t> step;
    spatial_span(op, above, a.span[iu], &step);
    for (size_t d = 0; d < n; ++d) {
      clusters_data = partition(a.tiles[iu + 1][d], above.cluster.tile[d], false);
      clusters_time = partition(a.time[iu + 1][d], above.cluster.tile[d], true);
      steps_data = partition(clusters_data, step[d], false);
      steps_time = partition(clusters_time, step[d], false);
      a.cluster_counts[iu + 1][d] = total_count(clusters_data);
      a.step_counts[iu + 1][d] = total_count(steps_data);
      a.tiles[iu][d] = partition(steps_data, a.span[iu][d], false);
      a.time[iu][d] = partition(steps_time, a.span[iu][d], true);
    }
  }
  // The MACs below level 0 see chunks of 1; in lock step when level 0 is spatial.
  const bool mac_parallel = arch.levels()[0].kind == LevelKind::kSpatial;
  double steps = 1;
  for (size_t d = 0; d < n; ++d) steps *= total_count(partition(a.time[0][d], 1, mac_parallel));
  a.compute_cycles = steps / arch.macs_per_pe();

  reshape(a.tile_counts, Lu + 1, n, 0.0);
  for (size_t d = 0; d < n; ++d) {
    a.tile_counts[0][d] = static_cast<double>(op.dims()[d].bound);
    for (size_t i = 0; i < Lu; ++i) a.tile_counts[i + 1][d] = total_count(a.tiles[i][d]);
    // Levels without a cluster level: one cluster, one step per tile.
    for (size_t i = 0; i < Lu; ++i)
      if (a.cluster_counts[i][d] == 0) {
        a.cluster_counts[i][d] = a.tile_counts[i + 1][d];
        a.step_counts[i][d] = a.tile_counts[i + 1][d];
      }
  }
}

namespace {

// One tensor's part of one level's accounts (level_metrics): its reads and
// writes, the energy they cost and the bytes they move. `below` is the data
// level under this one that keeps the tensor (-1: the MACs); a level that
// bypasses it has no access to it.
TensorTerms account_tensor(const NestAnalysis& a, int level, const TrafficMemo::LevelConstants& k,
                           int below, size_t t) {
  const auto iu = static_cast<size_t>(level);
  TensorTerms out;
  double reads = 0, writes = 0;
  if (k.kind == LevelKind::kSpatial) {
    reads = a.noc_down[iu][t];
    writes = a.noc_up[iu][t];
    out.energy_pj = (reads + writes) * k.hop_energy_pj;
  } else if (a.keeps[iu][t]) {
    // As the parent of the level below that keeps t (or of the MACs).
    const TensorTraffic& child =
        below < 0 ? a.mac_traffic[t] : a.traffic[static_cast<size_t>(below)][t];
    reads += child.parent_reads;
    writes += child.parent_writes;
    // As the child of the level above.
    if (k.kind != LevelKind::kDram) {
      const TensorTraffic& own = a.traffic[iu][t];
      writes += own.fills;
      reads += own.updates;
    }
    // A partitioned level charges each tensor its partition's energies.
    out.energy_pj = reads * k.read_energy_pj[t] + writes * k.write_energy_pj[t];
  }
  // Bytes, not words: tensors may have their own word widths (WordWidths).
  const double width = k.word_bytes[t];
  out.reads = reads;
  out.writes = writes;
  out.bytes = (reads + writes) * width;
  out.read_bytes = reads * width;
  out.write_bytes = writes * width;
  return out;
}

// A level's energy and transfer cycles from its tensors' terms, summed in
// tensor order (so a level accounted tensor by tensor, or with some
// tensors' terms kept from before, gives the same numbers).
LevelCost level_total(const TrafficMemo::LevelConstants& k, const TensorTerms* terms, size_t nt) {
  LevelCost cost;
  double bytes = 0, read_bytes = 0, write_bytes = 0;
  for (size_t t = 0; t < nt; ++t) {
    cost.energy_pj += terms[t].energy_pj;
    bytes += terms[t].bytes;
    read_bytes += terms[t].read_bytes;
    write_bytes += terms[t].write_bytes;
  }
  // Cycles through each port shared by the instances; a network without a
  // bandwidth never bounds the latency. Separate read and write ports
  // (Timeloop): each limits its own traffic.
  if (k.has_port) cost.transfer_cycles = bytes / k.port;
  if (k.has_read_port)
    cost.transfer_cycles = std::max(cost.transfer_cycles, read_bytes / k.read_port);
  if (k.has_write_port)
    cost.transfer_cycles = std::max(cost.transfer_cycles, write_bytes / k.write_port);
  return cost;
}

// One level's accounts: each tensor's reads and writes, handed to
// `on_access(tensor, reads, writes)`, and the level's energy and transfer
// cycles. `below[t]` is the data level under this one that keeps tensor t.
template <class OnAccess>
LevelCost account_level(const NestAnalysis& a, int level, const TrafficMemo::LevelConstants& k,
                        const int* below, OnAccess&& on_access) {
  const size_t nt = k.word_bytes.size();
  boost::container::small_vector<TensorTerms, 8> terms(nt);
  for (size_t t = 0; t < nt; ++t) {
    terms[t] = account_tensor(a, level, k, below[t], t);
    on_access(t, terms[t].reads, terms[t].writes);
  }
  return level_total(k, terms.data(), nt);
}

// Advances `below` past level i: the tensors it keeps are now held there.
void step_below(const Architecture& arch, const NestAnalysis& a, int level,
                boost::container::small_vector<int, 8>& below) {
  const auto iu = static_cast<size_t>(level);
  if (arch.levels()[iu].kind == LevelKind::kSpatial) return;
  for (size_t t = 0; t < below.size(); ++t)
    if (a.keeps[iu][t]) below[t] = level;
}

}  // namespace

namespace {

// The incremental traffic analysis (analyse_traffic_into), from the keep
// choices' and the orders' change since the previous call: `keep_changed`
// and `low`, the lowest level whose scanned order may differ (L: none).
void traffic_from(const Context& cx, NestAnalysis& a, bool keep_changed, int low);

}  // namespace

void analyse_traffic_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                          NestAnalysis& a, const MappingChange& change) {
  const int L = arch.num_levels();
  const Context cx{op, arch, mapping, static_cast<size_t>(op.num_dims()), a.tile_counts, a};
  TrafficMemo& memo = a.memo;
  if (!memo.valid) {
    // A new tiling: everything from scratch, as without a change.
    analyse_traffic_into(op, arch, mapping, a);
    return;
  }
  memo.orders_known = false;  // not compared, so not recorded
  traffic_from(cx, a, change.keep, std::clamp(change.lowest_order, 0, L));
}

void analyse_traffic_into(const Operator& op, const Architecture& arch, const Mapping& mapping,
                          NestAnalysis& a) {
  const size_t n = static_cast<size_t>(op.num_dims());
  const int L = arch.num_levels();
  const auto Lu = static_cast<size_t>(L);
  const Context cx{op, arch, mapping, n, a.tile_counts, a};
  TrafficMemo& memo = a.memo;

  // What changed since the previous call: the keep choices (then every
  // boundary is rebuilt) and the lowest level whose scanned order differs.
  bool keep_changed = !memo.valid;
  int low = memo.valid ? L : 0;
  if (memo.valid) {
    for (size_t i = 0; i < Lu && !keep_changed; ++i)
      keep_changed = memo.keep[i] != mapping.levels()[i].keep;
    if (!memo.orders_known) low = 0;
    for (int i = 0; i < L && low == L; ++i)
      if (!same_values(memo.orders[static_cast<size_t>(i)], scanned_order(cx, i))) low = i;
  }
  memo.orders.resize(Lu);
  for (int i = low; i < L; ++i) memo.orders[static_cast<size_t>(i)] = scanned_order(cx, i);
  memo.orders_known = true;
  traffic_from(cx, a, keep_changed, low);
}

namespace {

void traffic_from(const Context& cx, NestAnalysis& a, bool keep_changed, int low) {
  const Operator& op = cx.op;
  const Architecture& arch = cx.arch;
  const Mapping& mapping = cx.mapping;
  const int L = arch.num_levels();
  const auto Lu = static_cast<size_t>(L);
  TrafficMemo& memo = a.memo;
  const size_t nt = op.tensors().size();
  if (!memo.valid) {
    // A new tiling (or a new operator and architecture).
    fill_trips(cx, memo.trips);
    memo.levels_valid = false;
    keep_changed = true;
    low = 0;
  }

  if (keep_changed) {
    memo.keep.resize(Lu);
    for (size_t i = 0; i < Lu; ++i) memo.keep[i] = mapping.levels()[i].keep;
    reshape(a.keeps, Lu, nt, char{0});
    a.required_bytes.assign(Lu, 0.0);
    for (int i = 0; i < L; ++i) {
      if (!arch.levels()[static_cast<size_t>(i)].holds_data()) continue;
      for (size_t t = 0; t < nt; ++t)
        a.keeps[static_cast<size_t>(i)][t] = mapping.keeps(op, arch, i, static_cast<int>(t));
      if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer)
        a.required_bytes[static_cast<size_t>(i)] =
            kept_bytes(op, arch, mapping, i, a.span[static_cast<size_t>(i)]);
    }
    // Per tensor, the chain of levels keeping it, innermost first (DRAM
    // always ends it), as boundaries from the MACs upwards.
    memo.boundaries.resize(nt);
    for (size_t t = 0; t < nt; ++t) {
      auto& chain = memo.boundaries[t];
      chain.reserve(Lu + 1);  // no moves of boundaries while it grows
      size_t k = 0;
      int child = -1;
      for (int i = 0; i < L; ++i) {
        if (!a.keeps[static_cast<size_t>(i)][t]) continue;
        if (chain.size() <= k) chain.emplace_back();
        chain[k].child = child;
        chain[k].parent = i;
        boundary_tiling(cx, t, chain[k]);
        child = i;
        ++k;
      }
      chain.resize(k);
    }
  }
  memo.valid = true;

  // The outputs: rebuilt whole after a keep change; otherwise only the
  // tensors with a recomputed boundary are rewritten (their network sums
  // re-added in the same order, so they are the same numbers).
  if (keep_changed) {
    reshape(a.traffic, Lu, nt, TensorTraffic{});
    reshape(a.noc_down, Lu, nt, 0.0);
    reshape(a.noc_up, Lu, nt, 0.0);
    a.mac_traffic.resize(nt);
  }
  // The tensors whose accounts a recomputed boundary touches, per level: its
  // child, its parent and the networks in between, for its own tensor only
  // (TrafficMemo::stale).
  if (keep_changed)
    memo.stale.assign(Lu, ~std::uint64_t{0});
  else if (memo.stale.size() < Lu)
    memo.stale.resize(Lu, ~std::uint64_t{0});
  // A new tiling or keep chain: every level's scan for every boundary.
  const std::optional<LevelScans> scans =
      keep_changed ? std::optional<LevelScans>(std::in_place, cx, 0) : std::nullopt;
  for (size_t t = 0; t < nt; ++t) {
    const bool is_output = op.tensors()[t].role == TensorRole::kOutput;
    const std::uint64_t tensor_bit = std::uint64_t{1} << std::min<size_t>(t, 63);
    // Whether a recomputed boundary of t crosses a network: only then are
    // t's network sums added up again (in the same order, so they are the
    // same numbers); the words of the others are written where they are.
    bool networks = keep_changed;
    for (Boundary& b : memo.boundaries[t]) {
      // Of the orders, the scan reads only its stop level's (low == L: no
      // order changed).
      if (!keep_changed && !(low < L && b.stop >= low)) continue;
      if (keep_changed)
        rebuild_boundary(cx, *scans, t, b);
      else if (!reorder_boundary(cx, t, b))
        continue;
      networks = networks || !b.cumulative.empty();
      (b.child < 0 ? a.mac_traffic[t] : a.traffic[static_cast<size_t>(b.child)][t]) = b.traffic;
      for (int i = std::max(b.child, 0); i <= b.parent; ++i)
        memo.stale[static_cast<size_t>(i)] |= tensor_bit;
    }
    if (!networks) continue;
    for (size_t i = 0; i < Lu; ++i) a.noc_down[i][t] = a.noc_up[i][t] = 0;
    for (const Boundary& b : memo.boundaries[t]) add_noc_traffic(b, is_output, t, a);
  }
  // The level accounts, for level_costs.
  if (keep_changed) memo.below_valid = false;
}

}  // namespace

NestAnalysis analyse(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  NestAnalysis a;
  analyse_into(op, arch, mapping, a);
  return a;
}

void level_costs(const Operator& op, const Architecture& arch, const NestAnalysis& a,
                 std::vector<LevelCost>& out) {
  const int L = arch.num_levels();
  const auto Lu = static_cast<size_t>(L);
  const size_t nt = op.tensors().size();
  const TrafficMemo& m = a.memo;
  if (!m.valid) {  // not from analyse_traffic_into: every level from scratch
    out.resize(Lu);
    boost::container::small_vector<int, 8> below(nt, -1);
    for (int i = 0; i < L; ++i) {
      out[static_cast<size_t>(i)] = account_level(a, i, level_constants(op, arch, i), below.data(),
                                                  [](size_t, double, double) {});
      step_below(arch, a, i, below);
    }
    return;
  }
  // Along the stream: only the tensors of the levels whose inputs changed
  // since the last call (TrafficMemo::stale) are accounted again; a move of
  // DRAM's order changes only some tensors' boundaries.
  if (!m.levels_valid) {
    m.levels.resize(Lu);
    for (int i = 0; i < L; ++i) m.levels[static_cast<size_t>(i)] = level_constants(op, arch, i);
    m.levels_valid = true;
    m.stale.assign(Lu, ~std::uint64_t{0});
  }
  if (!m.below_valid) {
    m.below.assign(Lu * nt, -1);
    boost::container::small_vector<int, 8> below(nt, -1);
    for (int i = 0; i < L; ++i) {
      std::copy(below.begin(), below.end(),
                m.below.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * nt));
      step_below(arch, a, i, below);
    }
    m.costs.resize(Lu);
    m.terms.resize(Lu * nt);
    m.below_valid = true;
    m.stale.assign(Lu, ~std::uint64_t{0});
  }
  for (size_t i = 0; i < Lu; ++i) {
    const std::uint64_t stale = m.stale[i];
    if (stale == 0) continue;
    const TrafficMemo::LevelConstants& k = m.levels[i];
    const int* below = m.below.data() + i * nt;
    TensorTerms* terms = m.terms.data() + i * nt;
    for (size_t t = 0; t < nt; ++t)
      if (t >= 63 || (stale >> t & 1))  // bit 63 stands for tensors 63 and up
        terms[t] = account_tensor(a, static_cast<int>(i), k, below[t], t);
    m.costs[i] = level_total(k, terms, nt);
    m.stale[i] = 0;
  }
  out.assign(m.costs.begin(), m.costs.end());
}

std::vector<LevelMetrics> level_metrics(const Operator& op, const Architecture& arch,
                                        const NestAnalysis& a) {
  std::vector<LevelMetrics> out;
  boost::container::small_vector<int, 8> below(op.tensors().size(), -1);  // -1: the MACs
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    LevelMetrics lm;
    lm.level = l.name;
    const LevelCost cost =
        account_level(a, i, level_constants(op, arch, i), below.data(),
                      [&](size_t t, double reads, double writes) {
                        lm.tensors.push_back(TensorAccess{op.tensors()[t].name, reads, writes});
                      });
    lm.energy_pj = cost.energy_pj;
    lm.transfer_cycles = cost.transfer_cycles;
    if (l.kind == LevelKind::kBuffer) {
      lm.required_bytes = a.required_bytes[static_cast<size_t>(i)];
      lm.capacity_bytes = static_cast<double>(l.size_bytes);
    }
    step_below(arch, a, i, below);
    out.push_back(std::move(lm));
  }
  return out;
}

RooflinePeak roofline_peak(const Operator& op, const Architecture& arch) {
  RooflinePeak peak;
  peak.compute_cycles =
      static_cast<double>(op.macs()) / (static_cast<double>(arch.num_pes()) * arch.macs_per_pe());
  peak.cycles = peak.compute_cycles;
  peak.bound_by = "compute";
  double bytes = 0, input_bytes = 0;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
    const Tensor& tensor = op.tensors()[static_cast<size_t>(t)];
    const double size = static_cast<double>(op.tensor_size(t)) * arch.word_bytes_of(tensor);
    bytes += size;
    if (tensor.role == TensorRole::kInput) input_bytes += size;
  }
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    const auto instances = static_cast<double>(arch.instances(i));
    auto at = [&](double b, double gbps) { return b / (arch.bytes_per_cycle(gbps) * instances); };
    double cycles = 0;
    if (l.kind == LevelKind::kSpatial) {
      if (l.noc.bandwidth_gbps > 0) cycles = at(bytes, l.noc.bandwidth_gbps);
    } else {
      // Inputs cross once as reads, outputs once as writes.
      if (l.bandwidth_gbps) cycles = at(bytes, *l.bandwidth_gbps);
      if (l.read_bandwidth_gbps) cycles = std::max(cycles, at(input_bytes, *l.read_bandwidth_gbps));
      if (l.write_bandwidth_gbps)
        cycles = std::max(cycles, at(bytes - input_bytes, *l.write_bandwidth_gbps));
    }
    if (cycles > peak.cycles) {
      peak.cycles = cycles;
      peak.bound_by = l.name;
    }
  }
  return peak;
}

}  // namespace mapex
