#pragma once
/// \file
/// Lower bounds for partial mappings (issue 22): the outer levels of a
/// mapping are fixed and the inner ones free, and a cost model answers with
/// a latency and an energy that no completion can beat, so a branch-and-
/// bound search drops the subtree when the bound is no better than a
/// mapping it already has. The loop-nest part below is shared by the models
/// whose traffic comes from the framework's analysis (mapex/analysis.hpp).

#include <cstdint>
#include <limits>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <vector>

namespace mapex {

/// A mapping fixed from DRAM down to `first_fixed` (tiles of buffers,
/// splits of spatial levels, keep/bypass everywhere), with the loop orders
/// of the data levels flagged in `order_fixed` (indexed by level). What the
/// free levels hold is ignored, but the mapping must have every level.
struct PartialMapping {
  const Mapping* mapping = nullptr;
  int first_fixed = 0;
  std::vector<char> order_fixed;
  /// Whether every completion's tiles and spans divide the operator's
  /// bounds and no spatial level has a cluster tile (a factors-only
  /// mapspace without cluster levels). A bound that counts whole steps can
  /// then claim them before the tiles that make the steps are fixed.
  bool divisor_spans = false;
  /// How the caller reads the bound, so that a model can spare work that
  /// cannot change what the caller does: the figures it looks at
  /// (`reads_latency`, `reads_energy`; one it does not read may be left
  /// loose, though never above the true least), and the values at which
  /// it drops the subtree (a read figure at or above its cutoff): once the
  /// bound reaches one, a model may stop tightening it. The defaults read
  /// both and drop nothing. The bound stays a bound under any of these.
  bool reads_latency = true;
  bool reads_energy = true;
  double latency_cutoff = std::numeric_limits<double>::infinity();
  double energy_cutoff = std::numeric_limits<double>::infinity();
};

/// The data levels (and spatial levels) whose traffic a partial mapping
/// fixes, per level. A level's accesses are its own fills from the level
/// above and its reads by the data level below it (the MACs below level 0):
/// both are fixed once the tiles from that lower data level up to DRAM and
/// the loop orders above it are fixed (analysis.hpp, traffic: a tile's
/// refills depend only on its size and on the loops that enclose it). With
/// keep/bypass away from the default nothing is claimed (a bypassed tensor
/// crosses levels whose tiles may still be free).
std::vector<char> determined_levels(const Operator& op, const Architecture& arch,
                                    const PartialMapping& partial);

/// The fewest cycles the MACs can take: the operator's MACs over the most
/// MAC units a completion can engage (units used at fixed spatial levels,
/// the whole fan-out at free ones).
double compute_cycles_bound(const Operator& op, const Architecture& arch,
                            const PartialMapping& partial);

/// The loop-nest analysis of a partial mapping, per level: the energy and
/// the transfer cycles (as level_costs reports them) of each determined
/// level, zero elsewhere. The free levels are completed with one-element
/// tiles and no splits, which changes none of the determined figures.
struct NestBound {
  std::vector<char> determined;
  std::vector<double> energy_pj;
  std::vector<double> transfer_cycles;
};
NestBound nest_bound(const Operator& op, const Architecture& arch, const PartialMapping& partial);

/// nest_bound, and for DRAM when the tile of the data level below it is
/// fixed but DRAM's own loop order is not: the fewest energy and transfer
/// cycles that level's traffic has under any of its orders (each level's
/// minimum apart, so the sum is below every completion's). Only the loops of
/// more than one trip are permuted (a loop of one trip changes no count of
/// the analysis), one order per reuse class (per tensor the innermost
/// relevant loop and the loops inside it, which fix its refetches and its
/// window's overlap); with more than `max_loops` such loops, nest_bound.
NestBound nest_bound_any_dram_order(const Operator& op, const Architecture& arch,
                                    const PartialMapping& partial, int max_loops = 6);

/// Per tensor of the operator (in its order), the fewest words any mapping
/// moves of it: per subscript the fewer of its extent over the whole bounds
/// and the product of the bounds of the dimensions it reads (see DramFloor).
std::vector<double> tensor_word_floors(const Operator& op);

/// The off-chip traffic no mapping avoids: every input word read from DRAM
/// once and every output word written once, at DRAM's energies and
/// bandwidth. A tensor's words are counted per subscript as the fewer of its
/// extent over the whole bounds and the product of the bounds of the
/// dimensions it reads: tiles of a strided window sum to at least one of the
/// two (overlapping tiles cover the whole extent; tiles whose stride exceeds
/// the window still read one word per index combination).
struct DramFloor {
  double energy_pj = 0;
  double transfer_cycles = 0;
};
DramFloor dram_floor(const Operator& op, const Architecture& arch);

/// Per tensor of the operator (in its order), the dimensions its subscripts
/// read (bit d: dimension d).
inline std::vector<std::uint32_t> relevant_dims(const Operator& op) {
  std::vector<std::uint32_t> out;
  for (const auto& t : op.tensors()) {
    std::uint32_t mask = 0;
    for (const auto& e : t.subscripts)
      for (const auto& term : e.terms)
        if (term.coeff != 0) mask |= 1u << term.dim;
    out.push_back(mask);
  }
  return out;
}

/// What an order (outermost first) does for reuse, over the loops in
/// `free_mask` (the others have one trip and do nothing): per tensor, its
/// innermost relevant loop and the set of loops inside it. A tensor's tile
/// is refetched once per iteration of the loops down to its innermost
/// relevant loop and stays put across the loops inside it, so these two say
/// how often and, for a sliding window, along which dimension. Two orders
/// with the same signature cost the same in the loop-nest analysis.
inline std::vector<std::uint32_t> reuse_signature(const std::vector<DimId>& order,
                                                  std::uint32_t free_mask,
                                                  const std::vector<std::uint32_t>& relevant) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t rel : relevant) {
    std::uint32_t inside = 0;
    std::uint32_t innermost = 32;  // none: every loop is inside
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto d = static_cast<std::uint32_t>(*it);
      if (!(free_mask >> d & 1u)) continue;
      if (rel >> d & 1u) {
        innermost = d;
        break;
      }
      inside |= 1u << d;
    }
    out.push_back(innermost);
    out.push_back(inside);
  }
  return out;
}

}  // namespace mapex
