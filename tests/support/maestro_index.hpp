#pragma once
// Reading refdata/maestro/index.csv: one row per (case, layer) that MAESTRO
// ran, and the hardware each case used. Shared by the MAESTRO golden tests.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mapex/mdc.hpp>
#include <string>
#include <vector>

namespace mapex::mdc::maestro_ref {

inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

using Row = std::map<std::string, std::string>;

/// Every row of `<refdata>/index.csv`, keyed by column name.
inline std::vector<Row> read_index(const std::string& refdata) {
  std::ifstream in(refdata + "/index.csv");
  std::string line;
  std::getline(in, line);
  const auto header = split_csv(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    const auto cells = split_csv(line);
    Row r;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) r[header[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
}

/// A numeric cell; NaN when empty or when MAESTRO printed nan or inf.
inline double num(const Row& r, const std::string& key) {
  const auto it = r.find(key);
  if (it == r.end() || it->second.empty()) return std::nan("");
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    return std::nan("");
  }
}

/// The case's hardware: its hw.m, or for a flag-only case the values MAESTRO
/// used, from the index (INT_MAX is written as a word there).
inline Hardware hardware_of(const Row& r, const std::string& dir) {
  if (std::filesystem::exists(dir + "/hw.m")) return load_hardware(dir + "/hw.m");
  auto value = [&](const char* key) {
    const std::string& v = r.at(key);
    return v == "INT_MAX" ? std::int64_t{2147483647} : static_cast<std::int64_t>(num(r, key));
  };
  Hardware hw;
  hw.num_pes = value("num_pes");
  hw.noc_bw = value("noc_bw");
  hw.offchip_bw = value("offchip_bw");
  hw.noc_latency = value("noc_latency");
  hw.simd_lanes = value("simd_lanes");
  return hw;
}

}  // namespace mapex::mdc::maestro_ref
