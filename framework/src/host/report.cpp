#include "host/report.hpp"

#include <iomanip>
#include <map>
#include <mapex/error.hpp>
#include <sstream>
#include <tuple>
#include <vector>

namespace mapex::host {

TableFormat parse_table_format(const std::string& text) {
  if (text == "markdown") return TableFormat::kMarkdown;
  if (text == "csv") return TableFormat::kCsv;
  throw InputError(SourceLocation{}, "format", "expected markdown or csv, got '" + text + "'");
}

namespace {

std::string number(double value) {
  std::ostringstream out;
  out << std::setprecision(6) << value;
  return out.str();
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows, TableFormat format,
                 std::ostream& out) {
  if (format == TableFormat::kCsv) {
    for (size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << csv_field(header[i]);
    out << "\n";
    for (const auto& row : rows) {
      for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_field(row[i]);
      out << "\n";
    }
    return;
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (size_t i = 0; i < cells.size(); ++i)
      out << " " << std::left << std::setw(static_cast<int>(width[i])) << cells[i] << " |";
    out << "\n";
  };
  line(header);
  out << "|";
  for (size_t w : width) out << std::string(w + 2, '-') << "|";
  out << "\n";
  for (const auto& row : rows) line(row);
}

}  // namespace

void print_report(const ResultFile& results, TableFormat format, std::ostream& out) {
  const std::vector<std::string> header{"job_id",   "workload",     "layer",       "architecture",
                                        "searcher", "costmodel",    "status",      "latency_cycles",
                                        "vs_peak",  "energy_pj",    "utilization", "evaluations",
                                        "complete", "wall_seconds", "error"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : results.jobs) {
    const bool ok = j.status == "ok";
    rows.push_back(
        {j.job_id, j.workload, j.layer, j.architecture, j.searcher, j.costmodel, j.status,
         ok ? number(j.latency_cycles) : "",
         ok && j.roofline_peak_cycles > 0 ? number(j.latency_cycles / j.roofline_peak_cycles) : "",
         ok ? number(j.energy_pj) : "", ok ? number(j.utilization) : "",
         std::to_string(j.evaluations), j.complete ? "yes" : "no", number(j.wall_seconds),
         j.error});
  }
  print_table(header, rows, format, out);
  if (format != TableFormat::kMarkdown) return;

  // Totals over layers: what a mapper study compares.
  struct Total {
    size_t jobs = 0, ok = 0;
    double latency = 0, energy = 0, peak = 0;
    std::uint64_t evaluations = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Total> totals;
  for (const auto& j : results.jobs) {
    Total& t = totals[{j.architecture, j.searcher, j.costmodel}];
    ++t.jobs;
    t.evaluations += j.evaluations;
    if (j.status == "ok") {
      ++t.ok;
      t.latency += j.latency_cycles;
      t.peak += j.roofline_peak_cycles;
      t.energy += j.energy_pj;
    }
  }
  std::vector<std::vector<std::string>> summary;
  for (const auto& [key, t] : totals)
    summary.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key),
                       std::to_string(t.ok) + "/" + std::to_string(t.jobs), number(t.latency),
                       t.peak > 0 ? number(t.latency / t.peak) : "", number(t.energy),
                       std::to_string(t.evaluations)});
  // vs_peak: summed latency over summed roofline peaks (Marvel Fig. 9).
  out << "\nTotals over layers (jobs that found a valid mapping):\n\n";
  print_table({"architecture", "searcher", "costmodel", "ok", "latency_cycles", "vs_peak",
               "energy_pj", "evaluations"},
              summary, format, out);
}

}  // namespace mapex::host
