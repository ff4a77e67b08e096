#pragma once
/// \file
/// What a cost model says about one mapping (docs/design.md, Cost model).

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mapex {

/// Words moved for one tensor at one level.
struct TensorAccess {
  std::string tensor;
  double reads = 0;   ///< words read out of this level
  double writes = 0;  ///< words written into this level
};

/// Per-level figures. For a spatial level, `reads` are the words its
/// network delivers to the children (after multicast) and `writes` the words
/// it carries back up (after spatial reduction).
struct LevelMetrics {
  std::string level;
  std::vector<TensorAccess> tensors;
  double required_bytes = 0;   ///< buffer space the tiles need (double-buffered if the level is)
  double capacity_bytes = 0;   ///< 0 for DRAM and spatial levels
  double transfer_cycles = 0;  ///< cycles the level's bandwidth needs for its traffic
  double energy_pj = 0;
};

struct Metrics {
  bool valid = false;
  /// Why the mapping is invalid (e.g. "L1: tiles need 1024 B, capacity 512 B").
  std::string invalid_reason;
  double macs = 0;
  double latency_cycles = 0;
  double compute_cycles = 0;
  double energy_pj = 0;
  /// MACs / (latency x PEs x MACs per PE); 1 is every MAC unit busy every cycle.
  double utilization = 0;
  /// What bounds the latency: "compute" or a level name.
  std::string bound_by;
  std::vector<LevelMetrics> levels;
  /// Energy by component: "mac", then one entry per level.
  std::vector<std::pair<std::string, double>> energy_breakdown_pj;

  double edp() const { return latency_cycles * energy_pj; }
  static Metrics invalid(std::string reason);
};

/// The first figure of `m` that is not a finite number, e.g.
/// "energy_pj = inf" or "level 'L1' transfer_cycles = nan", or nothing.
/// The framework asks it of every result it keeps or prints (a search's
/// best mapping, `mapex evaluate`), not of every evaluated mapping: the
/// architecture loader bounds energies, bandwidths and the clock, so this
/// is the last guard against a cost model's arithmetic running away.
std::optional<std::string> non_finite_metric(const Metrics& m);

}  // namespace mapex
