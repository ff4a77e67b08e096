// Out-of-line destructors and small definitions of the public interfaces,
// so that their vtables and type_info live in the core library and are
// shared by the host and every plugin (STYLE.md, Plugin entry point).

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
Score BoundCostModel::score(const Mapping& mapping) const {
  const Metrics m = evaluate(mapping);
  return Score{m.valid, m.latency_cycles, m.energy_pj};
}
CostModel::~CostModel() = default;
Searcher::~Searcher() = default;
NetworkScheduler::~NetworkScheduler() = default;

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
