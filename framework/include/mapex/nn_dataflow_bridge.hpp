#pragma once
/// \file
// Between mapex's canonical world and nn_dataflow's: a conv/FC operator
// becomes an nn_dataflow layer, a chip of REGF / PE array / GBUF / node
// array / DRAM becomes its resource and unit costs, and a canonical mapping
// is read as (and written from) a partition, a row-stationary processing
// pass and a loop blocking. The correspondence is in README.md.

#include <boost/config.hpp>
#include <mapex/architecture.hpp>
#include <mapex/costmodel.hpp>
#include <mapex/mapping.hpp>
#include <mapex/metrics.hpp>
#include <mapex/nn_dataflow.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mapex::ndf {

/// Indices of the architecture's levels in nn_dataflow's roles.
struct Roles {
  int regf = -1, pe_array = -1, gbuf = -1, node_array = -1, dram = -1;
};

/// Everything but the mapping: the layer, the chip, the options and the
/// input's DRAM layout.
struct Problem {
  Layer layer;
  Hardware hw;
  Options options;
  Layout ifmaps;
  Roles roles;
  /// The operator's dimensions in nn_dataflow's roles. A depthwise layer's
  /// channels are its output channels (`k`; `c` is -1); an element-wise
  /// loop nest has batch and output channels only, and its other
  /// dimensions (`region`, with their bounds) are the local region each
  /// PE merges whole.
  DimId n = -1, k = -1, c = -1, p = -1, q = -1, r = -1, s = -1;
  std::vector<std::pair<DimId, std::int64_t>> region;
  /// Operator tensor of each data category; `fil` is -1 for a local region.
  /// An element-wise loop nest with several operands reads them as one
  /// input (nn_dataflow concatenates a layer's predecessors): `ifm` is the
  /// first.
  int fil = -1, ifm = -1, ofm = -1;
};

/// Builds the problem, or says why the operator or chip is outside the
/// model. `bypass`: data categories that may bypass the GBUF, as
/// nn_dataflow's letters ("", "i", "if", ...). `ifmap_layout`: where the
/// input lies in DRAM, as "ORDER:HxW,HxW,HxW,HxW" (partition order digits
/// and the OUTP, OFMP, BATP, INPP factors); empty: the layer's own
/// partition projected onto the memory channels, as nn_dataflow lays out
/// every layer's output. `forwarding`: "arch" (the node array's
/// `noc.forwarding`), "on" or "off" (nn_dataflow's GBUF sharing option).
std::optional<std::string> make_problem(const Operator& op, const Architecture& arch,
                                        const std::string& bypass, const std::string& ifmap_layout,
                                        const std::string& forwarding, Problem& out);

/// Reads a canonical mapping as an nn_dataflow scheme, or says why it is
/// not one (a PE-array split that is not a row-stationary pass, loops over
/// filter or row dimensions above the REGF, ...).
std::optional<std::string> scheme_from_mapping(const Problem& problem, const Mapping& mapping,
                                               Scheme& out);

/// The partition a mapping's node-array split stands for (placing the split
/// when the mapping does not); nothing with the reason when it cannot.
std::optional<std::string> partition_from_mapping(const Problem& problem, const Mapping& mapping,
                                                  Partition& out);

/// The canonical mapping of a scheme (for the importer and searchers); an
/// error when the canonical form cannot carry it.
std::optional<std::string> mapping_from_scheme(const Operator& op, const Architecture& arch,
                                               const Problem& problem, const Scheme& scheme,
                                               Mapping& out);

/// A partition as `ifmap_layout` text.
std::string format_layout(const Partition& part);

/// The input layout of the problem's layer under `ifmap_layout` text.
std::optional<std::string> parse_layout(const std::string& text, const Problem& problem,
                                        Layout& out);

/// Scores a canonical mapping (an invalid result says why it is not an
/// nn_dataflow scheme or does not fit).
Result evaluate_mapping(const Problem& problem, const Mapping& mapping);

/// A bound cost model that scores mappings with nn_dataflow's model
/// (tensor_centric with model=nn_dataflow). A searcher that works in
/// nn_dataflow's own space finds it with dynamic_cast on the job's bound
/// model and reads the problem it was bound to (bypass, forwarding, input
/// layout), so that it searches under exactly the model's settings.
class BOOST_SYMBOL_VISIBLE BoundNnDataflowModel : public BoundCostModel {
 public:
  ~BoundNnDataflowModel() override;
  /// The layer, chip, options and input layout the model scores with.
  virtual const Problem& problem() const = 0;
};

/// mapex's metrics of an evaluated scheme.
Metrics to_metrics(const Operator& op, const Architecture& arch, const Problem& problem,
                   const Result& result);

}  // namespace mapex::ndf
