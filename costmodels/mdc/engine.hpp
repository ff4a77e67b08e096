#pragma once
// The MDC analysis engine (MAESTRO, IEEE Micro 2020, §IV "Quantitative
// dataflow analysis"). A layer and its directives are compiled once into a
// Plan (fixed-size arrays, no strings); `analyse` then runs without touching
// the heap, so one evaluation costs microseconds.

#include <cstdint>
#include <mapex/mdc.hpp>

namespace mapex::mdc::engine {

/// Dimension ids. GEMM reuses N and K for its N and K.
enum DimId : int { kN, kG, kK, kC, kR, kS, kY, kX, kYo, kXo, kM, kNumDims };
constexpr int kMaxDirectives = 16;
constexpr int kMaxLevels = 6;
constexpr int kNumTensors = 3;  // input, filter, output

// Built with all its fields (Dir{...}); no default member values, so a
// plan's 6 x 16 directive slots are not filled in for every layer.
struct Dir {
  bool spatial;
  int dim;
  std::int64_t size;
  std::int64_t offset;
};

/// Tiles of a directive over a dimension: how many full tiles fit, and
/// whether indices past the last full tile are left that hold work. No
/// default member values (see Dir): a plan holds 6 x 16 of them.
struct Tiles {
  std::int64_t full;
  std::int64_t edge;  // indices from the next tile position to the end
  std::int64_t span;  // indices one tile really spans (engine.cpp, real_span)
  bool partial;
};

/// One cluster level after MAESTRO's filling-in rules (refdata README,
/// "Filling in"), with the per-dimension tile sizes of §IV's reuse analysis.
struct Level {
  Dir dirs[kMaxDirectives];
  int num_dirs = 0;
  int dir_of_dim[kNumDims];       // index into dirs, -1 when absent
  std::int64_t dims[kNumDims];    // the level's dimension sizes
  std::int64_t num_sub = 1;       // sub-units (PEs or sub-clusters)
  std::int64_t num_edge_sub = 1;  // sub-units busy in a spatial edge step
  bool has_partial = false;       // true iteration space: the last busy unit's tile is partial
  // Tile sizes per dimension: mapped, unique (new per step), and the same
  // at the dimension's edge (MAESTRO §IV-A, temporal/spatial reuse).
  std::int64_t mapped[kNumDims], unique[kNumDims], mapped_edge[kNumDims], unique_edge[kNumDims];
  // Stride of a window dimension (Y, X) inside this level's tiles, for a
  // full tile and for the edge tile: the layer's stride, or the filter size
  // where MAESTRO's stride rewrite packs each output's rows together
  // (filter < stride, below the top level). 1 for other dimensions.
  std::int64_t out_stride[kNumDims], edge_stride[kNumDims];
  // Tiles of each directive over the level's dimensions, as the true
  // iteration space counts them (set with the tile sizes, read again by
  // each analysis of the level on these dimensions).
  Tiles tiles[kMaxDirectives];
};

struct Plan {
  LayerType type = LayerType::kConv;
  bool conv = true;  // Y/R and X/S form sliding windows
  // Coupled dimensions of each tensor in MAESTRO's order.
  int coupled[kNumTensors][6];
  int num_coupled[kNumTensors];
  unsigned coupled_mask[kNumTensors];  // bit d: dimension d is coupled to the tensor
  Level levels[kMaxLevels];
  int num_levels = 0;
  std::int64_t full_dims[kNumDims];  // level-0 dims incl. Y', X'
  std::int64_t stride[kNumDims];     // the layer's stride on Y and X, 1 elsewhere
  Hardware hw;
  std::int64_t true_macs = 0;
  // false (default): the true iteration space, in which a tile of a window
  // dimension produces only the output positions its stride reaches and a
  // spatial edge step keeps every unit that has work. true: MAESTRO's own
  // iteration space and numbers (README "Deviations from MAESTRO").
  bool maestro_compat = false;
  // true (default): a case whose class its level met before takes that
  // class's outcome instead of being analysed again (engine.cpp,
  // CaseOrder::case_class). false: every case is analysed, so that tests
  // can check the classes against a full analysis.
  bool reuse_case_classes = true;
};

/// Builds the plan. `batch` says whether the tensors carry N (MAESTRO decides
/// this per layer type from the first layer of that type in a network).
/// Throws InputError on directives the analysis cannot represent.
/// `maestro_compat` selects MAESTRO's iteration space (see Plan).
Plan compile(const Layer& layer, const Hardware& hw, bool batch, bool maestro_compat = false);

/// Runs the analysis. Throws InputError when the layer gets no work: in
/// maestro_compat mode when a tile is larger than its dimension (MAESTRO
/// prints NaN there); in the true space only when no window fits at all.
Result analyse(const Plan& plan);

/// The top level's input traffic as a function of the order of its
/// directives (the words each input tensor enters its sub-units with: its
/// L2 reads, and so its L1 writes, in analyse's accounts). A case's ingress
/// (§IV-A) reads the order only through the directive that moved, whether
/// a directive of the tensor inside it restarts, and whether the level's
/// SpatialMap lies inside it; the cases in which directive i moves occur
/// (product of the steps of the directives outside i) x (steps of i - 1)
/// times. So one table per tensor and directive gives the traffic of every
/// order of the same directives. `exact` only where the level has one
/// SpatialMap, every directive has at most 8 (kMaxTopDirectives) and no
/// state of any of them is an edge (then every case has work and these are
/// the only case classes).
constexpr int kMaxTopDirectives = 8;
struct TopIngress {
  bool exact = false;
  int num_dirs = 0;
  int spatial = -1;                            // the level's SpatialMap
  std::int64_t steps[kMaxTopDirectives] = {};  // cases per full sweep of a directive
  unsigned restarts = 0;                       // bit i: directive i restarts (Init not unrolled)
  unsigned coupled[2] = {0, 0};                // bit i: directive i is on a dimension of input t
  std::int64_t first[2] = {0, 0};              // the all-Init case
  // moved[t][i][r][s]: the case in which directive i moved, r: a directive
  // of tensor t inside i restarts, s: the SpatialMap lies inside i.
  std::int64_t moved[2][kMaxTopDirectives][2][2] = {};
};
TopIngress top_ingress(const Plan& plan);

/// Each input's words under an order of the top directives (directive
/// indices, outermost first, each once), from top_ingress's table.
void top_input_words(const TopIngress& table, const int* order, std::int64_t* words);

/// The least sum over the inputs of cost[t] x words under any order of the
/// top directives in which every directive of `after_spatial` (bit i)
/// comes after the SpatialMap (a programme over the sets of directives
/// placed outermost). Infinite when no order meets that.
double least_top_input_cost(const TopIngress& table, const double* cost, unsigned after_spatial);

}  // namespace mapex::mdc::engine
