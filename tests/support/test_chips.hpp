#pragma once
// Architectures built in code for unit tests: L1 per PE / PE array / L2 /
// DRAM with round numbers (1 byte per word, 1 GHz, 1 GB/s = 1 B/cycle).

#include <cstdint>
#include <mapex/architecture.hpp>
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

}  // namespace mapex::test
