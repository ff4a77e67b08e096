#include "host/report.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <mapex/error.hpp>
#include <optional>
#include <set>
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

namespace {

struct Baseline {
  std::string key, value;
};

Baseline parse_baseline(const std::string& text) {
  const auto eq = text.find('=');
  Baseline b;
  if (eq != std::string::npos) {
    b.key = text.substr(0, eq);
    b.value = text.substr(eq + 1);
  }
  if (b.key != "searcher" && b.key != "costmodel" && b.key != "architecture")
    throw InputError(
        SourceLocation{}, "--baseline",
        "expected searcher=NAME, costmodel=NAME or architecture=NAME, got '" + text + "'");
  return b;
}

const std::string& field(const JobRow& j, const std::string& key) {
  if (key == "searcher") return j.searcher;
  if (key == "costmodel") return j.costmodel;
  return j.architecture;
}

// The key of the job a row is compared with: everything but the baseline key.
std::string match_key(const JobRow& j, const std::string& baseline_key) {
  std::string k = j.workload + "\n" + j.layer + "\n" + j.objective;
  for (const char* f : {"architecture", "searcher", "costmodel"})
    if (baseline_key != f) k += "\n" + field(j, f);
  return k;
}

// Whether the (architecture, searcher, cost model) groups cover different
// layers (a searcher kept to some operator kinds): their totals and means
// are then only comparable within a workload, so the summaries split by it.
bool groups_cover_different_layers(const ResultFile& results) {
  std::map<std::string, std::set<std::string>> layers;
  for (const auto& j : results.jobs)
    layers[j.architecture + "\n" + j.searcher + "\n" + j.costmodel].insert(j.workload + "\n" +
                                                                           j.layer);
  for (const auto& [group, set] : layers)
    if (set != layers.begin()->second) return true;
  return false;
}

// A summary group: the workload (when groups cover different layers),
// architecture, searcher and cost model.
using GroupKey = std::tuple<std::string, std::string, std::string, std::string>;

GroupKey group_key(const JobRow& j, bool by_workload) {
  return {by_workload ? j.workload : std::string(), j.architecture, j.searcher, j.costmodel};
}

std::vector<std::string> group_header(bool by_workload) {
  std::vector<std::string> h{"architecture", "searcher", "costmodel"};
  if (by_workload) h.insert(h.begin(), "workload");
  return h;
}

std::vector<std::string> group_cells(const GroupKey& key, bool by_workload) {
  std::vector<std::string> c{std::get<1>(key), std::get<2>(key), std::get<3>(key)};
  if (by_workload) c.insert(c.begin(), std::get<0>(key));
  return c;
}

struct GeoMean {
  double log_sum = 0;
  std::size_t n = 0;
  void add(double v) {
    if (v > 0) {
      log_sum += std::log(v);
      ++n;
    }
  }
  std::string text() const { return n ? number(std::exp(log_sum / static_cast<double>(n))) : ""; }
};

void print_summary(const ResultFile& results, TableFormat format, std::ostream& out,
                   const std::string& baseline_text) {
  std::optional<Baseline> baseline;
  std::map<std::string, const JobRow*> base_rows;
  if (!baseline_text.empty()) {
    baseline = parse_baseline(baseline_text);
    for (const auto& j : results.jobs)
      if (j.status == "ok" && field(j, baseline->key) == baseline->value)
        base_rows[match_key(j, baseline->key)] = &j;
  }
  struct Group {
    std::size_t jobs = 0, ok = 0;
    GeoMean latency, energy, vs_peak, latency_ratio, energy_ratio;
  };
  const bool by_workload = groups_cover_different_layers(results);
  std::map<GroupKey, Group> groups;
  for (const auto& j : results.jobs) {
    Group& g = groups[group_key(j, by_workload)];
    ++g.jobs;
    if (j.status != "ok") continue;
    ++g.ok;
    g.latency.add(j.latency_cycles);
    g.energy.add(j.energy_pj);
    if (j.roofline_peak_cycles > 0) g.vs_peak.add(j.latency_cycles / j.roofline_peak_cycles);
    if (baseline) {
      const auto it = base_rows.find(match_key(j, baseline->key));
      if (it != base_rows.end()) {
        g.latency_ratio.add(j.latency_cycles / it->second->latency_cycles);
        g.energy_ratio.add(j.energy_pj / it->second->energy_pj);
      }
    }
  }
  std::vector<std::string> header = group_header(by_workload);
  for (const char* h : {"ok", "geomean_latency", "geomean_vs_peak", "geomean_energy"})
    header.push_back(h);
  if (baseline) {
    header.push_back("latency_vs_" + baseline->value);
    header.push_back("energy_vs_" + baseline->value);
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& [key, g] : groups) {
    std::vector<std::string> row = group_cells(key, by_workload);
    for (std::string cell : {std::to_string(g.ok) + "/" + std::to_string(g.jobs), g.latency.text(),
                             g.vs_peak.text(), g.energy.text()})
      row.push_back(std::move(cell));
    if (baseline) {
      row.push_back(g.latency_ratio.text());
      row.push_back(g.energy_ratio.text());
    }
    rows.push_back(std::move(row));
  }
  if (format == TableFormat::kMarkdown)
    out << "\nGeometric means over layers (vs_peak: latency over the roofline peak"
        << (baseline ? "; ratios: each job over the " + baseline->key + " " + baseline->value +
                           " job of the same layer"
                     : std::string())
        << "):\n\n";
  print_table(header, rows, format, out);
}

void print_design_points(const ResultFile& results, TableFormat format, std::ostream& out) {
  std::vector<const JobRow*> rows;
  for (const auto& j : results.jobs)
    if (j.status == "ok") rows.push_back(&j);
  std::stable_sort(rows.begin(), rows.end(), [](const JobRow* a, const JobRow* b) {
    return std::tie(a->workload, a->layer, a->searcher, a->costmodel, b->throughput_gmacs) <
           std::tie(b->workload, b->layer, b->searcher, b->costmodel, a->throughput_gmacs);
  });
  std::vector<std::vector<std::string>> table;
  for (const auto* j : rows)
    table.push_back({j->workload + "/" + j->layer, j->searcher, j->costmodel, j->architecture,
                     std::to_string(j->num_pes), number(j->area_mm2), number(j->power_mw),
                     number(j->throughput_gmacs), number(j->energy_pj),
                     number(j->energy_pj * j->latency_seconds), j->pareto ? "*" : "",
                     j->mapping_summary});
  if (format == TableFormat::kMarkdown)
    out << "\nDesign points, fastest first (pareto: * on the Pareto set of its layer, searcher "
           "and cost model):\n\n";
  print_table({"layer", "searcher", "costmodel", "architecture", "num_pes", "area_mm2", "power_mw",
               "throughput_gmacs", "energy_pj", "edp_pj_s", "pareto", "best_mapping"},
              table, format, out);
}

}  // namespace

void check_report_options(const ResultFile& results, const ReportOptions& options) {
  static const std::set<std::string> tables{"all", "jobs", "summary", "dse"};
  if (!tables.count(options.table))
    throw InputError(SourceLocation{}, "--table",
                     "expected all, jobs, summary or dse, got '" + options.table + "'");
  if (options.baseline.empty()) return;
  const Baseline b = parse_baseline(options.baseline);
  std::set<std::string> values;
  for (const auto& j : results.jobs) values.insert(field(j, b.key));
  if (!values.count(b.value)) {
    std::string known;
    for (const auto& v : values) known += (known.empty() ? "" : ", ") + v;
    throw InputError(SourceLocation{}, "--baseline",
                     "no job has " + b.key + " '" + b.value + "'; expected one of: " + known);
  }
}

void print_report(const ResultFile& results, TableFormat format, std::ostream& out,
                  const ReportOptions& options) {
  check_report_options(results, options);
  const bool all = options.table == "all";
  if (format == TableFormat::kCsv && all) {
    // One table per CSV file: the jobs, unless another is asked for.
  } else if (options.table == "summary") {
    print_summary(results, format, out, options.baseline);
    return;
  } else if (options.table == "dse") {
    print_design_points(results, format, out);
    return;
  }
  const std::vector<std::string> header{
      "job_id",      "workload",    "layer",          "architecture",     "searcher",
      "costmodel",   "status",      "latency_cycles", "vs_peak",          "energy_pj",
      "utilization", "evaluations", "complete",       "wall_seconds",     "error",
      "num_pes",     "area_mm2",    "power_mw",       "throughput_gmacs", "pareto"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& j : results.jobs) {
    const bool ok = j.status == "ok";
    rows.push_back(
        {j.job_id,
         j.workload,
         j.layer,
         j.architecture,
         j.searcher,
         j.costmodel,
         j.status,
         ok ? number(j.latency_cycles) : "",
         ok && j.roofline_peak_cycles > 0 ? number(j.latency_cycles / j.roofline_peak_cycles) : "",
         ok ? number(j.energy_pj) : "",
         ok ? number(j.utilization) : "",
         std::to_string(j.evaluations),
         j.complete ? "yes" : "no",
         number(j.wall_seconds),
         j.error,
         std::to_string(j.num_pes),
         number(j.area_mm2),
         number(j.power_mw),
         ok ? number(j.throughput_gmacs) : "",
         j.pareto ? "1" : "0"});
  }
  print_table(header, rows, format, out);
  if (format != TableFormat::kMarkdown || !all) return;

  // Totals over layers: what a mapper study compares.
  struct Total {
    size_t jobs = 0, ok = 0;
    double latency = 0, energy = 0, peak = 0;
    std::uint64_t evaluations = 0;
  };
  const bool by_workload = groups_cover_different_layers(results);
  std::map<GroupKey, Total> totals;
  for (const auto& j : results.jobs) {
    Total& t = totals[group_key(j, by_workload)];
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
  for (const auto& [key, t] : totals) {
    std::vector<std::string> row = group_cells(key, by_workload);
    for (std::string cell : {std::to_string(t.ok) + "/" + std::to_string(t.jobs), number(t.latency),
                             t.peak > 0 ? number(t.latency / t.peak) : "", number(t.energy),
                             std::to_string(t.evaluations)})
      row.push_back(std::move(cell));
    summary.push_back(std::move(row));
  }
  // vs_peak: summed latency over summed roofline peaks (Marvel Fig. 9).
  out << "\nTotals over layers (jobs that found a valid mapping"
      << (by_workload ? "; per workload, since the searchers cover different layers" : "")
      << "):\n\n";
  std::vector<std::string> totals_header = group_header(by_workload);
  for (const char* h : {"ok", "latency_cycles", "vs_peak", "energy_pj", "evaluations"})
    totals_header.push_back(h);
  print_table(totals_header, summary, format, out);
  print_summary(results, format, out, options.baseline);
  std::set<std::string> architectures;
  for (const auto& j : results.jobs) architectures.insert(j.architecture);
  if (architectures.size() > 1) print_design_points(results, format, out);
}

}  // namespace mapex::host
