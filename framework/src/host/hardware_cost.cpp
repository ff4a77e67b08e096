#include "host/hardware_cost.hpp"

#include <algorithm>

namespace mapex::host {

HardwareCost estimate_cost(const Architecture& arch, const Technology& tech) {
  HardwareCost cost;
  const double clock_ghz = arch.clock_mhz() / 1000.0;
  // pJ per cycle at f GHz is f mW.
  auto add = [&](std::string part, double area_um2, double power_mw) {
    cost.parts.push_back(CostPart{std::move(part), area_um2 * 1e-6, power_mw});
    cost.area_mm2 += area_um2 * 1e-6;
    cost.power_mw += power_mw;
  };
  const double macs = static_cast<double>(arch.num_pes()) * arch.macs_per_pe();
  const double width = arch.word_bits() / 8.0;
  // Array multipliers grow with the square of the operand width.
  add("MACs", macs * tech.mac_area_um2 * width * width, macs * arch.mac_energy_pj() * clock_ghz);
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& l = arch.levels()[static_cast<size_t>(i)];
    const double instances = static_cast<double>(arch.instances(i));
    if (l.kind == LevelKind::kBuffer) {
      const double bytes = static_cast<double>(l.size_bytes);
      const double per_byte = bytes <= tech.regfile_max_bytes ? tech.regfile_area_um2_per_byte
                                                              : tech.sram_area_um2_per_byte;
      const double leakage_mw = bytes / 1024.0 * tech.sram_leakage_uw_per_kib * 1e-3;
      const double access_mw = std::max(l.read_energy_pj, l.write_energy_pj) * clock_ghz;
      add(l.name, instances * bytes * per_byte, instances * (leakage_mw + access_mw));
    } else if (l.kind == LevelKind::kSpatial) {
      // MAESTRO case study II: bus cost linear, arbiter cost quadratic in the
      // number of PEs served; the bus also grows with its width.
      const double children = static_cast<double>(l.fanout());
      const double width_bytes = arch.bytes_per_cycle(l.noc.bandwidth_gbps);
      const double bus_um2 = tech.bus_area_um2_per_pe_byte * children * width_bytes;
      const double arbiter_um2 = tech.arbiter_area_um2_per_pe2 * children * children;
      add(l.name + " bus", instances * bus_um2,
          instances * bus_um2 * 1e-6 * tech.logic_mw_per_mm2_ghz * clock_ghz);
      add(l.name + " arbiter", instances * arbiter_um2,
          instances * arbiter_um2 * 1e-6 * tech.logic_mw_per_mm2_ghz * clock_ghz);
    }
  }
  return cost;
}

}  // namespace mapex::host
