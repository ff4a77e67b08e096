// A Mapping to and from YAML (moved out of the core file so that the library
// that mdc and the light commands load needs no yaml-cpp).

#include <algorithm>
#include <mapex/checked.hpp>
#include <mapex/mapping.hpp>
#include <mapex/timeloop.hpp>
#include <numeric>
#include <sstream>

#include "mapping_checks.hpp"
#include "yaml_reader.hpp"

namespace mapex {

using detail::cluster_error;
using detail::identity_order;
using detail::keep_error;

namespace {

// `keep: [Weight, Output]`: written only when the mapping states it, so a
// mapping with the default reads back as the default.
void emit_keep(YAML::Emitter& out, const Operator& op, const LevelMapping& lm) {
  if (lm.keep.empty()) return;
  out << YAML::Key << "keep" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (size_t t = 0; t < lm.keep.size(); ++t)
    if (lm.keep[t]) out << op.tensors()[t].name;
  out << YAML::EndSeq;
}

// `keep: [names]`: the tensors the level holds, every other one bypassed.
std::vector<bool> parse_keep(const std::string& origin, const YAML::Node& node,
                             const Operator& op) {
  const auto names = yaml::as_string_list(origin, node, "keep");
  std::vector<bool> keep(op.tensors().size(), false);
  for (const auto& name : names) {
    int t = -1;
    for (size_t i = 0; i < op.tensors().size(); ++i)
      if (op.tensors()[i].name == name) t = static_cast<int>(i);
    if (t < 0) {
      std::string known;
      for (const auto& tensor : op.tensors()) known += (known.empty() ? "" : ", ") + tensor.name;
      yaml::fail(origin, node, "keep",
                 "unknown tensor '" + name + "' of operator '" + op.name() +
                     "'; expected some of: " + known);
    }
    if (keep[static_cast<size_t>(t)])
      yaml::fail(origin, node, "keep", "tensor '" + name + "' is listed twice");
    keep[static_cast<size_t>(t)] = true;
  }
  return keep;
}

}  // namespace

std::string Mapping::to_yaml(const Operator& op, const Architecture& arch) const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (size_t i = 0; i < levels_.size(); ++i) {
    const Level& level = arch.levels()[i];
    const LevelMapping& lm = levels_[i];
    out << YAML::Key << level.name << YAML::Value << YAML::BeginMap;
    if (level.kind == LevelKind::kSpatial) {
      out << YAML::Key << "split" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (size_t d = 0; d < lm.split.size(); ++d)
        if (lm.split[d] > 1) out << YAML::Key << op.dims()[d].name << YAML::Value << lm.split[d];
      out << YAML::EndMap;
      if (!lm.axes.empty()) {
        out << YAML::Key << "axes" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (size_t d = 0; d < lm.axes.size(); ++d)
          if (lm.split[d] > 1) {
            out << YAML::Key << op.dims()[d].name << YAML::Value << YAML::Flow << YAML::BeginSeq;
            for (auto f : lm.axes[d]) out << f;
            out << YAML::EndSeq;
          }
        out << YAML::EndMap;
      }
      if (!lm.order.empty()) {
        out << YAML::Key << "order" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (auto d : lm.order) out << op.dims()[static_cast<size_t>(d)].name;
        out << YAML::EndSeq;
      }
      if (lm.cluster.active()) {
        const ClusterMapping& c = lm.cluster;
        out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
        out << YAML::Key << "split" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (size_t d = 0; d < c.split.size(); ++d)
          if (c.split[d] > 1) out << YAML::Key << op.dims()[d].name << YAML::Value << c.split[d];
        out << YAML::EndMap;
        out << YAML::Key << "tile" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (size_t d = 0; d < c.tile.size(); ++d)
          out << YAML::Key << op.dims()[d].name << YAML::Value << c.tile[d];
        out << YAML::EndMap;
        out << YAML::Key << "order" << YAML::Value << YAML::Flow << YAML::BeginSeq;
        for (auto d : c.order) out << op.dims()[static_cast<size_t>(d)].name;
        out << YAML::EndSeq;
        out << YAML::EndMap;
      }
    } else {
      if (level.kind != LevelKind::kDram) {
        out << YAML::Key << "tile" << YAML::Value << YAML::Flow << YAML::BeginMap;
        for (size_t d = 0; d < lm.tile.size(); ++d)
          out << YAML::Key << op.dims()[d].name << YAML::Value << lm.tile[d];
        out << YAML::EndMap;
      }
      out << YAML::Key << "order" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (auto d : lm.order) out << op.dims()[static_cast<size_t>(d)].name;
      out << YAML::EndSeq;
      emit_keep(out, op, lm);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Mapping Mapping::load(const std::string& path, const Operator& op, const Architecture& arch) {
  if (timeloop::is_timeloop_file(path)) return timeloop::load_mapping(path, op, arch);
  return parse(yaml::read_text(path), path, op, arch);
}

Mapping Mapping::parse(const std::string& yaml_text, const std::string& origin, const Operator& op,
                       const Architecture& arch) {
  const YAML::Node root = yaml::load_text(yaml_text, origin);
  YAML::Node body = root;
  // Accept both a bare map of levels and one under a `mapping:` key.
  // (Node::reset rebinds; plain assignment would overwrite the root.)
  if (root.IsMap() && root.size() == 1 && root["mapping"]) body.reset(root["mapping"]);
  yaml::Map top(origin, body, "a mapping file");
  Mapping mapping = trivial(op, arch);
  const auto n = static_cast<size_t>(op.num_dims());
  std::vector<std::int64_t> child(n, 1);

  auto read_dim_map = [&](const YAML::Node& node, const std::string& key,
                          std::vector<std::int64_t>& values) {
    if (!node.IsMap()) yaml::fail(origin, node, key, "expected a map of dimension to size");
    for (const auto& item : node) {
      const std::string dim_name = yaml::as_string(origin, item.first, key);
      const DimId d = op.find_dim(dim_name);
      if (d < 0) {
        std::string known;
        for (const auto& dim : op.dims()) known += (known.empty() ? "" : ", ") + dim.name;
        yaml::fail(origin, item.first, key,
                   "unknown dimension '" + dim_name + "' of operator '" + op.name() +
                       "'; expected one of: " + known);
      }
      values[static_cast<size_t>(d)] = yaml::as_positive_int(origin, item.second, dim_name);
    }
  };

  auto read_order = [&](const YAML::Node& node, std::vector<DimId>& order) {
    const auto names = yaml::as_string_list(origin, node, "order");
    std::vector<DimId> listed;
    for (const auto& dim_name : names) {
      const DimId d = op.find_dim(dim_name);
      if (d < 0 || std::find(listed.begin(), listed.end(), d) != listed.end())
        yaml::fail(origin, node, "order",
                   "'" + dim_name + "' is not a dimension of '" + op.name() + "' or appears twice");
      listed.push_back(d);
    }
    // Dimensions left out go outermost, in operator order.
    order.clear();
    for (DimId d = 0; d < op.num_dims(); ++d)
      if (std::find(listed.begin(), listed.end(), d) == listed.end()) order.push_back(d);
    order.insert(order.end(), listed.begin(), listed.end());
  };

  // `axes: {C: [2, 16]}`: a split's factor on each axis of the array.
  auto read_axes = [&](const YAML::Node& node, const Level& level, LevelMapping& lm) {
    if (!node.IsMap()) yaml::fail(origin, node, "axes", "expected a map of dimension to factors");
    lm.axes.assign(n, std::vector<std::int64_t>(level.shape.size(), 1));
    for (const auto& item : node) {
      const std::string dim_name = yaml::as_string(origin, item.first, "axes");
      const DimId d = op.find_dim(dim_name);
      if (d < 0)
        yaml::fail(origin, item.first, "axes",
                   "unknown dimension '" + dim_name + "' of operator '" + op.name() + "'");
      if (!item.second.IsSequence() || item.second.size() != level.shape.size())
        yaml::fail(origin, item.second, dim_name,
                   "expected one factor per axis of '" + level.name + "' (" +
                       std::to_string(level.shape.size()) + ")");
      for (size_t a = 0; a < level.shape.size(); ++a)
        lm.axes[static_cast<size_t>(d)][a] =
            yaml::as_positive_int(origin, item.second[a], dim_name);
    }
  };

  // `cluster: {split: {K: 16}, tile: {M: 64, N: 4, K: 16}, order: [M, N, K]}`.
  // Tile entries left out default to the span of one cluster step (no
  // temporal loop there). Errors carry the line of the offending key.
  auto read_cluster = [&](const YAML::Node& node, const Level& level, LevelMapping& lm,
                          const std::vector<std::int64_t>& below) {
    yaml::Map m(origin, node, "cluster of level '" + level.name + "'");
    ClusterMapping& c = lm.cluster;
    c.split.assign(n, 1);
    if (auto split = m.optional("split")) read_dim_map(*split, "split", c.split);
    c.tile.assign(n, 1);
    for (size_t d = 0; d < n; ++d) c.tile[d] = mul_capped(below[d], c.split[d], op.dims()[d].bound);
    std::optional<YAML::Node> tile = m.optional("tile");
    if (tile) read_dim_map(*tile, "tile", c.tile);
    c.order = identity_order(op.num_dims());
    if (auto order = m.optional("order")) read_order(*order, c.order);
    m.finish();
    if (auto error = cluster_error(op, lm, below))
      yaml::fail(origin, tile ? *tile : node, "cluster", *error);
  };

  // Per level: the node a structural error of the level is reported at
  // (its split or tile map, else the level), and that key. Emplaced, as
  // assigning a YAML::Node would rebind the node it was copied from.
  std::vector<std::optional<YAML::Node>> level_node(arch.levels().size());
  std::vector<std::string> level_key(arch.levels().size());
  const auto remember = [&](size_t i, const YAML::Node& at, const std::string& key) {
    level_node[i].emplace(at);
    level_key[i] = key;
  };
  for (size_t i = 0; i < arch.levels().size(); ++i) {
    const Level& level = arch.levels()[i];
    LevelMapping& lm = mapping.levels_[i];
    auto node = top.optional(level.name);
    if (node) remember(i, *node, level.name);
    if (level.kind == LevelKind::kSpatial) {
      if (node) {
        yaml::Map m(origin, *node, "level '" + level.name + "'");
        if (auto split = m.optional("split")) {
          read_dim_map(*split, "split", lm.split);
          remember(i, *split, "split");
        }
        if (auto axes = m.optional("axes")) read_axes(*axes, level, lm);
        if (auto order = m.optional("order")) read_order(*order, lm.order);
        if (auto cluster = m.optional("cluster")) read_cluster(*cluster, level, lm, child);
        if (auto keep = m.optional("keep"))
          yaml::fail(origin, *keep, "keep",
                     "level '" + level.name +
                         "' is spatial and holds no data; keep and bypass "
                         "belong to buffer levels");
        m.finish();
      }
      child = spatial_span(op, lm, child);
      continue;
    }
    if (level.kind == LevelKind::kBuffer) lm.tile = child;  // default: no loop at this level
    if (node) {
      yaml::Map m(origin, *node, "level '" + level.name + "'");
      if (level.kind == LevelKind::kBuffer) {
        if (auto tile = m.optional("tile")) {
          read_dim_map(*tile, "tile", lm.tile);
          remember(i, *tile, "tile");
        }
        if (auto keep = m.optional("keep")) {
          lm.keep = parse_keep(origin, *keep, op);
          if (auto error = keep_error(op, level, lm))
            yaml::fail(origin, *keep, "keep", "level '" + level.name + "': " + *error);
        }
      } else if (auto keep = m.optional("keep")) {
        yaml::fail(origin, *keep, "keep",
                   "level '" + level.name +
                       "' is DRAM, which holds every tensor; keep and "
                       "bypass belong to buffer levels");
      }
      if (auto order = m.optional("order")) read_order(*order, lm.order);
      m.finish();
    }
    child = lm.tile;
  }
  top.finish();
  if (auto error = mapping.structural_error(op, arch)) {
    // structural_error names the level first ("level 'L1': ..."): report
    // it where that level's tiles or splits were written.
    for (size_t i = 0; i < arch.levels().size(); ++i)
      if (level_node[i] && error->rfind("level '" + arch.levels()[i].name + "'", 0) == 0)
        yaml::fail(origin, *level_node[i], level_key[i], *error);
    yaml::fail(origin, root, "", *error);
  }
  return mapping;
}

}  // namespace mapex
