// A mapex mapping as Timeloop's `mapping:` directives (mapex/timeloop.hpp;
// README, "Timeloop files"): the inverse of the importer's mapping rules.

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <mapex/error.hpp>
#include <mapex/timeloop.hpp>
#include <string>
#include <vector>

namespace mapex::timeloop {

namespace {

[[noreturn]] void cannot(const std::string& why) {
  throw InputError(SourceLocation{}, "mapping", "cannot be written as a Timeloop mapping: " + why);
}

/// `K4 C1 ...` in the dimensions' order, and a permutation string
/// (innermost first): one character per dimension when all names have one,
/// else names separated by spaces.
std::string factors_text(const Operator& op, const std::vector<std::int64_t>& f) {
  std::string s;
  for (size_t d = 0; d < f.size(); ++d)
    s += (s.empty() ? "" : " ") + op.dims()[d].name + "=" + std::to_string(f[d]);
  return s;
}

std::string permutation_text(const Operator& op, const std::vector<DimId>& innermost_first) {
  bool single = true;
  for (const auto& d : op.dims()) single = single && d.name.size() == 1;
  std::string s;
  for (auto d : innermost_first)
    s += (single || s.empty() ? "" : " ") + op.dims()[static_cast<size_t>(d)].name;
  return s;
}

/// Which axis (0 = X, 1 = Y) each split dimension lies on: the mapping's
/// `axes` when given, else the first axis with room (largest split first),
/// the placement mapex's one_axis rule accepts.
std::vector<int> place_splits(const Operator& op, const Level& level, const LevelMapping& lm) {
  const size_t nd = static_cast<size_t>(op.num_dims());
  std::vector<int> axis(nd, 0);
  if (!lm.axes.empty()) {
    for (size_t d = 0; d < nd; ++d) {
      int on = -1;
      for (size_t a = 0; a < lm.axes[d].size(); ++a)
        if (lm.axes[d][a] > 1) {
          if (on >= 0)
            cannot("level '" + level.name + "' spreads " + op.dims()[d].name +
                   " over two axes; Timeloop puts a spatial loop on X or Y");
          on = static_cast<int>(a);
        }
      axis[d] = on < 0 ? 0 : on;
    }
    return axis;
  }
  std::vector<std::int64_t> room = level.shape;
  std::vector<size_t> dims;
  for (size_t d = 0; d < nd; ++d)
    if (lm.split[d] > 1) dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](size_t a, size_t b) { return lm.split[a] > lm.split[b]; });
  for (size_t d : dims) {
    size_t a = 0;
    while (a < room.size() && room[a] < lm.split[d]) ++a;
    if (a >= std::min<size_t>(room.size(), 2))
      cannot("the splits of level '" + level.name + "' do not lie one per axis on its X/Y array");
    room[a] /= lm.split[d];
    axis[d] = static_cast<int>(a);
  }
  return axis;
}

void emit_spatial(YAML::Emitter& out, const Operator& op, const Level& level,
                  const LevelMapping& lm, const std::string& target) {
  if (lm.cluster.active())
    cannot("level '" + level.name + "' has a cluster level (Timeloop needs a storage level there)");
  const auto axis = place_splits(op, level, lm);
  std::vector<DimId> perm;
  for (int a = 0; a < 2; ++a)
    for (size_t d = 0; d < axis.size(); ++d)
      if (axis[d] == a) perm.push_back(static_cast<DimId>(d));
  std::int64_t x = 0;
  for (int a : axis) x += a == 0 ? 1 : 0;
  out << YAML::BeginMap << YAML::Key << "target" << YAML::Value << target;
  out << YAML::Key << "type" << YAML::Value << "spatial";
  out << YAML::Key << "factors" << YAML::Value << factors_text(op, lm.split);
  out << YAML::Key << "permutation" << YAML::Value << permutation_text(op, perm);
  out << YAML::Key << "split" << YAML::Value << x << YAML::EndMap;
}

}  // namespace

std::string export_mapping(const Operator& op, const Architecture& arch, const Mapping& mapping) {
  if (auto error = mapping.structural_error(op, arch)) cannot(*error);
  const size_t nd = static_cast<size_t>(op.num_dims());
  const int nl = arch.num_levels();
  // Trip counts of each data level's loops: its tile over the span below.
  std::vector<std::vector<std::int64_t>> trips(static_cast<size_t>(nl));
  std::vector<std::int64_t> below(nd, 1);
  for (int i = 0; i < nl; ++i) {
    const Level& level = arch.levels()[static_cast<size_t>(i)];
    const LevelMapping& lm = mapping.level(i);
    const auto span = mapping.span(op, arch, i);
    if (!level.partitions.empty())
      cannot("level '" + level.name + "' is partitioned; Timeloop gives each part its own level");
    if (level.kind == LevelKind::kSpatial) {
      if (i + 1 >= nl || !arch.levels()[static_cast<size_t>(i + 1)].holds_data())
        cannot("spatial level '" + level.name + "' is not directly below a storage level");
      for (size_t d = 0; d < nd; ++d)
        if (span[d] != below[d] * lm.split[d])
          cannot("level '" + level.name + "' splits " + op.dims()[d].name +
                 " with an edge (Timeloop's factors divide)");
    } else {
      auto& t = trips[static_cast<size_t>(i)];
      for (size_t d = 0; d < nd; ++d) {
        if (span[d] % below[d] != 0)
          cannot("the tile of " + op.dims()[d].name + " at '" + level.name + "' (" +
                 std::to_string(span[d]) + ") is not a multiple of the span below (" +
                 std::to_string(below[d]) + "): edge tiles have no Timeloop factor");
        t.push_back(span[d] / below[d]);
      }
    }
    below = span;
  }
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "mapping" << YAML::Value << YAML::BeginSeq;
  for (int i = nl; i-- > 0;) {  // outermost first, as Timeloop prints them
    const Level& level = arch.levels()[static_cast<size_t>(i)];
    if (!level.holds_data()) continue;
    const LevelMapping& lm = mapping.level(i);
    std::vector<DimId> perm(lm.order.rbegin(), lm.order.rend());
    out << YAML::BeginMap << YAML::Key << "target" << YAML::Value << level.name;
    out << YAML::Key << "type" << YAML::Value << "temporal";
    out << YAML::Key << "factors" << YAML::Value << factors_text(op, trips[static_cast<size_t>(i)]);
    out << YAML::Key << "permutation" << YAML::Value << permutation_text(op, perm) << YAML::EndMap;
    if (i > 0 && arch.levels()[static_cast<size_t>(i - 1)].kind == LevelKind::kSpatial)
      emit_spatial(out, op, arch.levels()[static_cast<size_t>(i - 1)], mapping.level(i - 1),
                   level.name);
    if (!lm.keep.empty()) {
      out << YAML::BeginMap << YAML::Key << "target" << YAML::Value << level.name;
      out << YAML::Key << "type" << YAML::Value << "datatype";
      for (bool kept : {true, false}) {
        out << YAML::Key << (kept ? "keep" : "bypass") << YAML::Value << YAML::Flow
            << YAML::BeginSeq;
        for (size_t t = 0; t < lm.keep.size(); ++t)
          if (lm.keep[t] == kept) out << op.tensors()[t].name;
        out << YAML::EndSeq;
      }
      out << YAML::EndMap;
    }
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace mapex::timeloop
