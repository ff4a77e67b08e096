#pragma once
// Area and power of an architecture from its building blocks, for hardware
// design-space exploration (MAESTRO, IEEE Micro 2020, "Case Study II:
// Hardware Design-Parameters and Implementation Analysis"): MACs, SRAM per
// byte, a bus whose cost grows linearly and an arbiter whose cost grows
// quadratically with the number of PEs it serves, at 28 nm.
//
// Where the constants come from (stated honestly): the paper synthesised its
// building blocks in 28 nm RTL but does not publish the numbers, so the
// defaults below are estimates, not MAESTRO's values:
//   - MAC area: Horowitz, "Computing's energy problem", ISSCC 2014 (45 nm):
//     8-bit multiplier 282 um^2 plus a 24-bit accumulator (32-bit adder
//     137 um^2 scaled to 24 bits), scaled to 28 nm by (28/45)^2 = 0.39:
//     about 150 um^2; the multiplier grows with the square of the word width.
//   - SRAM area: a 28 nm high-density 6T bit cell is about 0.127 um^2;
//     with about 50 % array efficiency that is 2 um^2 per byte. Buffers of
//     at most 4 KiB are register files/latch arrays, assumed 8 um^2 per byte.
//   - Bus: 20 um^2 per PE served per byte of width per cycle (assumed; the
//     paper fits a linear model but gives no coefficient).
//   - Arbiter: a matrix arbiter keeps N(N-1)/2 priority bits, one flip-flop
//     (about 5 um^2 at 28 nm) each: 2.5 um^2 x N^2.
//   - Power: peak dynamic power from the architecture's own energies (every
//     MAC busy and every buffer instance doing one word access per cycle at
//     its clock), plus SRAM leakage (5 uW per KiB, assumed), plus bus and
//     arbiter logic at 200 mW per mm^2 per GHz (assumed).
// A sanity check: Eyeriss (168 PEs, 0.5 KiB spads, 108 KiB buffer, 16-bit)
// comes to about 1.1 mm^2 at 28 nm here, about 6 mm^2 scaled to 65 nm,
// against the 12.25 mm^2 published for the whole chip (control, I/O and
// pads are not modelled). Every constant can be overridden per experiment.
// DRAM is off chip and counts for neither area nor power.

#include <mapex/architecture.hpp>
#include <string>
#include <vector>

namespace mapex::host {

struct Technology {
  double node_nm = 28;
  double mac_area_um2 = 150;  ///< one MAC with 8-bit operands
  double sram_area_um2_per_byte = 2.0;
  double regfile_area_um2_per_byte = 8.0;
  double regfile_max_bytes = 4096;  ///< buffers up to this size are register files
  double sram_leakage_uw_per_kib = 5;
  double bus_area_um2_per_pe_byte = 20;  ///< per PE served, per byte/cycle of width
  double arbiter_area_um2_per_pe2 = 2.5;
  double logic_mw_per_mm2_ghz = 200;  ///< bus and arbiter power density
};

/// The cost of one part, for the breakdown.
struct CostPart {
  std::string part;  ///< "MACs", a level name, "<level> bus", "<level> arbiter"
  double area_mm2 = 0;
  double power_mw = 0;
};

struct HardwareCost {
  double area_mm2 = 0;
  double power_mw = 0;
  std::vector<CostPart> parts;
};

/// Area and power of `arch` (pure; any thread).
HardwareCost estimate_cost(const Architecture& arch, const Technology& tech);

}  // namespace mapex::host
