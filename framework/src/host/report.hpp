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

struct ReportOptions {
  /// all (markdown: every table), jobs, summary, or dse; CSV prints one.
  std::string table = "all";
  /// A baseline for ratios, "searcher=random", "costmodel=roofline" or
  /// "architecture=NAME": each job is divided by the baseline job of the
  /// same layer that differs only in that key. Empty: none.
  std::string baseline;
};

/// Checks the options against the file; InputError when the table is
/// unknown or the baseline names a key or a value the file does not have.
void check_report_options(const ResultFile& results, const ReportOptions& options);

/// The jobs table; then (markdown) totals per architecture, searcher and
/// cost model, geometric means per group (with ratios to the baseline),
/// and, for a sweep over architectures, the design points with their
/// Pareto set.
void print_report(const ResultFile& results, TableFormat format, std::ostream& out,
                  const ReportOptions& options = {});

}  // namespace mapex::host
