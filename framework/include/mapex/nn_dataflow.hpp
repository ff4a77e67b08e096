#pragma once
/// \file
// nn_dataflow's cost model of one layer on a multi-node chip, the model that
// scores every schedule KAPLA reports (KAPLA §V: baseline B and all energy
// figures come from nn_dataflow's simulator). Term by term it computes what
// stanford-mast/nn_dataflow (commit 198a527) computes for a layer whose
// source and destination are DRAM:
//
// - partitioning over the node array (OUTP, OFMP, BATP, INPP, each a 2D
//   factor, nested in an order) into per-node layers, with the occupancy
//   that ceil-division leaves;
// - the row-stationary PE-array mapping (Eyeriss, ISCA'16 §V): logical PE
//   sets of filter rows x output rows, folded and replicated onto the array,
//   one "processing pass" per replication;
// - loop blocking of the ifmap, ofmap and batch loops over three levels
//   (DRAM->GBUF, GBUF->REGF, in REGF) and two loop orders, which give the
//   fetch counts and so the DRAM, GBUF, array-interconnect and REGF accesses;
// - access forwarding between nodes that need the same data (with GBUF
//   sharing), which divides DRAM fetches by the sharing group;
// - NoC hops from the memory channels at the chip's corners to every node
//   (Manhattan distance; with forwarding, a minimum tree from the sources),
//   times the top-level fetch count;
// - time = max(processing, array bus, DRAM); energy = MACs + accesses x unit
//   costs + hops x hop cost + idle cost x time.
//
// Everything here is plain arithmetic on small structs, so the same code
// scores imported schemes and searched ones.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mapex::ndf {

// Data categories, loops, memory levels and parallelisms, in nn_dataflow's
// enum order (the importer and the results use these indices).
enum Dce { kFil = 0, kIfm = 1, kOfm = 2 };
enum LoopId { kLoopIfm = 0, kLoopOfm = 1, kLoopBat = 2 };
enum Mem { kDram = 0, kGbuf = 1, kItcn = 2, kRegf = 3 };
enum Par { kOutp = 0, kOfmp = 1, kBatp = 2, kInpp = 3 };

struct Dim2 {
  std::int64_t h = 1;
  std::int64_t w = 1;
  std::int64_t size() const { return h * w; }
  bool operator==(const Dim2&) const = default;
};

/// The layer types nn_dataflow's row-stationary model distinguishes. Each
/// type fixes which of the ifmap/ofmap/batch loops index each data
/// category (its `data_loops`), and so the loop counts, the replicated data
/// and what nodes share.
enum class LayerKind {
  kConv,  ///< ConvLayer (and FCLayer): every output channel reads every input channel
  /// KAPLA's DepthwiseConvolutionLayer (tsinghua-ideal/kapla layer.py): one
  /// filter per channel, output channel n reads input channel n only.
  kDepthwise,
  /// LocalRegionLayer: no filters, each output merges a local region of the
  /// input (EltwiseLayer: `nreg` channels, a 1 x 1 window).
  kLocalRegion,
};

/// One layer as nn_dataflow models it (FC: every spatial size 1). For a
/// local-region layer `hfil` x `wfil` is the region's window (hreg x wreg).
struct Layer {
  LayerKind kind = LayerKind::kConv;
  std::int64_t batch = 1;
  std::int64_t nifm = 1, nofm = 1;
  std::int64_t hofm = 1, wofm = 1;
  std::int64_t hfil = 1, wfil = 1;
  std::int64_t htrd = 1, wtrd = 1;
  /// Local region: channels merged per output (nreg) and the channel
  /// stride (ntrd; EltwiseLayer sets both to its operand count, so
  /// nifm = nofm x ntrd). 1 for the other kinds.
  std::int64_t nreg = 1, ntrd = 1;
  std::int64_t hifm() const { return hfil + (hofm - 1) * htrd; }
  std::int64_t wifm() const { return wfil + (wofm - 1) * wtrd; }
  /// Input channels the ifmap loop runs over: all of them for a
  /// convolution; one for the other kinds, whose input channel follows the
  /// output channel ("loop ifm is corresponding to loop ofm", _gen_repl).
  std::int64_t ifm_loop_channels() const { return kind == LayerKind::kConv ? nifm : 1; }
  double ops() const {
    const auto fmap = static_cast<double>(batch * nofm * hofm * wofm);
    switch (kind) {
      case LayerKind::kDepthwise:
        return fmap * static_cast<double>(hfil * wfil);
      case LayerKind::kLocalRegion:
        return fmap * static_cast<double>(nreg * hfil * wfil);
      case LayerKind::kConv:
        break;
    }
    return fmap * static_cast<double>(nifm * hfil * wfil);
  }
};

/// Which loops index each data category (Layer.data_loops): [Dce][LoopId].
using DataLoops = std::array<std::array<bool, 3>, 3>;
DataLoops data_loops(LayerKind kind);

/// nn_dataflow's PartitionScheme: `order` lists the parallelisms from the
/// outermost to the innermost level of the node array.
struct Partition {
  std::array<int, 4> order{0, 1, 2, 3};
  std::array<Dim2, 4> pdims{};
  Dim2 dim() const;
  std::int64_t size(int par) const { return pdims[static_cast<size_t>(par)].size(); }
};

/// A rectangular node region (nn_dataflow's NodeRegion without folding):
/// node (i, j) is at origin + (i x dist.h, j x dist.w).
struct Region {
  Dim2 dim;
  Dim2 origin{0, 0};
  Dim2 dist{1, 1};
};

/// Where a 4D fmap (batch, channel, height, width) lies in DRAM: split by a
/// partition scheme over a region (nn_dataflow's DataLayout, one range).
struct Layout {
  std::array<std::int64_t, 4> end{};  ///< the fmap's size: b, n, h, w
  Region region;
  Partition part;
};

struct Hardware {
  Dim2 nodes;                        ///< the processing node array
  Dim2 array;                        ///< PEs per node
  double regf_words = 0;             ///< per PE
  double gbuf_words = 0;             ///< per node
  double bus_words = 0;              ///< array bus, words per cycle per data type; 0: unlimited
  double dram_words = 0;             ///< DRAM, words per cycle; 0: unlimited
  Region dram;                       ///< the memory channels (2D memory: the four corners)
  double mac_cost = 0;               ///< per MAC
  std::array<double, 4> mem_cost{};  ///< per word: DRAM, GBUF, ITCN, REGF
  double hop_cost = 0;               ///< per word per hop
  double idle_cost = 0;              ///< per cycle, whole chip
  /// The nodes run this layer alone for the whole run (Resource.no_time_mux):
  /// filters a blocking keeps whole in the GBUFs are pinned there.
  bool no_time_mux = false;
};

struct Options {
  /// Nodes that need the same data forward it (nn_dataflow's GBUF sharing
  /// or access forwarding): DRAM fetches divide by the sharing group and
  /// NoC transfers follow a forwarding tree.
  bool forwarding = false;
  /// Per data category: may the data bypass the GBUF (`--disable-bypass`
  /// clears it)?
  std::array<bool, 3> bypass{false, false, false};
  /// Per data category (filter, input, output): whether the GBUF keeps it,
  /// fixed by the mapping's `keep` at the GBUF. When set, it is
  /// the source of truth: `bypass` and nn_dataflow's keep-if-reused rule no
  /// longer decide. Unset: they do (mappings without `keep`).
  std::optional<std::array<bool, 3>> gbuf_keep;
};

/// The loop-blocking scheme of one node: factors t[level][loop] for levels
/// 0 (DRAM->GBUF), 1 (GBUF->REGF), 2 (in REGF), and loop orders for levels
/// 0 and 1 as the position of each loop (0 = innermost).
struct Blocking {
  std::array<std::array<std::int64_t, 3>, 3> t{};
  std::array<std::array<int, 3>, 2> ord{};
};

/// A whole scheme of one layer: partition, the replication of the
/// processing pass (input and output channels per pass), loop blocking.
struct Scheme {
  Partition part;
  std::int64_t ifms = 1;
  std::int64_t ofms = 1;
  Blocking blocking;
};

/// The row-stationary mapping of the per-node layer (MapStrategyEyeriss).
struct PeMapping {
  Dim2 lpeset, repl, fold, flpeset, ppeset;
  double util = 0;
  /// Allowed replications (ifms, ofms), in nn_dataflow's generation order.
  std::vector<std::pair<std::int64_t, std::int64_t>> repl_choices;
};

/// The nested-loop description of one processing pass (NestedLoopDesc).
struct LoopDesc {
  DataLoops data_loops{};  ///< the layer's (NestedLoopDesc.data_loops)
  std::array<std::int64_t, 3> loopcnt{};
  std::array<double, 3> usize_gbuf{}, usize_regf{};
  std::array<std::array<double, 3>, 4> unit_access{};
  double unit_ops = 0, unit_time = 0;
};

struct Result {
  bool valid = false;
  std::string reason;
  Layer node_layer;
  double occupancy = 0;
  PeMapping pe;
  LoopDesc nld;
  std::int64_t num_nodes = 0;
  std::array<std::array<double, 3>, 2> fetch{};
  std::array<bool, 3> stored_in_gbuf{};
  std::array<double, 3> accfwd{};
  std::array<std::array<double, 3>, 4> access{};     ///< [Mem][Dce], all nodes
  std::array<double, 3> gbuf_words{}, regf_words{};  ///< buffered per node/PE
  std::array<double, 3> unit_nhops{}, nhops{};
  double ops = 0, proc_time = 0, bus_time = 0, dram_time = 0, time = 0;
  double cost_op = 0, cost_noc = 0, cost_static = 0;
  std::array<double, 4> cost_access{};  ///< per Mem
  double cost() const;
};

/// The per-node layer, batch and occupancy of a partition (part_layer).
Layer part_layer(const Layer& layer, const Partition& part, double* occupancy);

/// The row-stationary mapping of a per-node layer on the PE array; an
/// error when the layer cannot use half of the array (nn_dataflow asserts).
std::optional<std::string> pe_mapping(const Layer& node_layer, const Dim2& array, PeMapping& out);

/// The processing-pass description for one replication choice.
LoopDesc loop_desc(const Layer& node_layer, double occupancy, const PeMapping& pe,
                   std::int64_t ifms, std::int64_t ofms);

/// The layout nn_dataflow gives a layer's output in DRAM: its partition
/// projected onto the memory region (PartitionScheme.projection).
Layout ofmap_layout(const Layer& layer, const Partition& part, const Region& dram);

/// Hops to bring each data category to the nodes once
/// (unit_nhops_to_proc_region).
/// `categories`: which data categories to compute (the others are 0), so
/// that a search trying several input layouts on one partition recomputes
/// only the ifmaps'.
std::array<double, 3> unit_nhops(const Layer& layer, const Partition& part, const Hardware& hw,
                                 const Layout& ifmaps, const Layout& ofmaps, bool forwarding,
                                 std::array<bool, 3> categories = {true, true, true});

/// Nodes whose partitions need the same data of each category
/// (BufShrScheme.size, with the layer's data loops): with forwarding, DRAM
/// fetches divide by them.
std::array<double, 3> sharing_groups(const Partition& part, LayerKind kind);

/// Why a loop blocking does not fit: the cheap verdict of score_blocking
/// (no text, no allocation); `evaluate` turns it into a sentence.
enum class Misfit { kNone, kShortLoop, kRegf, kGbuf, kRotation };

/// What a loop blocking of one processing pass costs, before the NoC
/// (LoopBlockingScheme's stats), summed over all nodes.
struct BlockingStats {
  std::array<std::array<double, 3>, 2> fetch{};
  std::array<bool, 3> stored_in_gbuf{};
  std::array<double, 3> accfwd{};
  std::array<std::array<double, 3>, 4> access{};     ///< [Mem][Dce]
  std::array<double, 3> gbuf_words{}, regf_words{};  ///< buffered per node/PE
  double regf_total = 0, gbuf_total = 0;
  double gbuf_unshared = 0;  ///< GBUF words were each node to hold its own copy
  double ops = 0, proc_time = 0, bus_time = 0, dram_time = 0, time = 0;
  std::array<double, 4> cost_access{};  ///< per Mem
  /// nn_dataflow's access cost (get_access_cost): what it ranks the loop
  /// blockings of one pass by.
  double access_cost() const {
    return cost_access[0] + cost_access[1] + cost_access[2] + cost_access[3];
  }
};

/// Scores one loop blocking of the pass `nld` on a partition whose sharing
/// groups are `share`. Allocates nothing, so a search calls it in its inner
/// loop; `out` is complete only when the verdict is kNone.
Misfit score_blocking(const Hardware& hw, const Options& options,
                      const std::array<double, 3>& share, const LoopDesc& nld, const Blocking& b,
                      BlockingStats& out);

/// Scores a scheme. `ifmaps` is where the input lies in DRAM.
Result evaluate(const Layer& layer, const Hardware& hw, const Options& options,
                const Scheme& scheme, const Layout& ifmaps);

}  // namespace mapex::ndf
