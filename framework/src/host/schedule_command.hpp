#pragma once
// `mapex schedule`: whole-network scheduling (KAPLA §IV-B) by a searcher
// plugin that offers mapex::NetworkScheduler.

#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

/// `mapex schedule --workload NET --arch CHIP [--k-s 4] [--objective energy|latency]
/// [--format table|json] ...`. Throws InputError on bad usage or input
/// (exit 2). Returns 0 when a schedule was found, 1 when nothing fits.
int cmd_schedule(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mapex::host
