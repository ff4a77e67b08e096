// Reading a ConstraintSpec from YAML (moved out of the core file so that the library
// that mdc and the light commands load needs no yaml-cpp).

#include "constraints_yaml.hpp"

#include <algorithm>
#include <limits>
#include <mapex/checked.hpp>
#include <mapex/constraints.hpp>
#include <mapex/mapping.hpp>
#include <mapex/timeloop.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "join_names.hpp"
#include "yaml_reader.hpp"

namespace mapex {

using detail::join;

namespace {

/// `cluster: {parallel: [K], split: {K: 16}, tile: {M: 64}, orders: [[M, N, K]]}`
/// (every key optional; `cluster: {}` turns the cluster level on, all free).
ClusterConstraintSpec parse_cluster_spec(const std::string& file, const YAML::Node& node) {
  ClusterConstraintSpec cs;
  cs.where = yaml::location(file, node);
  yaml::Map m(file, node, "a cluster block");
  if (auto p = m.optional("parallel")) cs.parallel = yaml::as_string_list(file, *p, "parallel");
  auto sizes = [&](const char* key, std::map<std::string, std::int64_t>& out) {
    if (auto f = m.optional(key)) {
      if (!f->IsMap()) yaml::fail(file, *f, key, "expected a map of dimension to size");
      for (const auto& kv : *f)
        out[yaml::as_string(file, kv.first, key)] = yaml::as_positive_int(file, kv.second, key);
    }
  };
  sizes("split", cs.split);
  sizes("tile", cs.tile);
  if (auto o = m.optional("orders")) {
    if (!o->IsSequence() || o->size() == 0)
      yaml::fail(file, *o, "orders", "expected a list of loop orders (lists of dimensions)");
    for (const auto& order : *o) cs.orders.push_back(yaml::as_string_list(file, order, "orders"));
  }
  if (auto o = m.optional("order")) cs.orders.push_back(yaml::as_string_list(file, *o, "order"));
  m.finish();
  return cs;
}

/// `max_factor: {K: 4}` (or `min_factor`): dimension -> bound of at least 1,
/// each dimension once, with the location of each entry.
void parse_factor_limits(const std::string& file, yaml::Map& m, const char* key,
                         std::map<std::string, FactorLimitSpec>& out) {
  const auto node = m.optional(key);
  if (!node) return;
  if (!node->IsMap())
    yaml::fail(file, *node, key, "expected a map of dimension to a factor bound, e.g. {K: 4}");
  for (const auto& kv : *node) {
    const std::string name = yaml::as_string(file, kv.first, key);
    const std::int64_t v = yaml::as_int(file, kv.second, key);
    if (v < 1)
      yaml::fail(file, kv.second, key,
                 "a factor bound is at least 1, got " + std::to_string(v) + " for '" + name + "'");
    if (out.count(name)) yaml::fail(file, kv.first, key, "'" + name + "' is bounded twice");
    out[name] = FactorLimitSpec{v, yaml::location(file, kv.first)};
  }
}

/// `innermost: [K, C]`: a non-empty list of dimension names, outermost
/// first, each with its location.
void parse_innermost(const std::string& file, const YAML::Node& node, LevelConstraintSpec& ls) {
  if (!node.IsSequence() || node.size() == 0)
    yaml::fail(file, node, "innermost",
               "expected a list of dimensions, the last one innermost, e.g. [K, C]");
  for (const auto& item : node) {
    ls.innermost.push_back(yaml::as_string(file, item, "innermost"));
    ls.innermost_where.push_back(yaml::location(file, item));
  }
}

}  // namespace

ConstraintSpec parse_constraint_spec(const std::string& file, const YAML::Node& node) {
  yaml::Map m(file, node, "a mapspace block");
  ConstraintSpec spec;
  spec.factors_only = m.boolean("factors_only", true);
  spec.check_capacity = m.boolean("check_capacity", true);
  spec.explore_bypass = m.boolean("explore_bypass", false);
  if (auto p = m.optional("max_parallel_dims")) {
    const std::int64_t v = yaml::as_int(file, *p, "max_parallel_dims");
    if (v < 0) yaml::fail(file, *p, "max_parallel_dims", "expected 0 (the array's rank) or more");
    spec.max_parallel_dims = static_cast<int>(v);
  }
  if (auto p = m.optional("min_utilization")) {
    spec.min_utilization = yaml::as_double(file, *p, "min_utilization");
    spec.utilization_where = yaml::location(file, *p);
    if (!(spec.min_utilization >= 0 && spec.min_utilization <= 1))
      yaml::fail(file, *p, "min_utilization", "expected a fraction of the PEs in [0, 1]");
  }
  if (auto s = m.optional("style")) {
    spec.style = yaml::as_string(file, *s, "style");
    spec.style_where = yaml::location(file, *s);
    const auto& names = style_names();
    if (std::find(names.begin(), names.end(), spec.style) == names.end())
      yaml::fail(file, *s, "style",
                 "expected one of " + join(names) + ", got '" + spec.style + "'");
  } else {
    spec.style_where = yaml::location(file, node);
  }
  if (auto levels = m.optional("levels")) {
    if (!levels->IsMap())
      yaml::fail(file, *levels, "levels", "expected a map of level name to its constraints");
    for (const auto& item : *levels) {
      LevelConstraintSpec ls;
      ls.level = yaml::as_string(file, item.first, "levels");
      ls.where = yaml::location(file, item.first);
      yaml::Map lm(file, item.second, "the constraints of level '" + ls.level + "'");
      if (auto p = lm.optional("parallel"))
        ls.parallel = yaml::as_string_list(file, *p, "parallel");
      if (auto f = lm.optional("fixed")) {
        if (!f->IsMap()) yaml::fail(file, *f, "fixed", "expected a map of dimension to size");
        for (const auto& kv : *f)
          ls.fixed[yaml::as_string(file, kv.first, "fixed")] =
              yaml::as_positive_int(file, kv.second, "fixed");
      }
      parse_factor_limits(file, lm, "max_factor", ls.max_factor);
      parse_factor_limits(file, lm, "min_factor", ls.min_factor);
      if (auto p = lm.optional("innermost")) parse_innermost(file, *p, ls);
      if (auto o = lm.optional("orders")) {
        if (!o->IsSequence() || o->size() == 0)
          yaml::fail(file, *o, "orders", "expected a list of loop orders (lists of dimensions)");
        for (const auto& order : *o)
          ls.orders.push_back(yaml::as_string_list(file, order, "orders"));
      }
      if (auto o = lm.optional("order"))
        ls.orders.push_back(yaml::as_string_list(file, *o, "order"));
      if (auto s = lm.optional("stationary")) {
        ls.stationary = s->IsSequence()
                            ? yaml::as_string_list(file, *s, "stationary")
                            : std::vector<std::string>{yaml::as_string(file, *s, "stationary")};
      }
      if (auto k = lm.optional("keep")) ls.keep = yaml::as_string_list(file, *k, "keep");
      if (auto b = lm.optional("bypass")) ls.bypass = yaml::as_string_list(file, *b, "bypass");
      if (auto c = lm.optional("cluster")) ls.cluster = parse_cluster_spec(file, *c);
      lm.finish();
      spec.levels.push_back(std::move(ls));
    }
  }
  m.finish();
  return spec;
}

ConstraintSpec load_constraint_spec(const std::string& path) {
  // Timeloop constraints, read with the problem and architecture in the
  // same file (README, "Timeloop files").
  if (timeloop::is_timeloop_file(path)) return timeloop::load_constraints({path});
  const YAML::Node root = yaml::load_file(path);
  return parse_constraint_spec(path, root);
}

}  // namespace mapex
