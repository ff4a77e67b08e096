// FLASH's dataflows, tile bounds, pruning and candidates (see
// flash_algebra.hpp). Paper sections are cited where each rule comes from.

#include "flash_algebra.hpp"

#include <algorithm>
#include <cmath>
#include <mapex/error.hpp>

namespace mapex::flash {
namespace {

constexpr const char* kDimNames[3] = {"M", "N", "K"};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A real bound floored into [1, cap]: a tile is at least 1 (Table 6's
// ranges all start at 1) and at most what the dimension allows.
std::int64_t floor_clamped(double bound, std::int64_t cap) {
  const double f = std::floor(bound + 1e-9);
  if (!(f >= 1)) return 1;
  return std::min<std::int64_t>(cap, static_cast<std::int64_t>(f));
}

// The dimension a loop order leaves out of `a` and `b`.
int third(int a, int b) { return 3 - a - b; }

}  // namespace

std::string to_string(Style style) {
  switch (style) {
    case Style::kEyeriss:
      return "eyeriss";
    case Style::kNvdla:
      return "nvdla";
    case Style::kTpu:
      return "tpu";
    case Style::kShidiannao:
      return "shidiannao";
    case Style::kMaeri:
      return "maeri";
  }
  return "?";
}

std::optional<Style> parse_style(const std::string& text) {
  for (Style s : kAllStyles)
    if (to_string(s) == text) return s;
  return std::nullopt;
}

std::string to_string(const LoopOrder& order) {
  std::string s;
  for (int d : order) s += static_cast<char>(kDimNames[d][0] - 'A' + 'a');
  return s;
}

std::optional<LoopOrder> parse_order(const std::string& text) {
  if (text.size() != 3) return std::nullopt;
  LoopOrder order{};
  int seen = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const char c = text[i];
    const int d = c == 'm' ? kM : c == 'n' ? kN : c == 'k' ? kK : -1;
    if (d < 0 || (seen >> d & 1)) return std::nullopt;
    seen |= 1 << d;
    order[i] = d;
  }
  return order;
}

std::string mapping_name(Style style, const LoopOrder& order) {
  std::string o;
  for (int d : order) o += kDimNames[d];
  switch (style) {
    case Style::kShidiannao:
      return "STT_TST-" + o;
    case Style::kMaeri:
      return "TST_TTS-" + o;
    default:
      return "STT_TTS-" + o;
  }
}

Chip chip_from(const Architecture& arch) {
  const auto& l = arch.levels();
  const bool shaped = l.size() == 4 && l[0].kind == LevelKind::kBuffer &&
                      l[1].kind == LevelKind::kSpatial && l[2].kind == LevelKind::kBuffer &&
                      l[3].kind == LevelKind::kDram;
  if (!shaped)
    throw InputError("architecture '" + arch.name() +
                     "': FLASH needs an S1 buffer, a PE array, an S2 buffer and DRAM, innermost "
                     "first (FLASH §2.2)");
  Chip chip;
  chip.pes = arch.num_pes();
  const double word = arch.word_bytes();
  chip.s1_words = static_cast<std::int64_t>(static_cast<double>(l[0].size_bytes) / word);
  chip.s2_words = static_cast<std::int64_t>(static_cast<double>(l[2].size_bytes) / word);
  return chip;
}

Problem problem_from(const Operator& op) {
  const bool gemm = op.kind() == "gemm" && op.num_dims() == 3 && op.find_dim("M") >= 0 &&
                    op.find_dim("N") >= 0 && op.find_dim("K") >= 0;
  if (!gemm)
    throw InputError("searcher 'flash' maps GEMM only (FLASH §2.1); operator '" + op.name() +
                     "' is a " + op.kind());
  Problem p;
  for (int d = 0; d < 3; ++d)
    p.dims[static_cast<std::size_t>(d)] =
        op.dims()[static_cast<std::size_t>(op.find_dim(kDimNames[d]))].bound;
  return p;
}

std::vector<LoopOrder> loop_orders(Style style, bool any_order) {
  // Table 2, compute order row; §4 (i): only MAERI's order is free.
  // §5.4 compares "flexible loop order ... across mapping schemes" with
  // "the average-workload-optimized fixed loop order of each mapping
  // scheme", which needs orders Table 2 does not give the fixed styles:
  // any_order gives them MAERI's six.
  if (any_order) return loop_orders(Style::kMaeri);
  switch (style) {
    case Style::kEyeriss:
    case Style::kShidiannao:
      return {{kM, kN, kK}};
    case Style::kNvdla:
      return {{kN, kK, kM}};
    case Style::kTpu:
      return {{kN, kM, kK}};
    case Style::kMaeri:
      return {{kM, kN, kK}, {kN, kM, kK}, {kM, kK, kN}, {kN, kK, kM}, {kK, kM, kN}, {kK, kN, kM}};
  }
  return {};
}

std::vector<std::int64_t> cluster_sizes(Style style, const LoopOrder& order, const Problem& problem,
                                        std::int64_t pes) {
  // Table 2, cluster size row. sqrt(P) is floored when P is not a square.
  std::vector<std::int64_t> sizes;
  auto add = [&](std::int64_t s) {
    if (s >= 1 && s <= pes && std::find(sizes.begin(), sizes.end(), s) == sizes.end())
      sizes.push_back(s);
  };
  const auto root = static_cast<std::int64_t>(std::floor(std::sqrt(static_cast<double>(pes))));
  switch (style) {
    case Style::kEyeriss:  // 1 <= lambda <= 12, compile-time flexible
      for (std::int64_t s = 1; s <= 12; ++s) add(s);
      break;
    case Style::kNvdla:  // 16 <= lambda <= 64, design-time flexible
      for (std::int64_t s = 16; s <= 64; ++s) add(s);
      break;
    case Style::kTpu:  // 256 or sqrt(P)
      add(root);
      add(256);
      break;
    case Style::kShidiannao:  // 8 or sqrt(P)
      add(8);
      add(root);
      break;
    case Style::kMaeri:  // the tile of the last loop's dimension (its SMap(1) spreads it)
      for (std::int64_t s = 1; s <= std::min(pes, problem.dims[static_cast<std::size_t>(order[2])]);
           ++s)
        add(s);
      break;
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

std::vector<Dataflow> dataflows(Style style, const Problem& problem, std::int64_t pes,
                                bool any_order) {
  std::vector<Dataflow> out;
  for (const LoopOrder& order : loop_orders(style, any_order)) {
    Dataflow f;
    f.style = style;
    f.order = order;
    // Table 2, parallel dim row: K inside the cluster where the NoC reduces
    // (Eyeriss, NVDLA, TPU), N for ShiDianNao (no spatial reduction, §3.1);
    // MAERI's TST_TTS puts the middle loop across and the last one inside.
    switch (style) {
      case Style::kEyeriss:
      case Style::kShidiannao:
        f.inter_dim = kM;
        f.intra_dim = style == Style::kEyeriss ? kK : kN;
        break;
      case Style::kNvdla:
      case Style::kTpu:
        f.inter_dim = kN;
        f.intra_dim = kK;
        break;
      case Style::kMaeri:
        f.inter_dim = order[1];
        f.intra_dim = order[2];
        break;
    }
    for (std::int64_t lambda : cluster_sizes(style, order, problem, pes)) {
      f.cluster_size = lambda;
      f.clusters = pes / lambda;
      out.push_back(f);
    }
  }
  return out;
}

Extents cluster_tile(const Candidate& c, const Problem& problem) {
  Extents e = c.outer;
  const auto intra = static_cast<std::size_t>(c.flow.intra_dim);
  // Table 2: STT styles map T^out x lambda of the intra dimension per
  // cluster (TMap(T^out x lambda) above the Cluster, SMap(T^out) below);
  // MAERI's cluster is lambda = T^out of its last loop, one element per PE.
  if (c.flow.style != Style::kMaeri) e[intra] = c.outer[intra] * c.flow.cluster_size;
  for (std::size_t d = 0; d < 3; ++d) e[d] = std::min(e[d], problem.dims[d]);
  return e;
}

Extents step_extents(const Candidate& c, const Problem& problem) {
  Extents e = cluster_tile(c, problem);
  const auto inter = static_cast<std::size_t>(c.flow.inter_dim);
  e[inter] = std::min(problem.dims[inter], c.outer[inter] * c.flow.clusters);
  return e;
}

namespace {
std::int64_t abc(const Extents& e) {
  // A[M][K] + B[K][N] + C[M][N] (FLASH §2.1).
  return e[kM] * e[kK] + e[kK] * e[kN] + e[kM] * e[kN];
}
}  // namespace

std::int64_t s1_footprint(const Candidate& c) { return abc(c.inner); }
std::int64_t s2_footprint(const Candidate& c, const Problem& problem) {
  return abc(step_extents(c, problem));
}
bool fits(const Candidate& c, const Problem& problem, const Chip& chip) {
  // Eq. 1 and 2: double buffering leaves half of each buffer (§4).
  return 2 * s1_footprint(c) <= chip.s1_words && 2 * s2_footprint(c, problem) <= chip.s2_words;
}

double outer_bound_stt(double extent, double lambda, double beta) {
  const double a = extent * (lambda + 1);
  return (std::sqrt(a * a + 2 * beta * lambda) - a) / (2 * lambda);
}
double inner_bound_stt(double outer_tile, double alpha) {
  return std::sqrt(alpha / 2 + outer_tile * outer_tile) - outer_tile;
}
double outer_bound_maeri(double extent, double beta) {
  return std::sqrt(beta / 2 + extent * extent) - extent;
}
double inner_bound_maeri(double alpha) { return std::sqrt((alpha + 2) / 2) - 1; }

std::array<double, 2> inner_pair_bounds(double intra_tile, double cap_x, double cap_y,
                                        double alpha) {
  const double t = intra_tile, room = alpha / 2;
  const double square = inner_bound_stt(t, alpha);
  std::array<double, 2> b{square, square};
  if (cap_y < square) b[0] = (room - t * cap_y) / (t + cap_y);
  if (cap_x < square) b[1] = (room - t * cap_x) / (t + cap_x);
  return b;
}

Bounds outer_bounds(const Dataflow& flow, const Problem& problem, const Chip& chip,
                    std::int64_t inter_tile) {
  const auto& D = problem.dims;
  const double beta = static_cast<double>(chip.s2_words);
  const auto lambda = static_cast<double>(flow.cluster_size);
  const int inter = flow.inter_dim, intra = flow.intra_dim, other = third(inter, intra);
  const auto ui = static_cast<std::size_t>(inter), un = static_cast<std::size_t>(intra),
             uo = static_cast<std::size_t>(other);
  const bool maeri = flow.style == Style::kMaeri;
  Bounds b;
  // Table 6: the inter-cluster dimension is spread over the clusters,
  // T^out = lambda D / P, so that one step covers all of it; Eq. 1's
  // extent along it is then D. When S2 cannot hold a whole row of steps
  // (workload I: K x 8,192 elements of B), Table 6's bounds floor below 1
  // and nothing fits, so the inter tile is a range [1, lambda D / P] and
  // Eq. 1 takes the extent one step really covers, clusters x tile.
  b.outer[ui] = std::min(inter_tile, ceil_div(D[ui], flow.clusters));
  const auto extent = static_cast<double>(std::min(D[ui], b.outer[ui] * flow.clusters));
  // Eq. 3 (MAERI) or Table 6's STT_TTS / STT_TST bound, both from Eq. 1
  // with the two temporal outer tiles assumed equal.
  const double out_b =
      maeri ? outer_bound_maeri(extent, beta) : outer_bound_stt(extent, lambda, beta);
  if (maeri) {
    // MAERI's intra tile is lambda (its cluster size), which Eq. 3 bounds.
    b.outer[un] = flow.cluster_size;
    b.feasible = flow.cluster_size <= floor_clamped(out_b, D[un]);
  } else {
    b.outer[un] = floor_clamped(out_b, ceil_div(D[un], flow.cluster_size));
  }
  // The equal-tile assumption: when the intra tile cannot reach the bound
  // (MAERI: lambda below it; others: the dimension over lambda PEs runs
  // out first), the other outer tile takes the room Eq. 1 leaves with the
  // intra extent Z at its cap: E y + E Z + y Z <= beta / 2.
  double other_s2 = out_b;
  const double z =
      maeri ? lambda : static_cast<double>(std::min(D[un], b.outer[un] * flow.cluster_size));
  if ((maeri ? lambda : static_cast<double>(b.outer[un])) < out_b)
    other_s2 = std::max(out_b, (beta / 2 - extent * z) / (extent + z));
  b.outer[uo] = floor_clamped(other_s2, D[uo]);
  return b;
}

std::array<std::int64_t, 2> inner_bounds(const Candidate& c, const Chip& chip) {
  const int inter = c.flow.inter_dim, intra = c.flow.intra_dim, other = third(inter, intra);
  const auto ui = static_cast<std::size_t>(inter), un = static_cast<std::size_t>(intra),
             uo = static_cast<std::size_t>(other);
  // Table 6's T^in rows: Eq. 2 around the intra tile (T_K^out for
  // Eyeriss / NVDLA / TPU, T_N^out for ShiDianNao; Eq. 4 is the MAERI case
  // T = 1), each inner tile also at most its outer tile.
  const auto b =
      inner_pair_bounds(static_cast<double>(c.inner[un]), static_cast<double>(c.outer[ui]),
                        static_cast<double>(c.outer[uo]), static_cast<double>(chip.s1_words));
  return {floor_clamped(b[0], c.outer[ui]), floor_clamped(b[1], c.outer[uo])};
}

namespace {

// Tiles of one dataflow in a fixed order (intra, other outer, inter inner,
// other inner), kept when Eq. 1 and 2 hold. For the pruned space the
// ranges follow Table 6; for the full space every outer tile goes to its
// dimension (the inter-cluster one to its share), every inner tile to its
// outer tile, and only the buffers decide.
// The values a tile takes in [1, hi]: every integer, or the powers of two
// and `hi` itself (§4: "the largest power of two (constrained by Equations
// 3 and 4)"; §5.1: "or their closest power of two"), ascending.
// kLargest walks the powers of two down from the largest one in [1, hi] and
// stops at the first value f accepts (true): §4's pick, "the largest power
// of two (constrained by Equations 3 and 4)", and "we iteratively decrease
// the largest tile size when the tiles do not fit in the S2 buffer".
template <class F>
void for_each_tile(std::int64_t hi, TileValues values, F&& f) {
  if (values == TileValues::kLargest) {
    std::int64_t v = 1;
    while (v * 2 <= hi) v *= 2;
    for (; v >= 1 && hi >= 1; v /= 2)
      if (f(v)) return;
    return;
  }
  for (std::int64_t v = 1; v <= hi;) {
    if (!f(v)) return;
    if (values == TileValues::kAll) {
      ++v;
    } else {
      const std::int64_t next = v * 2;
      v = next <= hi ? next : (v < hi ? hi : hi + 1);
    }
  }
}

void enumerate(const Dataflow& flow, const Problem& problem, const Chip& chip, bool pruned,
               TileValues values, std::size_t limit, std::vector<Candidate>& out) {
  const int inter = flow.inter_dim, intra = flow.intra_dim, other = third(inter, intra);
  const auto ui = static_cast<std::size_t>(inter), un = static_cast<std::size_t>(intra),
             uo = static_cast<std::size_t>(other);
  const auto& D = problem.dims;
  const bool maeri = flow.style == Style::kMaeri;
  const std::int64_t share = ceil_div(D[ui], flow.clusters);
  Candidate c;
  c.flow = flow;
  // Every loop stops at the first value that overflows a buffer: the
  // footprints grow with every tile (false ends the loop).
  for_each_tile(share, values, [&](std::int64_t ti) {
    const std::size_t inter_before = out.size();
    Extents upper{D[0], D[1], D[2]};
    upper[ui] = share;
    upper[un] = maeri ? flow.cluster_size : ceil_div(D[un], flow.cluster_size);
    if (pruned) {
      const Bounds b = outer_bounds(flow, problem, chip, ti);
      // Ascending: try the next tile; kLargest: a smaller inter tile
      // shortens the extent Eq. 3 sees, so try it (false).
      if (!b.feasible) return values != TileValues::kLargest;
      upper = b.outer;
    }
    c.outer[ui] = ti;
    bool any_intra = false;
    // MAERI's intra tile is lambda; the STT intra tile ranges (T^in = T^out).
    // kLargest stops each range at the first tile that yields a candidate.
    const bool largest = values == TileValues::kLargest;
    auto intra_tile = [&](std::int64_t tn) {
      const std::size_t intra_before = out.size();
      c.outer[un] = tn;
      c.inner[un] = maeri ? 1 : tn;
      bool any_outer = false;
      for_each_tile(upper[uo], values, [&](std::int64_t to) {
        c.outer[uo] = to;
        c.inner[ui] = c.inner[uo] = 1;
        if (2 * s2_footprint(c, problem) > chip.s2_words) return false;
        any_outer = true;
        const std::size_t outer_before = out.size();
        std::array<std::int64_t, 2> in_upper{c.outer[ui], c.outer[uo]};
        if (pruned) in_upper = inner_bounds(c, chip);
        for_each_tile(in_upper[0], values, [&](std::int64_t xi) {
          c.inner[ui] = xi;
          bool any = false;
          for_each_tile(in_upper[1], values, [&](std::int64_t yo) {
            c.inner[uo] = yo;
            if (2 * s1_footprint(c) > chip.s1_words) return false;
            any = true;
            if (out.size() >= limit)
              throw InputError("searcher 'flash': the " + std::string(pruned ? "pruned" : "full") +
                               " space of style '" + to_string(flow.style) + "' has more than " +
                               std::to_string(limit) +
                               " candidates; use tiles=pow2, space=pruned, or a larger "
                               "max_candidates");
            out.push_back(c);
            return true;
          });
          return any;
        });
        return largest ? out.size() > outer_before : true;
      });
      any_intra = any_intra || any_outer;
      return largest ? out.size() > intra_before : any_outer;
    };
    if (maeri)
      intra_tile(upper[un]);
    else
      for_each_tile(upper[un], values, intra_tile);
    return largest ? out.size() > inter_before : (any_intra || pruned);
  });
}

}  // namespace

Generation generate(Style style, const Problem& problem, const Chip& chip, bool pruned,
                    const std::vector<LoopOrder>& orders, TileValues values, std::size_t limit,
                    bool any_order) {
  Generation g;
  // kLargest, MAERI: lambda is the last loop's tile T^out (Table 2), so it
  // too is the largest power of two within Eq. 3, taken with Table 6's
  // inter-cluster tile lambda D / P (one step over the whole dimension);
  // a smaller one only when that leaves no candidate. Each order's
  // dataflows are walked from the largest cluster down.
  const bool maeri_largest = style == Style::kMaeri && values == TileValues::kLargest;
  std::vector<Dataflow> flows = dataflows(style, problem, chip.pes, any_order);
  if (maeri_largest)
    for (auto first = flows.begin(); first != flows.end();) {
      auto last = std::find_if(first, flows.end(),
                               [&](const Dataflow& f) { return f.order != first->order; });
      std::reverse(first, last);
      first = last;
    }
  std::vector<LoopOrder> chosen;  // MAERI orders whose cluster size is found
  for (const Dataflow& flow : flows) {
    if (!orders.empty() && std::find(orders.begin(), orders.end(), flow.order) == orders.end())
      continue;
    // §4: without constraints every outer tile ranges up to its dimension
    // and every inner tile up to its outer tile (n (n + 1) / 2 pairs); the
    // intra-cluster tile has one level only (T^in = T^out for STT, lambda
    // and 1 for MAERI, whose cluster size already fixes it).
    double tuples = 1;
    for (int d = 0; d < 3; ++d) {
      const auto n = static_cast<double>(problem.dims[static_cast<std::size_t>(d)]);
      if (d == flow.intra_dim)
        tuples *= flow.style == Style::kMaeri ? 1.0 : n;
      else
        tuples *= n * (n + 1) / 2;
    }
    g.before_pruning += tuples;
    // MAERI's cluster size is its last loop's tile T^out (Table 2), so it
    // takes the same values as every other tile.
    if (style == Style::kMaeri && values != TileValues::kAll) {
      const std::int64_t lambda = flow.cluster_size;
      const std::int64_t top =
          std::min(chip.pes, problem.dims[static_cast<std::size_t>(flow.order[2])]);
      if ((lambda & (lambda - 1)) != 0 && lambda != top) continue;
      if (maeri_largest) {
        if (std::find(chosen.begin(), chosen.end(), flow.order) != chosen.end()) continue;
        const auto whole =
            static_cast<double>(problem.dims[static_cast<std::size_t>(flow.order[1])]);
        const std::int64_t cap = std::max<std::int64_t>(
            1,
            std::min(top, floor_clamped(
                              outer_bound_maeri(whole, static_cast<double>(chip.s2_words)), top)));
        if (lambda > cap || (lambda & (lambda - 1)) != 0) continue;
      }
    }
    ++g.dataflows;
    const std::size_t before = g.candidates.size();
    enumerate(flow, problem, chip, pruned, values, limit, g.candidates);
    if (maeri_largest && g.candidates.size() > before) chosen.push_back(flow.order);
  }
  return g;
}

Candidate non_tiled(const Dataflow& flow) {
  // §3.2: tile 1 on both outer loops; the innermost loop's tile fills the
  // cluster (T_K^out = 4 on 4-PE clusters in Fig. 6(a)), so each PE gets
  // one element of it.
  Candidate c;
  c.flow = flow;
  c.outer = c.inner = {1, 1, 1};
  if (flow.style == Style::kMaeri)
    c.outer[static_cast<std::size_t>(flow.intra_dim)] = flow.cluster_size;
  return c;
}

bool non_tiled_cluster(const Dataflow& flow, const Problem& problem, std::int64_t pes) {
  if (flow.style != Style::kMaeri) return true;
  const auto last = static_cast<std::size_t>(flow.order[2]);
  return flow.cluster_size == std::min(problem.dims[last], pes);
}

MappingBuilder::MappingBuilder(const Operator& op, const Architecture& arch)
    : problem_(problem_from(op)), base_(Mapping::trivial(op, arch)) {
  (void)chip_from(arch);  // checks the chip's shape
  for (int d = 0; d < 3; ++d) id_[static_cast<std::size_t>(d)] = op.find_dim(kDimNames[d]);
  const auto n = static_cast<std::size_t>(op.num_dims());
  auto& pe = base_.level(1);
  pe.split.assign(n, 1);
  pe.cluster.split.assign(n, 1);
  pe.cluster.tile.assign(n, 1);
  pe.cluster.order.assign(n, 0);
}

Mapping MappingBuilder::build(const Candidate& c) const {
  Mapping m = base_;
  auto& s1 = m.level(0);
  auto& pe = m.level(1);
  auto& s2 = m.level(2);
  auto& dram = m.level(3);
  const Extents tile = cluster_tile(c, problem_);
  const Extents step = step_extents(c, problem_);
  auto& cluster = pe.cluster;
  for (int d = 0; d < 3; ++d) {
    const auto ud = static_cast<std::size_t>(d);
    const auto di = static_cast<std::size_t>(id_[ud]);
    s1.tile[di] = c.inner[ud];
    cluster.tile[di] = tile[ud];
    // Splits stop where the dimension ends (a split past it would be a
    // unit with no data); the lowering then opens regions of exactly the
    // units that work (Marvel Alg. 1).
    if (d == c.flow.inter_dim) pe.split[di] = ceil_div(step[ud], tile[ud]);
    if (d == c.flow.intra_dim) cluster.split[di] = ceil_div(tile[ud], c.inner[ud]);
    s2.tile[di] = step[ud];
  }
  // The compute order of both cluster levels (Table 2), outermost first.
  for (std::size_t i = 0; i < 3; ++i) {
    const DimId d = id_[static_cast<std::size_t>(c.flow.order[i])];
    s1.order[i] = s2.order[i] = dram.order[i] = cluster.order[i] = d;
  }
  return m;
}

Mapping to_mapping(const Candidate& c, const Operator& op, const Architecture& arch) {
  return MappingBuilder(op, arch).build(c);
}

std::uint64_t section52_baseline(std::int64_t n, std::int64_t alpha, std::int64_t beta) {
  // Inner pairs: for T_M^in = a, T_N^in <= g(a) = floor((alpha/2 - a) /
  // (1 + a)) by Eq. 2 with T_K^in = 1.
  const std::int64_t half_a = alpha / 2, half_b = beta / 2;
  std::vector<std::int64_t> g(static_cast<std::size_t>(n + 1), 0);
  for (std::int64_t a = 1; a <= n; ++a)
    g[static_cast<std::size_t>(a)] = std::max<std::int64_t>(0, (half_a - a) / (1 + a));
  std::uint64_t total = 0;
  for (std::int64_t tm = 1; tm <= n; ++tm)
    for (std::int64_t tn = 1; tn <= n; ++tn) {
      // Eq. 1: T_K (T_M + T_N') <= beta/2 - T_M T_N'.
      const std::int64_t room = half_b - tm * tn;
      if (room < tm + tn) continue;
      const std::int64_t tks = std::min(n, room / (tm + tn));
      std::uint64_t inner = 0;
      for (std::int64_t a = 1; a <= tm; ++a)
        inner += static_cast<std::uint64_t>(std::min(tn, g[static_cast<std::size_t>(a)]));
      total += static_cast<std::uint64_t>(tks) * inner;
    }
  return total;
}

std::uint64_t section52_pruned(std::int64_t n, std::int64_t alpha, std::int64_t beta) {
  // Eq. 3: T_M^out, T_K^out <= sqrt(beta/2 + N^2) - N and T_N^out = N
  // T_K^out / P, so one step covers T_N' = N; Eq. 4: T_M^in, T_N^in <=
  // sqrt((alpha+2)/2) - 1, T_K^in = 1. Eq. 1-2 still hold for each tuple.
  const double nn = static_cast<double>(n);
  const std::int64_t out_b = floor_clamped(outer_bound_maeri(nn, static_cast<double>(beta)), n);
  const std::int64_t in_b = floor_clamped(inner_bound_maeri(static_cast<double>(alpha)), n);
  const std::int64_t tn_step = n;  // T_N^out x (P / T_K^out) = N, whatever P is
  std::uint64_t total = 0;
  for (std::int64_t tm = 1; tm <= out_b; ++tm)
    for (std::int64_t tk = 1; tk <= out_b; ++tk) {
      if (2 * (tm * tk + tk * tn_step + tm * tn_step) > beta) continue;
      for (std::int64_t a = 1; a <= std::min(tm, in_b); ++a)
        for (std::int64_t b = 1; b <= std::min(tn_step, in_b); ++b)
          if (2 * (a + b + a * b) <= alpha) ++total;
    }
  return total;
}

std::uint64_t section52_range_product(std::int64_t n, std::int64_t alpha, std::int64_t beta) {
  const double nn = static_cast<double>(n);
  const auto out_b = static_cast<std::uint64_t>(
      floor_clamped(outer_bound_maeri(nn, static_cast<double>(beta)), n));
  const auto in_b =
      static_cast<std::uint64_t>(floor_clamped(inner_bound_maeri(static_cast<double>(alpha)), n));
  return out_b * out_b * in_b * in_b;
}

}  // namespace mapex::flash
