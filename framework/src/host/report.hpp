#pragma once
// Tables from a result file (`mapex report`, and the table `mapex run`
// prints after reading its file back).

#include <ostream>
#include <string>

#include "host/result_store.hpp"

namespace mapex::host {

enum class TableFormat { kMarkdown, kCsv };
/// Parses markdown|csv; throws InputError otherwise.
TableFormat parse_table_format(const std::string& text);

/// The jobs table, then (markdown only) totals per architecture, searcher
/// and cost model.
void print_report(const ResultFile& results, TableFormat format, std::ostream& out);

}  // namespace mapex::host
