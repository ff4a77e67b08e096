#pragma once
/// \file
/// MAESTRO's data-centric (MDC) directives (MAESTRO, IEEE Micro 2020, §III):
/// the directive IR, MAESTRO's mapping and hardware file formats, the
/// conversion of a canonical mapping into directives (Marvel, TACO 2021, §4,
/// Algorithm 1) and Marvel's conformability rules (§3).
///
/// How directives reach a cost model: a cost-model plugin that can evaluate
/// directive lists directly also derives from `mdc::DirectiveEvaluator`; the
/// host finds the capability with `dynamic_cast` on the CostModel it made.
/// The class is new (no existing type changed), its key function lives in the
/// core library so its type_info is shared across the plugin boundary, and
/// canonical mappings keep flowing through the ordinary `BoundCostModel`
/// interface (the plugin converts them with `from_mapping`).

#include <boost/config.hpp>
#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mapex::mdc {

/// MAESTRO's layer types. TRCONV is analysed as CONV (MAESTRO's hard-coded
/// inner stride of 2 changes none of its outputs).
enum class LayerType { kConv, kDsconv, kNgconv, kTrconv, kGemm };
std::string to_string(LayerType type);

enum class DirectiveKind { kTemporalMap, kSpatialMap, kCluster };

/// One directive. For maps, `size` and `offset` are resolved numbers and
/// `dim` the dimension name (Y' and X' name output rows/columns). For
/// Cluster, `size` is the number of sub-units grouped and `cluster_type` is
/// 'P' or 'L' (MAESTRO gives both the same meaning).
struct Directive {
  DirectiveKind kind = DirectiveKind::kTemporalMap;
  std::int64_t size = 1;
  std::int64_t offset = 1;
  std::string dim;
  char cluster_type = 'P';
  int line = 0;  ///< line in the source file, 0 when built in code
};

struct Layer {
  std::string name;
  LayerType type = LayerType::kConv;
  /// Dimensions in file order: N, G, K, C, R, S, Y, X (or Y', X'); GEMM: M, N, K.
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::int64_t stride_y = 1;
  std::int64_t stride_x = 1;
  std::vector<Directive> dataflow;
  int line = 0;

  /// Size of dimension `name`, or 0 when absent.
  std::int64_t dim(std::string_view dim_name) const;
  /// The true number of MACs (output size from the strides, floor).
  std::int64_t true_macs() const;
};

struct Network {
  std::string name;
  std::string origin;  ///< file name for messages
  std::vector<Layer> layers;
};

/// A MAESTRO hardware description. Counts in elements and cycles.
struct Hardware {
  std::int64_t num_pes = 1;
  std::int64_t l1_size = 2147483647;
  std::int64_t l2_size = 2147483647;
  std::int64_t noc_bw = 2147483647;
  std::int64_t offchip_bw = 2147483647;
  std::int64_t noc_latency = 1;  ///< cycles per transfer (HW files: NoC_NumHops)
  std::int64_t simd_lanes = 1;
  /// The network from L2 into the PEs can multicast: one L2 read feeds every
  /// PE that needs the word (MAESTRO Table 1, spatial multicast). Without
  /// it each destination PE's copy is a separate L2 read and NoC transfer.
  bool multicast = true;
  /// The network reduces partial sums (MAESTRO Table 1, spatial reduction).
  /// Without it every PE's partial output travels to L2 on its own and L2
  /// accumulates it by a read-modify-write.
  bool reduction = true;
};

/// Parses a MAESTRO mapping file (refdata README, "Mapping file"): constants,
/// one network, layers with type, stride, dimensions and dataflow; a layer
/// without a dataflow copies the previous layer's. Throws InputError with
/// file, line, key and what was expected.
Network parse_mapping(const std::string& text, const std::string& origin);
Network load_mapping(const std::string& path);
/// Parses a MAESTRO hardware file (`key: value` lines; defaults as MAESTRO).
Hardware parse_hardware(const std::string& text, const std::string& origin);
Hardware load_hardware(const std::string& path);

/// Checks a layer against the hardware before analysis: every level has one
/// or two SpatialMaps, the clusters fit in the PEs, the R/S rule. Throws
/// InputError naming `origin`, the directive's line and what was expected.
void validate(const Layer& layer, const Hardware& hw, const std::string& origin);

/// Prints directives back in MAESTRO's syntax, one per line, `indent` before
/// each (e.g. `TemporalMap(3,1) Y;`).
std::string format_dataflow(const std::vector<Directive>& dataflow, const std::string& indent = "");
/// Prints a whole network as a mapping file that `parse_mapping` reads back.
std::string format_network(const Network& network);

/// What the MDC analysis reports for one layer; names and meanings follow
/// MAESTRO's outputs (refdata README, "Output CSV"). Counts are elements.
struct Result {
  std::string layer_name;
  double num_macs = 0;   ///< MACs the analysis counted
  double true_macs = 0;  ///< MACs of the layer from its shape
  double runtime_cycles = 0;
  double energy_total_macunits = 0;  ///< L1 1.68, L2 18.61 per access, MAC 1
  double l1_size_req = 0;            ///< per PE, double-buffered
  double l2_size_req = 0;            ///< shared, double-buffered
  double input_l1_size_req = 0, filter_l1_size_req = 0, output_l1_size_req = 0;
  double input_l2_size_req = 0, filter_l2_size_req = 0, output_l2_size_req = 0;
  double input_l2_rd = 0, input_l2_wr = 0, filter_l2_rd = 0, filter_l2_wr = 0;
  double output_l2_rd = 0, output_l2_wr = 0;
  double input_l1_rd = 0, input_l1_wr = 0, filter_l1_rd = 0, filter_l1_wr = 0;
  double output_l1_rd = 0, output_l1_wr = 0;
  double noc_bw_req_peak = 0;
  double noc_bw_req_avg = 0;
  double offchip_bw_req = 0;
  double avg_utilized_pes = 0;
  double ingress_delay_avg = 0, egress_delay_avg = 0, compute_delay_avg = 0;
};

/// The capability a cost model offers when it evaluates directive lists
/// directly (see the file comment). Thread-safe, no I/O. Throws InputError
/// when the directives cannot be analysed (e.g. a tile larger than its
/// dimension leaves no work in some iteration).
class BOOST_SYMBOL_VISIBLE DirectiveEvaluator {
 public:
  virtual ~DirectiveEvaluator();
  virtual Result evaluate_directives(const Layer& layer, const Hardware& hw) const = 0;
};

/// Marvel Algorithm 1 (§4): a canonical mapping of a CONV2D (regular or
/// depthwise) or GEMM operator becomes MAESTRO directives. The architecture
/// must be a MAESTRO-style chip: buffers and spatial levels alternating,
/// innermost first, ending in DRAM. Every split dimension becomes a cluster
/// level (region) of its own whose SpatialMap covers exactly the split's
/// units; the outermost region of a spatial level also holds TemporalMaps in
/// the loop order of the buffer above it. The hardware is the
/// architecture's (`hardware_from`) with `num_pes` set to the PEs the
/// mapping engages (the product of its splits), so that MAESTRO's "units =
/// PEs / cluster sizes" gives each region its split. Throws InputError when
/// the operator or architecture has no MDC form.
struct Lowered {
  Layer layer;
  Hardware hardware;
};
Lowered from_mapping(const Operator& op, const Architecture& arch, const Mapping& mapping);
/// The MAESTRO hardware of an architecture: PEs, innermost buffer as L1, the
/// outermost on-chip buffer as L2, the first network's bandwidth and latency,
/// DRAM bandwidth, all in elements (word size) per cycle; multicast and
/// reduction from the spatial levels. Throws InputError naming the level and
/// key when two spatial levels disagree on either switch (MAESTRO's analysis
/// has one network from L2 into the PEs).
Hardware hardware_from(const Architecture& arch);

/// One broken conformability rule (Marvel §3).
struct ConformabilityIssue {
  int rule = 0;  ///< 1..4
  std::string tensor;
  std::string detail;
};
/// Checks Marvel's four rules (§3): 1. a perfect nest without conditionals
/// (always true of the operator IR); 2. no dependences but reductions (an
/// output not indexed by some dimension must reduce over it); 3. the
/// dimension dependence graph (one node per distinct tensor subscript,
/// edges from a subscript to the multi-variable subscripts sharing an
/// iterator, and among single-variable subscripts of one iterator from the
/// lowest constant to the rest) has a topological order; 4. its independent
/// nodes are plain loop iterators (coefficient 1, no constant).
/// Returns nothing when the operator is conformable.
std::vector<ConformabilityIssue> check_conformability(const Operator& op);

}  // namespace mapex::mdc
