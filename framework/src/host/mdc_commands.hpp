#pragma once
// CLI commands around MAESTRO's data-centric directives: `mapex evaluate
// --maestro MAPPING.m --hw HW.m` and `mapex check`.

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace mapex::host {

/// Evaluates every layer of a MAESTRO mapping file on a MAESTRO hardware
/// file with a cost model that offers mdc::DirectiveEvaluator. `format` is
/// csv, table or json; `params` go to the cost model (e.g. mdc's
/// maestro_compat). Throws InputError on bad input. Returns the exit status.
int evaluate_maestro(const std::string& mapping_path, const std::string& hw_path,
                     const std::string& costmodel, const std::string& format,
                     const std::map<std::string, std::string>& params, std::ostream& out);

/// `mapex check --workload W [--layer L]`: Marvel's conformability rules.
/// Exit 0 when every checked operator is conformable, 1 when one is not,
/// 2 on bad input.
int cmd_check(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mapex::host
