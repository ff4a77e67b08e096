// The MDC analysis (MAESTRO, IEEE Micro 2020, §IV). For each cluster level
// the iteration space of its directives is split into *iteration cases*:
// per directive the first step (Init), the repeated middle steps (Steady)
// and the last, partial step (Edge). Every combination of per-directive
// states is one case with an occurrence count; the analysis evaluates each
// case once and weights it (§IV-B: "we only need to analyze a few
// representative cases"). Within a case the reuse analysis (§IV-A) gives the
// data each sub-unit newly receives (temporal reuse: only the `unique` part
// of a tile that slid by its offset; spatial reuse: multicast to the
// sub-units sharing a tile, partial sums reduced across them), from which
// come the NoC traffic, its delay (bandwidth and latency), the compute
// delay (recursively the sub-level's runtime, or the MACs of one PE), and
// the buffer accesses. By default the cases span the true iteration space
// (only real output positions, every spatial unit with work); with
// Plan::maestro_compat they follow MAESTRO's published behaviour
// (refdata/maestro/README.md), miscounts included. Each difference is
// listed under "Deviations from MAESTRO" in README.md next to this file.
// Hardware::multicast / reduction off (MAESTRO Table 1; MAESTRO's own code
// stores but never reads such a switch) make every busy sub-unit receive
// its own copy and send its own partial sums (README, "Networks without
// multicast or reduction").

#include "engine.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <string>

namespace mapex::mdc::engine {
namespace {

constexpr const char* kDimNames[kNumDims] = {"N", "G", "K",  "C",  "R", "S",
                                             "Y", "X", "Y'", "X'", "M"};

// By characters, not by comparing strings with each of kDimNames: the plan
// is rebuilt for every layer, and the name compares were about a tenth of
// it. A table of the first character (-1: no dimension), read inline: the
// switch was a call per name, 12 per layer.
struct DimOfChar {
  signed char id[256];
  constexpr DimOfChar() : id{} {
    for (signed char& v : id) v = -1;
    const char names[] = "NGKCRSYXM";
    const int ids[] = {kN, kG, kK, kC, kR, kS, kY, kX, kM};
    for (int k = 0; k < 9; ++k)
      id[static_cast<unsigned char>(names[k])] = static_cast<signed char>(ids[k]);
  }
};
constexpr DimOfChar kDimOfChar;

inline int dim_id(const std::string& name) {
  if (name.size() == 1) return kDimOfChar.id[static_cast<unsigned char>(name[0])];
  if (name.size() == 2 && name[1] == '\'')
    return name[0] == 'Y' ? kYo : (name[0] == 'X' ? kXo : -1);
  return -1;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// The sliding dimension (filter) of a reference dimension (input rows or
// columns), and the output dimension it produces.
// By table: asked for every directive of every level several times.
constexpr int kSlidingOf[kNumDims] = {-1, -1, -1, -1, -1, -1, kR, kS, -1, -1, -1};
constexpr int kOutputOf[kNumDims] = {kN, kG, kK, kC, kR, kS, kYo, kXo, kYo, kXo, kM};
static_assert(kY == 6 && kX == 7 && kYo == 8 && kXo == 9 && kM == 10 && kNumDims == 11);
int sliding_of(int d) { return kSlidingOf[d]; }
int output_of(int d) { return kOutputOf[d]; }

// Output positions whose window lies in `rows` input rows (or columns) when
// the filter tile is `filter` and consecutive windows start `stride` rows
// apart: the paper's output size (Y - R) / stride + 1 (§III-B, Table 1),
// applied to a tile. MAESTRO uses `rows - filter + 1` whatever the stride.
std::int64_t outputs_of(std::int64_t rows, std::int64_t filter, std::int64_t stride) {
  return rows >= filter ? (rows - filter) / stride + 1 : 0;
}

// The smallest tile of dimension `d` that has work at level `L`: a window
// dimension needs the rows of one filter tile, any other dimension one index.
std::int64_t min_work(const Level& L, int d) {
  const int s = sliding_of(d);
  return s < 0 ? 1 : std::max<std::int64_t>(L.mapped[s], 1);
}

// Tiles of a directive over `dim` indices: how many full tiles fit, and
// whether indices past the last full tile are left that hold work (for a
// window dimension, one more output position: `work` = the filter tile).
Tiles tiles_of(std::int64_t dim, std::int64_t map, std::int64_t ofs, std::int64_t work,
               bool window) {
  Tiles t;
  t.full = dim >= map ? (dim - map) / ofs + 1 : 0;
  t.edge = dim - t.full * ofs;
  t.span = map;
  const bool uncovered = t.full == 0 ? dim > 0 : (t.full - 1) * ofs + map < dim;
  t.partial = window ? t.edge >= work && t.edge > 0 && t.edge < map : uncovered;
  return t;
}
// Input rows a tile of a window dimension really spans. With a filter
// smaller than the stride, MAESTRO's rewrite packs the o windows of a tile
// into o*R rows while the tile moves by o*s; at the top level the tile still
// starts at real input rows, so whether it fits is decided on its real span
// (o-1)*s + R (else a tile past the end would claim o outputs).
std::int64_t real_span(const Level& L, const Dir& d) {
  const int s = sliding_of(d.dim);
  if (s < 0 || L.edge_stride[d.dim] == L.out_stride[d.dim]) return d.size;
  const std::int64_t r = std::max<std::int64_t>(L.mapped[s], 1);
  return (std::max<std::int64_t>(d.size / r, 1) - 1) * L.edge_stride[d.dim] + r;
}
Tiles tiles_of(const Level& L, const Dir& d, std::int64_t dim) {
  return tiles_of(dim, real_span(L, d), d.offset, min_work(L, d.dim), sliding_of(d.dim) >= 0);
}

// MAESTRO's tile sizes: all cleared, then those along the dimension one
// directive maps, then both for every directive of a level.
void clear_sizes(Level& L);
void set_directive_sizes(Level& L, const Dir& d);
void compute_directive_sizes(Level& L);
void compute_mapping_sizes(Level& L, bool conv);

// ---- iteration states (§IV-B) ------------------------------------------------

enum Pos : std::uint8_t { kInit, kSteady, kEdge };

// Every state is built with all its fields (State{...}); no default member
// values, so a level's 16 lists of 3 are not filled in before use.
struct State {
  Pos pos;
  bool unrolled;
  bool init_edge;  // the first step already reaches past the dimension
  bool edge_pe;    // at a spatial edge, the last busy sub-unit has a partial tile
  // What the state adds to a case's class (CaseOrder::case_class): bit i
  // when directive i is past Init, bit 16 + i when it is at an edge. Set
  // with the tiles (CaseOrder::set_tiles).
  unsigned class_bits;
  std::int64_t occ;
  // The state's tile along its directive's dimension as the temporal
  // products of a case take it (Case::begin): for an input tensor, the
  // output and the reduction. Filled in by CaseOrder once per level, so a
  // case multiplies them instead of deciding each from the state again.
  std::int64_t in_tile, out_tile, red_tile;
  bool is_edge() const { return pos == kEdge || init_edge; }
};

// No default member value either: CaseOrder holds 16 lists, and zeroing
// them (a 1 KB `rep stos`) for every level analysed was 4% of a one-level
// dataflow's analysis. The two builders below start every list at n = 0.
struct StateList {
  State s[3];
  int n;
};

// The true iteration states (maestro_compat off). They differ from
// MAESTRO's in three ways: an edge step whose remainder holds no output
// window is no case at all (MAESTRO analyses it with zero or negative
// output rows); a spatial edge step keeps every unit with work, full ones
// and the partial one (MAESTRO drops one full unit when the last is
// partial); and a first spatial step that covers the whole dimension with
// units to spare (idle units) flags its last busy unit as partial only
// when its tile is. MAESTRO flags it whenever units are idle and then
// gives a full last unit the edge tile's unique part, which is empty
// (README "Deviations", idle units): that unit would receive no new data
// after the first step and its outputs would not be counted, though it
// needs and produces a full tile's (§IV-A). Idle units add nothing.
void true_states(const Level& L, int i, std::int64_t dim, StateList& out) {
  out.n = 0;
  const Dir& d = L.dirs[i];
  // On the level's own dimensions the tiles are those true_tile_sizes kept.
  const Tiles t = dim == L.dims[d.dim] ? L.tiles[i] : tiles_of(L, d, dim);
  if (!d.spatial) {
    const std::int64_t span = t.span;
    if (dim <= span) {
      out.s[out.n++] = State{kInit, true, dim < span, false, 0U, 1, 0, 0, 0};
      return;
    }
    out.s[out.n++] = State{kInit, false, false, false, 0U, 1, 0, 0, 0};
    if (t.full > 1) out.s[out.n++] = State{kSteady, false, false, false, 0U, t.full - 1, 0, 0, 0};
    if (t.partial) out.s[out.n++] = State{kEdge, false, false, false, 0U, 1, 0, 0, 0};
    return;
  }
  const std::int64_t n = L.num_sub;
  const std::int64_t coverage = t.span + d.offset * (n - 1);
  if (dim <= coverage) {
    const bool edge = dim < coverage;
    out.s[out.n++] = State{kInit, true, edge, edge && t.partial, 0U, 1, 0, 0, 0};
    return;
  }
  const std::int64_t steps = t.full / n;
  out.s[out.n++] = State{kInit, false, false, false, 0U, 1, 0, 0, 0};
  if (steps > 1) out.s[out.n++] = State{kSteady, false, false, false, 0U, steps - 1, 0, 0, 0};
  if (t.full + (t.partial ? 1 : 0) > steps * n)
    out.s[out.n++] = State{kEdge, false, false, t.partial, 0U, 1, 0, 0, 0};
  return;
}

// Tile sizes of the true iteration space for the level's current `dims`,
// starting from MAESTRO's (compute_mapping_sizes): an output tile counts
// the window positions its stride reaches (§III-B) instead of MAESTRO's
// `rows - filter + 1`, an edge tile exists only when it holds work, and a
// spatial edge step has as many busy units as tiles with work remain.
void true_tile_sizes(Level& L, bool conv) {
  // MAESTRO's output rows and columns (compute_mapping_sizes) are all
  // replaced below: only the directives' own sizes are taken over.
  clear_sizes(L);
  for (int i = 0; i < L.num_dirs; ++i) {
    const Dir& d = L.dirs[i];
    set_directive_sizes(L, d);
    // tiles_of(L, d, ...) in the same pass: the filter tile it reads
    // (L.mapped of the sliding dimension) is the size of the filter's
    // directive, which may come later in the level.
    const int s = sliding_of(d.dim);
    std::int64_t span = d.size, work = 1;
    if (s >= 0) {
      const int f = L.dir_of_dim[s];
      work = std::max<std::int64_t>(f >= 0 ? L.dirs[f].size : 0, 1);
      if (L.edge_stride[d.dim] != L.out_stride[d.dim])  // real_span
        span = (std::max<std::int64_t>(d.size / work, 1) - 1) * L.edge_stride[d.dim] + work;
    }
    const Tiles t = tiles_of(L.dims[d.dim], span, d.offset, work, s >= 0);
    L.tiles[i] = t;
    if (t.partial) {
      L.mapped_edge[d.dim] = t.edge;
      L.unique_edge[d.dim] =
          std::max<std::int64_t>(t.edge - std::max<std::int64_t>(d.size - d.offset, 0), 0);
    } else if (L.dims[d.dim] >= d.size) {
      L.mapped_edge[d.dim] = d.size;
    }
  }
  if (conv) {
    for (int i = 0; i < L.num_dirs; ++i) {
      const Dir& d = L.dirs[i];
      const int s = sliding_of(d.dim);
      if (s < 0) continue;
      const int o = output_of(d.dim);
      const std::int64_t step = std::max<std::int64_t>(d.offset / L.out_stride[d.dim], 1);
      L.mapped[o] = outputs_of(d.size, L.mapped[s], L.out_stride[d.dim]);
      L.unique[o] = std::min(L.mapped[o], step);
      L.mapped_edge[o] = outputs_of(L.mapped_edge[d.dim], L.mapped_edge[s], L.edge_stride[d.dim]);
      // A packed edge tile (filter < stride) holds only its windows' rows.
      if (L.edge_stride[d.dim] != L.out_stride[d.dim] && L.mapped_edge[d.dim] != d.size)
        L.mapped_edge[d.dim] = L.mapped_edge[o] * L.mapped_edge[s];
      L.unique_edge[o] = std::max<std::int64_t>(
          L.mapped_edge[o] - std::max<std::int64_t>(L.mapped[o] - step, 0), 0);
    }
  }
  int spatial = -1;
  for (int i = 0; i < L.num_dirs && spatial < 0; ++i)
    if (L.dirs[i].spatial) spatial = i;
  if (spatial < 0) return;
  const Tiles& t = L.tiles[spatial];
  const std::int64_t total = t.full + (t.partial ? 1 : 0);
  const std::int64_t busy = total <= L.num_sub ? total : total - (t.full / L.num_sub) * L.num_sub;
  L.num_edge_sub = std::max<std::int64_t>(busy, 1);
  L.has_partial = t.partial;
}

// MAESTRO's iteration states (maestro_compat on).
void directive_states(const Level& L, const Dir& d, std::int64_t dim, StateList& out) {
  out.n = 0;
  const std::int64_t map = d.size, ofs = d.offset;
  if (!d.spatial) {
    const bool init_edge = dim < map;
    out.s[out.n++] = State{kInit, dim <= map, init_edge, false, 0U, 1, 0, 0, 0};
    const std::int64_t steady = (dim - map) / ofs;
    if (map < dim && steady > 0)
      out.s[out.n++] = State{kSteady, false, false, false, 0U, steady, 0, 0, 0};
    if (!init_edge && steady * ofs + map < dim)
      out.s[out.n++] = State{kEdge, false, false, false, 0U, 1, 0, 0, 0};
    return;
  }
  const std::int64_t n = L.num_sub;
  const std::int64_t coverage = map + ofs * (n - 1);
  const bool unroll = dim <= coverage;
  const bool init_edge = dim < coverage;
  out.s[out.n++] = State{kInit, unroll, init_edge, init_edge, 0U, 1, 0, 0, 0};
  // Steady steps move the whole array of sub-units by n * offset.
  const std::int64_t steady = ((dim - map) / ofs + 1) / n - 1;
  if (coverage < dim && steady > 0)
    out.s[out.n++] = State{kSteady, false, false, false, 0U, steady, 0, 0, 0};
  const bool has_edge = !unroll && ((steady + 1) * (ofs * n) + coverage > dim) &&
                        (steady * (ofs * n) + coverage != dim);
  const std::int64_t remaining = dim - (steady + 1) * ofs * n;
  std::int64_t active = remaining < map ? 1 : (remaining - map) / ofs + 1;
  bool edge_pe = false;
  if ((active - 1) * ofs + map < remaining) edge_pe = true;
  if (!init_edge && has_edge) out.s[out.n++] = State{kEdge, false, false, edge_pe, 0U, 1, 0, 0, 0};
  return;
}

// ---- one iteration case of one level ------------------------------------------

// The level's directives are sorted once per level by the tensors they
// touch, so that a case visits only the directives that matter to each
// tensor; what every case asks several times (the directive that moved, a
// sub-unit's output and reduction tiles) is worked out once per case
// (`begin`). Tests of every directive against every tensor were most of
// the analysis.
struct Case {
  Case(const Plan& plan, const Level& level) : P(plan), L(level) {
    for (int t = 0; t < kNumTensors; ++t) {
      num_spatial_coupled[t] = num_temporal_coupled[t] = 0;
      coupled_dir_mask[t] = 0;
      for (int i = 0; i < L.num_dirs; ++i)
        if (coupled(t, L.dirs[i].dim)) {
          coupled_dir_mask[t] |= 1U << i;
          if (!L.dirs[i].spatial) temporal_coupled[t][num_temporal_coupled[t]++] = i;
        }
      // In the tensor's own order of coupled dimensions (spatial_of: the
      // last one decides edge_pe).
      for (int k = 0; k < P.num_coupled[t]; ++k) {
        const int i = L.dir_of_dim[P.coupled[t][k]];
        if (i >= 0 && L.dirs[i].spatial) spatial_coupled[t][num_spatial_coupled[t]++] = i;
      }
    }
    for (int i = 0; i < L.num_dirs; ++i) {
      if (!coupled(2, L.dirs[i].dim))
        (L.dirs[i].spatial ? reduced_dirs[num_reduced_dirs++]
                           : temporal_reduced_dirs[num_temporal_reduced_dirs++]) = i;
      if (L.dirs[i].spatial) {
        spatial_dirs[num_spatial_dirs++] = i;
        spatial_dir_mask |= 1U << i;
      }
    }
    for (int k = 0; k < P.num_coupled[2]; ++k)
      if (const int i = L.dir_of_dim[P.coupled[2][k]]; i >= 0) {
        const int x = L.dirs[i].dim;
        const int a = P.conv ? output_of(x) : x;
        if (L.dirs[i].spatial) {
          output_dim[num_output_dirs] = a;
          output_dirs[num_output_dirs++] = i;
        } else {
          temporal_output_dirs[num_temporal_output_dirs++] = i;
        }
      }
  }

  const Plan& P;
  const Level& L;
  const State* st[kMaxDirectives];

  // Called once the states `st` of a new case are set.
  // The directives are at most 16 (kMaxDirectives), so sets of them are
  // bit masks (bit i: directive i). CaseOrder keeps, as it steps the
  // states, the directives past Init (`moving`), those at Init and not
  // unrolled (`restartable`) and those whose state just changed
  // (`changed`): from them come the directive that moved and, per tensor,
  // whether it moved one of the tensor's directives or restarted one
  // inside it. The tensors' spatial mappings (find_spatial) read only the
  // spatial directives' states, so they are found again only when one of
  // those changed (in the dataflows with an unrolled SpatialMap, never
  // after the first case).
  void begin(unsigned moving, unsigned restartable, unsigned changed) {
    const int moved_dir = static_cast<int>(std::bit_width(moving)) - 1;
    const unsigned inside = moved_dir < 0 ? ~0U : ~((2U << moved_dir) - 1);  // i > moved_dir
    const bool restart[2] = {(restartable & coupled_dir_mask[0] & inside) != 0,
                             (restartable & coupled_dir_mask[1] & inside) != 0};
    begin_moved(moved_dir, inside, restart, changed);
  }

  // `begin` with what it derives from the states given outright: the
  // directive that moved (-1: all Init), the directives nested inside it
  // (bit i) and, per input tensor, whether one of its directives inside
  // restarts. top_ingress asks this for nestings other than the level's
  // own order (a case's ingress reads the order only through these).
  void begin_moved(int moved_dir, unsigned inside, const bool* restart, unsigned changed) {
    changing = moved_dir;
    inside_changing = inside;
    for (int t = 0; t < 2; ++t) {
      restarted[t] = restart[t];
      moved[t] = changing >= 0 && ((coupled_dir_mask[t] >> changing) & 1U);
      // A tensor the moved directive leaves alone receives nothing
      // (pe_ingress), and its factor is not needed.
      if (changing < 0 || moved[t]) in_temporal[t] = ingress_temporal(t);
    }
    out_temporal = output_temporal();
    red_temporal = reduction_temporal();
    if (changed & spatial_dir_mask) {
      for (int t = 0; t < kNumTensors; ++t) spatial_own[t] = find_spatial(t, false);
      spatial_any = find_spatial(2, true);
      spatial_memo = 0;
    }
  }

  // The factors of the temporal directives, the same for every sub-unit of
  // a case: multiplied once per case (begin), so that the per-sub-unit
  // products below run over the spatial directives only (integer products
  // in another order: the same numbers).
  std::int64_t ingress_temporal(int t) const {
    std::int64_t v = 1;
    for (int k = 0; k < num_temporal_coupled[t]; ++k) {
      const int i = temporal_coupled[t][k];
      // The directive that moved (never at Init) brings only its unique
      // part unless the tile restarted; every other one its tile.
      // (i is a directive, so i == changing says changing >= 0; the test
      // spelled out keeps the compiler from indexing with -1.)
      v *= (changing >= 0 && i == changing && !restarted[t])
               ? std::max<std::int64_t>(L.unique[L.dirs[i].dim], 1)
               : st[i]->in_tile;
    }
    return v;
  }
  std::int64_t output_temporal() const {
    std::int64_t v = 1;
    for (int k = 0; k < num_temporal_output_dirs; ++k) v *= st[temporal_output_dirs[k]]->out_tile;
    return v;
  }
  std::int64_t reduction_temporal() const {
    std::int64_t v = 1;
    for (int k = 0; k < num_temporal_reduced_dirs; ++k) v *= st[temporal_reduced_dirs[k]]->red_tile;
    return v;
  }
  // In MAESTRO's iteration space a spatial edge with one busy unit gives
  // that unit the edge tile even when it is full; in the true one only the
  // partial unit (edge_pe) has the edge tile.
  bool single_edge_unit() const { return P.maestro_compat && L.num_edge_sub == 1; }

  // A bit test: asked for every directive of every case, a scan of the
  // tensor's coupled dimensions was a visible part of the analysis.
  bool coupled(int t, int d) const { return (P.coupled_mask[t] >> d) & 1U; }
  bool edge(int i) const { return st[i]->is_edge(); }

  // Tile of one sub-unit for an input tensor (no reuse).
  std::int64_t pe_mapped(int t, bool first, bool edge_pe) const {
    std::int64_t v = in_temporal[t];  // every directive at Init
    for (int k = 0; k < num_spatial_coupled[t]; ++k) {
      const int i = spatial_coupled[t][k];
      const Dir& d = L.dirs[i];
      if (edge(i)) {
        if (single_edge_unit()) {
          if (first || edge_pe) v *= L.mapped_edge[d.dim];
        } else {
          v *= edge_pe ? L.mapped_edge[d.dim] : L.mapped[d.dim];
        }
      } else {
        v *= L.mapped[d.dim];
      }
    }
    return v;
  }

  // New data of an input tensor one sub-unit receives in this case (§IV-A):
  // only the innermost directive that moved changes the tensor; along it,
  // a temporal map brings the unique part of the slid tile; a sub-unit
  // other than the first gets only what its neighbour does not share.
  std::int64_t pe_ingress(int t, bool first, bool edge_pe) const {
    if (changing < 0) return pe_mapped(t, first, edge_pe);
    if (!moved[t]) return 0;
    const bool inited = restarted[t];
    std::int64_t v = in_temporal[t];
    for (int k = 0; k < num_spatial_coupled[t]; ++k) {
      const int i = spatial_coupled[t][k];
      const int x = L.dirs[i].dim;
      const std::int64_t m = edge_pe ? L.mapped_edge[x] : L.mapped[x];
      const std::int64_t u = edge_pe ? L.unique_edge[x] : L.unique[x];
      if (st[i]->pos == kInit)
        v *= (first || !((inside_changing >> i) & 1U)) ? m : u;
      else
        v *= (!first && !inited && i == changing) ? u : m;
    }
    return v;
  }

  // Output (or partial-sum) volume of one sub-unit. With `psums`, the
  // reduction dimensions' tiles multiply in (the MACs of the sub-unit).
  // Each is the temporal directives' factor of the case times the spatial
  // directives' one, and the latter, for the four (first, edge_pe)
  // sub-units, is kept until a spatial directive's state changes (in most
  // dataflows for the whole level; integer products in another order: the
  // same numbers).
  [[gnu::always_inline]] std::int64_t pe_egress(bool psums, bool first, bool edge_pe,
                                                bool reuse_at_edge = true) const {
    if (!reuse_at_edge)
      return (psums ? red_temporal * reduction_spatial(first, edge_pe) : 1) *
             (out_temporal * output_spatial(first, edge_pe, false));
    const int key = (first ? 2 : 0) + (edge_pe ? 1 : 0);
    if (!(spatial_memo & (1U << key))) {
      spatial_output[key] = output_spatial(first, edge_pe, true);
      spatial_memo |= 1U << key;
    }
    const std::int64_t out = out_temporal * spatial_output[key];
    if (!psums) return out;
    if (!(spatial_memo & (16U << key))) {
      spatial_reduction[key] = reduction_spatial(first, edge_pe);
      spatial_memo |= 16U << key;
    }
    return red_temporal * spatial_reduction[key] * out;
  }

  // The spatial directives' share of a sub-unit's tiles along the
  // dimensions the output does not have (those its partial sums are
  // reduced over).
  std::int64_t reduction_spatial(bool first, bool edge_pe) const {
    std::int64_t v = 1;
    auto unique_or_one = [](std::int64_t u) { return u != 0 ? u : 1; };
    for (int k = 0; k < num_reduced_dirs; ++k) {
      const int i = reduced_dirs[k];
      const int x = L.dirs[i].dim;
      switch (st[i]->pos) {
        case kInit:
          if (edge(i) && edge_pe)
            v *= L.mapped_edge[x];
          else
            v *= first ? L.mapped[x] : unique_or_one(L.unique[x]);
          break;
        case kSteady:
          v *= first ? L.mapped[x] : unique_or_one(L.unique[x]);
          break;
        case kEdge:
          if (single_edge_unit()) {
            if (first || edge_pe) v *= L.mapped_edge[x];
          } else if (edge_pe) {
            v *= (first && !P.maestro_compat) ? L.mapped_edge[x] : L.unique_edge[x];
          } else {
            v *= first ? L.mapped[x] : unique_or_one(L.unique[x]);
          }
          break;
      }
    }
    return v;
  }

  // The spatial directives' share of the sub-unit's output tile (new
  // outputs only where a neighbour shares the rest, §IV-A).
  std::int64_t output_spatial(bool first, bool edge_pe, bool reuse_at_edge) const {
    std::int64_t v = 1;
    auto unique_or_one = [](std::int64_t u) { return u != 0 ? u : 1; };
    for (int k = 0; k < num_output_dirs; ++k) {
      const int i = output_dirs[k];
      const int x = L.dirs[i].dim;
      const int a = output_dim[k];
      switch (st[i]->pos) {
        case kInit:
          if (edge(i) && edge_pe) {
            if (single_edge_unit() || (first && !P.maestro_compat))
              v *= L.mapped_edge[a];
            else
              v *= reuse_at_edge ? L.unique_edge[a] : L.mapped_edge[a];
          } else {
            v *= first ? L.mapped[a] : unique_or_one(L.unique[a]);
          }
          break;
        case kSteady:
          v *= first ? L.mapped[a] : unique_or_one(L.unique[a]);
          break;
        case kEdge:
          if (single_edge_unit()) {
            // MAESTRO takes the input-space edge tile here (not the output
            // one): README "Deviations", spatial edges.
            if (first || edge_pe) v *= L.mapped_edge[x];
          } else if (edge_pe) {
            v *= (first && !P.maestro_compat) ? L.mapped_edge[a] : L.unique_edge[a];
          } else {
            v *= first ? L.mapped[a] : unique_or_one(L.unique[a]);
          }
          break;
      }
    }
    return v;
  }

  // Spatial mapping of a tensor among its coupled dimensions: whether one
  // of them is spatially mapped, at its edge, and whether the last busy
  // sub-unit holds a partial tile.
  struct Spatial {
    bool mapped = false;
    bool edge = false;
    bool edge_pe = false;
  };
  // Kept per case (begin): asked several times per case.
  const Spatial& spatial_of(int t, bool any_dim) const {
    return any_dim ? spatial_any : spatial_own[t];
  }
  Spatial find_spatial(int t, bool any_dim) const {
    Spatial s;
    auto take = [&](int i) {
      s.mapped = true;
      s.edge_pe = st[i]->edge_pe;
      if (edge(i)) s.edge = true;
    };
    for (int k = 0; k < num_spatial_coupled[t]; ++k) take(spatial_coupled[t][k]);
    if (any_dim)
      for (int k = 0; k < num_spatial_dirs; ++k) take(spatial_dirs[k]);
    return s;
  }

  // Total over the sub-units of a per-sub-unit volume `f(first, edge_pe)`:
  // the first sub-unit, the others that receive only their unique part, and
  // at a spatial edge only the busy ones (§IV-A, spatial reuse).
  template <class F>
  std::int64_t over_units(const Spatial& s, F f) const {
    if (!s.mapped) return f(true, false);
    if (!s.edge) return f(true, false) + (L.num_sub - 1) * f(false, false);
    std::int64_t v = (L.num_edge_sub == 1 && s.edge_pe) ? f(true, true) : f(true, false);
    if (L.num_edge_sub > 1) {
      const std::int64_t see = s.edge_pe ? 1 : 0;
      const std::int64_t full = std::max<std::int64_t>(L.num_edge_sub - see - 1, 0);
      v += full * f(false, false) + see * f(false, true);
    }
    return v;
  }

  // Sub-units busy in this case: all, or those of the spatial edge step.
  std::int64_t busy_units() const {
    if (num_spatial_dirs == 0) return L.num_sub;
    return edge(spatial_dirs[0]) ? L.num_edge_sub : L.num_sub;
  }
  // The level's first SpatialMap (compile requires one).
  int first_spatial() const { return spatial_dirs[0]; }

  // Total over the busy sub-units of a per-sub-unit volume `f(first,
  // edge_pe)` when nothing is shared between them: every unit is served as
  // if it were the first (its whole new tile; temporal reuse in its own
  // buffer stays). This is the network without spatial multicast (inputs)
  // or spatial reduction (outputs), MAESTRO Table 1: a tile several units
  // need crosses the network once per unit, and partial sums of one output
  // leave every unit separately.
  template <class F>
  std::int64_t over_units_unshared(const Spatial& s, F f) const {
    if (!s.mapped) return busy_units() * f(true, false);
    if (!s.edge) return L.num_sub * f(true, false);
    if (L.num_edge_sub == 1 && s.edge_pe) return f(true, true);
    const std::int64_t see = s.edge_pe ? 1 : 0;
    return (L.num_edge_sub - see) * f(true, false) + see * f(true, true);
  }
  std::int64_t ingress_unshared(int t) const {
    return over_units_unshared(spatial_of(t, false),
                               [&](bool first, bool ep) { return pe_ingress(t, first, ep); });
  }
  std::int64_t egress_unshared() const {
    return over_units_unshared(spatial_of(2, false),
                               [&](bool first, bool ep) { return pe_egress(false, first, ep); });
  }

  std::int64_t ingress(int t) const {
    if (changing >= 0 && !moved[t]) return 0;  // every sub-unit's pe_ingress is 0
    return over_units(spatial_of(t, false),
                      [&](bool first, bool ep) { return pe_ingress(t, first, ep); });
  }
  std::int64_t egress() const {
    return over_units(spatial_of(2, false),
                      [&](bool first, bool ep) { return pe_egress(false, first, ep); });
  }
  // Partial sums on the critical path: those of the first (fullest) unit.
  std::int64_t critical_psums() const {
    const Spatial s = spatial_of(2, !P.maestro_compat);
    if (s.edge && L.num_edge_sub == 1 && s.edge_pe) return pe_egress(true, true, true);
    return pe_egress(true, true, false);
  }
  // MACs over all sub-units in this case.
  std::int64_t all_psums() const {
    const Spatial s = spatial_of(2, true);
    // True count: every busy unit's distinct work (a unit whose tile
    // overlaps its neighbour's adds only the new outputs and reductions).
    // MAESTRO's first spatial step flags its last unit as an edge unit even
    // when its tile is full; only a real partial tile reduces the work.
    // (The lambda inlined: as a call of its own it was a tenth of a case.)
    if (!P.maestro_compat)
      return over_units(
          s, [&](bool first, bool ep) __attribute__((always_inline)) {
            return pe_egress(true, first, ep && L.has_partial);
          });
    if (!s.edge) return L.num_sub * pe_egress(true, true, false);
    std::int64_t v = (L.num_edge_sub == 1 && s.edge_pe) ? pe_egress(true, true, true)
                                                        : pe_egress(true, true, false);
    if (L.num_edge_sub > 1) {
      const std::int64_t see = s.edge_pe ? 1 : 0;
      const std::int64_t full = std::max<std::int64_t>(L.num_edge_sub - see - 1, 0);
      v += full * pe_egress(true, true, false) + see * pe_egress(true, false, true, false);
    }
    return v;
  }
  bool all_init() const { return changing < 0; }

 private:
  int spatial_coupled[kNumTensors][kMaxDirectives];  // spatial ones, in coupled order
  int num_spatial_coupled[kNumTensors];
  unsigned coupled_dir_mask[kNumTensors];  // directives on a tensor's dimensions (bit i: i)
  int temporal_coupled[kNumTensors][kMaxDirectives];  // temporal ones
  int num_temporal_coupled[kNumTensors];
  // Directives on dimensions the output lacks, spatial and temporal.
  int reduced_dirs[kMaxDirectives];
  int num_reduced_dirs = 0;
  int temporal_reduced_dirs[kMaxDirectives];
  int num_temporal_reduced_dirs = 0;
  // Directives on the output's dimensions (in coupled order), spatial and
  // temporal.
  // output_dim: the dimension of the output tile each spatial one indexes
  // (output rows and columns for a convolution's Y and X), found once per
  // level instead of per sub-unit and case (the temporal ones' tiles are
  // in State::out_tile).
  int output_dirs[kMaxDirectives], output_dim[kMaxDirectives];
  int num_output_dirs = 0;
  int temporal_output_dirs[kMaxDirectives];
  int num_temporal_output_dirs = 0;
  int spatial_dirs[kMaxDirectives];
  int num_spatial_dirs = 0;
  unsigned spatial_dir_mask = 0;  // bit i: directive i is a SpatialMap
  // Per case (begin): the innermost directive that moved (-1: all Init),
  // and the directives nested inside it (bit i).
  int changing = -1;
  unsigned inside_changing = ~0U;
  // Per input tensor: a directive inside the one that moved starts over
  // (is at Init and not unrolled), so the tensor's tile is new whole.
  bool restarted[2] = {false, false};
  // Per input tensor: the directive that moved is one of its own (else the
  // tensor receives nothing new).
  bool moved[2] = {false, false};
  // Per case (begin): the temporal directives' factors (see ingress_temporal).
  std::int64_t in_temporal[2] = {1, 1};
  std::int64_t out_temporal = 1, red_temporal = 1;
  Spatial spatial_own[kNumTensors], spatial_any;  // spatial_of, per case
  // The spatial factors of pe_egress once computed (bit key and 16 << key,
  // key = 2 * first + edge_pe), cleared when a spatial state changes.
  mutable unsigned spatial_memo = 0;
  mutable std::int64_t spatial_output[4], spatial_reduction[4];
};

// ---- recursion over cluster levels, with a cache of sub-level results ------

// No default member values: a cache of them stays trivially constructible
// (see CacheEntry); `level` fills every field.
struct SubResult {
  std::int64_t runtime;
  long double avg_active;
  // Words that reach (input, filter) or leave (output) the level's PEs one
  // by one, per word the level receives or sends as a whole: 1 with
  // multicast and reduction, the number of PEs sharing a word without them.
  // Computed only when a switch is off (Plan::hw).
  double unshared[kNumTensors];
};

// An inline compare: the cache is probed once per iteration case, and a
// call into the C library's memcmp for 88 bytes cost more than the probe.
bool same_dims(const std::int64_t* a, const std::int64_t* b) {
  bool same = true;
  for (int d = 0; d < kNumDims; ++d) same = same && a[d] == b[d];
  return same;
}

// Entries are written before they are read (cache_used counts them), so
// the cache is left uninitialised: zeroing its 9 KB cost more per layer
// than the whole analysis of a one-level dataflow.
struct CacheEntry {
  int level;
  std::int64_t dims[kNumDims];
  SubResult r;
};

constexpr int kCacheSize = 64;

// The iteration cases of one level in MAESTRO's enumeration order (§IV-B):
// case 0 is all-Init; after it, the mixed-radix digits of n-1 shifted by one
// (last directive fastest). The digits are counted up rather than divided
// out of n (two integer divisions per directive and case were a tenth of
// the analysis).
class CaseOrder {
 public:
  CaseOrder(const Plan& P, const Level& L, const std::int64_t* dims)
      : num_(L.num_dirs), total_(1), n_(0), num_moving_(0), fixed_occ_(1) {
    changes_from_[0] = 0;
    for (int i = 0; i < num_; ++i) {
      const std::int64_t dim = dims[L.dirs[i].dim];
      // Filled in place: a list returned by value was copied with wide
      // loads of what narrow stores had just written (a store-forwarding
      // stall, most of this constructor's time).
      if (P.maestro_compat)
        directive_states(L, L.dirs[i], dim, lists_[i]);
      else
        true_states(L, i, dim, lists_[i]);
      set_tiles(P, L, L.dirs[i].dim, i, lists_[i]);
      if (!lists_[i].s[0].unrolled) init_not_unrolled_ |= 1U << i;
      total_ *= lists_[i].n;
      if (lists_[i].n > 1) {
        raw_[num_moving_] = 0;
        moving_[num_moving_++] = i;
        // Directive i changes state in every case whose carry reaches it.
        for (int k = 0; k < num_moving_; ++k) changes_from_[k] |= 1U << i;
        changes_from_[num_moving_] = 0;
      } else {
        fixed_occ_ *= lists_[i].s[0].occ;
      }
    }
  }
  std::int64_t size() const { return total_; }

  /// The tiles of each state (State::in_tile, out_tile, red_tile) along
  /// dimension x: an input tensor's tile is the edge one only at an edge
  /// first step (a moved directive brings its full tile or its unique
  /// part, Case::ingress_temporal); the output's is the edge one at either
  /// edge, over output rows and columns for a convolution; the reduction's
  /// at either edge.
  /// Also the states' class bits (State::class_bits) for directive i:
  /// every list's first state is Init.
  static void set_tiles(const Plan& P, const Level& L, int x, int i, StateList& list) {
    const int a = P.conv ? output_of(x) : x;
    for (int k = 0; k < list.n; ++k) {
      State& s = list.s[k];
      const bool edge = s.is_edge();
      s.class_bits = (k != 0 ? 1U << i : 0U) | (edge ? 1U << (16 + i) : 0U);
      s.in_tile = s.pos == kInit && edge ? L.mapped_edge[x] : L.mapped[x];
      s.out_tile = (s.pos == kInit && edge) || s.pos == kEdge ? L.mapped_edge[a] : L.mapped[a];
      s.red_tile = edge ? L.mapped_edge[x] : L.mapped[x];
    }
  }

  /// Points `c`'s states at the next case (the first call gives case 0)
  /// and returns how often that case occurs. A directive with one state
  /// keeps it (its digit is always 0), so only the others are counted, and
  /// of those only the ones from the last carry on change. `begin` then
  /// works out what the case needs, when its class (case_class) is new.
  std::int64_t next(Case& c) {
    if (n_ == 0) {
      for (int i = 0; i < num_; ++i) c.st[i] = &lists_[i].s[0];
      changed_ = ~0U;
      occ_before_[0] = fixed_occ_;
      bits_before_[0] = 0;
      for (int k = 0; k < num_moving_; ++k) {
        occ_before_[k + 1] = occ_before_[k];
        bits_before_[k + 1] = 0;  // every state at Init, none at an edge
      }
    } else {
      int from = 0;
      if (n_ > 1) {
        from = num_moving_ - 1;
        while (++raw_[from] == lists_[moving_[from]].n && from > 0) raw_[from--] = 0;
      }
      changed_ |= changes_from_[from];
      for (int k = from; k < num_moving_; ++k) {
        const int i = moving_[k];
        const int at = raw_[k] + 1 == lists_[i].n ? 0 : raw_[k] + 1;
        const State* s = &lists_[i].s[at];
        c.st[i] = s;
        occ_before_[k + 1] = occ_before_[k] * s->occ;
        bits_before_[k + 1] = bits_before_[k] | s->class_bits;
      }
    }
    ++n_;
    return occ_before_[num_moving_];
  }
  // Directives past Init (bit i: directive i), and those at an edge state.
  unsigned moving_mask() const { return bits_before_[num_moving_] & 0xFFFFU; }
  unsigned edge_mask() const { return bits_before_[num_moving_] >> 16; }

  /// Readies `c` for the states `next` set: the directive that moved, the
  /// restartable ones (at Init and not unrolled) and those whose state
  /// changed since the last `begin` (Case::begin).
  void begin(Case& c) {
    const unsigned moving = moving_mask();
    c.begin(moving, init_not_unrolled_ & ~moving, changed_);
    changed_ = 0;
  }

  /// The class of the current case: cases of one class move and cost the
  /// same and differ only in how often they occur (§IV-B's "few
  /// representative cases", taken one step further). A case's numbers
  /// depend on its states only through the innermost directive past Init
  /// (Case::changing; every directive inside it is at Init, and which of
  /// those restart is fixed per directive) and on which states are edges:
  /// outside the moved directive an Init and a Steady state have the same
  /// tiles, the same unique parts (pe_ingress, output_spatial,
  /// reduction_spatial read `pos` only to tell an Init inside the moved
  /// directive, or an edge, apart) and the same sub-level dimensions. A
  /// list's Init state is an edge only when it is the list's one state, so
  /// one bit per directive tells its edge state apart.
  unsigned case_class() const {
    return static_cast<unsigned>(std::bit_width(moving_mask())) | (edge_mask() << 5);
  }

  /// Directive i's states (Init first), and the directives whose Init
  /// state is not unrolled (those that restart when one outside them moves).
  const StateList& states(int i) const { return lists_[i]; }
  unsigned init_not_unrolled() const { return init_not_unrolled_; }

 private:
  StateList lists_[kMaxDirectives];
  // Set by the constructor only (no default member values), so that the
  // 1 KB of lists is not zeroed for every level analysed.
  int num_;
  std::int64_t total_;
  std::int64_t n_;
  int moving_[kMaxDirectives];  // the directives with more than one state
  int num_moving_;
  std::int64_t fixed_occ_;   // occurrences of the others' single states
  int raw_[kMaxDirectives];  // the mixed-radix digits of n-1 over moving_, counted up
  // occ_before_[k]: the occurrences of the fixed states times those of
  // moving_[0..k-1]'s current states, so that a case multiplies only the
  // states that changed (occ_before_[num_moving_] is the case's).
  std::int64_t occ_before_[kMaxDirectives + 1];
  // bits_before_[k]: the class bits (State::class_bits) of moving_[0..k-1]'s
  // current states, kept like occ_before_.
  unsigned bits_before_[kMaxDirectives + 1];
  // changes_from_[k]: the directives moving_[k..] (the states a carry into
  // digit k changes).
  unsigned changes_from_[kMaxDirectives + 1];
  unsigned changed_ = 0;            // bit i: directive i's state changed since the last begin
  unsigned init_not_unrolled_ = 0;  // bit i: directive i's Init state is not unrolled
};

// What one iteration case moves and costs at its level (§IV-A, §IV-B).
// No default member values: a level keeps a table of them (CaseOutcomes),
// and Analyser::evaluate sets every field a case reads.
struct CaseFlow {
  std::int64_t occ;
  std::int64_t psums_all;  // MACs over all busy sub-units
  std::int64_t egress;     // output words leaving the sub-units
  std::int64_t in_of[2];   // words of each input tensor entering them
  // Words on the network: the same as egress and in_of with multicast and
  // reduction; without them each busy PE's own copies and partial sums
  // (fractional where the sub-levels' ratios enter).
  // Set by network_words only when a switch is off (no x87 stores per case).
  long double in_words[2], out_words;
  std::int64_t noc_in, noc_out;
  std::int64_t compute;  // the sub-level's runtime, or the PE's MAC steps
  std::int64_t in_delay, out_delay;
};

// A case's flow with what its level adds up besides: the partial sums on
// the critical path (none: the case has no work), the busy PEs (innermost
// level) or the sub-level's average active PEs (else), and the case's
// delay before the off-chip refill is overlapped. The same for every case
// of a class (CaseOrder::case_class); `flow.occ` is set per case.
struct CaseOutcome {
  CaseFlow flow;
  std::int64_t psums_critical;
  std::int64_t busy;
  long double units;
  std::int64_t delay;
  // The compute delay (at least 1, a divisor), the busier direction's NoC
  // words and their rate per compute cycle.
  std::int64_t compute_nz, traffic, rate;
};

// The outcomes of the case classes a level has met, so that a case of a
// class already met is only counted, not analysed again (on the ResNet-50
// dataflows about half of the cases). Direct-mapped: a class whose slot
// another holds is analysed again into it.
class CaseOutcomes {
 public:
  CaseOutcomes() {
    for (unsigned& k : key_) k = kFree;
  }
  /// The slot of class `key`; `found` says whether it holds key's outcome
  /// (else the caller fills it in, and it is key's from then on).
  CaseOutcome& slot(unsigned key, bool& found) {
    const unsigned i = (key * 0x9E3779B1U) >> (32 - kBits);
    found = key_[i] == key;
    key_[i] = key;
    return outcome_[i];
  }

 private:
  static constexpr int kBits = 4;
  static constexpr unsigned kFree = ~0U;  // no class has every bit set (case_class)
  unsigned key_[1 << kBits];
  CaseOutcome outcome_[1 << kBits];
};

// The busy sub-units' share of one case: the slowest one's runtime, the PEs
// they keep busy, and their unshared ratios (SubResult::unshared) averaged
// over them.
struct SubWork {
  std::int64_t runtime = 0;
  long double active = 0;
  long double unshared[kNumTensors] = {1, 1, 1};
};

// Without multicast or reduction, the words each PE receives or sends on
// its own, summed over a level's cases, against the words the level
// receives or sends as a whole: the ratio the level above scales its own
// traffic by (SubResult::unshared).
struct UnsharedWords {
  long double whole[kNumTensors] = {0, 0, 0}, own[kNumTensors] = {0, 0, 0};
  void add(const CaseFlow& f) {
    const auto occ = static_cast<long double>(f.occ);
    for (int t = 0; t < 2; ++t) {
      whole[t] += occ * static_cast<long double>(f.in_of[t]);
      own[t] += occ * f.in_words[t];
    }
    whole[2] += occ * static_cast<long double>(f.egress);
    own[2] += occ * f.out_words;
  }
  void ratios(double* out) const {
    for (int t = 0; t < kNumTensors; ++t)
      if (whole[t] > 0) out[t] = static_cast<double>(own[t] / whole[t]);
  }
};

// A sub-level keeps no accounts: the level above counts its traffic.
struct NoAccounts {
  void first_case(const Plan&, const std::int64_t*, const CaseFlow&) {}
  bool is_first() const { return false; }
  void outputs(const CaseFlow&) {}
  void skipped() {}
  void inputs(const CaseFlow&) {}
  void unshared(const Plan&, const CaseFlow&) {}
  std::int64_t overlap_offchip(const Plan&, std::int64_t outstanding, std::int64_t) {
    return outstanding;
  }
  void counted(const CaseOutcome&) {}
  void finish(const Plan&, std::int64_t) {}
};

// The top level's accounts: L2 and L1 traffic, L2 sizes, off-chip and NoC
// bandwidth and the average delays MAESTRO reports (refdata README,
// "Output CSV").
struct TopAccounts {
  std::int64_t l2_rd[3] = {0, 0, 0}, l2_wr[3] = {0, 0, 0};
  std::int64_t l1_rd[3] = {0, 0, 0}, l1_wr[3] = {0, 0, 0};
  std::int64_t l2_size[3] = {0, 0, 0};
  std::int64_t macs = 0;
  std::int64_t peak_bw = 0;
  long double avg_bw = 0;
  std::int64_t offchip = 0;
  long double ingress_avg = 0, egress_avg = 0, compute_avg = 0;
  // The sums behind the averages, in integers: exact, as the long double
  // sums of the same integers were, and without x87 work per case.
  std::int64_t bw_sum = 0, ingress_sum = 0, egress_sum = 0, compute_sum = 0;
  // Cycles to refill the L2 tiles of the inputs and of the output, fixed
  // once the first case has sized L2.
  std::int64_t in_refill = 0, out_refill = 0;
  std::int64_t num_skipped = 0;
  std::int64_t num_counted = 0;
  // The shortest compute delay (at least 1) of a counted case (true space).
  std::int64_t shortest_compute = std::numeric_limits<std::int64_t>::max();
  // L2 traffic a network without multicast or reduction adds to MAESTRO's
  // counts (fractional where sub-levels' ratios enter).
  long double extra_l2_rd[3] = {0, 0, 0}, extra_l2_wr[3] = {0, 0, 0};

  // L2 holds the first counted case's tiles, double-buffered; each tensor
  // is written into L2 (inputs) or read out of it (output) once whole.
  bool is_first() const { return num_counted == 0; }
  void first_case(const Plan& P, const std::int64_t* dims, const CaseFlow& f) {
    for (int t = 0; t < 2; ++t) {
      std::int64_t size = 1;
      for (int k = 0; k < P.num_coupled[t]; ++k) size *= dims[P.coupled[t][k]];
      l2_size[t] += 2 * f.in_of[t];
      l2_wr[t] = size;
    }
    std::int64_t out_size = 1;
    for (int k = 0; k < P.num_coupled[2]; ++k) {
      const int x = P.coupled[2][k];
      // MAESTRO sizes the output as Y - R + 1 rows whatever the stride;
      // its true size is (Y - R) / stride + 1 (§III-B).
      const int s = P.conv ? sliding_of(x) : -1;
      if (s < 0)
        out_size *= dims[x];
      else if (P.maestro_compat)
        out_size *= dims[x] - dims[s] + 1;
      else
        out_size *= outputs_of(dims[x], dims[s], P.stride[x]);
    }
    l2_size[2] = 2 * f.egress;
    l2_rd[2] = out_size;
    in_refill = (l2_size[0] + l2_size[1]) / P.hw.offchip_bw / 2;
    out_refill = l2_size[2] / P.hw.offchip_bw / 2;
  }
  // Every case, with work or not: its outputs go to L2, its partial sums
  // are read and written in L1 (the reads equal the writes: set in finish).
  void outputs(const CaseFlow& f) {
    l2_wr[2] += f.occ * f.egress;
    l1_wr[2] += f.occ * f.psums_all;
  }
  void skipped() { ++num_skipped; }
  // Every case with work: its inputs are read from L2. Every word read from
  // L2 lands in an L1, and every MAC reads one word of each input from L1:
  // those counts are the L2 reads and the MACs, set in finish.
  void inputs(const CaseFlow& f) {
    for (int t = 0; t < 2; ++t) l2_rd[t] += f.occ * f.in_of[t];
  }
  // Without multicast L2 serves each copy with a read; without reduction
  // it accumulates each extra partial sum with a read-modify-write.
  void unshared(const Plan& P, const CaseFlow& f) {
    const auto occ = static_cast<long double>(f.occ);
    for (int t = 0; t < 2; ++t)
      extra_l2_rd[t] += occ * (f.in_words[t] - static_cast<long double>(f.in_of[t]));
    if (!P.hw.reduction) {
      const long double extra = occ * (f.out_words - static_cast<long double>(f.egress));
      extra_l2_wr[2] += extra;
      extra_l2_rd[2] += extra;
    }
  }
  // Off-chip traffic refills the (double-buffered) L2 tiles; the case lasts
  // at least as long as its refill.
  std::int64_t overlap_offchip(const Plan& P, std::int64_t outstanding, std::int64_t compute_nz) {
    if (P.maestro_compat) {
      // MAESTRO halves its running maximum once per case, so the result
      // depends on the order of the cases. max(a / c, b / c) with one
      // division (c > 0: the quotient, rounded toward zero, grows with the
      // dividend).
      const std::int64_t req = std::max(l2_size[2], l2_size[0] + l2_size[1]) / compute_nz;
      offchip = std::max(offchip, req) / 2;
    } else {
      // The refill rate needed by the busiest case (finish): the L2 sizes
      // are fixed by the first counted case, so it is the one with the
      // shortest compute.
      shortest_compute = std::min(shortest_compute, compute_nz);
    }
    return std::max(in_refill, std::max(outstanding, out_refill));
  }
  void counted(const CaseOutcome& o) {
    const CaseFlow& f = o.flow;
    macs += f.occ * f.psums_all;
    peak_bw = std::max(peak_bw, o.rate);
    bw_sum += f.occ * o.traffic / o.compute_nz;
    ingress_sum += f.occ * f.in_delay;
    egress_sum += f.occ * f.out_delay;
    compute_sum += f.occ * o.compute_nz;
    ++num_counted;
  }
  void finish(const Plan& P, std::int64_t occurrences) {
    for (int t = 0; t < 2; ++t) {
      l1_wr[t] = l2_rd[t];
      l1_rd[t] = macs;
    }
    l1_rd[2] = l1_wr[2];
    avg_bw = static_cast<long double>(bw_sum);
    ingress_avg = static_cast<long double>(ingress_sum);
    egress_avg = static_cast<long double>(egress_sum);
    compute_avg = static_cast<long double>(compute_sum);
    // The refill rate the busiest case needs (a quotient rounded toward
    // zero shrinks as the divisor grows), halved below because the
    // double-buffered L2 tile refills over two compute steps.
    if (!P.maestro_compat && num_counted > 0)
      offchip = std::max(l2_size[2], l2_size[0] + l2_size[1]) / shortest_compute;
    if (occurrences <= 0) return;
    const auto n = static_cast<long double>(occurrences);
    avg_bw /= n;
    if (!P.maestro_compat) offchip /= 2;
    ingress_avg /= n;
    egress_avg /= n;
    compute_avg /= n;
  }
};

struct Analyser {
  explicit Analyser(const Plan& plan) : P(plan) {}
  const Plan& P;
  CacheEntry cache[kCacheSize];
  int cache_used = 0;

  std::int64_t noc_delay(std::int64_t words) const {
    const std::int64_t sends = ceil_div(words, P.hw.noc_bw);
    return P.hw.noc_latency + sends - 1;
  }
  bool shared_net() const { return P.hw.multicast && P.hw.reduction; }

  SubResult sub_level(int li, const std::int64_t* dims) {
    for (int c = 0; c < cache_used; ++c)
      if (cache[c].level == li && same_dims(cache[c].dims, dims)) return cache[c].r;
    NoAccounts none;
    const SubResult r = level(li, dims, none);
    if (cache_used < kCacheSize) {
      cache[cache_used].level = li;
      std::memcpy(cache[cache_used].dims, dims, sizeof(std::int64_t) * kNumDims);
      cache[cache_used].r = r;
      ++cache_used;
    }
    return r;
  }

  // Dimensions a sub-unit sees in this case: each directive's tile, the
  // edge tile where this case is at an edge (MAESTRO §IV-B).
  void sub_dims(const Case& c, bool edge_pe, std::int64_t* out) const {
    const Level& L = c.L;
    for (int d = 0; d < kNumDims; ++d) out[d] = 0;
    for (int i = 0; i < L.num_dirs; ++i) {
      const Dir& d = L.dirs[i];
      const State& s = *c.st[i];
      std::int64_t v = L.mapped[d.dim];
      if (!d.spatial) {
        if (s.is_edge()) v = L.mapped_edge[d.dim];
      } else if ((s.pos == kInit && s.is_edge()) || s.pos == kEdge) {
        if (c.single_edge_unit() || edge_pe) v = L.mapped_edge[d.dim];
      }
      out[d.dim] = v;
    }
    if (P.conv) {
      if (out[kY] > 0) out[kYo] = out[kY] - out[kR] + 1;
      if (out[kX] > 0) out[kXo] = out[kX] - out[kS] + 1;
    }
  }

  // A sub-level reached from an edge tile of the level above works on
  // smaller dimensions than it was compiled for; in the true space its edge
  // tiles and busy units follow those dimensions (MAESTRO keeps the
  // compiled ones). The copy is made into `resized` only when needed (a
  // std::optional<Level> here was value-initialised, 1.4 KB zeroed per
  // level analysed).
  const Level& level_for(int li, const std::int64_t* dims, Level& resized) const {
    const Level& compiled = P.levels[li];
    if (P.maestro_compat) return compiled;
    bool same = true;
    for (int i = 0; i < compiled.num_dirs; ++i)
      same = same && compiled.dims[compiled.dirs[i].dim] == dims[compiled.dirs[i].dim];
    if (same) return compiled;
    resized = compiled;
    for (int i = 0; i < resized.num_dirs; ++i)
      resized.dims[resized.dirs[i].dim] = dims[resized.dirs[i].dim];
    true_tile_sizes(resized, P.conv);
    return resized;
  }

  // The sub-level's work in case `c` of level `li` (§IV-B, recursively).
  // At a spatial edge whose last busy unit has a partial tile, that unit
  // and the full ones see different dimensions: both are analysed and the
  // slower one sets the pace.
  SubWork sub_work(const Case& c, int li, const State& spatial) {
    const Level& L = c.L;
    const bool share = shared_net();
    SubWork w;
    std::int64_t sd[kNumDims];
    auto take_unshared = [&](const SubResult& r) {
      if (!share) std::copy(r.unshared, r.unshared + kNumTensors, w.unshared);
    };
    if (spatial.is_edge() && spatial.edge_pe) {
      sub_dims(c, true, sd);
      const SubResult partial = sub_level(li + 1, sd);
      w.runtime = std::max<std::int64_t>(0, partial.runtime);
      w.active = partial.avg_active;
      take_unshared(partial);
      const std::int64_t full_units = L.num_edge_sub - 1;
      if (full_units > 0) {
        sub_dims(c, false, sd);
        const SubResult full = sub_level(li + 1, sd);
        w.runtime = std::max(w.runtime, full.runtime);
        w.active += full.avg_active * static_cast<long double>(full_units);
        const auto busy = static_cast<long double>(L.num_edge_sub);
        for (int t = 0; t < kNumTensors && !share; ++t)
          w.unshared[t] = (partial.unshared[t] + full.unshared[t] * (busy - 1)) / busy;
      }
      return w;
    }
    sub_dims(c, false, sd);
    const SubResult r = sub_level(li + 1, sd);
    w.runtime = r.runtime;
    w.active =
        r.avg_active * static_cast<long double>(spatial.is_edge() ? L.num_edge_sub : L.num_sub);
    take_unshared(r);
    return w;
  }

  // Words on the network in case `c` (MAESTRO Table 1). Without multicast
  // every busy PE below this level receives its own copy of each input
  // word; without reduction every PE's partial sums leave it separately.
  // The words landing in the L1s and the partial sums the PEs produce are
  // the same either way.
  void network_words(const Case& c, const long double* sub_unshared, CaseFlow& f) const {
    f.noc_in = f.in_of[0] + f.in_of[1];
    f.noc_out = f.egress;
    // in_words and out_words are only read without; apart, so that this
    // part is inlined into every case.
    if (!shared_net()) unshared_network_words(c, sub_unshared, f);
  }
  void unshared_network_words(const Case& c, const long double* sub_unshared, CaseFlow& f) const {
    for (int t = 0; t < 2; ++t) f.in_words[t] = static_cast<long double>(f.in_of[t]);
    f.out_words = static_cast<long double>(f.egress);
    if (!P.hw.multicast) {
      long double in_words = 0;
      for (int t = 0; t < 2; ++t) {
        f.in_words[t] = static_cast<long double>(c.ingress_unshared(t)) * sub_unshared[t];
        in_words += f.in_words[t];
      }
      f.noc_in = std::llround(in_words);
    }
    if (!P.hw.reduction) {
      f.out_words = static_cast<long double>(c.egress_unshared()) * sub_unshared[2];
      f.noc_out = std::llround(f.out_words);
    }
  }

  // How long a case takes on the network and in the sub-units (§IV-B):
  // double buffering hides communication behind computation except in the
  // first step, which must fill the buffers.
  std::int64_t case_delay(bool first_step, CaseFlow& f) const {
    f.in_delay = noc_delay(f.noc_in);
    f.out_delay = noc_delay(f.noc_out);
    return first_step ? f.compute + f.in_delay
                      : std::max(f.out_delay, std::max(f.compute, f.in_delay));
  }

  // What case `c` of level `li` moves and costs, apart from how often it
  // occurs (§IV-A, §IV-B): its flow, and with work the compute delay (the
  // MAC steps of one PE at the innermost level, else recursively the
  // sub-level's runtime), the PEs kept busy and the case's delay.
  void evaluate(const Case& c, int li, bool innermost, CaseOutcome& o) {
    const Level& L = c.L;
    CaseFlow& f = o.flow;
    f.psums_all = c.all_psums();
    f.egress = c.egress();
    for (int t = 0; t < 2; ++t) f.in_of[t] = c.ingress(t);
    o.psums_critical = c.critical_psums();
    if (o.psums_critical <= 0) return;
    const State& spatial = *c.st[c.first_spatial()];
    o.busy = spatial.is_edge() ? L.num_edge_sub : L.num_sub;
    if (innermost) {
      static constexpr long double kOwnWords[kNumTensors] = {1, 1, 1};
      f.compute = ceil_div(o.psums_critical, P.hw.simd_lanes);
      network_words(c, kOwnWords, f);
    } else {
      const SubWork sub = sub_work(c, li, spatial);
      f.compute = sub.runtime;
      o.units = sub.active == 0 ? static_cast<long double>(o.busy) : sub.active;
      network_words(c, sub.unshared, f);
    }
    o.delay = case_delay(c.all_init(), f);
    o.compute_nz = std::max<std::int64_t>(f.compute, 1);
    o.traffic = std::max(f.noc_in, f.noc_out);
    o.rate = o.traffic / o.compute_nz;
  }

  // Level `li` on dimensions `dims`: its cases, each weighted by its
  // occurrences, give the runtime (double buffering hides communication
  // behind computation except in the first step, which must fill the
  // buffers, §IV-B) and the average busy PEs; `accounts` adds the top
  // level's traffic and sizes.
  template <class Accounts>
  SubResult level(int li, const std::int64_t* dims, Accounts& accounts) {
    Level resized;  // only its defaulted counts are set until level_for copies into it
    const Level& L = level_for(li, dims, resized);
    const bool innermost = li == P.num_levels - 1;
    const bool share = shared_net();

    CaseOrder order(P, L, dims);
    Case c(P, L);
    CaseOutcomes outcomes;
    std::int64_t runtime = 0, occurrences = 0, busy_pes = 0;
    long double active_sum = 0;
    UnsharedWords unshared;
    for (std::int64_t n = 0; n < order.size(); ++n) {
      const std::int64_t occ = order.next(c);
      bool found = false;
      CaseOutcome& o = outcomes.slot(order.case_class(), found);
      if (!found || !P.reuse_case_classes) {
        order.begin(c);
        evaluate(c, li, innermost, o);
      }
      CaseFlow& f = o.flow;
      f.occ = occ;
      if (accounts.is_first()) accounts.first_case(P, dims, f);
      accounts.outputs(f);
      if (o.psums_critical <= 0) {
        // No work in this case: a tile larger than its dimension.
        accounts.skipped();
        continue;
      }
      accounts.inputs(f);
      if (innermost)
        busy_pes += o.busy * f.occ;
      else
        active_sum += o.units * static_cast<long double>(f.occ);
      if (!share) {
        unshared.add(f);
        accounts.unshared(P, f);
      }
      const std::int64_t outstanding = accounts.overlap_offchip(P, o.delay, o.compute_nz);
      runtime += f.occ * outstanding;
      accounts.counted(o);
      occurrences += f.occ;
    }
    accounts.finish(P, occurrences);
    // Whole PEs summed as integers at the innermost level (exact, as the
    // long double sum of the same integers was).
    active_sum += static_cast<long double>(busy_pes);
    SubResult r{runtime, 0, {1, 1, 1}};
    r.avg_active = occurrences > 0 ? active_sum / static_cast<long double>(occurrences) : 0;
    unshared.ratios(r.unshared);
    return r;
  }
};

// Layer::true_macs on the dimensions as the layer gives them, by id: its
// lookups by name were a quarter of building the plan.
std::int64_t true_macs(const Layer& layer, const std::int64_t* given) {
  auto mul = [&](std::int64_t a, std::int64_t b) {
    if (auto p = checked_mul(a, b)) return *p;
    throw InputError("layer '" + layer.name + "': its number of MACs exceeds " +
                     std::to_string(std::numeric_limits<std::int64_t>::max()));
  };
  if (layer.type == LayerType::kGemm) return mul(mul(given[kM], given[kN]), given[kK]);
  auto at_least_1 = [&](int d) { return std::max<std::int64_t>(given[d], 1); };
  const std::int64_t r = at_least_1(kR), s = at_least_1(kS);
  // Output rows: given directly (Y'), or from the input rows and the stride.
  std::int64_t oy = given[kYo], ox = given[kXo];
  if (oy == 0) oy = (given[kY] - r) / layer.stride_y + 1;
  if (ox == 0) ox = (given[kX] - s) / layer.stride_x + 1;
  std::int64_t macs = 1;
  for (std::int64_t f : {at_least_1(kN), at_least_1(kC), r, s, oy, ox}) macs = mul(macs, f);
  if (layer.type != LayerType::kDsconv) macs = mul(macs, at_least_1(kK));
  if (layer.type == LayerType::kNgconv) macs = mul(macs, at_least_1(kG));
  return macs;
}

// MAESTRO's tile sizes along the dimensions the directives map.
void clear_sizes(Level& L) {
  // memset: the four arrays of eleven in a few wide stores (an element
  // loop was a tenth of building a level).
  std::memset(L.mapped, 0, sizeof L.mapped);
  std::memset(L.unique, 0, sizeof L.unique);
  std::memset(L.mapped_edge, 0, sizeof L.mapped_edge);
  std::memset(L.unique_edge, 0, sizeof L.unique_edge);
}

void compute_directive_sizes(Level& L) {
  clear_sizes(L);
  for (int i = 0; i < L.num_dirs; ++i) set_directive_sizes(L, L.dirs[i]);
}

void set_directive_sizes(Level& L, const Dir& d) {
  const std::int64_t dim = L.dims[d.dim], map = d.size, ofs = d.offset;
  const std::int64_t steady = std::max<std::int64_t>((dim - map) / ofs, 0);
  const bool has_edge = (steady * ofs + map < dim) || (map > dim);
  L.mapped[d.dim] = map;
  L.unique[d.dim] = std::min(map, ofs);
  if (!d.spatial && dim <= map) L.unique[d.dim] = 0;  // fully unrolled: nothing new
  std::int64_t edge_map = dim - (steady + 1) * ofs;
  if (edge_map < 0) edge_map = dim;
  L.mapped_edge[d.dim] = has_edge ? edge_map : map;
  L.unique_edge[d.dim] = std::max<std::int64_t>(ofs - (map - edge_map), 0);
}

void compute_mapping_sizes(Level& L, bool conv) {
  compute_directive_sizes(L);
  if (!conv) return;
  // Output rows/columns of a sliding window: input tile - filter tile + 1.
  for (int i = 0; i < L.num_dirs; ++i) {
    const Dir& d = L.dirs[i];
    const int s = sliding_of(d.dim);
    if (s < 0) continue;
    const int o = output_of(d.dim);
    L.mapped[o] = L.mapped[d.dim] - L.mapped[s] + 1;
    L.unique[o] = std::min(d.offset, d.size);
    L.mapped_edge[o] = L.mapped_edge[d.dim] - L.mapped_edge[s] + 1;
    L.unique_edge[o] = std::min(d.offset, L.mapped_edge[o]);
  }
}

}  // namespace

Plan compile(const Layer& layer, const Hardware& hw, bool batch, bool maestro_compat) {
  Plan p;
  p.maestro_compat = maestro_compat;
  p.type = layer.type;
  p.conv = layer.type != LayerType::kGemm;
  p.hw = hw;
  auto fail = [&](int line, const std::string& problem) {
    throw InputError(SourceLocation{"", line, 0}, "Dataflow",
                     "layer '" + layer.name + "': " + problem);
  };
  if (hw.num_pes <= 0 || hw.noc_bw <= 0 || hw.offchip_bw <= 0 || hw.simd_lanes <= 0)
    throw InputError("hardware: PEs, bandwidths and SIMD lanes must be positive");

  for (int d = 0; d < kNumDims; ++d) p.full_dims[d] = 0;
  for (const auto& [name, v] : layer.dims) {
    const int d = dim_id(name);
    if (d < 0) fail(layer.line, "unknown dimension '" + name + "'");
    p.full_dims[d] = v;
  }
  p.true_macs = true_macs(layer, p.full_dims);
  std::int64_t stride[kNumDims];
  for (int d = 0; d < kNumDims; ++d) stride[d] = 1;
  if (p.conv) {
    std::int64_t* f = p.full_dims;
    // MAESTRO's dimension table: the output size is input - filter + 1; the
    // stride enters through the directives (see ApplyStride below).
    if (f[kY] > 0 && f[kYo] == 0) f[kYo] = f[kY] - f[kR] + 1;
    if (f[kYo] > 0 && f[kY] == 0) f[kY] = f[kYo] + f[kR] - 1;
    if (f[kX] > 0 && f[kXo] == 0) f[kXo] = f[kX] - f[kS] + 1;
    if (f[kXo] > 0 && f[kX] == 0) f[kX] = f[kXo] + f[kS] - 1;
    stride[kY] = layer.stride_y;
    stride[kX] = layer.stride_x;
  }
  std::memcpy(p.stride, stride, sizeof stride);

  // Tensors and their coupled dimensions (MAESTRO §III, Table 1).
  auto set = [&](int t, std::initializer_list<int> dims) {
    p.num_coupled[t] = 0;
    p.coupled_mask[t] = 0;
    for (int d : dims) {
      p.coupled[t][p.num_coupled[t]++] = d;
      p.coupled_mask[t] |= 1U << d;
    }
  };
  switch (layer.type) {
    case LayerType::kGemm:
      set(0, {kM, kK});
      set(1, {kK, kN});
      set(2, {kM, kN});
      break;
    case LayerType::kDsconv:
      if (batch) {
        set(0, {kN, kC, kY, kX});
        set(2, {kN, kC, kY, kX});
      } else {
        set(0, {kC, kY, kX});
        set(2, {kC, kY, kX});
      }
      set(1, {kC, kR, kS});
      break;
    case LayerType::kNgconv:
      if (batch) {
        set(0, {kN, kG, kC, kY, kX});
        set(2, {kN, kG, kK, kC, kY, kX});
      } else {
        set(0, {kG, kC, kY, kX});
        set(2, {kG, kK, kC, kY, kX});
      }
      set(1, {kG, kK, kC, kR, kS});
      break;
    default:
      if (batch) {
        set(0, {kN, kC, kY, kX});
        set(2, {kN, kK, kY, kX});
      } else {
        set(0, {kC, kY, kX});
        set(2, {kK, kY, kX});
      }
      set(1, {kK, kC, kR, kS});
      break;
  }
  // Dimensions of the input tensors, in name order (MAESTRO fills missing
  // directives in this order).
  int input_vars[kNumDims];
  int num_input_vars = 0;
  {
    const unsigned used = p.coupled_mask[0] | p.coupled_mask[1];
    const int by_name[] = {kC, kG, kK, kM, kN, kR, kS, kX, kY};
    for (int d : by_name)
      if ((used >> d) & 1U) input_vars[num_input_vars++] = d;
  }

  // Split the dataflow into cluster levels (outermost first).
  std::int64_t uppermost = 1;
  int groups = 1;
  for (const auto& d : layer.dataflow)
    if (d.kind == DirectiveKind::kCluster) {
      uppermost *= d.size;
      ++groups;
    }
  if (groups > kMaxLevels)
    fail(layer.line, "more than " + std::to_string(kMaxLevels) + " cluster levels");
  if (uppermost > hw.num_pes)
    fail(layer.line, "clusters of " + std::to_string(uppermost) + " PEs exceed the " +
                         std::to_string(hw.num_pes) + " PEs");
  p.num_levels = groups;

  std::int64_t level_dims[kNumDims];
  std::memcpy(level_dims, p.full_dims, sizeof level_dims);
  std::size_t next = 0;
  std::int64_t num_sub = hw.num_pes / uppermost;
  for (int g = 0; g < groups; ++g) {
    Level& L = p.levels[g];
    L.num_dirs = 0;
    int line = layer.line;
    std::int64_t cluster_size = 1;
    // Bit d: a directive maps dimension d (kept as directives are added or
    // renamed, instead of a scan of the directives per question).
    unsigned present = 0;
    auto push = [&](const Dir& d, int at_line) {
      if (L.num_dirs >= kMaxDirectives) fail(at_line, "too many directives in one cluster level");
      L.dirs[L.num_dirs++] = d;
    };
    for (; next < layer.dataflow.size(); ++next) {
      const Directive& d = layer.dataflow[next];
      line = d.line;
      if (d.kind == DirectiveKind::kCluster) {
        cluster_size = d.size;
        ++next;
        break;
      }
      const int id = dim_id(d.dim);
      if (id < 0) fail(d.line, "directive on unknown dimension '" + d.dim + "'");
      if ((present >> id) & 1U)
        fail(d.line, "two directives on " + d.dim + " in one cluster level");
      present |= 1U << id;
      push(Dir{d.kind == DirectiveKind::kSpatialMap, id, d.size, d.offset}, d.line);
    }
    // Output-row/column directives become input ones (tile + filter - 1).
    auto find = [&](int dim) {
      for (int i = 0; i < L.num_dirs; ++i)
        if (L.dirs[i].dim == dim) return i;
      return -1;
    };
    for (auto [o, in, s] : {std::tuple{kYo, kY, kR}, std::tuple{kXo, kX, kS}}) {
      if (!((present >> o) & 1U)) continue;
      if ((present >> in) & 1U)
        fail(line, std::string("directives on both ") + kDimNames[in] + " and " + kDimNames[o]);
      const int i = find(o);
      const int is = find(s);
      const std::int64_t filter = is >= 0 ? L.dirs[is].size : level_dims[s];
      L.dirs[i].dim = in;
      L.dirs[i].size = L.dirs[i].size + filter - 1;
      present = (present & ~(1U << o)) | (1U << in);
    }
    // Filling in (README "Filling in"): a dimension missing here inherits
    // the level above as a TemporalMap (each inserted at the front); one
    // missing everywhere is mapped whole (appended).
    if (g > 0) {
      const Level& up = p.levels[g - 1];
      for (int i = 0; i < up.num_dirs; ++i) {
        if ((present >> up.dirs[i].dim) & 1U) continue;
        if (L.num_dirs >= kMaxDirectives) fail(line, "too many directives in one cluster level");
        present |= 1U << up.dirs[i].dim;
        for (int k = L.num_dirs; k > 0; --k) L.dirs[k] = L.dirs[k - 1];
        L.dirs[0] = Dir{false, up.dirs[i].dim, up.dirs[i].size, up.dirs[i].offset};
        ++L.num_dirs;
      }
    }
    for (int k = 0; k < num_input_vars; ++k) {
      const int v = input_vars[k];
      if (!((present >> v) & 1U) && level_dims[v] > 0)
        push(Dir{false, v, level_dims[v], level_dims[v]}, line);
    }
    // Stride (MAESTRO's outer stride): an input-row map covering at least a
    // filter becomes o output rows: size o*min(s,R) + max(R-s,0), offset o*s.
    // With R < s the rows of each output are packed together, so below the
    // top level consecutive windows are R rows apart, not s.
    for (int d = 0; d < kNumDims; ++d) L.out_stride[d] = L.edge_stride[d] = 1;
    for (int i = 0; i < L.num_dirs && p.conv; ++i) {
      Dir& d = L.dirs[i];
      const int s_dim = sliding_of(d.dim);
      if (s_dim < 0 || stride[d.dim] == 1) continue;
      const std::int64_t s = stride[d.dim], r = p.full_dims[s_dim];
      L.out_stride[d.dim] = r < s ? r : s;
      L.edge_stride[d.dim] = g == 0 ? s : L.out_stride[d.dim];
      if (d.size < r) continue;
      const std::int64_t o = (d.size + s - r) / s;
      d.size = o * std::min(s, r) + std::max<std::int64_t>(r - s, 0);
      d.offset = (g > 0 && r < s) ? o * r : o * s;
      if (d.size <= 0 || d.offset <= 0) fail(line, "a stride larger than a tile leaves no output");
    }
    // Below the top level only the tensors' dimensions exist: a depthwise
    // layer's K (no tensor uses it) cannot be mapped there (MAESTRO stops
    // with "Dimension K not found").
    for (int i = 0; i < L.num_dirs; ++i)
      if (level_dims[L.dirs[i].dim] <= 0)
        fail(line, std::string("dimension ") + kDimNames[L.dirs[i].dim] +
                       " does not exist in cluster level " + std::to_string(g) +
                       " (no tensor of a " + to_string(layer.type) + " layer uses it)");
    for (int d = 0; d < kNumDims; ++d) L.dir_of_dim[d] = -1;
    int spatial = -1, num_spatial = 0;
    for (int i = 0; i < L.num_dirs; ++i) {
      L.dir_of_dim[L.dirs[i].dim] = i;
      if (L.dirs[i].spatial) {
        if (spatial < 0) spatial = i;
        ++num_spatial;
      }
    }
    if (spatial < 0) fail(line, "cluster level " + std::to_string(g) + " has no SpatialMap");
    if (num_spatial > 2)
      fail(line, "cluster level " + std::to_string(g) + " has a third SpatialMap");
    std::memcpy(L.dims, level_dims, sizeof level_dims);
    L.num_sub = num_sub;
    // Sub-units busy in the last spatial step (MAESTRO's spatial edge).
    {
      const Dir& d = L.dirs[spatial];
      const std::int64_t dim = L.dims[d.dim], map = d.size, ofs = d.offset;
      const std::int64_t full = ofs * (num_sub - 1) + map;
      std::int64_t edge = 1;
      if (dim > full) {
        const std::int64_t steady = ((dim - map) / ofs + 1) / num_sub - 1;
        const std::int64_t remaining = dim - (steady + 1) * ofs * num_sub;
        edge = remaining < map ? 1 : (remaining - map) / ofs + 1;
      } else if (dim > map) {
        edge = (dim - map) / ofs + 1;
        if (ofs * (edge - 1) + map < dim) ++edge;
      }
      if (dim <= map) edge = 1;
      L.num_edge_sub = edge;
    }
    if (p.maestro_compat)
      compute_mapping_sizes(L, p.conv);
    else
      true_tile_sizes(L, p.conv);  // MAESTRO's sizes, then the true edges and outputs
    // The level below works on this level's tiles.
    std::int64_t lower[kNumDims];
    for (int d = 0; d < kNumDims; ++d) lower[d] = 0;
    for (int k = 0; k < num_input_vars; ++k) {
      const int v = input_vars[k];
      const int i = L.dir_of_dim[v];  // directives are one per dimension (checked above)
      if (i >= 0) lower[v] = std::min(L.dirs[i].size, level_dims[v]);
    }
    std::memcpy(level_dims, lower, sizeof lower);
    num_sub = cluster_size;
  }
  return p;
}

Result analyse(const Plan& p) {
  Analyser a(p);
  TopAccounts top;
  const SubResult r = a.level(0, p.full_dims, top);
  if (top.macs <= 0 || r.runtime <= 0)
    throw InputError(
        "the directives leave no work in some iteration (a tile larger than its dimension, "
        "or a spatial map past the dimension's end); MAESTRO prints NaN here");
  Result out;
  out.num_macs = static_cast<double>(top.macs);
  out.true_macs = static_cast<double>(p.true_macs);
  out.runtime_cycles = static_cast<double>(r.runtime);
  // L1 requirement: the innermost level's tiles, double-buffered. MAESTRO
  // sizes the output tile over input rows/columns (a 3x3 window's one
  // output counted as 9); the true tile counts output positions.
  const Level& inner = p.levels[p.num_levels - 1];
  double l1[3];
  for (int t = 0; t < 3; ++t) {
    std::int64_t v = 1;
    for (int k = 0; k < p.num_coupled[t]; ++k) {
      const int d = p.coupled[t][k];
      if (inner.dir_of_dim[d] < 0) continue;
      const bool output_rows = t == 2 && p.conv && !p.maestro_compat && sliding_of(d) >= 0;
      v *= inner.mapped[output_rows ? output_of(d) : d];
    }
    l1[t] = 2.0 * static_cast<double>(v);
  }
  out.input_l1_size_req = l1[0];
  out.filter_l1_size_req = l1[1];
  out.output_l1_size_req = l1[2];
  out.l1_size_req = l1[0] + l1[1] + l1[2];
  out.input_l2_size_req = static_cast<double>(top.l2_size[0]);
  out.filter_l2_size_req = static_cast<double>(top.l2_size[1]);
  out.output_l2_size_req = static_cast<double>(top.l2_size[2]);
  out.l2_size_req = out.input_l2_size_req + out.filter_l2_size_req + out.output_l2_size_req;
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  // L2 counts: MAESTRO's, plus what a network without multicast or
  // reduction adds (zero with both switches on).
  double l2_rd[3], l2_wr[3];
  for (int t = 0; t < 3; ++t) {
    l2_rd[t] = d(top.l2_rd[t]) + static_cast<double>(top.extra_l2_rd[t]);
    l2_wr[t] = d(top.l2_wr[t]) + static_cast<double>(top.extra_l2_wr[t]);
  }
  out.input_l2_rd = l2_rd[0];
  out.input_l2_wr = l2_wr[0];
  out.filter_l2_rd = l2_rd[1];
  out.filter_l2_wr = l2_wr[1];
  out.output_l2_rd = l2_rd[2];
  out.output_l2_wr = l2_wr[2];
  out.input_l1_rd = d(top.l1_rd[0]);
  out.input_l1_wr = d(top.l1_wr[0]);
  out.filter_l1_rd = d(top.l1_rd[1]);
  out.filter_l1_wr = d(top.l1_wr[1]);
  out.output_l1_rd = d(top.l1_rd[2]);
  out.output_l1_wr = d(top.l1_wr[2]);
  double l2 = 0, l1_total = 0;
  for (int t = 0; t < 3; ++t) {
    l2 += l2_rd[t] + l2_wr[t];
    l1_total += d(top.l1_rd[t]) + d(top.l1_wr[t]);
  }
  out.energy_total_macunits = 18.61 * l2 + 1.68 * l1_total + out.num_macs;
  out.noc_bw_req_peak = d(top.peak_bw);
  out.noc_bw_req_avg = static_cast<double>(top.avg_bw);
  out.offchip_bw_req = d(top.offchip);
  out.avg_utilized_pes = static_cast<double>(r.avg_active);
  out.ingress_delay_avg = static_cast<double>(top.ingress_avg);
  out.egress_delay_avg = static_cast<double>(top.egress_avg);
  out.compute_delay_avg = static_cast<double>(top.compute_avg);
  return out;
}

TopIngress top_ingress(const Plan& p) {
  TopIngress out;
  const Level& L = p.levels[0];
  if (L.num_dirs > kMaxTopDirectives) return out;
  CaseOrder order(p, L, p.full_dims);
  Case c(p, L);
  order.next(c);  // every state at Init
  out.num_dirs = L.num_dirs;
  for (int i = 0; i < L.num_dirs; ++i) {
    const StateList& list = order.states(i);
    std::int64_t steps = 0;
    for (int k = 0; k < list.n; ++k) {
      if (list.s[k].is_edge()) return out;
      steps += list.s[k].occ;
    }
    out.steps[i] = steps;
    if (L.dirs[i].spatial) {
      if (out.spatial >= 0) return out;
      out.spatial = i;
    }
    for (int t = 0; t < 2; ++t)
      if ((p.coupled_mask[t] >> L.dirs[i].dim) & 1U) out.coupled[t] |= 1U << i;
  }
  if (out.spatial < 0) return out;
  out.restarts = order.init_not_unrolled();
  c.begin(0, out.restarts, ~0U);
  for (int t = 0; t < 2; ++t) out.first[t] = c.ingress(t);
  for (int i = 0; i < L.num_dirs; ++i) {
    if (out.steps[i] < 2) continue;  // never moves
    // Directive i past Init (its Steady state), every other one at Init:
    // outside i an Init and a Steady state give a case the same numbers
    // (CaseOrder::case_class).
    c.st[i] = &order.states(i).s[1];
    for (int r = 0; r < 2; ++r)
      for (int s = 0; s < 2; ++s) {
        const bool restart[2] = {r == 1, r == 1};
        const unsigned inside = s == 1 ? 1U << out.spatial : 0U;
        c.begin_moved(i, inside, restart, ~0U);
        for (int t = 0; t < 2; ++t) out.moved[t][i][r][s] = c.ingress(t);
      }
    c.st[i] = &order.states(i).s[0];
  }
  out.exact = true;
  return out;
}

namespace {

// Words of input t when directive i moves with the directives `outside`
// (bit j) outside it, per occurrence, and how often that happens.
std::int64_t moved_words(const TopIngress& table, int t, int i, unsigned outside) {
  const unsigned inside = ~outside & ~(1U << i);
  const int r = (table.restarts & table.coupled[t] & inside) != 0 ? 1 : 0;
  const int s = (inside >> table.spatial) & 1U ? 1 : 0;
  return table.moved[t][i][r][s];
}
std::int64_t moves(const TopIngress& table, int i, unsigned outside) {
  std::int64_t occ = table.steps[i] - 1;
  for (int j = 0; j < table.num_dirs; ++j)
    if ((outside >> j) & 1U) occ *= table.steps[j];
  return occ;
}

}  // namespace

void top_input_words(const TopIngress& table, const int* order, std::int64_t* words) {
  unsigned outside = 0;
  for (int t = 0; t < 2; ++t) words[t] = table.first[t];
  for (int k = 0; k < table.num_dirs; ++k) {
    const int i = order[k];
    if (table.steps[i] > 1)
      for (int t = 0; t < 2; ++t)
        if ((table.coupled[t] >> i) & 1U)
          words[t] += moves(table, i, outside) * moved_words(table, t, i, outside);
    outside |= 1U << i;
  }
}

double least_top_input_cost(const TopIngress& table, const double* cost, unsigned after_spatial) {
  const int n = table.num_dirs;
  const unsigned all = (1U << n) - 1;
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // least[S]: the least cost of the directives not in S placed inside
  // those of S (which are outermost, in any order).
  double least[1U << kMaxTopDirectives];
  least[all] = 0;
  for (unsigned outside = all; outside-- > 0;) {
    double best = kNone;
    const bool spatial_placed = (outside >> table.spatial) & 1U;
    for (int i = 0; i < n; ++i) {
      if ((outside >> i) & 1U) continue;
      if (((after_spatial >> i) & 1U) && !spatial_placed) continue;
      const double rest = least[outside | (1U << i)];
      if (rest == kNone) continue;
      double here = 0;
      if (table.steps[i] > 1) {
        const auto occ = static_cast<double>(moves(table, i, outside));
        for (int t = 0; t < 2; ++t)
          if ((table.coupled[t] >> i) & 1U)
            here += cost[t] * occ * static_cast<double>(moved_words(table, t, i, outside));
      }
      best = std::min(best, here + rest);
    }
    least[outside] = best;
  }
  if (least[0] == kNone) return kNone;
  return least[0] + cost[0] * static_cast<double>(table.first[0]) +
         cost[1] * static_cast<double>(table.first[1]);
}

}  // namespace mapex::mdc::engine
