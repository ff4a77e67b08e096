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

std::vector<LoopOrder> loop_orders(Style style) {
  // Table 2, compute order row; §4 (i): only MAERI's order is free.
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

std::vector<Dataflow> dataflows(Style style, const Problem& problem, std::int64_t pes) {
  std::vector<Dataflow> out;
  for (const LoopOrder& order : loop_orders(style)) {
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

Extents step_extents(const Candidate& c, const Problem& problem) {
  Extents e = c.tile;
  const auto inter = static_cast<std::size_t>(c.flow.inter_dim);
  const auto intra = static_cast<std::size_t>(c.flow.intra_dim);
  e[inter] = std::min(problem.dims[inter], c.tile[inter] * c.flow.clusters);
  e[intra] = std::min(problem.dims[intra], c.tile[intra] * c.flow.cluster_size);
  return e;
}

namespace {
std::int64_t abc(const Extents& e) {
  // A[M][K] + B[K][N] + C[M][N] (FLASH §2.1).
  return e[kM] * e[kK] + e[kK] * e[kN] + e[kM] * e[kN];
}
}  // namespace

std::int64_t s1_footprint(const Candidate& c) { return abc(c.tile); }
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

Extents candidate_upper_bounds(const Dataflow& flow, const Problem& problem, const Chip& chip,
                               std::int64_t spatial_tile) {
  const auto& D = problem.dims;
  const double alpha = static_cast<double>(chip.s1_words);
  const double beta = static_cast<double>(chip.s2_words);
  const auto lambda = static_cast<double>(flow.cluster_size);
  const int inter = flow.inter_dim, intra = flow.intra_dim, other = third(inter, intra);
  // The inter-cluster dimension's outer tile is its share of one step over
  // all clusters, T = lambda D / P (Table 6); the extent one outer step
  // covers, clusters x tile, replaces D in the S2 bounds (file comment).
  const auto ui = static_cast<std::size_t>(inter), un = static_cast<std::size_t>(intra),
             uo = static_cast<std::size_t>(other);
  const std::int64_t share = ceil_div(D[ui], flow.clusters);
  const double extent = static_cast<double>(std::min(D[ui], spatial_tile * flow.clusters));
  Extents upper{1, 1, 1};
  // MAERI (Eq. 3, 4): the first loop's tile is bounded by S2 and S1
  // (T^in = T^out); the last loop's tile is lambda with one element per PE
  // (SMap(1, 1)), so the S1 bound is taken around T_K^in = 1.
  // STT_TTS (Eyeriss, NVDLA, TPU) and STT_TST (ShiDianNao), Table 6: the
  // intra-cluster tile (T_K^out, or T_N^out for ShiDianNao) and the other
  // outer tile by the S2 bound; the two tiles temporal inside the cluster
  // by the S1 bound around the intra-cluster tile, widest at its minimum 1
  // (each tuple is checked against its own intra tile in `enumerate`).
  const bool maeri = flow.style == Style::kMaeri;
  const double out_b =
      maeri ? outer_bound_maeri(extent, beta) : outer_bound_stt(extent, lambda, beta);
  const std::int64_t intra_cap = ceil_div(D[un], flow.cluster_size);
  upper[un] = maeri ? 1 : floor_clamped(out_b, intra_cap);
  // The S2 bound, like Eq. 4, assumes the two outer tiles equal. When the
  // intra-cluster one cannot reach it (MAERI: lambda below the bound;
  // others: the dimension over lambda PEs runs out first), the other outer
  // tile takes the room Eq. 1 leaves with the intra extent Z at its cap:
  // E y + E Z + y Z <= beta / 2, E the inter-cluster extent.
  double other_s2 = out_b;
  const double intra_tile = maeri ? lambda : static_cast<double>(intra_cap);
  if (intra_tile < out_b) {
    const double z =
        maeri ? lambda : static_cast<double>(std::min(D[un], intra_cap * flow.cluster_size));
    other_s2 = std::max(out_b, (beta / 2 - extent * z) / (extent + z));
  }
  const auto cap_other = static_cast<double>(floor_clamped(other_s2, D[uo]));
  const auto in_b = inner_pair_bounds(1.0, static_cast<double>(share), cap_other, alpha);
  upper[ui] = floor_clamped(in_b[0], share);
  upper[uo] = floor_clamped(std::min(other_s2, in_b[1]), D[uo]);
  return upper;
}

namespace {

// Tiles of one dataflow in a fixed order (inter, other, intra), each in
// [1, upper], kept when Eq. 1 and 2 hold. For the pruned space the bounds
// follow Table 6; for the full space each tile goes to its dimension and
// only the buffers decide.
void enumerate(const Dataflow& flow, const Problem& problem, const Chip& chip, bool pruned,
               std::vector<Candidate>& out) {
  const int inter = flow.inter_dim, intra = flow.intra_dim, other = third(inter, intra);
  const auto ui = static_cast<std::size_t>(inter), un = static_cast<std::size_t>(intra),
             uo = static_cast<std::size_t>(other);
  const auto& D = problem.dims;
  const std::int64_t inter_cap = ceil_div(D[ui], flow.clusters);
  const std::int64_t intra_cap =
      flow.style == Style::kMaeri ? 1 : ceil_div(D[un], flow.cluster_size);
  // MAERI's cluster is the last loop's tile (Table 2): lambda beyond the
  // dimension would leave PEs with nothing to reduce.
  Candidate c;
  c.flow = flow;
  for (std::int64_t ti = 1; ti <= inter_cap; ++ti) {
    Extents upper{D[0], D[1], D[2]};
    upper[ui] = inter_cap;
    upper[un] = intra_cap;
    if (pruned) {
      upper = candidate_upper_bounds(flow, problem, chip, ti);
      if (ti > upper[ui]) break;
      if (flow.style == Style::kMaeri) {
        // Eq. 3 bounds the last loop's outer tile, which is lambda.
        const double extent = static_cast<double>(std::min(D[ui], ti * flow.clusters));
        const double bound = outer_bound_maeri(extent, static_cast<double>(chip.s2_words));
        if (flow.cluster_size > floor_clamped(bound, D[un])) break;
      }
    }
    for (std::int64_t to = 1; to <= upper[uo]; ++to) {
      bool any = false;
      for (std::int64_t tn = 1; tn <= upper[un]; ++tn) {
        c.tile[ui] = ti;
        c.tile[uo] = to;
        c.tile[un] = tn;
        if (pruned && flow.style != Style::kMaeri) {
          // Table 6: the two tiles that are temporal inside the cluster are
          // bounded around the intra-cluster tile, sqrt(alpha/2 + T^2) - T
          // (T = T_K^out for Eyeriss/NVDLA/TPU, T_N^out for ShiDianNao).
          const auto in_b =
              inner_pair_bounds(static_cast<double>(tn), static_cast<double>(inter_cap),
                                static_cast<double>(upper[uo]), static_cast<double>(chip.s1_words));
          if (ti > floor_clamped(in_b[0], inter_cap) || to > floor_clamped(in_b[1], D[uo])) break;
        }
        if (!fits(c, problem, chip)) break;  // footprints grow with every tile
        any = true;
        out.push_back(c);
      }
      if (!any) break;
    }
  }
}

}  // namespace

Generation generate(Style style, const Problem& problem, const Chip& chip, bool pruned,
                    const std::vector<LoopOrder>& orders) {
  Generation g;
  for (const Dataflow& flow : dataflows(style, problem, chip.pes)) {
    if (!orders.empty() && std::find(orders.begin(), orders.end(), flow.order) == orders.end())
      continue;
    ++g.dataflows;
    // §4: without constraints every tile ranges up to its dimension; the
    // MAERI intra-cluster tile is fixed at 1 by SMap(1, 1).
    double tuples = 1;
    for (int d = 0; d < 3; ++d)
      if (!(flow.style == Style::kMaeri && d == flow.intra_dim))
        tuples *= static_cast<double>(problem.dims[static_cast<std::size_t>(d)]);
    g.before_pruning += tuples;
    enumerate(flow, problem, chip, pruned, g.candidates);
  }
  return g;
}

Candidate non_tiled(const Dataflow& flow) {
  // §3.2: tile 1 on both outer loops; the innermost loop's tile fills the
  // cluster (T_K^out = 4 on 4-PE clusters in Fig. 6(a)), so each PE gets
  // one element of it.
  Candidate c;
  c.flow = flow;
  c.tile = {1, 1, 1};
  return c;
}

MappingBuilder::MappingBuilder(const Operator& op, const Architecture& arch)
    : problem_(problem_from(op)), base_(Mapping::trivial(op, arch)) {
  (void)chip_from(arch);  // checks the chip's shape
  for (int d = 0; d < 3; ++d) id_[static_cast<std::size_t>(d)] = op.find_dim(kDimNames[d]);
  base_.level(1).split.assign(static_cast<std::size_t>(op.num_dims()), 1);
}

Mapping MappingBuilder::build(const Candidate& c) const {
  Mapping m = base_;
  auto& s1 = m.level(0);
  auto& pe = m.level(1);
  auto& s2 = m.level(2);
  auto& dram = m.level(3);
  const Extents step = step_extents(c, problem_);
  for (int d = 0; d < 3; ++d) {
    const auto ud = static_cast<std::size_t>(d);
    const auto di = static_cast<std::size_t>(id_[ud]);
    s1.tile[di] = c.tile[ud];
    // Splits stop where the dimension ends (a split past it would be a
    // unit with no data); the lowering then opens regions of exactly the
    // units that work (Marvel Alg. 1).
    if (d == c.flow.inter_dim || d == c.flow.intra_dim)
      pe.split[di] = ceil_div(step[ud], c.tile[ud]);
    s2.tile[di] = step[ud];
  }
  // The compute order of both cluster levels (Table 2), outermost first;
  // the lowering takes the S2 order for the directives.
  for (std::size_t i = 0; i < 3; ++i) {
    const DimId d = id_[static_cast<std::size_t>(c.flow.order[i])];
    s1.order[i] = s2.order[i] = dram.order[i] = d;
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

}  // namespace mapex::flash
