#pragma once
// JSON views of metrics and mappings for `--format json`: metric names carry
// their units (latency_cycles, energy_pj, ...).

#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/metrics.hpp>
#include <mapex/operator.hpp>
#include <nlohmann/json.hpp>

namespace mapex::host {

nlohmann::ordered_json metrics_json(const Metrics& metrics, const Architecture& arch);
nlohmann::ordered_json mapping_json(const Mapping& mapping, const Operator& op,
                                    const Architecture& arch);

}  // namespace mapex::host
