#pragma once
// The tensor-centric cost model of KAPLA (§IV-A): energy and latency as
// simple functions of resource use and of the data access counts that the
// tensor, stack and update directives (§III-B) imply, on the generic
// hardware template (§III-C). Shared by the plugin and its unit tests.

#include <mapex/architecture.hpp>
#include <mapex/mapping.hpp>
#include <mapex/metrics.hpp>
#include <mapex/operator.hpp>
#include <optional>
#include <string>

namespace mapex::tc {

/// Why the mapping cannot run, or nothing: not well formed, a split that
/// does not fit the array shape, or tensors (after sharing) that overflow a
/// buffer. The reason names the level.
std::optional<std::string> validity_error(const Operator& op, const Architecture& arch,
                                          const Mapping& mapping);

/// Full evaluation; an invalid mapping gives Metrics::invalid with the
/// reason. Pure function: safe from any thread.
Metrics evaluate(const Operator& op, const Architecture& arch, const Mapping& mapping);

}  // namespace mapex::tc
