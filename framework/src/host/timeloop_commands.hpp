#pragma once
// CLI commands around Timeloop's files (README, "Timeloop files"):
// `mapex import timeloop FILE.yaml ... -o DIR` and
// `mapex export timeloop --workload W --arch A --mapping M`.

#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

/// `import timeloop FILE.yaml [FILE.yaml ...] -o DIR` (`args` start with
/// "timeloop"): writes workload.yaml, arch.yaml, constraints.yaml and
/// mapping.yaml (those the files give) into DIR and lists them. Throws
/// InputError on bad input. Returns the exit status.
int cmd_import_timeloop(const std::vector<std::string>& args, std::ostream& out);

/// `export timeloop --workload W --arch A --mapping M [--layer L] [-o FILE]`:
/// the mapping as Timeloop's `mapping:` section, on stdout or into FILE.
int cmd_export(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mapex::host
