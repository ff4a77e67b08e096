#include "host/json_output.hpp"

namespace mapex::host {

nlohmann::ordered_json metrics_json(const Metrics& m, const Architecture& arch) {
  nlohmann::ordered_json j;
  j["valid"] = m.valid;
  if (!m.valid) {
    j["invalid_reason"] = m.invalid_reason;
    return j;
  }
  j["latency_cycles"] = m.latency_cycles;
  j["latency_seconds"] = m.latency_cycles / (arch.clock_mhz() * 1e6);
  j["compute_cycles"] = m.compute_cycles;
  j["energy_pj"] = m.energy_pj;
  j["edp_pj_cycles"] = m.edp();
  j["utilization"] = m.utilization;
  j["macs"] = m.macs;
  j["throughput_macs_per_cycle"] = m.latency_cycles > 0 ? m.macs / m.latency_cycles : 0.0;
  j["bound_by"] = m.bound_by;
  nlohmann::ordered_json breakdown = nlohmann::ordered_json::object();
  for (const auto& [name, value] : m.energy_breakdown_pj) breakdown[name] = value;
  j["energy_breakdown_pj"] = breakdown;
  nlohmann::ordered_json levels = nlohmann::ordered_json::array();
  for (const auto& l : m.levels) {
    nlohmann::ordered_json level;
    level["name"] = l.level;
    level["required_bytes"] = l.required_bytes;
    level["capacity_bytes"] = l.capacity_bytes;
    level["transfer_cycles"] = l.transfer_cycles;
    level["energy_pj"] = l.energy_pj;
    nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
    for (const auto& t : l.tensors)
      tensors[t.tensor] = {{"reads_words", t.reads}, {"writes_words", t.writes}};
    level["tensors"] = tensors;
    levels.push_back(level);
  }
  j["levels"] = levels;
  return j;
}

nlohmann::ordered_json mapping_json(const Mapping& mapping, const Operator& op,
                                    const Architecture& arch) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (int i = 0; i < arch.num_levels(); ++i) {
    const Level& level = arch.levels()[static_cast<size_t>(i)];
    const LevelMapping& lm = mapping.level(i);
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    if (level.kind == LevelKind::kSpatial) {
      nlohmann::ordered_json split = nlohmann::ordered_json::object();
      for (size_t d = 0; d < lm.split.size(); ++d)
        if (lm.split[d] > 1) split[op.dims()[d].name] = lm.split[d];
      entry["split"] = split;
      // The optional parts of a spatial level, only when present (README,
      // "Mapping files"): placement on the axes, and a cluster level.
      auto names = [&](const std::vector<DimId>& dims) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (auto d : dims) out.push_back(op.dims()[static_cast<size_t>(d)].name);
        return out;
      };
      if (!lm.axes.empty()) {
        nlohmann::ordered_json axes = nlohmann::ordered_json::object();
        for (size_t d = 0; d < lm.axes.size(); ++d)
          if (lm.split[d] > 1) axes[op.dims()[d].name] = lm.axes[d];
        entry["axes"] = axes;
      }
      if (!lm.order.empty()) entry["order"] = names(lm.order);
      if (lm.cluster.active()) {
        nlohmann::ordered_json cluster = nlohmann::ordered_json::object();
        nlohmann::ordered_json csplit = nlohmann::ordered_json::object();
        nlohmann::ordered_json ctile = nlohmann::ordered_json::object();
        for (size_t d = 0; d < lm.cluster.split.size(); ++d) {
          if (lm.cluster.split[d] > 1) csplit[op.dims()[d].name] = lm.cluster.split[d];
          ctile[op.dims()[d].name] = lm.cluster.tile[d];
        }
        cluster["split"] = csplit;
        cluster["tile"] = ctile;
        cluster["order"] = names(lm.cluster.order);
        entry["cluster"] = cluster;
      }
    } else {
      if (level.kind == LevelKind::kBuffer) {
        nlohmann::ordered_json tile = nlohmann::ordered_json::object();
        for (size_t d = 0; d < lm.tile.size(); ++d) tile[op.dims()[d].name] = lm.tile[d];
        entry["tile"] = tile;
      }
      nlohmann::ordered_json order = nlohmann::ordered_json::array();
      for (auto d : lm.order) order.push_back(op.dims()[static_cast<size_t>(d)].name);
      entry["order"] = order;
    }
    j[level.name] = entry;
  }
  return j;
}

}  // namespace mapex::host
