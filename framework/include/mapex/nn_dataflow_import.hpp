#pragma once
/// \file
/// Reads the result of nn_dataflow's search tool (its JSON on stdout) as
/// canonical mappings, one per scheduled layer, with what the nn_dataflow
/// model needs beside the mapping (the input's DRAM layout) and what
/// nn_dataflow reported, so both can be scored side by side.

#include <array>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/network.hpp>
#include <string>
#include <vector>

namespace mapex::ndf {

/// What nn_dataflow reported for one layer (its `scheme`), in its units.
struct Reported {
  double cost = 0, time = 0, ops = 0;
  double cost_op = 0, cost_access = 0, cost_noc = 0, cost_static = 0;
  double proc_time = 0, bus_time = 0, dram_time = 0;
  std::array<std::array<double, 3>, 4> access{};  ///< [DRAM, GBUF, ITCN, REGF][FIL, IFM, OFM]
  std::array<double, 3> nhops{};
};

struct ImportedLayer {
  std::string name;  ///< as in the workload and the JSON
  Mapping mapping;
  /// The tensor_centric parameters that reproduce the scheme's setting:
  /// model=nn_dataflow, gbuf_bypass, ifmap_layout.
  std::vector<std::pair<std::string, std::string>> params;
  Reported reported;
};

/// Imports every layer the JSON schedules. Throws InputError naming the
/// file, the layer and the reason: not an nn_dataflow result, a layer the
/// workload lacks, a chip that is not the JSON's, or a scheme the
/// canonical format cannot express. Unit costs are checked against the
/// architecture's (ratios equal; the JSON may be in joules).
std::vector<ImportedLayer> import_result(const std::string& path, const Network& workload,
                                         const Architecture& arch);

}  // namespace mapex::ndf
