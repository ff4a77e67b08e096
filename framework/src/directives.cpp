// KAPLA's tensor-centric directives (§III-B): the conversion from and to the
// canonical mapping, the parser and the printer. See mapex/directives.hpp.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <mapex/checked.hpp>
#include <mapex/directives.hpp>
#include <sstream>

namespace mapex {

namespace {

/// The data-holding levels of a chip and, for each buffer, the one spatial
/// level between it and the next data level (-1 when none).
struct LevelPlan {
  std::vector<int> data;     ///< indices of buffer and DRAM levels, innermost first
  std::vector<int> spatial;  ///< per data level except DRAM: spatial level above, or -1
};

/// `where`: the directives that need the plan (their layer section), or
/// the architecture alone when a mapping is converted.
LevelPlan plan_levels(const Architecture& arch, const SourceLocation& where) {
  LevelPlan p;
  const auto& levels = arch.levels();
  if (levels.front().kind == LevelKind::kSpatial)
    throw InputError(where, levels.front().name,
                     "directives need a buffer below every spatial level; '" + levels.front().name +
                         "' is the innermost level");
  for (int i = 0; i < arch.num_levels(); ++i) {
    if (levels[static_cast<size_t>(i)].kind == LevelKind::kSpatial) {
      if (p.spatial.back() >= 0)
        throw InputError(where, levels[static_cast<size_t>(i)].name,
                         "directives allow one spatial level between two data levels; '" +
                             levels[static_cast<size_t>(p.spatial.back())].name + "' and '" +
                             levels[static_cast<size_t>(i)].name + "' are adjacent");
      p.spatial.back() = i;
      continue;
    }
    p.data.push_back(i);
    if (levels[static_cast<size_t>(i)].kind == LevelKind::kBuffer) p.spatial.push_back(-1);
  }
  return p;
}

/// Span of the stacked tiles of data level data[k]: its tile times the
/// split of the spatial level above it.
std::vector<std::int64_t> stacked_span(const Operator& op, const Architecture& arch,
                                       const Mapping& m, const LevelPlan& p, size_t k) {
  const int top = p.spatial[k] >= 0 ? p.spatial[k] : p.data[k];
  return m.span(op, arch, top);
}

/// Where in the text: a line and the column its directive starts at.
struct At {
  int line = 0;
  int column = 0;
};

/// Fails at `at`: a directive (its line and column) or an At.
template <class Where>
[[noreturn]] void fail_at(const std::string& origin, const Where& at, const std::string& key,
                          const std::string& problem) {
  throw InputError(SourceLocation{origin, at.line, at.column}, key, problem);
}

}  // namespace

std::int64_t sharing_factor(const Operator& op, const Architecture& arch, const Mapping& mapping,
                            int level, int tensor) {
  if (level <= 0 || level + 1 >= arch.num_levels()) return 1;
  const Level& above = arch.levels()[static_cast<size_t>(level + 1)];
  if (above.kind != LevelKind::kSpatial || !above.noc.forwarding) return 1;
  const auto& split = mapping.level(level + 1).split;
  std::int64_t replicas = 1;
  for (DimId d = 0; d < op.num_dims(); ++d)
    if (!op.relevant(tensor, d)) replicas *= split[static_cast<size_t>(d)];
  std::vector<double> extent;
  for (auto t : mapping.level(level).tile) extent.push_back(static_cast<double>(t));
  const auto elements =
      static_cast<std::int64_t>(op.tensors()[static_cast<size_t>(tensor)].footprint(extent));
  return std::max<std::int64_t>(1, std::min(replicas, elements));
}

namespace {

// The `bypass` flags of a level section become the level's `keep`; a
// section that keeps exactly the default (every tensor, or a partitioned
// level's own) leaves `keep` empty, as a mapping file without `keep` does.
void set_keep(Mapping& m, const Operator& op, const Architecture& arch, int level,
              const LevelDirectives& ld) {
  std::vector<bool> keep(op.tensors().size(), true);
  for (const auto& td : ld.tensors)
    for (size_t t = 0; t < op.tensors().size(); ++t)
      if (op.tensors()[t].name == td.tensor) keep[t] = !td.bypass;
  auto& lm = m.level(level);
  lm.keep.clear();
  for (size_t t = 0; t < keep.size(); ++t)
    if (m.keeps(op, arch, level, static_cast<int>(t)) != keep[t]) {
      lm.keep = keep;
      return;
    }
}

/// The tensor{} directives of a level whose tiles span `tile`.
std::vector<TensorDirective> tensor_directives(const Operator& op, const Architecture& arch,
                                               const Mapping& mapping, int level,
                                               const std::vector<std::int64_t>& tile, bool buffer) {
  std::vector<TensorDirective> out;
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
    TensorDirective td;
    td.tensor = op.tensors()[static_cast<size_t>(t)].name;
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (op.relevant(t, d)) td.sizes.emplace_back(d, tile[static_cast<size_t>(d)]);
    td.shr = buffer ? sharing_factor(op, arch, mapping, level, t) : 1;
    out.push_back(std::move(td));
  }
  return out;
}

/// stack() per split dimension, each shifted by the span below it.
void add_stacks(LevelDirectives& ld, const std::vector<std::int64_t>& below,
                const std::vector<std::int64_t>& split) {
  for (size_t d = 0; d < split.size(); ++d)
    if (split[d] > 1)
      ld.stacks.push_back(StackDirective{static_cast<DimId>(d), below[d], split[d], 0});
}

/// update() per loop of `order` that steps `span` through `tile`, innermost first.
void add_updates(LevelDirectives& ld, const std::vector<DimId>& order,
                 const std::vector<std::int64_t>& tile, const std::vector<std::int64_t>& span) {
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto d = static_cast<size_t>(*it);
    if (ceil_div(tile[d], span[d]) > 1) ld.updates.push_back(UpdateDirective{*it, span[d], 0});
  }
}

}  // namespace

LayerDirectives to_directives(const Operator& op, const Architecture& arch,
                              const Mapping& mapping) {
  const LevelPlan p = plan_levels(arch, SourceLocation{"architecture '" + arch.name() + "'", 0, 0});
  LayerDirectives out;
  out.layer = op.name();
  for (size_t k = 0; k + 1 < p.data.size(); ++k) {
    const int b = p.data[k];
    LevelDirectives ld;
    ld.level = arch.levels()[static_cast<size_t>(b)].name;
    const auto& tile = mapping.level(b).tile;
    ld.tensors = tensor_directives(op, arch, mapping, b, tile, true);
    for (int t = 0; t < static_cast<int>(ld.tensors.size()); ++t)
      ld.tensors[static_cast<size_t>(t)].bypass = !mapping.keeps(op, arch, b, t);
    const auto span = stacked_span(op, arch, mapping, p, k);
    const auto& parent = mapping.level(p.data[k + 1]);
    const int s = p.spatial[k];
    if (s >= 0 && mapping.level(s).cluster.active()) {
      // A cluster level (FLASH Table 2) is a section of its own, named after
      // the spatial level: the buffer's stacks are the units of a cluster
      // and its updates the cluster's steps through its tile; the cluster
      // section declares the cluster tile, stacks the clusters and carries
      // the parent's loops (a level without storage in KAPLA's scopes).
      const LevelMapping& lm = mapping.level(s);
      std::vector<std::int64_t> step;
      spatial_span(op, lm, tile, &step);
      add_stacks(ld, tile, lm.cluster.split);
      add_updates(ld, lm.cluster.order, lm.cluster.tile, step);
      out.levels.push_back(std::move(ld));
      LevelDirectives cl;
      cl.level = arch.levels()[static_cast<size_t>(s)].name;
      cl.tensors = tensor_directives(op, arch, mapping, s, lm.cluster.tile, false);
      add_stacks(cl, lm.cluster.tile, lm.split);
      add_updates(cl, parent.order, parent.tile, span);
      out.levels.push_back(std::move(cl));
      continue;
    }
    if (s >= 0) add_stacks(ld, tile, mapping.level(s).split);
    add_updates(ld, parent.order, parent.tile, span);
    out.levels.push_back(std::move(ld));
  }
  return out;
}

Mapping to_mapping(const LayerDirectives& directives, const Operator& op, const Architecture& arch,
                   const std::string& origin) {
  // Errors about the chip's structure are placed at the layer's section.
  const LevelPlan p = plan_levels(arch, SourceLocation{origin, directives.line, directives.column});
  const auto n = static_cast<size_t>(op.num_dims());
  Mapping m = Mapping::trivial(op, arch);
  const std::string layer = "layer '" + directives.layer + "'";
  // One section per buffer level, in the chip's order, and one per cluster
  // level (a section named after a spatial level).
  std::vector<const LevelDirectives*> section(p.data.size() - 1, nullptr);
  std::vector<const LevelDirectives*> cluster(p.data.size() - 1, nullptr);
  for (const auto& ld : directives.levels) {
    const int index = arch.find_level(ld.level);
    const auto spatial = std::find(p.spatial.begin(), p.spatial.end(), index);
    if (index >= 0 && spatial != p.spatial.end()) {
      auto& slot = cluster[static_cast<size_t>(spatial - p.spatial.begin())];
      if (slot) fail_at(origin, ld, ld.level, layer + ": level '" + ld.level + "' given twice");
      slot = &ld;
      continue;
    }
    const auto pos = std::find(p.data.begin(), p.data.end(), index);
    if (index < 0 || pos == p.data.end() || pos + 1 == p.data.end())
      fail_at(origin, ld, ld.level,
              layer + ": '" + ld.level + "' is not a buffer level of architecture '" + arch.name() +
                  "' (DRAM holds whole tensors and takes no directives)");
    auto& slot = section[static_cast<size_t>(pos - p.data.begin())];
    if (slot) fail_at(origin, ld, ld.level, layer + ": level '" + ld.level + "' given twice");
    slot = &ld;
  }
  for (size_t k = 0; k < section.size(); ++k)
    if (!section[k])
      fail_at(origin, directives, arch.levels()[static_cast<size_t>(p.data[k])].name,
              layer + " has no directives for level '" +
                  arch.levels()[static_cast<size_t>(p.data[k])].name + "'");

  // Tiles from the tensor sizes: every dimension that indexes a tensor
  // takes its size there, and all tensors must agree.
  auto read_tile = [&](const LevelDirectives& ld) {
    std::vector<std::int64_t> tile(n, 0);
    std::vector<int> seen_tensor(op.tensors().size(), 0);
    for (const auto& td : ld.tensors) {
      int t = -1;
      for (size_t i = 0; i < op.tensors().size(); ++i)
        if (op.tensors()[i].name == td.tensor) t = static_cast<int>(i);
      if (t < 0)
        fail_at(origin, td, td.tensor,
                layer + " has no tensor '" + td.tensor + "' at level '" + ld.level + "'");
      if (seen_tensor[static_cast<size_t>(t)]++)
        fail_at(origin, td, td.tensor,
                "tensor{" + td.tensor + "} declared twice at level '" + ld.level + "'");
      std::vector<int> given(n, 0);
      for (const auto& [d, size] : td.sizes) {
        const auto du = static_cast<size_t>(d);
        const std::string& dim = op.dims()[du].name;
        if (!op.relevant(t, d))
          fail_at(origin, td, dim,
                  "dimension " + dim + " does not index tensor '" + td.tensor + "'");
        if (given[du]++) fail_at(origin, td, dim, "dimension " + dim + " given twice");
        if (size < 1 || size > op.dims()[du].bound)
          fail_at(origin, td, dim,
                  "size " + std::to_string(size) + " of " + dim + " outside [1, " +
                      std::to_string(op.dims()[du].bound) + "]");
        if (tile[du] && tile[du] != size)
          fail_at(origin, td, dim,
                  "tensor{" + td.tensor + "} has " + dim + "=" + std::to_string(size) +
                      " but another tensor at level '" + ld.level + "' has " + dim + "=" +
                      std::to_string(tile[du]));
        tile[du] = size;
      }
      for (DimId d = 0; d < op.num_dims(); ++d)
        if (op.relevant(t, d) && !given[static_cast<size_t>(d)])
          fail_at(origin, td, op.dims()[static_cast<size_t>(d)].name,
                  "tensor{" + td.tensor + "} at level '" + ld.level + "' gives no size for " +
                      op.dims()[static_cast<size_t>(d)].name);
    }
    for (size_t t = 0; t < op.tensors().size(); ++t)
      if (!seen_tensor[t])
        fail_at(
            origin, ld, op.tensors()[t].name,
            layer + ": level '" + ld.level + "' declares no tensor{" + op.tensors()[t].name + "}");
    for (auto& v : tile)
      if (!v) v = 1;  // a dimension that indexes no tensor
    return tile;
  };
  for (size_t k = 0; k < section.size(); ++k) {
    m.level(p.data[k]).tile = read_tile(*section[k]);
    set_keep(m, op, arch, p.data[k], *section[k]);
    if (!cluster[k]) continue;
    ClusterMapping& c = m.level(p.spatial[k]).cluster;
    c.split.assign(n, 1);
    c.tile = read_tile(*cluster[k]);
    c.order.clear();
    for (DimId d = 0; d < op.num_dims(); ++d) c.order.push_back(d);
  }

  // Stacks: each partitions one dimension; its shift is the span stacked so
  // far (§III-B: stacks apply recursively in declared order). A buffer's
  // stacks fill its cluster's units when a cluster section follows it.
  // Units each spatial level's stacks have used so far (its cluster's
  // included): a stack beyond the fan-out is placed at its own line.
  std::vector<std::int64_t> units(section.size(), 1);
  auto read_stacks = [&](const LevelDirectives& ld, const std::vector<std::int64_t>& below,
                         std::vector<std::int64_t>& split, size_t k) {
    const Level& array = arch.levels()[static_cast<size_t>(p.spatial[k])];
    for (const auto& s : ld.stacks) {
      const auto du = static_cast<size_t>(s.dim);
      const std::int64_t expected = mul_saturating(below[du], split[du]);
      if (s.shift != expected)
        fail_at(origin, s, op.dims()[du].name,
                "stack shifts " + op.dims()[du].name + " by " + std::to_string(s.shift) +
                    "; mapex stacks partition, so the shift must be the stacked span " +
                    std::to_string(expected));
      if (s.repl < 1) fail_at(origin, s, "repl", "stack needs a positive unit count");
      units[k] = mul_saturating(units[k], s.repl);
      if (units[k] > array.fanout())
        fail_at(origin, s, "repl",
                "stacks at level '" + ld.level + "' use more units than the " +
                    std::to_string(array.fanout()) + " of level '" + array.name + "'");
      split[du] *= s.repl;
    }
  };
  for (size_t k = 0; k < section.size(); ++k) {
    const LevelDirectives& ld = *section[k];
    if (!ld.stacks.empty() && p.spatial[k] < 0)
      fail_at(origin, ld.stacks.front(), ld.level,
              "level '" + ld.level + "' has no array above it to stack over");
    if (p.spatial[k] < 0) continue;
    LevelMapping& lm = m.level(p.spatial[k]);
    read_stacks(ld, m.level(p.data[k]).tile, cluster[k] ? lm.cluster.split : lm.split, k);
    if (cluster[k]) read_stacks(*cluster[k], lm.cluster.tile, lm.split, k);
  }

  // Updates: a loop order, innermost first, stepping `span` through `tile`.
  auto read_updates = [&](const LevelDirectives& ld, const std::vector<std::int64_t>& span,
                          const std::vector<std::int64_t>& tile, const std::string& above) {
    std::vector<int> used(n, 0);
    std::vector<DimId> inner_first;
    for (const auto& u : ld.updates) {
      const auto du = static_cast<size_t>(u.dim);
      const std::string& dim = op.dims()[du].name;
      if (used[du]++)
        fail_at(origin, u, dim,
                "dimension " + dim + " updated twice at level '" + ld.level +
                    "'; mapex loops step each dimension once per level");
      if (u.step != span[du])
        fail_at(origin, u, dim,
                "update steps " + dim + " by " + std::to_string(u.step) +
                    "; the step must be the stacked span " + std::to_string(span[du]));
      inner_first.push_back(u.dim);
    }
    std::vector<DimId> order;
    for (DimId d = 0; d < op.num_dims(); ++d) {
      const auto du = static_cast<size_t>(d);
      if (used[du]) continue;
      if (ceil_div(tile[du], span[du]) > 1)
        fail_at(origin, ld, op.dims()[du].name,
                "level '" + ld.level + "': " + op.dims()[du].name + " grows from " +
                    std::to_string(span[du]) + " to " + std::to_string(tile[du]) + " at '" + above +
                    "' but no update steps along it");
      order.push_back(d);
    }
    order.insert(order.end(), inner_first.rbegin(), inner_first.rend());
    return order;
  };
  for (size_t k = 0; k < section.size(); ++k) {
    const int parent = p.data[k + 1];
    const std::string& parent_name = arch.levels()[static_cast<size_t>(parent)].name;
    if (cluster[k]) {
      LevelMapping& lm = m.level(p.spatial[k]);
      std::vector<std::int64_t> step;
      spatial_span(op, lm, m.level(p.data[k]).tile, &step);
      lm.cluster.order = read_updates(*section[k], step, lm.cluster.tile,
                                      arch.levels()[static_cast<size_t>(p.spatial[k])].name);
      m.level(parent).order = read_updates(*cluster[k], stacked_span(op, arch, m, p, k),
                                           m.level(parent).tile, parent_name);
      continue;
    }
    m.level(parent).order = read_updates(*section[k], stacked_span(op, arch, m, p, k),
                                         m.level(parent).tile, parent_name);
  }

  if (auto err = m.structural_error(op, arch))
    fail_at(origin, directives, directives.layer, layer + ": " + *err);

  // shr is derived from the hardware: check what was written.
  for (size_t k = 0; k < section.size(); ++k)
    for (const auto& td : section[k]->tensors) {
      int t = 0;
      while (op.tensors()[static_cast<size_t>(t)].name != td.tensor) ++t;
      const std::int64_t shr = sharing_factor(op, arch, m, p.data[k], t);
      if (td.shr != shr)
        fail_at(origin, td, "shr",
                "tensor{" + td.tensor + "} at level '" + section[k]->level +
                    "' has shr=" + std::to_string(td.shr) + " but the chip and stacks give " +
                    std::to_string(shr) +
                    " (sharing follows same-level forwarding of the array above)");
    }
  return m;
}

Mapping normalise_orders(const Mapping& mapping, const Operator& op, const Architecture& arch) {
  Mapping out = mapping;
  for (int i = 0; i < arch.num_levels(); ++i) {
    const auto kind = arch.levels()[static_cast<size_t>(i)].kind;
    auto& lm = out.level(i);
    if (kind == LevelKind::kSpatial) {
      // A cluster level's loops, like a buffer's: one-trip loops first.
      if (!lm.cluster.active()) continue;
      std::vector<std::int64_t> step;
      spatial_span(
          op, lm,
          i == 0 ? std::vector<std::int64_t>(lm.split.size(), 1) : mapping.span(op, arch, i - 1),
          &step);
      std::vector<DimId> ones, multi;
      for (DimId d = 0; d < op.num_dims(); ++d)
        if (ceil_div(lm.cluster.tile[static_cast<size_t>(d)], step[static_cast<size_t>(d)]) <= 1)
          ones.push_back(d);
      for (DimId d : lm.cluster.order)
        if (ceil_div(lm.cluster.tile[static_cast<size_t>(d)], step[static_cast<size_t>(d)]) > 1)
          multi.push_back(d);
      ones.insert(ones.end(), multi.begin(), multi.end());
      lm.cluster.order = ones;
      continue;
    }
    if (i == 0) {
      // The innermost buffer's loops only sequence MACs on resident data:
      // directives carry no order for them.
      lm.order.clear();
      for (DimId d = 0; d < op.num_dims(); ++d) lm.order.push_back(d);
      continue;
    }
    const auto span = mapping.span(op, arch, i - 1);
    std::vector<DimId> ones, multi;
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (ceil_div(lm.tile[static_cast<size_t>(d)], span[static_cast<size_t>(d)]) <= 1)
        ones.push_back(d);
    for (DimId d : lm.order)
      if (ceil_div(lm.tile[static_cast<size_t>(d)], span[static_cast<size_t>(d)]) > 1)
        multi.push_back(d);
    ones.insert(ones.end(), multi.begin(), multi.end());
    lm.order = ones;
  }
  return out;
}

// --- text ------------------------------------------------------------------

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool is_name(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  return true;
}

/// Parses a positive integer; throws with the line otherwise.
std::int64_t parse_count(const std::string& text, const std::string& origin, const At& line,
                         const std::string& key) {
  std::int64_t v = 0;
  const std::string t = trim(text);
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size() || v < 1)
    fail_at(origin, line, key, "expected a positive integer, got '" + t + "'");
  return v;
}

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

DimId dim_of(const Operator& op, const std::string& name, const std::string& origin,
             const At& line) {
  const DimId d = op.find_dim(name);
  if (d < 0) {
    std::string known;
    for (const auto& dim : op.dims()) known += (known.empty() ? "" : ", ") + dim.name;
    fail_at(origin, line, name,
            "layer '" + op.name() + "' has no dimension '" + name + "' (it has " + known + ")");
  }
  return d;
}

/// The argument list of `word(...)`, or fails naming what is malformed.
std::string arguments(const std::string& body, const std::string& origin, const At& line,
                      const std::string& word) {
  const auto open = body.find('(');
  if (open == std::string::npos || body.back() != ')')
    fail_at(origin, line, word, "expected " + word + "(...)");
  return body.substr(open + 1, body.size() - open - 2);
}

/// Splits `D+=k` into (D, k).
std::pair<std::string, std::int64_t> increment(const std::string& arg, const std::string& origin,
                                               const At& line, const std::string& word) {
  const auto pos = arg.find("+=");
  if (pos == std::string::npos) fail_at(origin, line, word, "expected DIM+=N, got '" + arg + "'");
  const std::string dim = trim(arg.substr(0, pos));
  return {dim, parse_count(arg.substr(pos + 2), origin, line, dim)};
}

}  // namespace

std::vector<LayerDirectives> parse_directives(const std::string& text, const std::string& origin,
                                              const std::vector<const Operator*>& ops,
                                              const Architecture& arch) {
  std::vector<LayerDirectives> out;
  const Operator* op = nullptr;
  std::istringstream in(text);
  std::string raw;
  At line;
  while (std::getline(in, raw)) {
    ++line.line;
    const auto start = raw.find_first_not_of(" \t");
    line.column = start == std::string::npos ? 1 : static_cast<int>(start) + 1;
    const auto comment = raw.find_first_of("%#");
    const std::string s = trim(comment == std::string::npos ? raw : raw.substr(0, comment));
    if (s.empty()) continue;
    if (s.back() == ':') {
      const std::string name = trim(s.substr(0, s.size() - 1));
      if (!is_name(name)) fail_at(origin, line, name, "expected a layer or level name before ':'");
      if (arch.find_level(name) >= 0) {
        if (!op)
          fail_at(origin, line, name, "level section '" + name + "' outside a layer section");
        LevelDirectives ld;
        ld.level = name;
        ld.line = line.line;
        ld.column = line.column;
        out.back().levels.push_back(std::move(ld));
        continue;
      }
      op = nullptr;
      for (const Operator* o : ops)
        if (o->name() == name) op = o;
      if (!op)
        fail_at(origin, line, name,
                "'" + name + "' is neither a layer of the workload nor a level of architecture '" +
                    arch.name() + "'");
      for (const auto& l : out)
        if (l.layer == name) fail_at(origin, line, name, "layer '" + name + "' given twice");
      LayerDirectives ly;
      ly.layer = name;
      ly.line = line.line;
      ly.column = line.column;
      out.push_back(std::move(ly));
      continue;
    }
    if (!op || out.back().levels.empty())
      fail_at(origin, line, "", "directive '" + s + "' outside a level section");
    LevelDirectives& ld = out.back().levels.back();
    if (s.rfind("tensor{", 0) == 0) {
      const auto close = s.find('}');
      if (close == std::string::npos) fail_at(origin, line, "tensor", "expected tensor{NAME}(...)");
      TensorDirective td;
      td.tensor = trim(s.substr(7, close - 7));
      td.line = line.line;
      td.column = line.column;
      const std::string args = arguments(s.substr(close + 1), origin, line, "tensor");
      for (const auto& a : split_args(args)) {
        if (trim(a) == "bypass") {
          td.bypass = true;
          continue;
        }
        const auto eq = a.find('=');
        if (eq == std::string::npos)
          fail_at(origin, line, td.tensor, "expected DIM=SIZE, shr=K or bypass, got '" + a + "'");
        const std::string key = trim(a.substr(0, eq));
        const std::int64_t v = parse_count(a.substr(eq + 1), origin, line, key);
        if (key == "shr")
          td.shr = v;
        else
          td.sizes.emplace_back(dim_of(*op, key, origin, line), v);
      }
      ld.tensors.push_back(std::move(td));
    } else if (s.rfind("stack", 0) == 0) {
      const auto args = split_args(arguments(s, origin, line, "stack"));
      if (args.size() != 2)
        fail_at(origin, line, "stack",
                "expected stack(DIM+=SHIFT, REPL) with one dimension (mapex stacks partition one "
                "dimension each), got " +
                    std::to_string(args.size()) + " arguments");
      StackDirective st;
      st.line = line.line;
      st.column = line.column;
      auto [dim, shift] = increment(args[0], origin, line, "stack");
      st.dim = dim_of(*op, dim, origin, line);
      st.shift = shift;
      st.repl = parse_count(args[1], origin, line, "repl");
      ld.stacks.push_back(st);
    } else if (s.rfind("update", 0) == 0) {
      const auto args = split_args(arguments(s, origin, line, "update"));
      if (args.size() != 1)
        fail_at(origin, line, "update",
                "expected update(DIM+=STEP) with one dimension (one loop per update), got " +
                    std::to_string(args.size()) + " arguments");
      UpdateDirective u;
      u.line = line.line;
      u.column = line.column;
      auto [dim, step] = increment(args[0], origin, line, "update");
      u.dim = dim_of(*op, dim, origin, line);
      u.step = step;
      ld.updates.push_back(u);
    } else {
      fail_at(origin, line, "",
              "expected tensor{...}(...), stack(...) or update(...), got '" + s + "'");
    }
  }
  return out;
}

std::string format_directives(const LayerDirectives& directives, const Operator& op) {
  std::ostringstream out;
  out << directives.layer << ":\n";
  for (const auto& ld : directives.levels) {
    out << "  " << ld.level << ":\n";
    for (const auto& td : ld.tensors) {
      out << "    tensor{" << td.tensor << "}(";
      for (size_t i = 0; i < td.sizes.size(); ++i)
        out << (i ? ", " : "") << op.dims()[static_cast<size_t>(td.sizes[i].first)].name << "="
            << td.sizes[i].second;
      if (td.shr > 1) out << ", shr=" << td.shr;
      if (td.bypass) out << ", bypass";
      out << ")\n";
    }
    for (const auto& s : ld.stacks)
      out << "    stack(" << op.dims()[static_cast<size_t>(s.dim)].name << "+=" << s.shift << ", "
          << s.repl << ")\n";
    for (const auto& u : ld.updates)
      out << "    update(" << op.dims()[static_cast<size_t>(u.dim)].name << "+=" << u.step << ")\n";
  }
  return out.str();
}

}  // namespace mapex
