#pragma once
// Architectures built in code for unit tests: L1 per PE / PE array / L2 /
// DRAM with round numbers (1 byte per word, 1 GHz, 1 GB/s = 1 B/cycle).

#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/constraints.hpp>
#include <mapex/metrics.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace mapex::test {

inline Level buffer(std::string name, std::int64_t size_bytes, double read_pj = 0,
                    double write_pj = 0) {
  Level l;
  l.name = std::move(name);
  l.kind = LevelKind::kBuffer;
  l.size_bytes = size_bytes;
  l.read_energy_pj = read_pj;
  l.write_energy_pj = write_pj;
  return l;
}

inline Level spatial(std::string name, std::vector<std::int64_t> shape, bool multicast = true) {
  Level l;
  l.name = std::move(name);
  l.kind = LevelKind::kSpatial;
  l.shape = std::move(shape);
  l.noc.bandwidth_gbps = 1;
  l.noc.multicast = multicast;
  return l;
}

inline Level dram(double energy_pj = 0) {
  Level l;
  l.name = "DRAM";
  l.kind = LevelKind::kDram;
  l.bandwidth_gbps = 1;
  l.read_energy_pj = energy_pj;
  l.write_energy_pj = energy_pj;
  return l;
}

/// L1 (per PE) / PEs / L2 / DRAM.
inline Architecture chip(std::vector<std::int64_t> shape, std::int64_t l1_bytes = 1 << 20,
                         bool multicast = true) {
  return Architecture::make(
      "chip", 1000, 8, 1, 1,
      {buffer("L1", l1_bytes, 1, 2), spatial("PEs", std::move(shape), multicast),
       buffer("L2", 1 << 20, 10, 10), dram(100)});
}

/// Constraints that give spatial level `level` a cluster level with every
/// choice left free (FLASH's cluster tiles, README "Cluster levels").
inline ConstraintSpec cluster_level_on(std::string level = "PEs") {
  LevelConstraintSpec spatial_level;
  spatial_level.level = std::move(level);
  spatial_level.cluster = ClusterConstraintSpec{};
  ConstraintSpec spec;
  spec.levels = {spatial_level};
  return spec;
}

/// The keep/bypass and partition tests' chip as YAML: the given L1 per PE,
/// 2 PEs, L2, DRAM; 8-bit words, single-buffered.
inline std::string keep_chip_yaml(const std::string& l1) {
  return "name: chip\nclock_mhz: 1000\nword_bits: 8\nlevels:\n" + l1 +
         "  - {name: PEs, kind: spatial, shape: [2], noc: {bandwidth_gbps: 1}}\n"
         "  - {name: L2, kind: buffer, size_bytes: 1024, double_buffered: false,"
         " read_energy_pj: 10, write_energy_pj: 10}\n"
         "  - {name: DRAM, kind: dram, bandwidth_gbps: 1, read_energy_pj: 100,"
         " write_energy_pj: 100}\n";
}

/// Its two L1s: one buffer for every tensor, and 4 B for A, 1 B each for B
/// and C, with A's partition at its own energies.
inline const std::string kPlainL1 =
    "  - {name: L1, kind: buffer, size_bytes: 64, double_buffered: false,"
    " read_energy_pj: 1, write_energy_pj: 2}\n";
inline const std::string kPartitionedL1 =
    "  - name: L1\n    kind: buffer\n    double_buffered: false\n"
    "    read_energy_pj: 1\n    write_energy_pj: 2\n    partitions:\n"
    "      - {name: a, tensors: [A], size_bytes: 4, read_energy_pj: 3, write_energy_pj: 5}\n"
    "      - {name: b, tensors: [B], size_bytes: 1}\n"
    "      - {name: c, tensors: [C], size_bytes: 1}\n";

/// A tensor's reads and writes at a level of an evaluation's accounts.
inline const TensorAccess& access(const std::vector<LevelMetrics>& levels, const std::string& level,
                                  const std::string& tensor) {
  for (const auto& l : levels)
    if (l.level == level)
      for (const auto& t : l.tensors)
        if (t.tensor == tensor) return t;
  throw std::runtime_error("no " + level + "/" + tensor);
}

}  // namespace mapex::test
