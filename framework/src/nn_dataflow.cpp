// nn_dataflow's layer model (see nn_dataflow.hpp for the terms). Each
// function names the nn_dataflow routine whose arithmetic it follows; the
// code is written from the model's definition, not translated.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mapex/nn_dataflow.hpp>
#include <sstream>

namespace mapex::ndf {

namespace {

std::int64_t idivc(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <class T>
double data_product(const DataLoops& loops, int dce, const std::array<T, 3>& per_loop) {
  double p = 1;
  for (int l = 0; l < 3; ++l)
    if (loops[static_cast<size_t>(dce)][static_cast<size_t>(l)])
      p *= static_cast<double>(per_loop[static_cast<size_t>(l)]);
  return p;
}

/// A 4D box of an fmap: batch, channel, height, width; [beg, end).
struct Box {
  std::array<std::int64_t, 4> beg{};
  std::array<std::int64_t, 4> end{};
  std::int64_t size() const {
    std::int64_t s = 1;
    for (size_t i = 0; i < 4; ++i) s *= std::max<std::int64_t>(0, end[i] - beg[i]);
    return s;
  }
  std::int64_t overlap(const Box& o) const {
    std::int64_t s = 1;
    for (size_t i = 0; i < 4; ++i)
      s *= std::max<std::int64_t>(0, std::min(end[i], o.end[i]) - std::max(beg[i], o.beg[i]));
    return s;
  }
  bool operator<(const Box& o) const { return std::tie(beg, end) < std::tie(o.beg, o.end); }
};

/// The idx-th of num near-equal parts of [beg, end) (util.get_ith_range).
std::pair<std::int64_t, std::int64_t> ith_range(std::int64_t beg, std::int64_t end,
                                                std::int64_t idx, std::int64_t num) {
  const std::int64_t length = end - beg;
  return {beg + idx * length / num, beg + (idx + 1) * length / num};
}

using PartIndex = std::array<Dim2, 4>;

/// Every partition index, in nn_dataflow's generation order (gen_pidx:
/// parallelisms in enum order, h before w, the last one fastest).
std::vector<PartIndex> part_indices(const Partition& part) {
  std::vector<PartIndex> out;
  PartIndex idx{};
  for (auto& d : idx) d = Dim2{0, 0};
  const auto radix = [&](size_t k) {
    return k % 2 == 0 ? part.pdims[k / 2].h : part.pdims[k / 2].w;
  };
  const auto digit = [&](size_t k) -> std::int64_t& {
    return k % 2 == 0 ? idx[k / 2].h : idx[k / 2].w;
  };
  while (true) {
    out.push_back(idx);
    size_t k = 8;
    while (k > 0) {
      --k;
      if (++digit(k) < radix(k)) break;
      digit(k) = 0;
      if (k == 0) return out;
    }
  }
}

Dim2 coordinate(const Partition& part, const Region& region, const PartIndex& pidx) {
  Dim2 c{0, 0};
  for (int p : part.order) {
    const auto pu = static_cast<size_t>(p);
    c.h = c.h * part.pdims[pu].h + pidx[pu].h;
    c.w = c.w * part.pdims[pu].w + pidx[pu].w;
  }
  return Dim2{region.origin.h + c.h * region.dist.h, region.origin.w + c.w * region.dist.w};
}

std::int64_t hop_dist(const Dim2& a, const Dim2& b) {
  return std::abs(a.h - b.h) + std::abs(a.w - b.w);
}

/// The part of an fmap box a partition index holds
/// (PartitionScheme.fmap_range): batch by BATP, channels by OUTP, rows and
/// columns by OFMP.
Box fmap_range(const Partition& part, const Box& full, const PartIndex& pidx) {
  Box b;
  const auto& bp = part.pdims[kBatp];
  const auto& op = part.pdims[kOutp];
  const auto& fp = part.pdims[kOfmp];
  std::tie(b.beg[0], b.end[0]) =
      ith_range(full.beg[0], full.end[0], pidx[kBatp].h * bp.w + pidx[kBatp].w, bp.size());
  std::tie(b.beg[1], b.end[1]) =
      ith_range(full.beg[1], full.end[1], pidx[kOutp].h * op.w + pidx[kOutp].w, op.size());
  std::tie(b.beg[2], b.end[2]) = ith_range(full.beg[2], full.end[2], pidx[kOfmp].h, fp.h);
  std::tie(b.beg[3], b.end[3]) = ith_range(full.beg[3], full.end[3], pidx[kOfmp].w, fp.w);
  return b;
}

/// Total weight of a minimum tree that reaches every destination from the
/// sources (nn_dataflow's greedy nearest-pair forwarding is Prim's
/// algorithm, so its total does not depend on how ties are broken).
std::int64_t forwarding_tree(const std::vector<Dim2>& sources, const std::vector<Dim2>& dests) {
  std::vector<std::int64_t> best(dests.size(), std::numeric_limits<std::int64_t>::max());
  std::vector<bool> done(dests.size(), false);
  for (size_t j = 0; j < dests.size(); ++j)
    for (const auto& s : sources) best[j] = std::min(best[j], hop_dist(s, dests[j]));
  std::int64_t total = 0;
  for (size_t step = 0; step < dests.size(); ++step) {
    size_t pick = dests.size();
    for (size_t j = 0; j < dests.size(); ++j)
      if (!done[j] && (pick == dests.size() || best[j] < best[pick])) pick = j;
    done[pick] = true;
    total += best[pick];
    for (size_t j = 0; j < dests.size(); ++j)
      if (!done[j]) best[j] = std::min(best[j], hop_dist(dests[pick], dests[j]));
  }
  return total;
}

Box layout_box(const Layout& layout) {
  Box b;
  b.end = layout.end;
  return b;
}

/// Hops to move `range` of a DRAM layout to each destination
/// (DataLayout.nhops_to, per destination).
std::vector<std::int64_t> hops_each(const Layout& layout, const Box& range,
                                    const std::vector<Dim2>& dests) {
  std::vector<std::int64_t> hops(dests.size(), 0);
  const Box full = layout_box(layout);
  if (range.overlap(full) == 0) return hops;
  for (const auto& pidx : part_indices(layout.part)) {
    const Dim2 src = coordinate(layout.part, layout.region, pidx);
    const std::int64_t size = range.overlap(fmap_range(layout.part, full, pidx));
    for (size_t j = 0; j < dests.size(); ++j) hops[j] += size * hop_dist(dests[j], src);
  }
  return hops;
}

/// DataLayout.nhops_to with forwarding: the nearest destination fetches,
/// the rest are reached along a forwarding tree.
std::int64_t hops_forwarded(const Layout& layout, const Box& range,
                            const std::vector<Dim2>& dests) {
  const auto each = hops_each(layout, range, dests);
  size_t first = 0;
  for (size_t j = 1; j < dests.size(); ++j)
    if (each[j] < each[first]) first = j;
  const std::int64_t total_size = layout_box(layout).overlap(range);
  return each[first] + total_size * forwarding_tree({dests[first]}, dests);
}

}  // namespace

DataLoops data_loops(LayerKind kind) {
  switch (kind) {
    case LayerKind::kDepthwise:  // filters by channel; fmaps by channel and batch
      return {{{false, true, false}, {false, true, true}, {false, true, true}}};
    case LayerKind::kLocalRegion:  // no filters
      return {{{false, false, false}, {false, true, true}, {false, true, true}}};
    case LayerKind::kConv:
      break;
  }
  return {{
      {true, true, false},  // FIL: ifmap and ofmap channels
      {true, false, true},  // IFM: ifmap channels and batch
      {false, true, true},  // OFM: ofmap channels and batch
  }};
}

Dim2 Partition::dim() const {
  Dim2 d{1, 1};
  for (const auto& p : pdims) {
    d.h *= p.h;
    d.w *= p.w;
  }
  return d;
}

double Result::cost() const {
  double c = cost_op + cost_noc + cost_static;
  for (double a : cost_access) c += a;
  return c;
}

Layer part_layer(const Layer& layer, const Partition& part, double* occupancy) {
  Layer p = layer;
  p.nofm = idivc(layer.nofm, part.size(kOutp));
  if (layer.kind == LayerKind::kConv) {
    p.nifm = idivc(layer.nifm, part.size(kInpp));
  } else {
    // PartitionScheme.part_layer: the per-node layer of a depthwise or
    // local-region layer reads one input channel per output channel (the
    // local region's channel stride is not carried over).
    p.nifm = p.nofm;
    p.ntrd = 1;
  }
  p.hofm = idivc(layer.hofm, part.pdims[kOfmp].h);
  p.wofm = idivc(layer.wofm, part.pdims[kOfmp].w);
  p.batch = idivc(layer.batch, part.size(kBatp));
  if (occupancy) *occupancy = layer.ops() / (p.ops() * static_cast<double>(part.dim().size()));
  return p;
}

std::optional<std::string> pe_mapping(const Layer& l, const Dim2& array, PeMapping& out) {
  // A logical PE set is filter rows x output rows; each PE runs a 1D
  // convolution of one filter row over one output row (Eyeriss §V). A
  // local region's window rows stand for the filter rows.
  out.lpeset = Dim2{l.hfil, l.hofm};
  Dim2 fold{1, 1}, repl{1, 1};
  if (out.lpeset.h > array.h)
    fold.h = idivc(out.lpeset.h, array.h);
  else
    repl.h = array.h / out.lpeset.h;
  if (out.lpeset.w > array.w)
    fold.w = idivc(out.lpeset.w, array.w);
  else
    repl.w = array.w / out.lpeset.w;
  // Output rows that do not fit across the array may use the replication
  // room along its height instead.
  const std::int64_t w2h = std::min(repl.h, fold.w);
  fold.w = idivc(fold.w, w2h);
  repl.h = repl.h / w2h;
  out.fold = fold;
  out.repl = repl;
  out.flpeset = Dim2{idivc(out.lpeset.h, fold.h), idivc(out.lpeset.w, fold.w)};
  out.ppeset = Dim2{out.flpeset.h * repl.h * w2h, idivc(out.flpeset.w * repl.w, w2h)};
  out.util = static_cast<double>(out.lpeset.size() * repl.size()) /
             static_cast<double>(array.size() * fold.size());
  if (!(out.util > 0.5)) {
    std::ostringstream why;
    why << "the row-stationary mapping of the per-node layer (" << out.lpeset.h << " x "
        << out.lpeset.w << " PEs per set) uses " << out.util * 100
        << "% of the PE array; nn_dataflow needs over half";
    return why.str();
  }
  out.repl_choices.clear();
  if (l.kind != LayerKind::kConv) {
    // Depthwise and local-region layers (_gen_repl): an input channel
    // follows its output channel, so every replication serves output
    // channels.
    out.repl_choices.emplace_back(1, std::min(repl.size(), l.nofm));
    return std::nullopt;
  }
  // Replications of the pass: divisors of the height replication give
  // input channels, the rest (with the width replication) output channels.
  // nn_dataflow keeps a choice unless an earlier one needed fewer passes.
  double min_loops = std::numeric_limits<double>::infinity();
  for (std::int64_t a = 1; a <= repl.h; ++a) {
    if (repl.h % a) continue;
    const std::int64_t ifms = std::min(a, l.nifm);
    const std::int64_t ofms = std::min(repl.h / a * repl.w, l.nofm);
    const double loops = static_cast<double>(idivc(l.nifm, ifms) * idivc(l.nofm, ofms)) *
                         static_cast<double>(l.batch * fold.w);
    if (loops < min_loops)
      min_loops = loops;
    else if (loops > min_loops)
      continue;
    out.repl_choices.emplace_back(ifms, ofms);
  }
  return std::nullopt;
}

LoopDesc loop_desc(const Layer& l, double occupancy, const PeMapping& pe, std::int64_t ifms,
                   std::int64_t ofms) {
  // One unit pass: every folded PE set once, for one input and one output
  // channel (MapStrategyEyeriss._calc_unitpass). Accessed sizes use the
  // fractional output height left by folding; buffered sizes round it up.
  const double hofm_acc = static_cast<double>(l.hofm) / static_cast<double>(pe.fold.w);
  const std::int64_t hofm_buf = idivc(l.hofm, pe.fold.w);
  const double wofm = static_cast<double>(l.wofm);
  const double hfil = static_cast<double>(l.hfil), wfil = static_cast<double>(l.wfil);
  const double wifm = static_cast<double>(l.wifm());
  const double hifm_acc = hfil + (hofm_acc - 1) * static_cast<double>(l.htrd);
  const double hifm_buf = hfil + static_cast<double>((hofm_buf - 1) * l.htrd);
  const double folds_h = static_cast<double>(pe.fold.h);
  const double fl = static_cast<double>(pe.flpeset.size());

  const double ops_unit = hofm_acc * wofm * hfil * wfil;
  const double time_unit = folds_h * wfil * wofm;
  std::array<std::array<double, 3>, 4> acc{};
  acc[kDram] = {hfil * wfil, hifm_acc * wifm, hofm_acc * wofm};
  acc[kGbuf] = {acc[kDram][kFil], acc[kDram][kIfm] * folds_h, acc[kDram][kOfm] * folds_h};
  acc[kItcn] = {wfil * fl * folds_h, wifm * fl * folds_h, wofm * fl * folds_h};
  acc[kRegf] = {ops_unit, ops_unit, ops_unit};
  std::array<double, 3> sz_gbuf{hfil * wfil, hifm_buf * wifm, static_cast<double>(hofm_buf) * wofm};
  std::array<double, 3> sz_regf{wfil, wfil, 1};
  const bool conv = l.kind == LayerKind::kConv;
  // A depthwise unit pass is a convolution's (one input and one output
  // channel, KAPLA's _calc_unitpass); only the replicated counts differ.
  // A local region (_calc_unitpass, LocalRegionLayer) has no filters, merges
  // nreg x window words per output, and reads each input row once: folded
  // window rows re-access only the outputs.
  const double nreg = static_cast<double>(l.nreg);
  const double ops_region = ops_unit * nreg;
  const bool region = l.kind == LayerKind::kLocalRegion;
  if (region) {
    acc[kDram][kFil] = acc[kGbuf][kFil] = acc[kItcn][kFil] = acc[kRegf][kFil] = 0;
    acc[kGbuf][kIfm] = acc[kDram][kIfm];
    acc[kItcn][kIfm] = wifm * fl;
    acc[kRegf][kIfm] = acc[kRegf][kOfm] = ops_region;
    sz_gbuf[kFil] = sz_regf[kFil] = 0;
  }

  // The processing pass: `ifms` x `ofms` unit passes side by side
  // (_gen_repl), with the occupancy of the last, partial, channel loops.
  LoopDesc d;
  d.data_loops = data_loops(l.kind);
  d.loopcnt = {idivc(l.ifm_loop_channels(), ifms), idivc(l.nofm, ofms), l.batch * pe.fold.w};
  const std::array<double, 3> locc{static_cast<double>(l.ifm_loop_channels()) /
                                       static_cast<double>(ifms) /
                                       static_cast<double>(d.loopcnt[kLoopIfm]),
                                   static_cast<double>(l.nofm) / static_cast<double>(ofms) /
                                       static_cast<double>(d.loopcnt[kLoopOfm]),
                                   1.0};
  const double rsz = static_cast<double>(ifms * ofms);
  // Replicated data: a convolution's pass holds ifms x ofms filters; the
  // other kinds one filter (or none) and one input per output channel.
  const double ofms_d = static_cast<double>(ofms);
  const std::array<double, 3> rcnt =
      conv ? std::array<double, 3>{rsz, static_cast<double>(ifms), ofms_d}
           : std::array<double, 3>{region ? 0.0 : ofms_d, ofms_d, ofms_d};
  const double all_occ = locc[0] * locc[1] * locc[2];
  d.unit_ops = (region ? ops_region : ops_unit) * rsz * occupancy * all_occ;
  d.unit_time = region ? folds_h * nreg * wfil * wofm : time_unit;
  for (int c = 0; c < 3; ++c) {
    const auto cu = static_cast<size_t>(c);
    const double aocc = data_product(d.data_loops, c, locc);
    d.usize_gbuf[cu] = sz_gbuf[cu] * rcnt[cu];
    d.usize_regf[cu] = sz_regf[cu];
    d.unit_access[kDram][cu] = acc[kDram][cu] * rcnt[cu] * aocc;
    d.unit_access[kGbuf][cu] = acc[kGbuf][cu] * rcnt[cu] * aocc;
    d.unit_access[kItcn][cu] = acc[kItcn][cu] * rsz * aocc;
    d.unit_access[kRegf][cu] = acc[kRegf][cu] * rsz * occupancy * all_occ;
  }
  return d;
}

Layout ofmap_layout(const Layer& layer, const Partition& part, const Region& dram) {
  // PartitionScheme.projection(appl2frng=True): input-channel partitioning
  // does not split an fmap; the rest is squeezed or stretched to the region.
  Partition p = part;
  p.pdims[kInpp] = Dim2{1, 1};
  const Dim2 pd = p.dim();
  for (int di = 0; di < 2; ++di) {
    std::int64_t rd = di == 0 ? dram.dim.h : dram.dim.w;
    const std::int64_t have = di == 0 ? pd.h : pd.w;
    auto axis = [&](int par) -> std::int64_t& {
      return di == 0 ? p.pdims[static_cast<size_t>(par)].h : p.pdims[static_cast<size_t>(par)].w;
    };
    if (rd > have) {
      axis(kBatp) *= rd / have;
    } else {
      for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
        if (rd >= axis(*it)) {
          rd /= axis(*it);
        } else {
          axis(*it) = rd;
          rd = 1;
        }
      }
    }
  }
  Layout out;
  out.end = {layer.batch, layer.nofm, layer.hofm, layer.wofm};
  out.region = dram;
  out.part = p;
  return out;
}

std::array<double, 3> unit_nhops(const Layer& layer, const Partition& part, const Hardware& hw,
                                 const Layout& ifmaps, const Layout& ofmaps, bool forwarding,
                                 std::array<bool, 3> categories) {
  // Which nodes need which filters, ifmaps and ofmaps
  // (partition.proc_data_range), grouped by identical ranges.
  Box ofull;
  ofull.end = {layer.batch, layer.nofm, layer.hofm, layer.wofm};
  std::map<std::array<std::int64_t, 4>, std::vector<Dim2>> fil;
  std::map<Box, std::vector<Dim2>> ifm, ofm;
  const Region proc{hw.nodes, Dim2{0, 0}, Dim2{1, 1}};
  const auto& ip = part.pdims[kInpp];
  for (const auto& pidx : part_indices(part)) {
    const Dim2 coord = coordinate(part, proc, pidx);
    const Box orng = fmap_range(part, ofull, pidx);
    Box irng;
    irng.beg[0] = orng.beg[0];
    irng.end[0] = orng.end[0];
    switch (layer.kind) {
      case LayerKind::kConv:
        std::tie(irng.beg[1], irng.end[1]) =
            ith_range(0, layer.nifm, pidx[kInpp].h * ip.w + pidx[kInpp].w, ip.size());
        break;
      case LayerKind::kDepthwise:  // the node's own channels
        irng.beg[1] = orng.beg[1];
        irng.end[1] = std::min(layer.nifm, orng.end[1]);
        break;
      case LayerKind::kLocalRegion:  // the channel window around them
        irng.beg[1] = std::max<std::int64_t>(0, orng.beg[1] - layer.nreg / 2);
        irng.end[1] = std::min(layer.nifm, orng.end[1] + layer.nreg - layer.nreg / 2);
        break;
    }
    irng.beg[2] = orng.beg[2] * layer.htrd;
    irng.end[2] = std::max(irng.beg[2], (orng.end[2] - 1) * layer.htrd + layer.hfil);
    irng.beg[3] = orng.beg[3] * layer.wtrd;
    irng.end[3] = std::max(irng.beg[3], (orng.end[3] - 1) * layer.wtrd + layer.wfil);
    if (irng.size() > 0 && orng.size() > 0) {
      if (categories[kIfm]) ifm[irng].push_back(coord);
      if (categories[kOfm]) ofm[orng].push_back(coord);
      // Filters: a convolution's node needs its input x output channel
      // block, a depthwise node one filter per output channel, a local
      // region none.
      if (categories[kFil] && layer.kind != LayerKind::kLocalRegion && irng.end[1] > irng.beg[1] &&
          orng.end[1] > orng.beg[1]) {
        if (layer.kind == LayerKind::kConv)
          fil[{irng.beg[1], irng.end[1], orng.beg[1], orng.end[1]}].push_back(coord);
        else
          fil[{0, 1, orng.beg[1], orng.end[1]}].push_back(coord);
      }
    }
  }
  std::array<double, 3> hops{};
  // Filters come from the nearest memory channel (they are replicated
  // there), or along a tree rooted at the channels when nodes forward.
  std::vector<Dim2> channels;
  for (std::int64_t i = 0; i < hw.dram.dim.h; ++i)
    for (std::int64_t j = 0; j < hw.dram.dim.w; ++j)
      channels.push_back(
          Dim2{hw.dram.origin.h + i * hw.dram.dist.h, hw.dram.origin.w + j * hw.dram.dist.w});
  for (const auto& [key, dests] : fil) {
    const std::int64_t size = (key[1] - key[0]) * (key[3] - key[2]) * layer.hfil * layer.wfil;
    if (forwarding) {
      hops[kFil] += static_cast<double>(size * forwarding_tree(channels, dests));
    } else {
      for (const auto& d : dests) {
        std::int64_t m = std::numeric_limits<std::int64_t>::max();
        for (const auto& c : channels) m = std::min(m, hop_dist(c, d));
        hops[kFil] += static_cast<double>(size * m);
      }
    }
  }
  for (const auto& [range, dests] : ifm) {
    if (forwarding) {
      hops[kIfm] += static_cast<double>(hops_forwarded(ifmaps, range, dests));
    } else {
      for (auto h : hops_each(ifmaps, range, dests)) hops[kIfm] += static_cast<double>(h);
    }
  }
  // Outputs: with forwarding, half a read (the nearest node) and half an
  // accumulation along the tree; without, the middle node exchanges with
  // DRAM and the others send their partial sums to it.
  for (const auto& [range, dests] : ofm) {
    if (forwarding) {
      const auto each = hops_each(ofmaps, range, dests);
      const std::int64_t read = *std::min_element(each.begin(), each.end());
      const std::int64_t accum = hops_forwarded(ofmaps, range, dests);
      hops[kOfm] += static_cast<double>(idivc(read + accum, 2));
    } else {
      const size_t mid = dests.size() / 2;
      for (size_t j = 0; j < dests.size(); ++j) {
        if (j == mid)
          hops[kOfm] += static_cast<double>(hops_each(ofmaps, range, {dests[j]})[0]);
        else
          hops[kOfm] +=
              static_cast<double>(idivc(range.size() * hop_dist(dests[j], dests[mid]), 2));
      }
    }
  }
  return hops;
}

std::array<double, 3> sharing_groups(const Partition& part, LayerKind kind) {
  // A category is shared by the nodes of the first loop that does not
  // index it (BufShrScheme with the layer's data_loops). Depthwise and
  // local-region data are indexed by the ofmap loop, and those without the
  // ifmap loop fall on the input-channel partition, which these layers do
  // not have: no group.
  if (kind != LayerKind::kConv) return {1, 1, 1};
  // Filters are shared by the batch and fmap partitions, ifmaps by the
  // output-channel partition, ofmaps by the input-channel partition.
  const Dim2& ofmp = part.pdims[kOfmp];
  const Dim2& batp = part.pdims[kBatp];
  std::int64_t bat = 1;
  if (ofmp.size() == 1) {
    bat = batp.size();
  } else if (batp.size() == 1) {
    bat = ofmp.size();
  } else {
    const auto pos = [&](int par) {
      return std::find(part.order.begin(), part.order.end(), par) - part.order.begin();
    };
    // Adjacent in the hierarchy: both; else the lower one.
    if (std::abs(pos(kOfmp) - pos(kBatp)) == 1)
      bat = ofmp.size() * batp.size();
    else
      bat = pos(kOfmp) > pos(kBatp) ? ofmp.size() : batp.size();
  }
  return {static_cast<double>(bat), static_cast<double>(part.size(kOutp)),
          static_cast<double>(part.size(kInpp))};
}

Misfit score_blocking(const Hardware& hw, const Options& options,
                      const std::array<double, 3>& share, const LoopDesc& nld, const Blocking& b,
                      BlockingStats& r) {
  // Loop blocking (LoopBlockingScheme): the factors of every loop must
  // cover its trip count.
  std::array<std::int64_t, 3> total{};
  for (size_t l = 0; l < 3; ++l) {
    total[l] = b.t[0][l] * b.t[1][l] * b.t[2][l];
    if (total[l] < nld.loopcnt[l]) return Misfit::kShortLoop;
  }
  const double lcnt = static_cast<double>(total[0] * total[1] * total[2]);
  // outer[k][l]: the product of loop l's factors over levels 0..k-1.
  std::array<std::array<std::int64_t, 3>, 3> outer{};
  outer[0] = {1, 1, 1};
  for (size_t k = 1; k < 3; ++k)
    for (size_t l = 0; l < 3; ++l) outer[k][l] = outer[k - 1][l] * b.t[k - 1][l];
  const std::array<double, 3> subgroup =
      options.forwarding ? share : std::array<double, 3>{1, 1, 1};

  // Buffered words: units below a level times the unit size.
  const std::array<std::int64_t, 3> below_gbuf{b.t[1][0] * b.t[2][0], b.t[1][1] * b.t[2][1],
                                               b.t[1][2] * b.t[2][2]};
  std::array<double, 3> unit_cnt_gbuf{};
  r.regf_total = 0;
  for (int c = 0; c < 3; ++c) {
    const auto cu = static_cast<size_t>(c);
    unit_cnt_gbuf[cu] = data_product(nld.data_loops, c, below_gbuf);
    r.regf_words[cu] = data_product(nld.data_loops, c, b.t[2]) * nld.usize_regf[cu];
    r.regf_total += r.regf_words[cu];
    r.stored_in_gbuf[cu] = options.gbuf_keep ? (*options.gbuf_keep)[cu] : !options.bypass[cu];
  }
  auto gbuf_size = [&](const std::array<double, 3>& groups) {
    double s = 0;
    for (size_t c = 0; c < 3; ++c) {
      r.gbuf_words[c] =
          r.stored_in_gbuf[c] ? std::ceil(unit_cnt_gbuf[c] * nld.usize_gbuf[c] / groups[c]) : 0;
      s += r.gbuf_words[c];
    }
    return s;
  };
  if (r.regf_total > hw.regf_words) return Misfit::kRegf;
  if (gbuf_size(subgroup) > hw.gbuf_words) return Misfit::kGbuf;

  // Fetches from the level above (_set_fetch): a datum is refetched once
  // per iteration of the loops that do not index it, outside the innermost
  // non-trivial loop that does; outputs are read back except the first time.
  for (size_t bl = 0; bl < 2; ++bl) {
    for (int c = 0; c < 3; ++c) {
      const auto cu = static_cast<size_t>(c);
      int inner = -1;
      for (int l = 0; l < 3; ++l) {
        const auto lu = static_cast<size_t>(l);
        if (!nld.data_loops[cu][lu] || b.t[bl][lu] == 1) continue;
        if (inner < 0 || b.ord[bl][lu] < b.ord[bl][static_cast<size_t>(inner)]) inner = l;
      }
      if (inner < 0) {
        r.fetch[bl][cu] = bl > 0 ? r.fetch[0][cu] : 1;
        continue;
      }
      double f = 1;
      for (size_t lu = 0; lu < 3; ++lu) {
        if (nld.data_loops[cu][lu]) continue;
        const size_t start = bl + (b.ord[bl][lu] > b.ord[bl][static_cast<size_t>(inner)] ? 1 : 0);
        f *= static_cast<double>(outer[start][lu]);
      }
      r.fetch[bl][cu] = c == kOfm ? 2 * f - 1 : f;
    }
  }
  // Data that may bypass the GBUF are kept there only if they are reused;
  // a mapping that states what the GBUF keeps overrides that rule.
  if (!options.gbuf_keep)
    for (size_t c = 0; c < 3; ++c)
      if (!r.stored_in_gbuf[c]) r.stored_in_gbuf[c] = r.fetch[0][c] < r.fetch[1][c];
  r.gbuf_unshared = gbuf_size({1, 1, 1});
  r.gbuf_total = gbuf_size(subgroup);
  if (r.gbuf_total > hw.gbuf_words) return Misfit::kGbuf;
  // Fits only when a group of nodes splits the data among their GBUFs:
  // nn_dataflow then rotates it over the NoC, which this model leaves out.
  if (options.forwarding && r.gbuf_unshared > hw.gbuf_words) return Misfit::kRotation;

  // Filter pinning (LoopBlockingScheme.__init__): on nodes no other layer
  // uses over time, filters whose loops above the GBUF are all trivial stay
  // in the GBUFs from an earlier run and are not fetched from DRAM. Applied,
  // as there, after the GBUF checks, so it changes no fit.
  if (hw.no_time_mux) {
    bool pinned = true;
    for (size_t l = 0; l < 3; ++l)
      if (nld.data_loops[kFil][l] && b.t[0][l] != 1) pinned = false;
    if (pinned) r.fetch[0][kFil] = 0;
  }

  // Accesses over all nodes (_calc_stats).
  const double nodes = static_cast<double>(hw.nodes.size());
  for (size_t c = 0; c < 3; ++c) r.accfwd[c] = options.forwarding ? share[c] : 1;
  auto total_at = [&](int mem, int c) {
    return nld.unit_access[static_cast<size_t>(mem)][static_cast<size_t>(c)] *
           data_product(nld.data_loops, c, nld.loopcnt);
  };
  r.ops = nld.unit_ops * lcnt * nodes;
  r.proc_time = nld.unit_time * lcnt;
  double dram = 0, gbuf_max = 0;
  for (int c = 0; c < 3; ++c) {
    const auto cu = static_cast<size_t>(c);
    r.access[kRegf][cu] = nld.unit_access[kRegf][cu] * lcnt * (c == kOfm ? 2 : 1) * nodes;
    r.access[kItcn][cu] = total_at(kItcn, c) * r.fetch[1][cu] * nodes;
    r.access[kGbuf][cu] = r.stored_in_gbuf[cu] ? total_at(kGbuf, c) * r.fetch[1][cu] * nodes : 0;
    r.access[kDram][cu] = (r.stored_in_gbuf[cu] ? total_at(kDram, c) : total_at(kGbuf, c)) *
                          r.fetch[0][cu] * nodes / r.accfwd[cu];
    dram += r.access[kDram][cu];
    gbuf_max = std::max(gbuf_max, r.access[kGbuf][cu]);
  }
  r.dram_time = hw.dram_words > 0 ? std::ceil(dram / hw.dram_words) : 0;
  r.bus_time = hw.bus_words > 0 ? std::ceil(std::ceil(gbuf_max / nodes) / hw.bus_words) : 0;
  r.time = std::max({r.proc_time, r.bus_time, r.dram_time});
  for (size_t m = 0; m < 4; ++m)
    r.cost_access[m] = hw.mem_cost[m] * (r.access[m][0] + r.access[m][1] + r.access[m][2]);
  return Misfit::kNone;
}

Result evaluate(const Layer& layer, const Hardware& hw, const Options& options,
                const Scheme& scheme, const Layout& ifmaps) {
  Result r;
  auto fail = [&](std::string why) {
    r.valid = false;
    r.reason = std::move(why);
    return r;
  };
  const Partition& part = scheme.part;
  if (!(part.dim() == hw.nodes)) {
    std::ostringstream why;
    why << "the partition covers " << part.dim().h << " x " << part.dim().w
        << " nodes; nn_dataflow partitions the whole node array (" << hw.nodes.h << " x "
        << hw.nodes.w << ")";
    return fail(why.str());
  }
  r.node_layer = part_layer(layer, part, &r.occupancy);
  if (auto err = pe_mapping(r.node_layer, hw.array, r.pe)) return fail(*err);
  const auto choice = std::make_pair(scheme.ifms, scheme.ofms);
  if (std::find(r.pe.repl_choices.begin(), r.pe.repl_choices.end(), choice) ==
      r.pe.repl_choices.end()) {
    std::ostringstream why;
    why << "a processing pass of " << scheme.ifms << " input x " << scheme.ofms
        << " output channels is not a row-stationary replication of this layer; allowed:";
    for (const auto& [i, o] : r.pe.repl_choices) why << ' ' << i << 'x' << o;
    return fail(why.str());
  }
  r.nld = loop_desc(r.node_layer, r.occupancy, r.pe, scheme.ifms, scheme.ofms);
  const Blocking& b = scheme.blocking;
  BlockingStats s;
  const Misfit misfit = score_blocking(hw, options, sharing_groups(part, layer.kind), r.nld, b, s);
  r.stored_in_gbuf = s.stored_in_gbuf;
  r.gbuf_words = s.gbuf_words;
  r.regf_words = s.regf_words;
  std::ostringstream why;
  switch (misfit) {
    case Misfit::kNone:
      break;
    case Misfit::kShortLoop: {
      static const char* kNames[] = {"ifmap", "ofmap", "batch"};
      for (size_t l = 0; l < 3; ++l)
        if (b.t[0][l] * b.t[1][l] * b.t[2][l] < r.nld.loopcnt[l]) {
          why << "the " << kNames[l] << " loop is blocked " << b.t[0][l] << " x " << b.t[1][l]
              << " x " << b.t[2][l] << ", fewer than its " << r.nld.loopcnt[l] << " passes";
          break;
        }
      return fail(why.str());
    }
    case Misfit::kRegf:
      why << "REGF: the blocking needs " << s.regf_total << " words per PE, capacity "
          << hw.regf_words;
      return fail(why.str());
    case Misfit::kGbuf:
      why << "GBUF: the blocking needs " << s.gbuf_total << " words per node, capacity "
          << hw.gbuf_words;
      return fail(why.str());
    case Misfit::kRotation:
      why << "GBUF: the data fit only when shared across nodes (GBUF rotation), which the "
             "nn_dataflow model here does not compute; GBUF: the blocking needs "
          << s.gbuf_unshared << " words per node, capacity " << hw.gbuf_words;
      return fail(why.str());
  }
  r.fetch = s.fetch;
  r.accfwd = s.accfwd;
  r.access = s.access;
  r.ops = s.ops;
  r.proc_time = s.proc_time;
  r.bus_time = s.bus_time;
  r.dram_time = s.dram_time;
  r.time = s.time;
  r.cost_access = s.cost_access;
  r.num_nodes = hw.nodes.size();

  // NoC: each category's one-time hops times its DRAM fetches.
  const Layout ofmaps = ofmap_layout(layer, part, hw.dram);
  r.unit_nhops = unit_nhops(layer, part, hw, ifmaps, ofmaps, options.forwarding);
  double hops = 0;
  for (size_t c = 0; c < 3; ++c) {
    r.nhops[c] = r.unit_nhops[c] * r.fetch[0][c];
    hops += r.nhops[c];
  }
  r.cost_op = hw.mac_cost * r.ops;
  r.cost_noc = hw.hop_cost * hops;
  r.cost_static = hw.idle_cost * r.time;
  r.valid = true;
  return r;
}

}  // namespace mapex::ndf
