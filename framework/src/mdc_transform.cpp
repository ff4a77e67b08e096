// From canonical mappings to MDC directives (Marvel, TACO 2021, §4,
// Algorithm 1) and Marvel's conformability rules (§3).

#include <algorithm>
#include <map>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <set>

namespace mapex::mdc {
namespace {

// How the operator's loop dimensions become MAESTRO dimensions. Output rows
// and columns (P, Q of a CONV2D) are independent dimensions of the DDG
// (Marvel §3, rule 4), so they map to MAESTRO's Y' and X'.
struct DimMap {
  LayerType type = LayerType::kConv;
  std::map<std::string, std::string> to_maestro;  // operator dim -> MAESTRO dim
};

DimMap classify(const Operator& op) {
  DimMap m;
  const auto& attrs = op.attributes();
  auto has = [&](const char* d) { return op.find_dim(d) >= 0; };
  if (op.kind() == "gemm" || (has("M") && has("N") && has("K") && op.num_dims() == 3)) {
    m.type = LayerType::kGemm;
    m.to_maestro = {{"M", "M"}, {"N", "N"}, {"K", "K"}};
    return m;
  }
  if (op.kind() == "fc") {
    // Output[N][K] += Input[N][C] * Weight[K][C]: a 1x1 convolution.
    m.type = LayerType::kConv;
    m.to_maestro = {{"N", "N"}, {"K", "K"}, {"C", "C"}};
    return m;
  }
  if (op.kind() != "conv2d")
    throw InputError("operator '" + op.name() + "' (" + op.kind() +
                     ") has no MAESTRO layer type; the mdc model takes conv2d, fc and gemm");
  auto attr = [&](const char* k) {
    const auto it = attrs.find(k);
    return it == attrs.end() ? std::int64_t{1} : it->second;
  };
  if (attr("dilation_h") != 1 || attr("dilation_w") != 1)
    throw InputError("operator '" + op.name() +
                     "': MAESTRO's directives cannot express dilation; the mdc model takes "
                     "undilated convolutions");
  // Padding: MAESTRO has none, and its users give the padded input size
  // (refdata/maestro README). from_mapping does the same: Y and X are the
  // input rows and columns the output needs, (P-1)*stride + R, halo of
  // zeros included, so a padded layer is analysed as the convolution of
  // its padded input.
  if (has("G"))
    throw InputError("operator '" + op.name() +
                     "': grouped convolutions (other than depthwise) are not supported by the mdc "
                     "model");
  m.type = has("K") ? LayerType::kConv : LayerType::kDsconv;
  m.to_maestro = {{"N", "N"}, {"K", "K"},  {"C", "C"}, {"R", "R"},
                  {"S", "S"}, {"P", "Y'"}, {"Q", "X'"}};
  return m;
}

}  // namespace

namespace {

// MAESTRO's directives (and its analysis) keep every tensor at every level:
// a mapping that bypasses one has no image in them. Refuse it
// rather than lower it as if every tensor were kept.
void refuse_bypass(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  for (int i = 0; i < arch.num_levels(); ++i) {
    if (arch.levels()[static_cast<std::size_t>(i)].kind != LevelKind::kBuffer) continue;
    for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
      if (!mapping.keeps(op, arch, i, t))
        throw InputError("level '" + arch.levels()[static_cast<std::size_t>(i)].name +
                         "' bypasses tensor '" + op.tensors()[static_cast<std::size_t>(t)].name +
                         "': MDC directives keep every tensor at every level and cannot express "
                         "a bypass");
  }
}

}  // namespace

Lowered from_mapping(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  refuse_bypass(op, arch, mapping);
  const DimMap dm = classify(op);
  Layer layer;
  layer.name = op.name();
  layer.type = dm.type;
  const auto& attrs = op.attributes();
  auto attr = [&](const char* k) {
    const auto it = attrs.find(k);
    return it == attrs.end() ? std::int64_t{1} : it->second;
  };
  auto bound = [&](const char* d) {
    const DimId id = op.find_dim(d);
    return id < 0 ? std::int64_t{1} : op.dims()[static_cast<std::size_t>(id)].bound;
  };
  if (dm.type == LayerType::kGemm) {
    layer.dims = {{"M", bound("M")}, {"N", bound("N")}, {"K", bound("K")}};
  } else if (op.kind() == "fc") {
    layer.dims = {{"N", bound("N")}, {"K", bound("K")}, {"C", bound("C")}, {"R", 1},
                  {"S", 1},          {"Y", 1},          {"X", 1}};
  } else {
    layer.stride_y = attr("stride_h");
    layer.stride_x = attr("stride_w");
    const std::int64_t R = bound("R"), S = bound("S"), P = bound("P"), Q = bound("Q");
    layer.dims.emplace_back("N", bound("N"));
    if (dm.type == LayerType::kConv) layer.dims.emplace_back("K", bound("K"));
    if (dm.type == LayerType::kDsconv) layer.dims.emplace_back("K", 1);
    layer.dims.emplace_back("C", bound("C"));
    layer.dims.emplace_back("R", R);
    layer.dims.emplace_back("S", S);
    layer.dims.emplace_back("Y", (P - 1) * layer.stride_y + R);
    layer.dims.emplace_back("X", (Q - 1) * layer.stride_x + S);
  }

  // The chip must alternate buffer / spatial levels from the PEs outwards:
  // each spatial level is one MDC cluster level (Marvel §4: the parallel
  // loops of a tiling level become the SpatialMaps of its region).
  const auto& levels = arch.levels();
  std::vector<int> spatial;
  for (int i = 0; i < arch.num_levels(); ++i)
    if (levels[static_cast<std::size_t>(i)].kind == LevelKind::kSpatial) spatial.push_back(i);
  if (spatial.empty())
    throw InputError("architecture '" + arch.name() + "' has no spatial level; MDC needs PEs");
  // Adjacent spatial levels (a fan-out of fan-outs, e.g. rows of columns)
  // are nested cluster levels of one network: each opens its own regions,
  // walked in the order of the nearest data level above.
  auto data_above = [&](int s) {
    int p = s + 1;
    while (levels[static_cast<std::size_t>(p)].kind == LevelKind::kSpatial) ++p;
    return p;
  };

  const auto& op_dims = op.dims();
  // Directive size of an operator dimension from a canonical tile of it.
  // Output rows map to input rows: (tile-1)*stride + filter (Marvel §4,
  // dependent dimensions are inferred by the cost model from the
  // independent ones; MAESTRO's directives are in input coordinates).
  auto emit = [&](std::vector<Directive>& out, bool spatial_map, DimId d, std::int64_t size,
                  std::int64_t offset) {
    const std::string& name = op_dims[static_cast<std::size_t>(d)].name;
    const auto it = dm.to_maestro.find(name);
    if (it == dm.to_maestro.end()) return;  // not a MAESTRO dimension (e.g. fc's missing ones)
    Directive dir;
    dir.kind = spatial_map ? DirectiveKind::kSpatialMap : DirectiveKind::kTemporalMap;
    dir.dim = it->second;
    if (dir.dim == "Y'" || dir.dim == "X'") {
      const bool rows = dir.dim == "Y'";
      const std::int64_t stride = rows ? layer.stride_y : layer.stride_x;
      const std::int64_t filter = bound(rows ? "R" : "S");
      dir.dim = rows ? "Y" : "X";
      dir.size = (size - 1) * stride + filter;
      dir.offset = offset * stride;
    } else {
      dir.size = size;
      dir.offset = offset;
    }
    out.push_back(dir);
  };

  // Regions from the outermost inwards (Algorithm 1, lines 4-13): every
  // parallel loop gets a region of its own whose SpatialMap spreads the
  // child span over exactly `split` units, and each region but the
  // outermost is opened by Cluster(split), so a region's unit count is its
  // loop's iteration count. A spatial level that splits two dimensions is
  // therefore two nested regions, not two lock-step SpatialMaps (those
  // would advance together and cover only the diagonal of the K x C
  // block). The inter-tile loops of the buffer above a spatial level
  // (Algorithm 1, lines 14-17) share that level's outermost region: MAESTRO
  // needs a SpatialMap in every region, and there the parallel loop's
  // remaining iterations (span above / span of the level) become spatial
  // folds at the loop's place in the order. A dimension split further in
  // is mapped there temporally by the whole span of the level (child span
  // x split). A level that splits nothing keeps one region with a
  // SpatialMap over a single unit.
  // DRAM's loops over L2 tiles have no region: MAESTRO's top level reads
  // from L2 and counts no off-chip traffic per access, so the outermost
  // region walks the whole layer in L2's order. Off-chip reuse is the DB
  // locality model's job (Marvel §5.1), as in Marvel's decoupled search.
  std::vector<Directive> dataflow;
  std::int64_t units_used = 1;
  auto open_region = [&](std::int64_t units) {
    if (!dataflow.empty()) {
      Directive c;
      c.kind = DirectiveKind::kCluster;
      c.size = units;
      dataflow.push_back(c);
    }
    units_used *= units;
  };
  // Row stationary (Eyeriss; MAESTRO §III's YR-P, Marvel §6's row-stationary
  // style): a split of filter rows R (columns S) hands unit i filter rows
  // [i*tR, (i+1)*tR). Marvel's Algorithm 1 maps the independent dimension R
  // (§3, rule 4) and leaves the input rows to the dependent subscript
  // Y = P*stride + R; MAESTRO's directives are in input coordinates, so the
  // rows Y that move with R must be mapped in the same region, in lock
  // step: SpatialMap((tP-1)*stride + tR, tR) Y next to SpatialMap(tR, tR) R
  // (MAESTRO §III allows two SpatialMaps per cluster level for this). Without
  // it every unit receives the whole window's rows and MAESTRO sees
  // different, mostly idle, PEs.
  const bool windows = dm.type != LayerType::kGemm;
  auto is_filter = [&](DimId d) {
    const std::string& name = op_dims[static_cast<std::size_t>(d)].name;
    return windows && (name == "R" || name == "S") && op.find_dim(name == "R" ? "P" : "Q") >= 0;
  };
  // One group of regions: units that each cover `child_span`, split by
  // `split` and walked in `order` (the outermost region's temporal maps
  // step by child span x split).
  auto lower_group = [&](const std::vector<std::int64_t>& child_span,
                         const std::vector<std::int64_t>& split, const std::vector<DimId>& order) {
    auto split_of = [&](DimId d) {
      return split.empty() ? std::int64_t{1} : split[static_cast<std::size_t>(d)];
    };
    // Parallel loops, outermost first by the parent's loop order.
    std::vector<DimId> split_dims;
    for (DimId d : order)
      if (split_of(d) > 1 && dm.to_maestro.count(op_dims[static_cast<std::size_t>(d)].name))
        split_dims.push_back(d);
    // Regions below the outermost have no folds and no temporal maps of
    // their own, so their nesting order changes nothing but this: a filter
    // split must lie inside the region that splits its window (P, Q), whose
    // rows it subdivides, and the outermost region, which also walks every
    // other dimension in time, cannot hold the lock-step rows. Filter splits
    // therefore go last, and when only filters are split the outermost
    // region is a single unit over the first other dimension of the order.
    std::stable_partition(split_dims.begin(), split_dims.end(),
                          [&](DimId d) { return !is_filter(d); });
    if (split_dims.empty() || is_filter(split_dims.front()))
      for (DimId d : order)
        if (dm.to_maestro.count(op_dims[static_cast<std::size_t>(d)].name) && !is_filter(d)) {
          split_dims.insert(split_dims.begin(), d);
          break;
        }
    open_region(split_of(split_dims.front()));
    for (DimId d : order) {
      const std::int64_t t = child_span[static_cast<std::size_t>(d)];
      if (d == split_dims.front())
        emit(dataflow, true, d, t, t);
      else
        emit(dataflow, false, d, t * split_of(d), t * split_of(d));
    }
    for (std::size_t i = 1; i < split_dims.size(); ++i) {
      const DimId d = split_dims[i];
      const std::int64_t t = child_span[static_cast<std::size_t>(d)];
      open_region(split_of(d));
      emit(dataflow, true, d, t, t);
      if (!is_filter(d)) continue;
      const bool rows = op_dims[static_cast<std::size_t>(d)].name == "R";
      const std::int64_t stride = rows ? layer.stride_y : layer.stride_x;
      // The window's outputs per unit: its own region (if any) is further
      // out, so a unit holds the child tile of P (Q).
      const std::int64_t outputs =
          child_span[static_cast<std::size_t>(op.find_dim(rows ? "P" : "Q"))];
      Directive window;
      window.kind = DirectiveKind::kSpatialMap;
      window.dim = rows ? "Y" : "X";
      window.size = (outputs - 1) * stride + t;
      window.offset = t;
      // MAESTRO rewrites a strided input-row map that covers a whole filter
      // into whole output rows (§III-B), which would move these rows by the
      // stride instead of with the filter rows.
      if (stride > 1 && window.size >= bound(rows ? "R" : "S"))
        throw InputError("a split of " + op_dims[static_cast<std::size_t>(d)].name + " with " +
                         std::to_string(outputs) + " outputs per unit at stride " +
                         std::to_string(stride) +
                         " has no MAESTRO form (its input rows cover the filter and MAESTRO "
                         "rewrites them by the stride)");
      // Written as MAESTRO's own files do (the rows first, e.g. its YR-P):
      // the first SpatialMap of a level sets the folds the second follows.
      dataflow.insert(dataflow.end() - 1, window);
    }
  };
  for (auto it = spatial.rbegin(); it != spatial.rend(); ++it) {
    const int s = *it;
    const int child = s - 1;
    const auto child_span =
        child >= 0 ? mapping.span(op, arch, child) : std::vector<std::int64_t>(op_dims.size(), 1);
    const LevelMapping& lm = mapping.level(s);
    const auto& parent_order = mapping.level(data_above(s)).order;
    if (!lm.cluster.active()) {
      lower_group(child_span, lm.split, parent_order);
      continue;
    }
    // A cluster level (FLASH §3.1, Table 2): the clusters cover T^out each
    // and are spread by the level's split in the parent's order; below a
    // Cluster directive the units of one cluster step through T^out by
    // TemporalMaps of child span x cluster split in the cluster's order
    // and share the cluster split by SpatialMaps.
    lower_group(lm.cluster.tile, lm.split, parent_order);
    lower_group(child_span, lm.cluster.split, lm.cluster.order);
  }
  // The point loops of the L1 tile (Algorithm 1, lines 2-3) need no region
  // of their own here: MAESTRO's innermost level already hands each PE its
  // whole tile per step, and the order of point loops carries no reuse.
  // Filter dims mapped temporally must be mapped whole (MAESTRO's R/S rule):
  // a partial filter tile becomes a full one at that level, which is the
  // same data per PE when the filter stays in L1.
  for (auto& d : dataflow)
    if (d.kind == DirectiveKind::kTemporalMap && (d.dim == "R" || d.dim == "S") &&
        layer.type != LayerType::kGemm) {
      const std::int64_t full = layer.dim(d.dim);
      if (d.size != full) {
        d.size = full;
        d.offset = full;
      }
    }
  layer.dataflow = std::move(dataflow);
  // The PEs the directives address are the ones the mapping engages: with
  // all of the chip's PEs, MAESTRO would spread the outermost SpatialMap
  // over every PE and analyse a different, more parallel mapping.
  Lowered out{std::move(layer), hardware_from(arch)};
  out.hardware.num_pes = units_used;
  return out;
}

namespace {

// MAESTRO's analysis (§IV) has one network from L2 into the PEs; its cluster
// levels are a logical division of that array. A chip with several fan-out
// levels is lowered into cluster levels of that one network, so they must
// agree on multicast and reduction: a mix cannot be modelled and is refused.
void take_noc_switches(const Architecture& arch, const Level& level, const Level*& first,
                       Hardware& hw) {
  if (first == nullptr) {
    hw.multicast = level.noc.multicast;
    hw.reduction = level.noc.reduction;
    first = &level;
    return;
  }
  auto refuse = [&](const char* key, bool value) {
    throw InputError(SourceLocation{}, "levels." + level.name + ".noc." + key,
                     "mdc: architecture '" + arch.name() + "' has " + key + " " +
                         (value ? "on" : "off") + " at '" + level.name + "' but " +
                         (value ? "off" : "on") + " at '" + first->name +
                         "'; MAESTRO's analysis has one network from L2 into the PEs and "
                         "cannot model networks that differ in it");
  };
  if (level.noc.multicast != hw.multicast) refuse("multicast", level.noc.multicast);
  if (level.noc.reduction != hw.reduction) refuse("reduction", level.noc.reduction);
}

}  // namespace

Hardware hardware_from(const Architecture& arch) {
  Hardware hw;
  hw.num_pes = arch.num_pes();
  hw.simd_lanes = arch.macs_per_pe();
  const double word = arch.word_bytes();
  const auto& levels = arch.levels();
  auto per_cycle = [&](double gbps) {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(arch.bytes_per_cycle(gbps) / word));
  };
  bool first_buffer = true, first_noc = true;
  const Level* noc_from = nullptr;  // the network whose bandwidth and latency hw took
  // Every spatial level becomes cluster levels of the one network MAESTRO
  // analyses (from_mapping), so their switches are the hardware's.
  const Level* switches_from = nullptr;  // the network whose switches hw took
  for (const auto& l : levels)
    if (l.kind == LevelKind::kSpatial) take_noc_switches(arch, l, switches_from, hw);
  for (const auto& l : levels) {
    if (l.kind == LevelKind::kBuffer) {
      const auto words = static_cast<std::int64_t>(static_cast<double>(l.size_bytes) / word);
      if (first_buffer) hw.l1_size = words;
      hw.l2_size = words;  // the outermost on-chip buffer wins
      first_buffer = false;
    } else if (l.kind == LevelKind::kSpatial && first_noc) {
      if (l.noc.bandwidth_gbps > 0) hw.noc_bw = per_cycle(l.noc.bandwidth_gbps);
      hw.noc_latency = std::max<std::int64_t>(0, static_cast<std::int64_t>(l.noc.latency_cycles));
      first_noc = false;
      noc_from = &l;
    } else if (l.kind == LevelKind::kSpatial) {
      // MAESTRO analyses one network: further fan-outs must agree with it.
      if (l.noc.bandwidth_gbps != noc_from->noc.bandwidth_gbps ||
          l.noc.latency_cycles != noc_from->noc.latency_cycles)
        throw InputError(SourceLocation{}, "noc",
                         "mdc: architecture '" + arch.name() + "': spatial levels '" +
                             noc_from->name + "' and '" + l.name +
                             "' have different network bandwidths or latencies; MAESTRO "
                             "analyses one network");
    } else if (l.kind == LevelKind::kDram && l.bandwidth_gbps) {
      hw.offchip_bw = per_cycle(*l.bandwidth_gbps);
    }
  }
  return hw;
}

std::vector<ConformabilityIssue> check_conformability(const Operator& op) {
  std::vector<ConformabilityIssue> issues;
  const auto& dims = op.dims();
  auto dim_name = [&](DimId d) { return dims[static_cast<std::size_t>(d)].name; };
  // Rule 1 (perfect nesting, no conditionals) holds by construction: the
  // operator IR can only express a perfect affine nest with one MAC.
  // Rule 2: only reduction dependences. An output that a dimension does not
  // index is written repeatedly; without a reduction that is an output
  // dependence the loops cannot be reordered around.
  const Tensor& out = op.output();
  for (DimId d = 0; d < op.num_dims(); ++d)
    if (!out.relevant(d) && out.reduction == Reduction::kNone)
      issues.push_back({2, out.name,
                        "dimension " + dim_name(d) + " does not index the output '" + out.name +
                            "', which has no reduction: repeated writes are an output dependence"});
  for (const auto& t : op.tensors())
    if (t.role == TensorRole::kInput && t.name == out.name)
      issues.push_back({2, t.name, "the tensor is both read and written (a flow dependence)"});

  // The dimension dependence graph (§3): one node per distinct (tensor
  // dimension, subscript); edges from a node to every multi-variable
  // (MIV) node sharing a loop iterator, and within a group of single-
  // variable (SIV) subscripts of one iterator from the lowest constant to
  // the others.
  struct Node {
    std::string tensor;
    std::size_t position = 0;
    AffineExpr expr;
    std::set<DimId> vars;
  };
  std::vector<Node> nodes;
  for (const auto& t : op.tensors())
    for (std::size_t i = 0; i < t.subscripts.size(); ++i) {
      Node n{t.name, i, t.subscripts[i], {}};
      for (const auto& term : t.subscripts[i].terms)
        if (term.coeff != 0) n.vars.insert(term.dim);
      nodes.push_back(n);
    }
  const std::size_t n = nodes.size();
  std::vector<std::vector<std::size_t>> edges(n);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) {
      if (a == b || nodes[b].vars.size() < 2) continue;
      for (DimId v : nodes[a].vars)
        if (nodes[b].vars.count(v)) {
          edges[a].push_back(b);
          break;
        }
    }
  std::map<DimId, std::vector<std::size_t>> siv;
  for (std::size_t a = 0; a < n; ++a)
    if (nodes[a].vars.size() == 1) siv[*nodes[a].vars.begin()].push_back(a);
  for (auto& [v, group] : siv) {
    std::size_t lowest = group.front();
    for (std::size_t a : group)
      if (nodes[a].expr.constant < nodes[lowest].expr.constant) lowest = a;
    for (std::size_t a : group)
      if (a != lowest) edges[lowest].push_back(a);
  }
  // Rule 3: a topological order exists (Kahn's algorithm).
  std::vector<int> indegree(n, 0);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b : edges[a]) ++indegree[b];
  std::vector<int> remaining = indegree;
  std::vector<std::size_t> ready;
  for (std::size_t a = 0; a < n; ++a)
    if (remaining[a] == 0) ready.push_back(a);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t a = ready.back();
    ready.pop_back();
    ++done;
    for (std::size_t b : edges[a])
      if (--remaining[b] == 0) ready.push_back(b);
  }
  auto describe = [&](const Node& node) {
    return node.tensor + "[" + std::to_string(node.position) +
           "] = " + format_affine(node.expr, dims);
  };
  if (done < n) {
    std::string cycle;
    for (std::size_t a = 0; a < n; ++a)
      if (remaining[a] > 0) cycle += (cycle.empty() ? "" : ", ") + describe(nodes[a]);
    issues.push_back({3, "",
                      "the dimension dependence graph has a cycle (subscripts that change "
                      "together): " +
                          cycle});
  }
  // Rule 4: the independent nodes (in-degree 0) must be single loop
  // iterators with unit coefficient and no constant.
  for (std::size_t a = 0; a < n; ++a) {
    if (indegree[a] != 0) continue;
    const Node& node = nodes[a];
    const bool plain =
        node.expr.terms.size() == 1 && node.expr.terms[0].coeff == 1 && node.expr.constant == 0;
    if (!plain)
      issues.push_back({4, node.tensor,
                        "independent subscript " + describe(node) +
                            " is not a plain loop iterator (unit coefficient, no constant)"});
  }
  // A loop dimension that indexes no tensor cannot be mapped by directives.
  for (DimId d = 0; d < op.num_dims(); ++d) {
    bool used = false;
    for (const auto& t : op.tensors()) used = used || t.relevant(d);
    if (!used) issues.push_back({4, "", "dimension " + dim_name(d) + " indexes no tensor"});
  }
  return issues;
}

}  // namespace mapex::mdc
