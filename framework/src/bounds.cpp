// Lower bounds of partial mappings shared by the loop-nest cost models
// (mapex/bounds.hpp; issue 22).

#include <algorithm>
#include <cstdint>
#include <mapex/analysis.hpp>
#include <mapex/bounds.hpp>
#include <set>

namespace mapex {

namespace {

/// Whether every buffer of the mapping keeps its default tensors.
bool default_keep(const Architecture& arch, const Mapping& m) {
  for (int i = 0; i < arch.num_levels(); ++i) {
    const auto& keep = m.level(i).keep;
    for (size_t t = 0; t < keep.size(); ++t)
      if (!keep[t]) return false;
  }
  return true;
}

}  // namespace

std::vector<char> determined_levels(const Operator& op, const Architecture& arch,
                                    const PartialMapping& partial) {
  (void)op;
  const int L = arch.num_levels();
  std::vector<char> out(static_cast<size_t>(L), 0);
  if (!default_keep(arch, *partial.mapping)) return out;
  auto order_fixed = [&](int level) {
    return static_cast<size_t>(level) < partial.order_fixed.size() &&
           partial.order_fixed[static_cast<size_t>(level)];
  };
  for (int i = 0; i < L; ++i) {
    // The nearest data level below i (-1: the MACs, whose span is one).
    int below = i - 1;
    while (below >= 0 && !arch.levels()[static_cast<size_t>(below)].holds_data()) --below;
    if (partial.first_fixed > std::max(below, 0)) continue;
    bool orders = true;
    for (int j = below + 1; j < L && orders; ++j)
      if (arch.levels()[static_cast<size_t>(j)].holds_data()) orders = order_fixed(j);
    out[static_cast<size_t>(i)] = orders;
  }
  return out;
}

double compute_cycles_bound(const Operator& op, const Architecture& arch,
                            const PartialMapping& partial) {
  double units = 1;
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    if (l.kind != LevelKind::kSpatial) continue;
    units *= i >= partial.first_fixed ? static_cast<double>(units_used(partial.mapping->level(i)))
                                      : static_cast<double>(l.fanout());
  }
  return static_cast<double>(op.macs()) / (units * arch.macs_per_pe());
}

NestBound nest_bound(const Operator& op, const Architecture& arch, const PartialMapping& partial) {
  NestBound out;
  out.determined = determined_levels(op, arch, partial);
  const auto L = static_cast<size_t>(arch.num_levels());
  out.energy_pj.assign(L, 0);
  out.transfer_cycles.assign(L, 0);
  bool any = false;
  for (char d : out.determined) any = any || d;
  if (!any) return out;
  thread_local Mapping completed;
  thread_local NestAnalysis a;
  thread_local std::vector<LevelCost> costs;
  completed = *partial.mapping;
  for (int i = 0; i < partial.first_fixed; ++i) {
    auto& lm = completed.level(i);
    if (arch.levels()[static_cast<size_t>(i)].kind == LevelKind::kSpatial) {
      lm.split.assign(lm.split.size(), 1);
      lm.axes.clear();
    } else {
      lm.tile.assign(lm.tile.size(), 1);
    }
  }
  analyse_into(op, arch, completed, a);
  level_costs(op, arch, a, costs);
  for (size_t i = 0; i < L; ++i) {
    if (!out.determined[i]) continue;
    out.energy_pj[i] = costs[i].energy_pj;
    out.transfer_cycles[i] = costs[i].transfer_cycles;
  }
  return out;
}

NestBound nest_bound_any_dram_order(const Operator& op, const Architecture& arch,
                                    const PartialMapping& partial, int max_loops) {
  NestBound out = nest_bound(op, arch, partial);
  const int top = arch.num_levels() - 1;
  const auto t = static_cast<size_t>(top);
  if (out.determined[t] || !default_keep(arch, *partial.mapping)) return out;
  if (t < partial.order_fixed.size() && partial.order_fixed[t]) return out;
  int below = top - 1;
  while (below >= 0 && !arch.levels()[static_cast<size_t>(below)].holds_data()) --below;
  if (below < 0 || partial.first_fixed > below) return out;
  // DRAM's loops of more than one trip run over the tile below it.
  const auto child = partial.mapping->span(op, arch, top - 1);
  std::vector<DimId> loops;
  for (DimId d = 0; d < op.num_dims(); ++d)
    if (child[static_cast<size_t>(d)] < op.dims()[static_cast<size_t>(d)].bound) loops.push_back(d);
  if (static_cast<int>(loops.size()) > max_loops) return out;
  const auto relevant = relevant_dims(op);
  std::set<std::vector<std::uint32_t>> seen;  // one order per reuse class
  thread_local Mapping scratch;
  scratch = *partial.mapping;
  PartialMapping p{&scratch, partial.first_fixed, partial.order_fixed};
  p.order_fixed.resize(t + 1, 0);
  p.order_fixed[t] = 1;
  std::vector<double> energy(t + 1, -1), cycles(t + 1, -1);
  std::vector<char> determined(t + 1, 0);
  std::sort(loops.begin(), loops.end());
  do {
    if (!seen.insert(reuse_signature(loops, ~0u, relevant)).second) continue;
    // The one-trip loops outermost, then this permutation.
    auto& order = scratch.level(top).order;
    order.clear();
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (std::find(loops.begin(), loops.end(), d) == loops.end()) order.push_back(d);
    order.insert(order.end(), loops.begin(), loops.end());
    const NestBound b = nest_bound(op, arch, p);
    for (size_t i = 0; i <= t; ++i) {
      if (!b.determined[i] || out.determined[i]) continue;
      determined[i] = 1;
      energy[i] = energy[i] < 0 ? b.energy_pj[i] : std::min(energy[i], b.energy_pj[i]);
      cycles[i] = cycles[i] < 0 ? b.transfer_cycles[i] : std::min(cycles[i], b.transfer_cycles[i]);
    }
  } while (std::next_permutation(loops.begin(), loops.end()));
  for (size_t i = 0; i <= t; ++i)
    if (determined[i]) {
      out.determined[i] = 1;
      out.energy_pj[i] = energy[i];
      out.transfer_cycles[i] = cycles[i];
    }
  return out;
}

std::vector<double> tensor_word_floors(const Operator& op) {
  std::vector<double> out;
  for (const auto& t : op.tensors()) {
    double words = 1;
    for (const auto& e : t.subscripts) {
      double extent = 1, combinations = 1;
      for (const auto& term : e.terms) {
        if (term.coeff == 0) continue;
        const auto bound = static_cast<double>(op.dims()[static_cast<size_t>(term.dim)].bound);
        extent += static_cast<double>(std::abs(term.coeff)) * (bound - 1);
        combinations *= bound;
      }
      words *= std::min(extent, combinations);
    }
    out.push_back(words);
  }
  return out;
}

DramFloor dram_floor(const Operator& op, const Architecture& arch) {
  DramFloor out;
  const Level& dram = arch.levels().back();
  const std::vector<double> words = tensor_word_floors(op);
  double bytes = 0;
  for (size_t i = 0; i < op.tensors().size(); ++i) {
    const auto& t = op.tensors()[i];
    const bool output = t.role == TensorRole::kOutput;
    out.energy_pj +=
        words[i] * (output ? dram.write_energy_of(t.name) : dram.read_energy_of(t.name));
    bytes += words[i] * arch.word_bytes_of(t);
  }
  if (dram.bandwidth_gbps) out.transfer_cycles = bytes / arch.bytes_per_cycle(*dram.bandwidth_gbps);
  return out;
}

}  // namespace mapex
