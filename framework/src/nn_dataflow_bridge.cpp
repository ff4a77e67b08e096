#include <algorithm>
#include <cmath>
#include <mapex/checked.hpp>
#include <mapex/error.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <sstream>

namespace mapex::ndf {

namespace {

std::int64_t idivc(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t bound(const Operator& op, DimId d) {
  return d < 0 ? 1 : op.dims()[static_cast<size_t>(d)].bound;
}

std::int64_t at(const std::vector<std::int64_t>& v, DimId d) {
  return d < 0 ? 1 : v[static_cast<size_t>(d)];
}

std::int64_t attr(const Operator& op, const std::string& key, std::int64_t fallback) {
  const auto it = op.attributes().find(key);
  return it == op.attributes().end() ? fallback : it->second;
}

const char* op_dim_name(const Problem& pr, DimId d) {
  if (d == pr.q) return "output columns (Q)";
  if (d == pr.r) return "filter rows (R)";
  if (d == pr.s) return "filter columns (S)";
  return "the local region";
}

int par_of(const Problem& pr, DimId d) {
  if (d == pr.k) return kOutp;
  if (d == pr.p || d == pr.q) return kOfmp;
  if (d == pr.n) return kBatp;
  if (d == pr.c) return kInpp;
  return -1;
}

/// Default placement of a node-array split on the node axes: output rows
/// on the height, output columns on the width, and each other split as a
/// whole on whichever axis still has room (height first), else factored
/// across both.
std::optional<std::string> place(const Problem& pr, const std::vector<std::int64_t>& split,
                                 Partition& part) {
  std::int64_t room_h = pr.hw.nodes.h, room_w = pr.hw.nodes.w;
  auto take = [&](std::int64_t f, Dim2& out) {
    for (std::int64_t h = std::min(f, room_h); h >= 1; --h) {
      if (f % h || room_h % h) continue;
      const std::int64_t w = f / h;
      if (room_w % w) continue;
      out = Dim2{h, w};
      room_h /= h;
      room_w /= w;
      return true;
    }
    return false;
  };
  part.pdims[kOfmp] = Dim2{at(split, pr.p), at(split, pr.q)};
  if (room_h % part.pdims[kOfmp].h || room_w % part.pdims[kOfmp].w)
    return std::string("the output-row and -column splits do not divide the node array");
  room_h /= part.pdims[kOfmp].h;
  room_w /= part.pdims[kOfmp].w;
  for (auto [d, par] : {std::pair{pr.k, kOutp}, {pr.n, kBatp}, {pr.c, kInpp}})
    if (!take(at(split, d), part.pdims[static_cast<size_t>(par)]))
      return "the split of " + std::to_string(at(split, d)) + " does not fit the node array";
  return std::nullopt;
}

/// A convolution, FC or depthwise layer (ConvLayer, FCLayer, KAPLA's
/// DepthwiseConvolutionLayer).
std::optional<std::string> conv_layer(const Operator& op, Problem& pr) {
  if (op.kind() != "conv2d" && op.kind() != "fc")
    return "the nn_dataflow model scores convolution, fully-connected and depthwise layers "
           "and loop nests of local regions (element-wise, pooling), not '" +
           op.kind() + "'";
  pr.n = op.find_dim("N");
  pr.k = op.find_dim("K");
  pr.c = op.find_dim("C");
  pr.p = op.find_dim("P");
  pr.q = op.find_dim("Q");
  pr.r = op.find_dim("R");
  pr.s = op.find_dim("S");
  Layer& l = pr.layer;
  // A depthwise convolution (conv2d without K) as KAPLA's
  // DepthwiseConvolutionLayer: its channels are the output channels.
  const bool depthwise = op.kind() == "conv2d" && pr.k < 0 && pr.c >= 0;
  if (depthwise) {
    l.kind = LayerKind::kDepthwise;
    pr.k = pr.c;
    pr.c = -1;
  }
  if (pr.k < 0 || pr.n < 0 || (!depthwise && pr.c < 0) || op.find_dim("G") >= 0)
    return "the nn_dataflow model needs a layer with batch, input and output channels "
           "(a grouped convolution with more than one channel per group is outside it)";
  if (attr(op, "dilation_h", 1) != 1 || attr(op, "dilation_w", 1) != 1)
    return "the nn_dataflow model has no dilated convolutions";
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
    const auto& tensor = op.tensors()[static_cast<size_t>(t)];
    if (tensor.role == TensorRole::kOutput)
      pr.ofm = t;
    else if (op.relevant(t, pr.n))
      pr.ifm = t;
    else
      pr.fil = t;
  }
  if (pr.fil < 0 || pr.ifm < 0 || pr.ofm < 0)
    return "the nn_dataflow model needs filter, input and output tensors";
  l.batch = bound(op, pr.n);
  l.nofm = bound(op, pr.k);
  l.nifm = depthwise ? l.nofm : bound(op, pr.c);
  l.hofm = bound(op, pr.p);
  l.wofm = bound(op, pr.q);
  l.hfil = bound(op, pr.r);
  l.wfil = bound(op, pr.s);
  l.htrd = attr(op, "stride_h", 1);
  l.wtrd = attr(op, "stride_w", 1);
  return std::nullopt;
}

/// A loop nest as nn_dataflow's LocalRegionLayer: dimensions N (batch) and
/// K (channels), optionally P and Q (output rows and columns) with a window
/// R x S (PoolingLayer: an input X[N][K][P*u + R][Q*u + S]), and any other
/// dimension a channel region each output merges (EltwiseLayer). The output
/// is Y[N][K] or Y[N][K][P][Q]; no operand is a filter (each reads N and K).
/// nreg, the channels merged per output, is the operands' count times the
/// channel region's size: c = f * c' reads 2, the sum over J = 2 of
/// X[N][J][K] reads 2. As in nn_dataflow, a region is either channels or a
/// window, not both.
std::optional<std::string> local_region_layer(const Operator& op, Problem& pr) {
  const std::string shape =
      "the nn_dataflow model takes a loop nest as a local-region layer (EltwiseLayer, "
      "PoolingLayer): dimensions N and K, an output [N, K] or [N, K, P, Q], every input "
      "indexed by N and K";
  pr.n = op.find_dim("N");
  pr.k = op.find_dim("K");
  pr.p = op.find_dim("P");
  pr.q = op.find_dim("Q");
  pr.r = op.find_dim("R");
  pr.s = op.find_dim("S");
  if (pr.n < 0 || pr.k < 0) return shape + "; '" + op.name() + "' has no N or K";
  const auto plain = [](const AffineExpr& e, DimId d) {
    return e.terms.size() == 1 && e.terms[0].dim == d && e.terms[0].coeff == 1 && e.constant == 0;
  };
  std::vector<DimId> out_dims{pr.n, pr.k};
  if (pr.p >= 0 || pr.q >= 0) out_dims.insert(out_dims.end(), {pr.p, pr.q});
  std::int64_t operands = 0;
  Layer& l = pr.layer;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
    const auto& tensor = op.tensors()[static_cast<size_t>(t)];
    if (tensor.role == TensorRole::kOutput) {
      pr.ofm = t;
      bool ok = tensor.subscripts.size() == out_dims.size();
      for (size_t i = 0; ok && i < out_dims.size(); ++i)
        ok = out_dims[i] >= 0 && plain(tensor.subscripts[i], out_dims[i]);
      if (!ok) return shape + "; the output of '" + op.name() + "' is not [N, K] or [N, K, P, Q]";
      continue;
    }
    if (!op.relevant(t, pr.n) || !op.relevant(t, pr.k))
      return shape + "; input '" + tensor.name + "' of '" + op.name() +
             "' is not indexed by both N and K (a weight is outside a local-region layer)";
    if (pr.ifm < 0) pr.ifm = t;
    ++operands;
    // The window's stride: P's coefficient where it meets R (Q's, S).
    for (const auto& e : tensor.subscripts)
      for (const auto& term : e.terms) {
        if (term.dim == pr.p && pr.p >= 0) l.htrd = term.coeff;
        if (term.dim == pr.q && pr.q >= 0) l.wtrd = term.coeff;
      }
  }
  if (pr.ifm < 0) return shape + "; '" + op.name() + "' has no input";
  // Bounds come from a user's file: a product past int64 is refused, not
  // wrapped.
  std::optional<std::int64_t> region = 1;
  for (DimId d = 0; d < op.num_dims(); ++d)
    if (d != pr.n && d != pr.k && d != pr.p && d != pr.q && d != pr.r && d != pr.s) {
      pr.region.emplace_back(d, bound(op, d));
      if (region) region = checked_mul(*region, bound(op, d));
    }
  l.kind = LayerKind::kLocalRegion;
  l.batch = bound(op, pr.n);
  l.nofm = bound(op, pr.k);
  l.hofm = bound(op, pr.p);
  l.wofm = bound(op, pr.q);
  l.hfil = bound(op, pr.r);
  l.wfil = bound(op, pr.s);
  const auto nreg = region ? checked_mul(operands, *region) : std::nullopt;
  const auto nifm = nreg ? checked_mul(l.nofm, *nreg) : std::nullopt;
  if (!nifm) return shape + "; '" + op.name() + "' merges more words per output than int64 holds";
  l.nreg = l.ntrd = *nreg;
  l.nifm = *nifm;
  if (l.nreg > 1 && l.hfil * l.wfil > 1)
    return shape + "; '" + op.name() +
           "' merges both several channels and a window, which a local region of nn_dataflow "
           "cannot";
  if (l.htrd < 1 || l.wtrd < 1) return shape + "; '" + op.name() + "' has a non-positive stride";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> make_problem(const Operator& op, const Architecture& arch,
                                        const std::string& bypass, const std::string& ifmap_layout,
                                        const std::string& forwarding, Problem& pr) {
  pr = Problem{};
  if (op.kind() == "loopnest") {
    if (auto err = local_region_layer(op, pr)) return err;
  } else if (auto err = conv_layer(op, pr)) {
    return err;
  }

  // The chip: REGF, PE array, GBUF, [node array,] DRAM, innermost first.
  const auto& levels = arch.levels();
  std::vector<LevelKind> kinds;
  for (const auto& lv : levels) kinds.push_back(lv.kind);
  const std::vector<LevelKind> five{LevelKind::kBuffer, LevelKind::kSpatial, LevelKind::kBuffer,
                                    LevelKind::kSpatial, LevelKind::kDram};
  const std::vector<LevelKind> four{LevelKind::kBuffer, LevelKind::kSpatial, LevelKind::kBuffer,
                                    LevelKind::kDram};
  if (kinds == five)
    pr.roles = Roles{0, 1, 2, 3, 4};
  else if (kinds == four)
    pr.roles = Roles{0, 1, 2, -1, 3};
  else
    return "the nn_dataflow model needs a chip of REGF, PE array, GBUF, an optional node array "
           "and DRAM, innermost first";
  const Level& regf = levels[static_cast<size_t>(pr.roles.regf)];
  const Level& pes = levels[static_cast<size_t>(pr.roles.pe_array)];
  const Level& gbuf = levels[static_cast<size_t>(pr.roles.gbuf)];
  // nn_dataflow sizes one REGF per PE and one GBUF per node.
  for (const Level* lv : {&regf, &gbuf})
    if (!lv->partitions.empty())
      return "level '" + lv->name +
             "' is partitioned; the nn_dataflow model has one undivided buffer per level";
  const Level& dram = levels[static_cast<size_t>(pr.roles.dram)];
  auto dim2 = [](const Level& lv, Dim2& out) {
    if (lv.shape.size() == 1) {
      out = Dim2{lv.shape[0], 1};
      return true;
    }
    if (lv.shape.size() != 2) return false;
    out = Dim2{lv.shape[0], lv.shape[1]};
    return true;
  };
  if (!dim2(pes, pr.hw.array)) return "level '" + pes.name + "': the PE array must be 2D";
  // nn_dataflow's array bus and node network always multicast shared data
  // and reduce partial sums (its access counts have no unicast term), so a
  // network without either cannot be modelled.
  for (int role : {pr.roles.pe_array, pr.roles.node_array}) {
    if (role < 0) continue;
    const Level& net = levels[static_cast<size_t>(role)];
    for (const auto& [key, on] :
         {std::pair{"multicast", net.noc.multicast}, std::pair{"reduction", net.noc.reduction}})
      if (!on)
        return "level '" + net.name + "', key noc." + key +
               ": false, but the nn_dataflow model always multicasts and reduces on its "
               "networks (use model=kapla)";
  }
  pr.hw.nodes = Dim2{1, 1};
  if (pr.roles.node_array >= 0) {
    const Level& na = levels[static_cast<size_t>(pr.roles.node_array)];
    if (!dim2(na, pr.hw.nodes)) return "level '" + na.name + "': the node array must be 2D";
    pr.hw.hop_cost = na.noc.hop_energy_pj;
    pr.options.forwarding = na.noc.forwarding;
  }
  // nn_dataflow charges one cost per access, whatever its direction.
  for (const Level* lv : {&regf, &gbuf, &dram})
    if (lv->read_energy_pj != lv->write_energy_pj)
      return "level '" + lv->name +
             "': the nn_dataflow model charges one energy per access; read and write "
             "energies differ";
  const double wb = arch.word_bytes();
  pr.hw.regf_words = std::floor(static_cast<double>(regf.size_bytes) / wb);
  pr.hw.gbuf_words = std::floor(static_cast<double>(gbuf.size_bytes) / wb);
  pr.hw.bus_words =
      pes.noc.bandwidth_gbps > 0 ? arch.bytes_per_cycle(pes.noc.bandwidth_gbps) / wb : 0;
  pr.hw.dram_words = dram.bandwidth_gbps ? arch.bytes_per_cycle(*dram.bandwidth_gbps) / wb : 0;
  // Memory channels at the four corners of the node array (nn_dataflow's
  // 2D memory); one channel beside a single node.
  pr.hw.dram.dim =
      Dim2{std::min<std::int64_t>(2, pr.hw.nodes.h), std::min<std::int64_t>(2, pr.hw.nodes.w)};
  pr.hw.dram.origin = Dim2{0, 0};
  pr.hw.dram.dist = Dim2{std::max<std::int64_t>(1, pr.hw.nodes.h - 1),
                         std::max<std::int64_t>(1, pr.hw.nodes.w - 1)};
  pr.hw.mac_cost = arch.mac_energy_pj();
  pr.hw.mem_cost = {dram.read_energy_pj, gbuf.read_energy_pj, pes.noc.hop_energy_pj,
                    regf.read_energy_pj};
  double idle = 0;
  for (const auto& lv : levels) idle += lv.idle_energy_pj_per_cycle;
  pr.hw.idle_cost = idle;
  pr.hw.no_time_mux = arch.no_time_mux();
  if (arch.macs_per_pe() != 1) return "the nn_dataflow model has one MAC per PE per cycle";

  for (char ch : bypass) {
    if (ch == 'f')
      pr.options.bypass[kFil] = true;
    else if (ch == 'i')
      pr.options.bypass[kIfm] = true;
    else if (ch == 'o')
      pr.options.bypass[kOfm] = true;
    else if (ch != ',' && ch != ' ')
      return std::string(
                 "gbuf_bypass: expected letters among i, o, f (nn_dataflow's data "
                 "categories), got '") +
             ch + "'";
  }
  if (forwarding == "on")
    pr.options.forwarding = true;
  else if (forwarding == "off")
    pr.options.forwarding = false;
  else if (forwarding != "arch")
    return "forwarding: expected arch, on or off, got '" + forwarding + "'";
  return parse_layout(ifmap_layout, pr, pr.ifmaps);
}

std::string format_layout(const Partition& part) {
  std::string s;
  for (int p : part.order) s += static_cast<char>('0' + p);
  s += ':';
  for (size_t i = 0; i < 4; ++i)
    s += (i ? "," : "") + std::to_string(part.pdims[i].h) + "x" + std::to_string(part.pdims[i].w);
  return s;
}

std::optional<std::string> parse_layout(const std::string& text, const Problem& pr, Layout& out) {
  out = Layout{};
  out.end = {pr.layer.batch, pr.layer.nifm, pr.layer.hifm(), pr.layer.wifm()};
  out.region = pr.hw.dram;
  if (text.empty()) {
    // Unset: a default is filled in per partition (see evaluate_mapping).
    out.part.pdims = {};
    out.part.order = {-1, -1, -1, -1};
    return std::nullopt;
  }
  const std::string bad =
      "ifmap_layout: expected ORDER:HxW,HxW,HxW,HxW (e.g. 1230:2x1,1x1,1x2,1x1)";
  const auto colon = text.find(':');
  if (colon != 4) return bad + ", got '" + text + "'";
  std::array<bool, 4> seen{};
  for (size_t i = 0; i < 4; ++i) {
    const int p = text[i] - '0';
    if (p < 0 || p > 3 || seen[static_cast<size_t>(p)]) return bad + ", got '" + text + "'";
    seen[static_cast<size_t>(p)] = true;
    out.part.order[i] = p;
  }
  std::istringstream in(text.substr(colon + 1));
  for (size_t i = 0; i < 4; ++i) {
    std::int64_t h = 0, w = 0;
    char x = 0, comma = ',';
    if (!(in >> h >> x >> w) || x != 'x' || h < 1 || w < 1) return bad + ", got '" + text + "'";
    out.part.pdims[i] = Dim2{h, w};
    if (i < 3 && (!(in >> comma) || comma != ',')) return bad + ", got '" + text + "'";
  }
  if (!(out.part.dim() == out.region.dim))
    return "ifmap_layout: the layout's factors must cover the " + std::to_string(out.region.dim.h) +
           " x " + std::to_string(out.region.dim.w) + " memory channels";
  return std::nullopt;
}

std::optional<std::string> partition_from_mapping(const Problem& pr, const Mapping& mapping,
                                                  Partition& part) {
  part = Partition{};
  if (pr.roles.node_array < 0) return std::nullopt;
  const LevelMapping& na = mapping.level(pr.roles.node_array);
  for (DimId d = 0; d < static_cast<DimId>(na.split.size()); ++d)
    if (na.split[static_cast<size_t>(d)] > 1 && par_of(pr, d) < 0)
      return "the node array splits a filter dimension; nn_dataflow partitions output "
             "channels, fmap rows and columns, batch and input channels";
  if (na.axes.empty()) {
    if (auto err = place(pr, na.split, part)) return err;
  } else {
    auto axes = [&](DimId d) {
      return d < 0 ? Dim2{1, 1}
                   : Dim2{na.axes[static_cast<size_t>(d)][0], na.axes[static_cast<size_t>(d)][1]};
    };
    part.pdims[kOutp] = axes(pr.k);
    part.pdims[kBatp] = axes(pr.n);
    part.pdims[kInpp] = axes(pr.c);
    const Dim2 ap = axes(pr.p), aq = axes(pr.q);
    if (ap.w != 1 || aq.h != 1)
      return "nn_dataflow splits output rows along the node array's height and columns along "
             "its width";
    part.pdims[kOfmp] = Dim2{ap.h, aq.w};
  }
  // The order: parallelisms by their first dimension in the spatial order
  // (outermost first); without one, the operator's dimension order.
  std::vector<DimId> order = na.order;
  if (order.empty())
    for (DimId d = 0; d < static_cast<DimId>(na.split.size()); ++d) order.push_back(d);
  size_t next = 0;
  std::array<bool, 4> done{};
  for (DimId d : order) {
    const int p = par_of(pr, d);
    if (p < 0 || done[static_cast<size_t>(p)]) continue;
    done[static_cast<size_t>(p)] = true;
    part.order[next++] = p;
  }
  // Parallelisms no dimension stands for (fmap rows of an FC layer) split
  // nothing; they go innermost.
  for (int p = 0; p < 4; ++p)
    if (!done[static_cast<size_t>(p)]) part.order[next++] = p;
  return std::nullopt;
}

std::optional<std::string> scheme_from_mapping(const Problem& pr, const Mapping& mapping,
                                               Scheme& out) {
  out = Scheme{};
  for (const auto& level : mapping.levels())
    if (level.cluster.active())
      return std::string(
          "a cluster level (temporal loops between two spatial splits, FLASH Table 2) is not an "
          "nn_dataflow scheme: its loops step only at buffer levels");
  if (auto err = partition_from_mapping(pr, mapping, out.part)) return err;
  double occ = 0;
  const Layer nl = part_layer(pr.layer, out.part, &occ);
  PeMapping pe;
  if (auto err = pe_mapping(nl, pr.hw.array, pe)) return err;
  const auto& rt = mapping.level(pr.roles.regf).tile;
  const auto& ps = mapping.level(pr.roles.pe_array).split;
  const auto& gt = mapping.level(pr.roles.gbuf).tile;
  std::ostringstream why;
  // The pass: each PE runs one filter row over one output row (Q and S
  // whole in the REGF), the array spans the folded PE set of filter rows x
  // output rows, replicated over input and output channels.
  if (at(rt, pr.s) != nl.wfil || at(rt, pr.q) != nl.wofm) {
    why << "not a row-stationary pass: each PE must hold whole filter rows (S" << nl.wfil
        << ") and whole per-node output rows (Q" << nl.wofm << ")";
    return why.str();
  }
  if (at(ps, pr.r) != pe.flpeset.h || at(ps, pr.p) != pe.flpeset.w ||
      at(rt, pr.r) != std::min(pe.fold.h, nl.hfil)) {
    why << "not a row-stationary pass: the PE array must span R" << pe.flpeset.h << " x P"
        << pe.flpeset.w << " with R" << pe.fold.h << " folded into each PE";
    return why.str();
  }
  for (DimId d = 0; d < static_cast<DimId>(ps.size()); ++d)
    if (d != pr.r && d != pr.p && d != pr.c && d != pr.k && ps[static_cast<size_t>(d)] > 1)
      return std::string(
          "not a row-stationary pass: the PE array splits a dimension other "
          "than R, P, C and K");
  for (const auto& [d, whole] : pr.region)
    if (at(rt, d) != whole || at(ps, d) != 1) {
      why << "not an element-wise pass: each PE merges the whole local region (dimension " << d
          << ", " << whole << " long) in its REGF";
      return why.str();
    }
  out.ifms = at(ps, pr.c);
  out.ofms = at(ps, pr.k);
  // Loop blocking: factors per level against the per-node layer.
  Blocking& b = out.blocking;
  const std::int64_t p_regf = at(rt, pr.p);
  b.t[2] = {at(rt, pr.c), at(rt, pr.k), at(rt, pr.n) * p_regf};
  const std::int64_t gc = std::min(at(gt, pr.c), nl.nifm), gk = std::min(at(gt, pr.k), nl.nofm);
  const std::int64_t gn = std::min(at(gt, pr.n), nl.batch);
  const std::int64_t gp = std::min(at(gt, pr.p), nl.hofm);
  const std::int64_t n1 = idivc(gn, at(rt, pr.n));
  const std::int64_t p1 = idivc(gp, pe.flpeset.w * p_regf);
  b.t[1] = {idivc(gc, out.ifms * b.t[2][kLoopIfm]), idivc(gk, out.ofms * b.t[2][kLoopOfm]),
            n1 * p1};
  b.t[0] = {idivc(nl.ifm_loop_channels(), gc), idivc(nl.nofm, gk),
            idivc(nl.batch, gn) * idivc(nl.hofm, gp)};
  std::vector<DimId> unblocked{pr.q, pr.r, pr.s};
  for (const auto& rd : pr.region) unblocked.push_back(rd.first);
  for (DimId d : unblocked)
    if (d >= 0 && at(gt, d) > at(rt, d) * at(ps, d)) {
      why << "the GBUF loops over " << op_dim_name(pr, d)
          << "; nn_dataflow blocks only channels, batch and folded output rows";
      return why.str();
    }
  // Orders: the position of each loop among the level's, innermost 0; a
  // batch loop that also folds output rows counts where N is.
  for (int bl = 0; bl < 2; ++bl) {
    const int level = bl == 0 ? pr.roles.dram : pr.roles.gbuf;
    const auto& order = mapping.level(level).order;
    auto pos = [&](DimId d) {
      return static_cast<int>(std::find(order.begin(), order.end(), d) - order.begin());
    };
    const bool n_loops = (bl == 0 ? idivc(nl.batch, gn) : n1) > 1;
    const std::array<int, 3> where{pos(pr.c), pos(pr.k),
                                   n_loops || pr.p < 0 ? pos(pr.n) : pos(pr.p)};
    for (size_t l = 0; l < 3; ++l) {
      int inner = 0;
      for (size_t m = 0; m < 3; ++m)
        if (where[m] > where[l]) ++inner;
      b.ord[static_cast<size_t>(bl)][l] = inner;
    }
  }
  return std::nullopt;
}

std::optional<std::string> mapping_from_scheme(const Operator& op, const Architecture& arch,
                                               const Problem& pr, const Scheme& sc, Mapping& out) {
  double occ = 0;
  const Layer nl = part_layer(pr.layer, sc.part, &occ);
  PeMapping pe;
  if (auto err = pe_mapping(nl, pr.hw.array, pe)) return err;
  const Blocking& b = sc.blocking;
  // Split each batch factor into batch and folded output rows.
  std::array<std::int64_t, 3> nf{1, 1, 1}, pf{1, 1, 1};
  if (pe.fold.w == 1) {
    for (size_t bl = 0; bl < 3; ++bl) nf[bl] = b.t[bl][kLoopBat];
  } else {
    bool found = false;
    for (std::int64_t a = 1; a <= b.t[2][kLoopBat] && !found; ++a) {
      if (b.t[2][kLoopBat] % a) continue;
      for (std::int64_t c = 1; c <= b.t[1][kLoopBat] && !found; ++c) {
        if (b.t[1][kLoopBat] % c) continue;
        for (std::int64_t e = 1; e <= b.t[0][kLoopBat] && !found; ++e) {
          if (b.t[0][kLoopBat] % e) continue;
          if (a * c * e >= nl.batch &&
              (b.t[2][kLoopBat] / a) * (b.t[1][kLoopBat] / c) * (b.t[0][kLoopBat] / e) >=
                  pe.fold.w) {
            nf = {e, c, a};
            pf = {b.t[0][kLoopBat] / e, b.t[1][kLoopBat] / c, b.t[2][kLoopBat] / a};
            found = true;
          }
        }
      }
    }
    if (!found)
      return std::string(
          "the batch loop's factors cannot be split into batch and folded "
          "output rows");
  }
  Mapping m = Mapping::trivial(op, arch);
  auto set = [&](std::vector<std::int64_t>& v, DimId d, std::int64_t value) {
    if (d >= 0) v[static_cast<size_t>(d)] = value;
  };
  auto& rt = m.level(pr.roles.regf).tile;
  set(rt, pr.n, std::min(nf[2], nl.batch));
  set(rt, pr.k, std::min(b.t[2][kLoopOfm], nl.nofm));
  set(rt, pr.c, std::min(b.t[2][kLoopIfm], nl.nifm));
  set(rt, pr.p, pf[2]);
  set(rt, pr.q, nl.wofm);
  set(rt, pr.r, std::min(pe.fold.h, nl.hfil));
  set(rt, pr.s, nl.wfil);
  for (const auto& [d, whole] : pr.region) set(rt, d, whole);
  auto& ps = m.level(pr.roles.pe_array).split;
  set(ps, pr.r, pe.flpeset.h);
  set(ps, pr.p, pe.flpeset.w);
  set(ps, pr.c, sc.ifms);
  set(ps, pr.k, sc.ofms);
  auto& gt = m.level(pr.roles.gbuf).tile;
  gt = rt;
  // GBUF tiles are clipped to the layer, not to the node's share: a node's
  // last pass may overhang its share (nn_dataflow pads it), which the
  // per-node trip counts below undo.
  set(gt, pr.n, std::min(nf[2] * nf[1], pr.layer.batch));
  set(gt, pr.k, std::min(sc.ofms * b.t[2][kLoopOfm] * b.t[1][kLoopOfm], pr.layer.nofm));
  set(gt, pr.c, std::min(sc.ifms * b.t[2][kLoopIfm] * b.t[1][kLoopIfm], pr.layer.nifm));
  set(gt, pr.p, std::min(pe.flpeset.w * pf[2] * pf[1], pr.layer.hofm));
  set(gt, pr.r, std::min(pe.flpeset.h * pe.fold.h, nl.hfil));
  // Loop orders, outermost first: the dimensions without loops, then the
  // three loops by nn_dataflow's positions (folded output rows just inside
  // the batch).
  auto order_of = [&](int bl) {
    std::vector<DimId> order;
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (d != pr.c && d != pr.k && d != pr.n && d != pr.p) order.push_back(d);
    std::array<int, 3> loops{kLoopIfm, kLoopOfm, kLoopBat};
    std::sort(loops.begin(), loops.end(), [&](int x, int y) {
      return b.ord[static_cast<size_t>(bl)][static_cast<size_t>(x)] >
             b.ord[static_cast<size_t>(bl)][static_cast<size_t>(y)];
    });
    for (int l : loops) {
      // A depthwise or local-region layer has no input-channel dimension.
      if (l == kLoopIfm && pr.c >= 0) order.push_back(pr.c);
      if (l == kLoopOfm) order.push_back(pr.k);
      if (l == kLoopBat) {
        order.push_back(pr.n);
        if (pr.p >= 0) order.push_back(pr.p);
      }
    }
    return order;
  };
  m.level(pr.roles.gbuf).order = order_of(1);
  m.level(pr.roles.dram).order = order_of(0);
  if (pr.roles.node_array >= 0) {
    LevelMapping& na = m.level(pr.roles.node_array);
    na.axes.assign(static_cast<size_t>(op.num_dims()), std::vector<std::int64_t>{1, 1});
    auto place_dim = [&](DimId d, Dim2 f) {
      if (d < 0) return;
      na.split[static_cast<size_t>(d)] = f.size();
      na.axes[static_cast<size_t>(d)] = {f.h, f.w};
    };
    place_dim(pr.k, sc.part.pdims[kOutp]);
    place_dim(pr.n, sc.part.pdims[kBatp]);
    place_dim(pr.c, sc.part.pdims[kInpp]);
    place_dim(pr.p, Dim2{sc.part.pdims[kOfmp].h, 1});
    place_dim(pr.q, Dim2{1, sc.part.pdims[kOfmp].w});
    if ((pr.p < 0 && sc.part.pdims[kOfmp].h > 1) || (pr.q < 0 && sc.part.pdims[kOfmp].w > 1))
      return std::string("the fmap partition splits rows or columns the operator does not have");
    std::vector<DimId> order;
    for (int p : sc.part.order) {
      if (p == kOutp) order.push_back(pr.k);
      if (p == kBatp) order.push_back(pr.n);
      if (p == kInpp && pr.c >= 0) order.push_back(pr.c);
      if (p == kOfmp) {
        if (pr.p >= 0) order.push_back(pr.p);
        if (pr.q >= 0) order.push_back(pr.q);
      }
    }
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (std::find(order.begin(), order.end(), d) == order.end()) order.push_back(d);
    na.order = order;
  }
  if (auto err = m.structural_error(op, arch)) return "the canonical form cannot carry it: " + *err;
  out = std::move(m);
  return std::nullopt;
}

BoundNnDataflowModel::~BoundNnDataflowModel() = default;

// ---- keep/bypass ----

namespace {

// The mapping's `keep` is the source of truth: at the REGF nn_dataflow keeps
// every category (a bypass there has no image in its model: refused), and
// at the GBUF an explicit keep fixes stored_in_gbuf. Without an explicit
// keep at the GBUF the `gbuf_bypass` option and nn_dataflow's keep-if-reused
// rule decide, as they did before mappings carried keep.
Options options_for(const Problem& pr, const Mapping& mapping) {
  Options options = pr.options;
  const std::array<int, 3> tensor_of{pr.fil, pr.ifm, pr.ofm};
  const char* const category[3] = {"filter", "input", "output"};
  const auto& regf_keep = mapping.level(pr.roles.regf).keep;
  for (size_t c = 0; c < 3; ++c)
    if (tensor_of[c] >= 0 && !regf_keep.empty() && !regf_keep[static_cast<size_t>(tensor_of[c])])
      throw InputError(std::string("tensor_centric (model=nn_dataflow): the REGF bypasses the ") +
                       category[c] + " tensor; nn_dataflow keeps every data category in the REGF");
  const auto& keep = mapping.level(pr.roles.gbuf).keep;
  if (!keep.empty()) {
    std::array<bool, 3> fixed{};
    for (size_t c = 0; c < 3; ++c)
      fixed[c] = tensor_of[c] >= 0 && keep[static_cast<size_t>(tensor_of[c])];
    options.gbuf_keep = fixed;
  }
  return options;
}

}  // namespace

// ---- end of keep/bypass ----

Result evaluate_mapping(const Problem& pr, const Mapping& mapping) {
  Scheme scheme;
  if (auto err = scheme_from_mapping(pr, mapping, scheme)) {
    Result r;
    r.reason = *err;
    return r;
  }
  const Options options = options_for(pr, mapping);
  Layout ifmaps = pr.ifmaps;
  if (ifmaps.part.order[0] < 0) {
    // No layout given: the input lies as this layer's own partition would
    // lay it out (nn_dataflow's projection of a partition onto memory).
    const std::array<std::int64_t, 4> end = ifmaps.end;
    ifmaps = ofmap_layout(pr.layer, scheme.part, pr.hw.dram);
    ifmaps.end = end;
  }
  return evaluate(pr.layer, pr.hw, options, scheme, ifmaps);
}

Metrics to_metrics(const Operator& op, const Architecture& arch, const Problem& pr,
                   const Result& r) {
  if (!r.valid) return Metrics::invalid(r.reason);
  Metrics m;
  m.valid = true;
  m.macs = static_cast<double>(op.macs());
  m.latency_cycles = r.time;
  m.compute_cycles = r.proc_time;
  m.bound_by = "compute";
  if (r.time > r.proc_time)
    m.bound_by = r.dram_time >= r.bus_time
                     ? arch.levels()[static_cast<size_t>(pr.roles.dram)].name
                     : arch.levels()[static_cast<size_t>(pr.roles.pe_array)].name;
  m.energy_pj = r.cost();
  m.utilization =
      m.latency_cycles > 0 ? m.macs / (m.latency_cycles * static_cast<double>(arch.num_pes())) : 0;
  m.energy_breakdown_pj.emplace_back("mac", r.cost_op);
  const std::array<int, 3> tensor_of{pr.fil, pr.ifm, pr.ofm};
  for (int i = 0; i < arch.num_levels(); ++i) {
    LevelMetrics lm;
    lm.level = arch.levels()[static_cast<size_t>(i)].name;
    int mem = -1;
    if (i == pr.roles.dram) mem = kDram;
    if (i == pr.roles.gbuf) mem = kGbuf;
    if (i == pr.roles.pe_array) mem = kItcn;
    if (i == pr.roles.regf) mem = kRegf;
    for (int c = 0; c < 3; ++c) {
      const auto cu = static_cast<size_t>(c);
      if (tensor_of[cu] < 0) continue;  // a local region has no filters
      // nn_dataflow counts accesses, not reads and writes: they are
      // reported as reads. On the node array they are word-hops.
      const double v = mem >= 0 ? r.access[static_cast<size_t>(mem)][cu] : r.nhops[cu];
      lm.tensors.push_back(
          TensorAccess{op.tensors()[static_cast<size_t>(tensor_of[cu])].name, v, 0});
    }
    lm.energy_pj = mem >= 0 ? r.cost_access[static_cast<size_t>(mem)] : r.cost_noc;
    if (i == pr.roles.gbuf) {
      lm.capacity_bytes = pr.hw.gbuf_words * arch.word_bytes();
      lm.required_bytes = (r.gbuf_words[0] + r.gbuf_words[1] + r.gbuf_words[2]) * arch.word_bytes();
    }
    if (i == pr.roles.regf) {
      lm.capacity_bytes = pr.hw.regf_words * arch.word_bytes();
      lm.required_bytes = (r.regf_words[0] + r.regf_words[1] + r.regf_words[2]) * arch.word_bytes();
    }
    if (i == pr.roles.dram) lm.transfer_cycles = r.dram_time;
    if (i == pr.roles.pe_array) lm.transfer_cycles = r.bus_time;
    m.energy_breakdown_pj.emplace_back(lm.level, lm.energy_pj);
    m.levels.push_back(std::move(lm));
  }
  m.energy_breakdown_pj.emplace_back("idle", r.cost_static);
  return m;
}

}  // namespace mapex::ndf
