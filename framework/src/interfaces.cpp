// Out-of-line destructors and small definitions of the public interfaces,
// so that their vtables and type_info live in the core library and are
// shared by the host and every plugin (docs/style.md, Plugin entry point).

#include <cmath>
#include <mapex/budget_requirement.hpp>
#include <mapex/costmodel.hpp>
#include <mapex/plugin.hpp>
#include <mapex/schedule.hpp>
#include <mapex/search.hpp>
#include <mapex/version.hpp>

namespace mapex {

BoundCostModel::~BoundCostModel() = default;
std::optional<std::string> BoundCostModel::precheck(const Mapping&) const { return std::nullopt; }
std::optional<Unsupported> BoundCostModel::unsupported(const Mapping&) const {
  return std::nullopt;
}
std::optional<Score> BoundCostModel::lower_bound(const PartialMapping&) const {
  return std::nullopt;
}
bool BoundCostModel::order_read_only_by_own_traffic(int) const { return false; }
bool BoundCostModel::tile_read_only_by_traffic_above(int) const { return false; }
std::uint32_t BoundCostModel::ordered_loops(const Mapping&, int, std::uint32_t running) const {
  return running;
}
Score BoundCostModel::score(const Mapping& mapping) const {
  const Metrics m = evaluate(mapping);
  return Score{m.valid, m.latency_cycles, m.energy_pj};
}
StreamState::~StreamState() = default;
Score BoundCostModel::precheck_and_score(const Mapping& mapping, const MappingChange&,
                                         std::unique_ptr<StreamState>&) const {
  if (precheck(mapping)) return Score{};
  return score(mapping);
}
CostModel::~CostModel() = default;
bool CostModel::pins_on_no_time_mux() const { return false; }
Searcher::~Searcher() = default;
BudgetRequirement::~BudgetRequirement() = default;
NetworkScheduler::~NetworkScheduler() = default;

std::optional<std::string> non_finite_metric(const Metrics& m) {
  auto bad = [](const std::string& name, double v) -> std::optional<std::string> {
    if (std::isfinite(v)) return std::nullopt;
    return name + " = " + (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  };
  for (const auto& [name, v] : {std::pair<const char*, double>{"macs", m.macs},
                                {"latency_cycles", m.latency_cycles},
                                {"compute_cycles", m.compute_cycles},
                                {"energy_pj", m.energy_pj},
                                {"utilization", m.utilization},
                                {"edp_pj_cycles", m.edp()}})
    if (auto why = bad(name, v)) return why;
  for (const auto& [name, v] : m.energy_breakdown_pj)
    if (auto why = bad("energy_breakdown_pj '" + name + "'", v)) return why;
  for (const auto& l : m.levels) {
    const std::string level = "level '" + l.level + "' ";
    for (const auto& [name, v] :
         {std::pair<const char*, double>{"required_bytes", l.required_bytes},
          {"capacity_bytes", l.capacity_bytes},
          {"transfer_cycles", l.transfer_cycles},
          {"energy_pj", l.energy_pj}})
      if (auto why = bad(level + name, v)) return why;
    for (const auto& t : l.tensors) {
      if (auto why = bad(level + t.tensor + " reads_words", t.reads)) return why;
      if (auto why = bad(level + t.tensor + " writes_words", t.writes)) return why;
    }
  }
  return std::nullopt;
}

Metrics Metrics::invalid(std::string reason) {
  Metrics m;
  m.valid = false;
  m.invalid_reason = std::move(reason);
  return m;
}

std::string to_string(PluginKind kind) {
  switch (kind) {
    case PluginKind::kCostModel:
      return "costmodel";
    case PluginKind::kSearcher:
      return "searcher";
  }
  return "unknown";
}

std::string version() { return MAPEX_VERSION_STRING; }

}  // namespace mapex
