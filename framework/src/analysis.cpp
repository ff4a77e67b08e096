#include <algorithm>
#include <cmath>
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
  std::vector<double> extent(span.begin(), span.end());
  double words = 0;
  for (const auto& t : op.tensors()) words += t.footprint(extent);
  return words * arch.word_bytes() * (l.double_buffered ? 2.0 : 1.0);
}

std::optional<std::string> capacity_error(const Operator& op, const Architecture& arch,
                                          const Mapping& mapping) {
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    if (l.kind != LevelKind::kBuffer) continue;
    const double need = required_bytes(op, arch, i, mapping.level(i).tile);
    if (need > static_cast<double>(l.size_bytes)) {
      std::ostringstream out;
      out << l.name << ": tiles need " << need << " B"
          << (l.double_buffered ? " (double-buffered)" : "") << ", capacity " << l.size_bytes
          << " B";
      return out.str();
    }
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
  // count[level + 1][d]: number of tiles of the level over all instances and
  // time; index 0 is the MAC "level" (span 1).
  std::vector<std::vector<double>> count;

  double tiles(int level, size_t d) const { return count[static_cast<size_t>(level + 1)][d]; }
  /// Trip count of the loops (temporal or spatial) of `level` along d,
  /// averaged over edge tiles: children per tile.
  double trips(int level, size_t d) const { return tiles(level - 1, d) / tiles(level, d); }
  bool spatial(int level) const {
    return arch.levels()[static_cast<size_t>(level)].kind == LevelKind::kSpatial;
  }
};

// Traffic of tensor t between data level `child` (or -1: the MACs) and the
// data level `parent` above it. Reuse (Marvel §5's temporal reuse, Timeloop's
// stationarity): a child's tile of t stays put across the innermost loops
// above it, flattened over the levels, that do not index t; the first loop
// that indexes t ends the reuse. Spatial levels in between multicast inputs
// and reduce outputs along dimensions that do not index t.
TensorTraffic boundary_traffic(const Context& cx, int child, int parent, size_t tensor,
                               NestAnalysis& a) {
  const Tensor& t = cx.op.tensors()[tensor];
  const int ti = static_cast<int>(tensor);
  const size_t n = cx.n;
  boost::container::small_vector<double, 16> avg_extent(n, 1.0);
  for (size_t d = 0; d < n; ++d)
    avg_extent[d] = static_cast<double>(cx.op.dims()[d].bound) / cx.tiles(child, d);
  double footprint = 1;
  for (const auto& sub : t.subscripts) {
    double extent = 1;
    for (const auto& term : sub.terms)
      extent += std::abs(static_cast<double>(term.coeff)) *
                (avg_extent[static_cast<size_t>(term.dim)] - 1);
    footprint *= extent;
  }

  boost::container::small_vector<double, 16> reuse(n, 1.0);
  bool done = false;
  for (int m = parent; m < cx.arch.num_levels() && !done; ++m) {
    if (cx.spatial(m)) continue;
    const auto& order = cx.mapping.level(m).order;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto d = static_cast<size_t>(*it);
      const double trip = cx.trips(m, d);
      if (trip <= 1 + kEps) continue;
      if (cx.op.relevant(ti, *it)) {
        done = true;
        break;
      }
      reuse[d] *= trip;
    }
  }

  double loads = 1;     // tile (re)loads over all child instances
  double distinct = 1;  // distinct (child instance, tile) pairs
  for (size_t d = 0; d < n; ++d) {
    loads *= cx.tiles(child, d) / reuse[d];
    if (cx.op.relevant(ti, static_cast<DimId>(d))) {
      distinct *= cx.tiles(child, d);
    } else {
      for (int s = child + 1; s < cx.arch.num_levels(); ++s)
        if (cx.spatial(s)) distinct *= cx.trips(s, d);
    }
  }

  TensorTraffic out;
  // Per spatial level between child and parent, the factor by which it
  // shares traffic (multicast for inputs, reduction for outputs).
  const bool is_output = t.role == TensorRole::kOutput;
  double shared = 1;
  boost::container::small_vector<std::pair<int, double>, 4> cumulative;
  for (int s = child + 1; s < parent; ++s) {
    const Noc& noc = cx.arch.levels()[static_cast<size_t>(s)].noc;
    if (is_output ? noc.reduction : noc.multicast)
      for (size_t d = 0; d < n; ++d)
        if (!cx.op.relevant(ti, static_cast<DimId>(d))) shared *= cx.trips(s, d);
    cumulative.emplace_back(s, shared);
  }

  if (!is_output) {
    out.fills = loads * footprint;
    out.parent_reads = out.fills / shared;
    for (const auto& [s, factor] : cumulative)
      a.noc_down[static_cast<size_t>(s)][tensor] += out.fills / factor;
    return out;
  }
  // Outputs: every residency sends its partial sums up; every residency but
  // the first of a tile reads the partial sums back.
  out.updates = loads * footprint;
  out.parent_writes = out.updates / shared;
  const double readback = std::max(0.0, loads - distinct) * footprint / shared;
  out.fills = readback;
  out.parent_reads = readback;
  for (const auto& [s, factor] : cumulative) {
    a.noc_up[static_cast<size_t>(s)][tensor] += out.updates / factor;
    a.noc_down[static_cast<size_t>(s)][tensor] += readback;
  }
  return out;
}

}  // namespace

NestAnalysis analyse(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  const size_t n = static_cast<size_t>(op.num_dims());
  const int L = arch.num_levels();
  NestAnalysis a;
  a.macs = static_cast<double>(op.macs());
  for (int i = 0; i < L; ++i) a.span.push_back(mapping.span(op, arch, i));

  // Tile distributions, outermost first (data view and time view).
  a.tiles.assign(static_cast<size_t>(L), std::vector<ExtentCounts>(n));
  std::vector<std::vector<ExtentCounts>> time(static_cast<size_t>(L), std::vector<ExtentCounts>(n));
  for (size_t d = 0; d < n; ++d) {
    a.tiles[static_cast<size_t>(L - 1)][d] = {{op.dims()[d].bound, 1.0}};
    time[static_cast<size_t>(L - 1)][d] = {{op.dims()[d].bound, 1.0}};
  }
  for (int i = L - 2; i >= 0; --i) {
    const auto iu = static_cast<size_t>(i);
    const bool parallel = arch.levels()[iu + 1].kind == LevelKind::kSpatial;
    for (size_t d = 0; d < n; ++d) {
      a.tiles[iu][d] = partition(a.tiles[iu + 1][d], a.span[iu][d], false);
      time[iu][d] = partition(time[iu + 1][d], a.span[iu][d], parallel);
    }
  }
  // The MACs below level 0 see chunks of 1; in lock step when level 0 is spatial.
  const bool mac_parallel = arch.levels()[0].kind == LevelKind::kSpatial;
  double steps = 1;
  for (size_t d = 0; d < n; ++d) steps *= total_count(partition(time[0][d], 1, mac_parallel));
  a.compute_cycles = steps / arch.macs_per_pe();

  Context cx{op, arch, mapping, n, {}};
  cx.count.assign(static_cast<size_t>(L + 1), std::vector<double>(n));
  for (size_t d = 0; d < n; ++d) {
    cx.count[0][d] = static_cast<double>(op.dims()[d].bound);
    for (int i = 0; i < L; ++i)
      cx.count[static_cast<size_t>(i + 1)][d] = total_count(a.tiles[static_cast<size_t>(i)][d]);
  }

  std::vector<int> data_levels;
  for (int i = 0; i < L; ++i)
    if (arch.levels()[static_cast<size_t>(i)].holds_data()) data_levels.push_back(i);

  const size_t nt = op.tensors().size();
  a.traffic.assign(static_cast<size_t>(L), std::vector<TensorTraffic>(nt));
  a.required_bytes.assign(static_cast<size_t>(L), 0.0);
  a.noc_down.assign(static_cast<size_t>(L), std::vector<double>(nt, 0.0));
  a.noc_up.assign(static_cast<size_t>(L), std::vector<double>(nt, 0.0));
  for (size_t t = 0; t < nt; ++t) {
    a.mac_traffic.push_back(boundary_traffic(cx, -1, data_levels.front(), t, a));
    for (size_t k = 0; k + 1 < data_levels.size(); ++k)
      a.traffic[static_cast<size_t>(data_levels[k])][t] =
          boundary_traffic(cx, data_levels[k], data_levels[k + 1], t, a);
  }
  for (int i : data_levels)
    if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kBuffer)
      a.required_bytes[static_cast<size_t>(i)] =
          required_bytes(op, arch, i, a.span[static_cast<size_t>(i)]);
  return a;
}

std::vector<LevelMetrics> level_metrics(const Operator& op, const Architecture& arch,
                                        const NestAnalysis& a) {
  const size_t nt = op.tensors().size();
  std::vector<LevelMetrics> out;
  int previous_data = -1;  // -1: the MACs
  for (int i = 0; i < arch.num_levels(); ++i) {
    const auto iu = static_cast<size_t>(i);
    const Level& l = arch.levels()[iu];
    LevelMetrics lm;
    lm.level = l.name;
    double words = 0;
    for (size_t t = 0; t < nt; ++t) {
      const Tensor& tensor = op.tensors()[t];
      TensorAccess acc{tensor.name, 0, 0};
      if (l.kind == LevelKind::kSpatial) {
        acc.reads = a.noc_down[iu][t];
        acc.writes = a.noc_up[iu][t];
        lm.energy_pj += (acc.reads + acc.writes) * l.noc.hop_energy_pj;
      } else {
        // As the parent of the level below (or of the MACs).
        const TensorTraffic& below =
            previous_data < 0 ? a.mac_traffic[t] : a.traffic[static_cast<size_t>(previous_data)][t];
        acc.reads += below.parent_reads;
        acc.writes += below.parent_writes;
        // As the child of the level above.
        if (l.kind != LevelKind::kDram) {
          const TensorTraffic& own = a.traffic[iu][t];
          acc.writes += own.fills;
          acc.reads += own.updates;
        }
        lm.energy_pj += acc.reads * l.read_energy_pj + acc.writes * l.write_energy_pj;
      }
      words += acc.reads + acc.writes;
      lm.tensors.push_back(acc);
    }
    const double bytes = words * arch.word_bytes();
    const double instances = static_cast<double>(arch.instances(i));
    if (l.kind == LevelKind::kSpatial) {
      lm.transfer_cycles = bytes / (arch.bytes_per_cycle(l.noc.bandwidth_gbps) * instances);
    } else {
      if (l.bandwidth_gbps)
        lm.transfer_cycles = bytes / (arch.bytes_per_cycle(*l.bandwidth_gbps) * instances);
      if (l.kind == LevelKind::kBuffer) {
        lm.required_bytes = a.required_bytes[iu];
        lm.capacity_bytes = static_cast<double>(l.size_bytes);
      }
      previous_data = i;
    }
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
  double words = 0;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) words += op.tensor_size(t);
  const double bytes = words * arch.word_bytes();
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    std::optional<double> gbps = l.kind == LevelKind::kSpatial
                                     ? std::optional<double>(l.noc.bandwidth_gbps)
                                     : l.bandwidth_gbps;
    if (!gbps) continue;
    const double cycles =
        bytes / (arch.bytes_per_cycle(*gbps) * static_cast<double>(arch.instances(i)));
    if (cycles > peak.cycles) {
      peak.cycles = cycles;
      peak.bound_by = l.name;
    }
  }
  return peak;
}

}  // namespace mapex
