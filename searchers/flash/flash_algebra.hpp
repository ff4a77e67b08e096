#pragma once
/// \file
/// The algebra of FLASH (Moon et al., "Evaluating Spatial Accelerator
/// Architectures with Tiled Matrix-Matrix Multiplication"): the five
/// accelerator-style GEMM dataflows of Table 2, the candidate tile-size
/// bounds of Eq. 1-4 and Table 6, the pruning and candidate generation of
/// Algorithm 2, and the lowering of a candidate to a canonical mapping.
/// Pure functions, no I/O; shared by the `flash` searcher plugin, its tests
/// and the `flash_count` tool.
///
/// How a candidate is expressed. A candidate is a canonical mapping of the
/// GEMM on a MAESTRO-style chip (S1 / PE array / S2 / DRAM) with a cluster
/// level on the PE array (mapping.hpp, ClusterMapping): the array's split
/// spreads the clusters over the inter-cluster parallel dimension, each
/// cluster steps through its outer tile T^out by the inner tiles T^in of
/// its lambda PEs, which share the intra-cluster dimension; S1 holds T^in,
/// S2 one outer step, and S2 and DRAM iterate in the style's compute
/// order. Marvel's Algorithm 1 (mapex::mdc::from_mapping) lowers it to
/// exactly the directives of Table 2, TemporalMaps inside the Cluster
/// included (tested), so FLASH's results are evaluated through the job's
/// cost model and stored like every other searcher's.

#include <array>
#include <cstdint>
#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mapex::flash {

/// GEMM dimensions, C[M][N] += A[M][K] * B[K][N] (FLASH §2.1).
enum GemmDim : int { kM = 0, kN = 1, kK = 2 };
/// A loop order, outermost first, e.g. {kM, kN, kK} for <m, n, k>.
using LoopOrder = std::array<int, 3>;
using Extents = std::array<std::int64_t, 3>;

/// The five mapping styles of Table 2.
enum class Style { kEyeriss, kNvdla, kTpu, kShidiannao, kMaeri };
inline constexpr std::array<Style, 5> kAllStyles{Style::kEyeriss, Style::kNvdla, Style::kTpu,
                                                 Style::kShidiannao, Style::kMaeri};

/// "eyeriss", "nvdla", "tpu", "shidiannao", "maeri".
std::string to_string(Style style);
std::optional<Style> parse_style(const std::string& text);
/// "mnk" for <m, n, k>.
std::string to_string(const LoopOrder& order);
std::optional<LoopOrder> parse_order(const std::string& text);
/// Table 2's mapping name, e.g. "STT_TTS-NKM" or "TST_TTS-KMN".
std::string mapping_name(Style style, const LoopOrder& order);

/// The GEMM and the chip as FLASH sees them (Algorithm 2's inputs): P PEs,
/// alpha = S1 and beta = S2 in elements.
struct Problem {
  Extents dims{1, 1, 1};  ///< M, N, K
};
struct Chip {
  std::int64_t pes = 1;
  std::int64_t s1_words = 0;  ///< alpha
  std::int64_t s2_words = 0;  ///< beta
};
/// Reads P, S1 and S2 from an S1 / spatial / S2 / DRAM architecture; throws
/// InputError naming the architecture when it has another shape.
Chip chip_from(const Architecture& arch);
/// Reads M, N, K of a GEMM operator; throws InputError naming the operator
/// kind when it is not a GEMM.
Problem problem_from(const Operator& op);

/// One dataflow of Table 2: a style, a loop order (the compute order of
/// both cluster levels) and a cluster size (Algorithm 2, line 6).
struct Dataflow {
  Style style = Style::kEyeriss;
  LoopOrder order{kM, kN, kK};
  int inter_dim = kM;             ///< SpatialMap above the Cluster directive
  int intra_dim = kK;             ///< SpatialMap below it
  std::int64_t cluster_size = 1;  ///< lambda, PEs per cluster
  std::int64_t clusters = 1;      ///< floor(P / lambda)
};

/// The loop orders a style supports (§4, constraint (i)): one each for the
/// fixed-dataflow styles, all six for MAERI. `any_order`: all six for every
/// style (not Table 2: the reading of §5.4's flexible-vs-fixed comparison
/// that gives the fixed styles the other orders too).
std::vector<LoopOrder> loop_orders(Style style, bool any_order = false);
/// The cluster sizes a style supports on P PEs (Table 2, cluster size row),
/// for MAERI those of the last loop's dimension, 1..min(P, its extent).
std::vector<std::int64_t> cluster_sizes(Style style, const LoopOrder& order, const Problem& problem,
                                        std::int64_t pes);
/// Algorithm 2, line 1: every (loop order, cluster size) of the style
/// (`any_order`: as loop_orders; parallel dimensions stay Table 2's).
std::vector<Dataflow> dataflows(Style style, const Problem& problem, std::int64_t pes,
                                bool any_order = false);

/// A candidate: a dataflow and its tiles in Table 2's terms.
/// - `outer` (T^out): the inter-cluster dimension's tile per cluster, the
///   other temporal dimension's outer tile, and the intra-cluster tile:
///   each PE's share of the intra dimension for STT_TTS / STT_TST (the
///   cluster covers T^out x lambda of it), lambda itself for MAERI (whose
///   SMap(1, 1) gives each PE one element).
/// - `inner` (T^in): each PE's tile, held in S1; along the intra dimension
///   it is T^out (STT) or 1 (MAERI), as Table 6's last rows fix it.
struct Candidate {
  Dataflow flow;
  Extents outer{1, 1, 1};
  Extents inner{1, 1, 1};
};

/// Elements one cluster covers per dimension (the cluster level's tile).
Extents cluster_tile(const Candidate& c, const Problem& problem);
/// Elements one outer step (one iteration of the inter-cluster directives)
/// covers per dimension: the cluster tile, the inter-cluster dimension
/// over all clusters, capped by the dimension.
Extents step_extents(const Candidate& c, const Problem& problem);
/// Left sides of Eq. 2 (S1, per PE: the inner tiles) and Eq. 1 (S2, one
/// outer step): A + B + C tiles, in elements. Double buffering halves the
/// buffer.
std::int64_t s1_footprint(const Candidate& c);
std::int64_t s2_footprint(const Candidate& c, const Problem& problem);
bool fits(const Candidate& c, const Problem& problem, const Chip& chip);

/// Table 6's closed forms (exact reals before flooring).
/// STT_TTS / STT_TST outer bound: (sqrt(D^2 (l+1)^2 + 2 beta l) - D (l+1)) / (2 l).
double outer_bound_stt(double extent, double lambda, double beta);
/// STT_TTS / STT_TST inner bound: sqrt(alpha/2 + T^2) - T.
double inner_bound_stt(double outer_tile, double alpha);
/// MAERI (Eq. 3): sqrt(beta/2 + D^2) - D.
double outer_bound_maeri(double extent, double beta);
/// MAERI (Eq. 4): sqrt((alpha + 2) / 2) - 1.
double inner_bound_maeri(double alpha);

/// Eq. 2 for the two tiles x, y that are temporal inside the cluster,
/// around the intra-cluster tile T: x T + T y + x y <= alpha / 2. Table 6
/// solves it with x = y (sqrt(alpha/2 + T^2) - T; Eq. 4 is T = 1). When one
/// tile cannot reach that square bound because its dimension (or its share
/// of the clusters) caps it lower, the other takes the room it leaves:
/// x <= (alpha/2 - T y) / (T + y) with y at its cap (same inequality, no
/// equal-tile assumption). Returns the real bounds of x and y.
std::array<double, 2> inner_pair_bounds(double intra_tile, double cap_x, double cap_y,
                                        double alpha);

/// The pruned ranges [1, upper] of one dataflow (Algorithm 2, lines 7-8;
/// Table 6) for an inter-cluster tile `inter_tile` (at most its share
/// lambda D / P): `outer` bounds T^out by the S2 equations (Eq. 1/3, with
/// the extent one step covers; MAERI's intra entry is lambda).
struct Bounds {
  Extents outer{1, 1, 1};
  bool feasible = true;  ///< false when lambda itself breaks Eq. 3 (MAERI)
};
Bounds outer_bounds(const Dataflow& flow, const Problem& problem, const Chip& chip,
                    std::int64_t inter_tile);
/// T^in bounds of the inter and the other dimension for a candidate whose
/// outer tiles (and intra tile) are set.
std::array<std::int64_t, 2> inner_bounds(const Candidate& c, const Chip& chip);

/// What Algorithm 2 produced for a style.
struct Generation {
  std::vector<Candidate> candidates;  ///< after pruning, in a fixed order
  /// Tile tuples before pruning (§4, "baseline candidates"): for every
  /// dataflow, every outer tile from 1 to its dimension and every inner
  /// tile from 1 to its outer tile, for the tiles the style leaves free.
  double before_pruning = 0;
  std::size_t dataflows = 0;
};
/// `pruned`: Table 6's bounds then Eq. 1-2 (FLASH). Otherwise every tile
/// tuple of the style (T^out from 1 to its dimension's share, T^in from 1
/// to T^out) whose tiles fit S1 and S2 (the reference space for measuring
/// what pruning loses; tuples that overflow a buffer are invalid under any
/// capacity-checking model and are not generated).
/// `orders` empty: all of the style's orders. `values`: which integers of
/// each range are tiles: the powers of two and the range's bound, every
/// integer, or (kLargest, §4 and §5.1's pick) per dataflow only the largest
/// power of two of each range that fits, outer tiles first, decreasing a
/// tile that overflows its buffer. More than `limit` candidates: InputError.
/// `any_order`: every style's dataflows in all six orders (loop_orders).
enum class TileValues { kPow2, kAll, kLargest };
Generation generate(Style style, const Problem& problem, const Chip& chip, bool pruned,
                    const std::vector<LoopOrder>& orders = {}, TileValues values = TileValues::kAll,
                    std::size_t limit = 50'000'000, bool any_order = false);

/// The non-tiled mapping of a dataflow (§3.2, Fig. 6(a)): tiles of 1 on
/// the two outer loops, the innermost loop's tile filling the cluster with
/// one element per PE.
Candidate non_tiled(const Dataflow& flow);
/// Whether a dataflow's cluster size is the one of §3.2's non-tiled
/// mapping: MAERI's last loop's tile is its whole dimension (Fig. 6(a):
/// T_K^out = K = 4), so lambda = min(D_last, P), which gives Table 5's
/// non-tiled runtimes (2.23 ms for <m,n,k>, <n,m,k>; 1.31 ms for the
/// others). The paper defines no non-tiled mapping for the fixed styles:
/// every cluster size is kept.
bool non_tiled_cluster(const Dataflow& flow, const Problem& problem, std::int64_t pes);

/// The canonical mapping of a candidate on an S1 / PE array / S2 / DRAM
/// chip (see the file comment): PE array split {inter: clusters} with a
/// cluster level {split {intra: lambda}, tile T^out, the style's order}
/// (splits capped by what the dimension needs), S1 holding T^in, S2 one
/// outer step, S2 and DRAM iterating in the style's order.
Mapping to_mapping(const Candidate& c, const Operator& op, const Architecture& arch);
/// The same for many candidates of one operator and chip: checks and looks
/// up once, then `build` only fills in tiles, splits and orders.
class MappingBuilder {
 public:
  /// Throws InputError like `problem_from` and `chip_from`.
  MappingBuilder(const Operator& op, const Architecture& arch);
  Mapping build(const Candidate& c) const;

 private:
  Problem problem_;
  std::array<DimId, 3> id_{};
  Mapping base_;
};

/// §5.2's unpruned count for an n x n x n GEMM, by the rule of the issue:
/// tuples (T_M^out, T_N', T_K^out, T_M^in, T_N^in) with outer sizes in
/// [1, n], T_M^in <= T_M^out, T_N^in <= T_N', T_K^in = 1, Eq. 1 with beta
/// and Eq. 2 with alpha. 7,250,826,667 for n = 256, alpha = 512, beta =
/// 102,400.
std::uint64_t section52_baseline(std::int64_t n, std::int64_t alpha, std::int64_t beta);
/// The same tuples restricted to the ranges of Eq. 3 and Eq. 4 (T_N' = the
/// N extent of one step, N): the pruned count by FLASH's stated bounds.
std::uint64_t section52_pruned(std::int64_t n, std::int64_t alpha, std::int64_t beta);
/// The pruned count read as a plain product of the four ranges of Eq. 3
/// (T_M^out, T_K^out) and Eq. 4 (T_M^in, T_N^in), without holding Eq. 1-2
/// per tuple: bound_3^2 x bound_4^2. The paper's 14,992,384 is such a
/// product (88^2 x 44^2); Eq. 4 gives 44 when S1's 512 B are counted as
/// alpha = 4,096 (bits).
std::uint64_t section52_range_product(std::int64_t n, std::int64_t alpha, std::int64_t beta);

}  // namespace mapex::flash
