// KAPLA's tensor-centric cost model (§IV-A "Cost model"), computed from the
// directives a canonical mapping stands for (§III-B):
//
// - `tensor` sizes give what every buffer holds (validity: all tensors fit,
//   `shr` included; parallelism: the stacks fit the array shape);
// - `update`s over `tensor`s give the accesses between each pair of
//   adjacent data levels: the stacked tile of a tensor is loaded once per
//   iteration of the loops outside and including the innermost loop that
//   indexes it (loops inside that one reuse it), and consecutive loads of
//   that loop share their overlap (a sliding window keeps it; §III-B, "new
//   data evict the old");
// - `stack`s give the copies: with next-level broadcast the parent sends
//   each word once; with same-level forwarding only the unique words come
//   from the parent and neighbours serve the rest (§III-C), one hop each;
//   buffer sharing stores a replicated tensor once over `shr` buffers;
// - energy = accesses x access cost + hops x hop cost + MACs + idle, and
//   latency is a roofline over the MACs, every memory level and every NoC.

#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <mapex/directives.hpp>
#include <sstream>

namespace mapex::tc {

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::vector<double> as_extent(const std::vector<std::int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

/// Data levels (buffers and DRAM), innermost first, and for each the spatial
/// levels between it and the next data level.
struct Plan {
  std::vector<int> data;
  std::vector<std::vector<int>> spatial_above;  ///< per data level
};

Plan make_plan(const Architecture& arch) {
  Plan p;
  std::vector<int> pending;
  for (int i = 0; i < arch.num_levels(); ++i) {
    if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial) {
      pending.push_back(i);
      continue;
    }
    if (!p.data.empty()) p.spatial_above.back() = pending;
    pending.clear();
    p.data.push_back(i);
    p.spatial_above.emplace_back();
  }
  return p;
}

/// One loop of a data level over the stacked tiles of the level below.
struct Loop {
  DimId dim;
  std::int64_t trips;
  int level;  ///< architecture index of the data level that owns it
};

}  // namespace

namespace {

// ---- keep/bypass and partitions ----

/// Words buffer level `level` holds of tensor t: its tile's footprint over
/// the sharing factor, or nothing when the level bypasses t.
double held_words(const Operator& op, const Architecture& arch, const Mapping& mapping, int level,
                  int t) {
  if (!mapping.keeps(op, arch, level, t)) return 0;
  const auto extent = as_extent(mapping.level(level).tile);
  const double fp = op.tensors()[static_cast<size_t>(t)].footprint(extent);
  return std::ceil(fp / static_cast<double>(sharing_factor(op, arch, mapping, level, t)));
}

/// Bytes a buffer (or one partition of it) needs for the tensors it keeps.
double held_bytes(const Operator& op, const Architecture& arch, const Mapping& mapping, int level,
                  const Partition* partition) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  double words = 0;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
    if (!partition || l.partition_of(op.tensors()[static_cast<size_t>(t)].name) == partition)
      words += held_words(op, arch, mapping, level, t);
  return words * arch.word_bytes() * (l.double_buffered ? 2 : 1);
}

/// The whole buffer, or on a partitioned one each partition, must hold its
/// tensors (KAPLA §IV-A validity: all tensors fit).
std::optional<std::string> buffer_overflow(const Operator& op, const Architecture& arch,
                                           const Mapping& mapping, int level) {
  const Level& l = arch.levels()[static_cast<size_t>(level)];
  std::ostringstream why;
  if (l.partitions.empty()) {
    const double bytes = held_bytes(op, arch, mapping, level, nullptr);
    if (bytes <= static_cast<double>(l.size_bytes)) return std::nullopt;
    why << l.name << ": tensors need " << bytes << " B"
        << (l.double_buffered ? " (double-buffered)" : "") << ", capacity " << l.size_bytes << " B";
    return why.str();
  }
  for (const auto& p : l.partitions) {
    const double bytes = held_bytes(op, arch, mapping, level, &p);
    if (bytes <= static_cast<double>(p.size_bytes)) continue;
    why << l.name << "/" << p.name << ": tensors need " << bytes << " B"
        << (l.double_buffered ? " (double-buffered)" : "") << ", partition capacity "
        << p.size_bytes << " B";
    return why.str();
  }
  return std::nullopt;
}

// ---- end of keep/bypass and partitions ----

}  // namespace

std::optional<std::string> validity_error(const Operator& op, const Architecture& arch,
                                          const Mapping& mapping) {
  if (auto err = mapping.structural_error(op, arch)) return err;
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& level = arch.levels()[static_cast<size_t>(i)];
    if (level.kind == LevelKind::kSpatial && mapping.level(i).cluster.active())
      return level.name +
             ": a cluster level (temporal loops between two spatial splits, FLASH Table 2) is "
             "not modelled by tensor_centric: KAPLA's and nn_dataflow's loop nests step only at "
             "buffer levels";
    // The stacks of a spatial level occupy a region of its array (§III-C):
    // structural_error above placed them (mapex::placement_error).
    if (level.kind != LevelKind::kBuffer) continue;
    if (auto why = buffer_overflow(op, arch, mapping, i)) return why;
  }
  return std::nullopt;
}

Metrics evaluate(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  if (auto reason = validity_error(op, arch, mapping)) return Metrics::invalid(*reason);
  const Plan plan = make_plan(arch);
  const auto num_tensors = op.tensors().size();
  const double macs = static_cast<double>(op.macs());

  // Per architecture level and tensor: words read out of / written into it.
  std::vector<std::vector<double>> reads(arch.levels().size(), std::vector<double>(num_tensors));
  std::vector<std::vector<double>> writes = reads;
  std::vector<double> hops(arch.levels().size(), 0);       // per spatial level
  std::vector<double> noc_words(arch.levels().size(), 0);  // per spatial level

  // Loops of every data level over the stacked tiles below, outermost level
  // first and, within a level, outermost loop first (the updates, §III-B).
  std::vector<std::vector<Loop>> level_loops(plan.data.size());
  std::vector<std::vector<std::int64_t>> span(plan.data.size());  // stacked span per data level
  for (size_t k = 0; k < plan.data.size(); ++k) {
    const int top = plan.spatial_above[k].empty() ? plan.data[k] : plan.spatial_above[k].back();
    span[k] = mapping.span(op, arch, top);
  }
  for (size_t k = 1; k < plan.data.size(); ++k) {
    const auto& lm = mapping.level(plan.data[k]);
    for (DimId d : lm.order) {
      const auto du = static_cast<size_t>(d);
      const std::int64_t trips = ceil_div(lm.tile[du], span[k - 1][du]);
      if (trips > 1) level_loops[k].push_back(Loop{d, trips, plan.data[k]});
    }
  }

  // Compute: every PE runs its innermost tile once per iteration of all the
  // loops above (edge tiles included).
  double serial = 1;
  for (auto t : mapping.level(plan.data[0]).tile) serial *= static_cast<double>(t);
  for (const auto& loops : level_loops)
    for (const auto& l : loops) serial *= static_cast<double>(l.trips);
  const double compute_cycles = serial / arch.macs_per_pe();

  // Used instances of each data level: the product of the splits above it.
  auto used_instances = [&](int level) {
    double u = 1;
    for (int i = level + 1; i < arch.num_levels(); ++i)
      if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial)
        for (auto s : mapping.level(i).split) u *= static_cast<double>(s);
    return u;
  };

  // The exchange of tensor t between data levels plan.data[k] (child) and
  // plan.data[kp] (parent), kp > k + 1 when the levels between bypass it:
  // a bypassed tensor goes from the nearest keeping level above straight to
  // the nearest one below, under the loops of every level above the child.
  auto exchange = [&](size_t k, size_t kp, size_t t) {
    const int child = plan.data[k];
    const int parent = plan.data[kp];
    const auto& tile = mapping.level(child).tile;
    // Loops that run while a stacked child tile is resident or reloaded.
    std::vector<Loop> outside;
    for (size_t j = plan.data.size() - 1; j > k; --j)
      outside.insert(outside.end(), level_loops[j].begin(), level_loops[j].end());
    std::vector<int> arrays;
    for (size_t j = k; j < kp; ++j)
      arrays.insert(arrays.end(), plan.spatial_above[j].begin(), plan.spatial_above[j].end());
    if (kp > k + 1 && arrays.size() > 1)
      throw InputError("tensor_centric: tensor '" + op.tensors()[t].name + "' bypasses level '" +
                       arch.levels()[static_cast<size_t>(plan.data[k + 1])].name +
                       "' and would cross the networks of " + std::to_string(arrays.size()) +
                       " spatial levels at once, which KAPLA's model (one network per exchange, "
                       "§III-C) cannot charge");
    // Every used instance of the parent runs this exchange: the splits
    // above the parent are not loops, so the counts below are per parent
    // instance and scale by their number (as nn_dataflow multiplies its
    // per-node counts by the nodes).
    const double parents = used_instances(parent);
    double units = 1;
    for (int s : arrays)
      for (auto f : mapping.level(s).split) units *= static_cast<double>(f);
    const Level* noc_level =
        arrays.empty() ? nullptr : &arch.levels()[static_cast<size_t>(arrays.back())];
    const bool broadcast = !noc_level || noc_level->noc.multicast;
    const bool forward = noc_level && noc_level->noc.forwarding;
    const bool reduce = !noc_level || noc_level->noc.reduction || forward;
    double unicast_distance = 1;
    if (noc_level) {
      double sum = 0;
      for (auto a : noc_level->shape) sum += static_cast<double>(a);
      unicast_distance = std::max(1.0, sum / 2);
    }

    const Tensor& tensor = op.tensors()[t];
    const int ti = static_cast<int>(t);
    const double fp_span = tensor.footprint(as_extent(span[k]));
    const double fp_tile = tensor.footprint(as_extent(tile));
    // Innermost loop (over all levels above) that indexes the tensor.
    int p = -1;
    for (int i = 0; i < static_cast<int>(outside.size()); ++i)
      if (op.relevant(ti, outside[static_cast<size_t>(i)].dim)) p = i;
    double loads_outer = 1, distinct = 1, all = 1;
    double sweep = fp_span;  // unique words of one sweep of loop p
    if (p >= 0) {
      for (int i = 0; i < p; ++i) {
        const auto& l = outside[static_cast<size_t>(i)];
        loads_outer *= static_cast<double>(l.trips);
        all *= static_cast<double>(l.trips);
        if (op.relevant(ti, l.dim)) distinct *= static_cast<double>(l.trips);
      }
      const Loop& lp = outside[static_cast<size_t>(p)];
      all *= static_cast<double>(lp.trips);
      distinct *= static_cast<double>(lp.trips);
      auto extended = as_extent(span[k]);
      const auto du = static_cast<size_t>(lp.dim);
      extended[du] =
          static_cast<double>(std::min(mapping.level(lp.level).tile[du], span[k][du] * lp.trips));
      sweep = std::min(static_cast<double>(lp.trips) * fp_span, tensor.footprint(extended));
    }
    // W: unique words crossing into the stacked tiles; C: words the
    // units hold in total (replicas and halos included).
    const double w = loads_outer * sweep;
    const double copies = fp_span > 0 ? units * fp_tile / fp_span : 1;
    const double c = w * std::max(1.0, copies);
    const double shr = static_cast<double>(sharing_factor(op, arch, mapping, child, ti));
    const double from_parent = (broadcast || forward) ? w : c;
    const double neighbour = forward ? c - w : 0;
    const double delivered = forward ? w : c;
    const double hop_words = delivered * (broadcast ? 1 : unicast_distance) + neighbour;
    double pr = 0, pw = 0, cr = 0, cw = 0, noc = 0, hop = 0;
    if (tensor.role == TensorRole::kOutput) {
      // Partial sums go up after every residency (reduced on the way when
      // the network can) and come back down except on the first visit.
      const double first = all > 0 ? w * distinct / all : w;
      const double up = reduce ? w : c;
      const double down = w - first;
      pw += up;
      // Without reduction in the network (MAESTRO Table 1) the parent adds
      // each unit's partial sums to its running sum: a read-modify-write
      // for each of the c - w words an adder tree would have merged.
      pr += down + (up - w);
      cr += c;
      cw += down * std::max(1.0, copies);
      noc += up + down;
      hop += up + down * std::max(1.0, copies);
    } else {
      pr += from_parent;
      cw += c / shr;
      cr += neighbour;
      noc += from_parent;
      hop += hop_words;
    }
    reads[static_cast<size_t>(parent)][t] += pr * parents;
    writes[static_cast<size_t>(parent)][t] += pw * parents;
    reads[static_cast<size_t>(child)][t] += cr * parents;
    writes[static_cast<size_t>(child)][t] += cw * parents;
    if (noc_level) {
      const auto s = static_cast<size_t>(arrays.back());
      noc_words[s] += noc * parents;
      hops[s] += hop * parents;
    }
  };

  // Per tensor, the data levels that keep it (indices into plan.data),
  // innermost first; DRAM always ends the chain. MACs read their operands
  // from, and update the output in, the innermost one.
  for (size_t t = 0; t < num_tensors; ++t) {
    std::vector<size_t> chain;
    for (size_t k = 0; k < plan.data.size(); ++k)
      if (mapping.keeps(op, arch, plan.data[k], static_cast<int>(t))) chain.push_back(k);
    const auto first = static_cast<size_t>(plan.data[chain.front()]);
    reads[first][t] += macs;
    if (op.tensors()[t].role == TensorRole::kOutput) writes[first][t] += macs;
    for (size_t j = 0; j + 1 < chain.size(); ++j) exchange(chain[j], chain[j + 1], t);
  }

  Metrics m;
  m.valid = true;
  m.macs = macs;
  m.compute_cycles = compute_cycles;
  m.latency_cycles = compute_cycles;
  m.bound_by = "compute";
  const double mac_energy = macs * arch.mac_energy_pj();
  m.energy_breakdown_pj.emplace_back("mac", mac_energy);
  double energy = mac_energy;
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& level = arch.levels()[static_cast<size_t>(i)];
    LevelMetrics lm;
    lm.level = level.name;
    double words = 0;
    if (level.kind == LevelKind::kSpatial) {
      lm.energy_pj = hops[static_cast<size_t>(i)] * level.noc.hop_energy_pj;
      // A network without a bandwidth (0) never bounds the latency.
      if (level.noc.bandwidth_gbps > 0) {
        const double per_cycle =
            arch.bytes_per_cycle(level.noc.bandwidth_gbps) * used_instances(i) / arch.word_bytes();
        lm.transfer_cycles = noc_words[static_cast<size_t>(i)] / per_cycle;
      }
    } else {
      for (size_t t = 0; t < num_tensors; ++t) {
        const double r = reads[static_cast<size_t>(i)][t];
        const double w = writes[static_cast<size_t>(i)][t];
        lm.tensors.push_back(TensorAccess{op.tensors()[t].name, r, w});
        const std::string& name = op.tensors()[t].name;
        lm.energy_pj += r * level.read_energy_of(name) + w * level.write_energy_of(name);
        words += r + w;
      }
      if (level.kind == LevelKind::kBuffer) {
        lm.capacity_bytes = static_cast<double>(level.size_bytes);
        lm.required_bytes = held_bytes(op, arch, mapping, i, nullptr);
      }
      if (level.bandwidth_gbps) {
        const double instances = level.kind == LevelKind::kDram ? 1 : used_instances(i);
        lm.transfer_cycles =
            words * arch.word_bytes() / (arch.bytes_per_cycle(*level.bandwidth_gbps) * instances);
      }
    }
    if (lm.transfer_cycles > m.latency_cycles) {
      m.latency_cycles = lm.transfer_cycles;
      m.bound_by = level.name;
    }
    energy += lm.energy_pj;
    m.energy_breakdown_pj.emplace_back(level.name, lm.energy_pj);
    m.levels.push_back(std::move(lm));
  }
  double idle = 0;
  for (const auto& level : arch.levels()) idle += level.idle_energy_pj_per_cycle;
  idle *= m.latency_cycles;
  m.energy_breakdown_pj.emplace_back("idle", idle);
  m.energy_pj = energy + idle;
  const double peak = static_cast<double>(arch.num_pes()) * arch.macs_per_pe();
  m.utilization = m.latency_cycles > 0 ? macs / (m.latency_cycles * peak) : 0;
  return m;
}

}  // namespace mapex::tc
