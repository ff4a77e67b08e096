#include "host/mdc_commands.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <mapex/network.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "host/plugin_registry.hpp"

namespace mapex::host {
namespace {

// The columns of `evaluate --maestro`, named as in refdata/maestro/index.csv.
struct Column {
  const char* name;
  double mdc::Result::*field;
};

const Column kColumns[] = {
    {"num_macs", &mdc::Result::num_macs},
    {"runtime_cycles", &mdc::Result::runtime_cycles},
    {"energy_total_macunits", &mdc::Result::energy_total_macunits},
    {"l1_size_req", &mdc::Result::l1_size_req},
    {"l2_size_req", &mdc::Result::l2_size_req},
    {"input_l2_rd", &mdc::Result::input_l2_rd},
    {"input_l2_wr", &mdc::Result::input_l2_wr},
    {"filter_l2_rd", &mdc::Result::filter_l2_rd},
    {"filter_l2_wr", &mdc::Result::filter_l2_wr},
    {"output_l2_rd", &mdc::Result::output_l2_rd},
    {"output_l2_wr", &mdc::Result::output_l2_wr},
    {"input_l1_rd", &mdc::Result::input_l1_rd},
    {"input_l1_wr", &mdc::Result::input_l1_wr},
    {"filter_l1_rd", &mdc::Result::filter_l1_rd},
    {"filter_l1_wr", &mdc::Result::filter_l1_wr},
    {"output_l1_rd", &mdc::Result::output_l1_rd},
    {"output_l1_wr", &mdc::Result::output_l1_wr},
    {"noc_bw_req_peak", &mdc::Result::noc_bw_req_peak},
    {"offchip_bw_req", &mdc::Result::offchip_bw_req},
    {"avg_utilized_pes", &mdc::Result::avg_utilized_pes},
    {"true_macs", &mdc::Result::true_macs},
    {"noc_bw_req_avg", &mdc::Result::noc_bw_req_avg},
    {"ingress_delay_avg", &mdc::Result::ingress_delay_avg},
    {"egress_delay_avg", &mdc::Result::egress_delay_avg},
    {"compute_delay_avg", &mdc::Result::compute_delay_avg},
};

/// The longest number put_number writes ("-1.23456789012345e-308" is 22).
constexpr std::size_t kNumberChars = 32;

/// Writes `v` at `at` as `%.15g` prints it (what `<< std::setprecision(15)`
/// gives) and returns the end: std::to_chars, without a stream per number.
/// Most of MAESTRO's figures are whole numbers below 10^15, which `%.15g`
/// prints as their digits: those take the integer conversion, several times
/// cheaper than the floating-point one (-0 keeps its sign through the latter).
char* put_number(char* at, double v) {
  // The round trip through int64 tests for a whole number without a call to
  // libm's trunc (no SSE4.1 rounding instruction in the baseline x86-64).
  if (std::fabs(v) < 1e15 && static_cast<double>(static_cast<std::int64_t>(v)) == v &&
      !(v == 0 && std::signbit(v)))
    return std::to_chars(at, at + kNumberChars, static_cast<std::int64_t>(v)).ptr;
  return std::to_chars(at, at + kNumberChars, v, std::chars_format::general, 15).ptr;
}

std::string number(double v) {
  char buffer[kNumberChars];
  return std::string(buffer, put_number(buffer, v));
}

/// Copies `s` to `at` and returns the end.
char* put(char* at, std::string_view s) {
  std::memcpy(at, s.data(), s.size());
  return at + s.size();
}

/// The CSV table, written into one buffer sized for its longest possible
/// rows (a std::string append per number was a call and a copy each, a
/// tenth of the per-layer work of a 66-layer file) and output at once.
void print_csv(const std::vector<mdc::Result>& results, std::ostream& out) {
  std::size_t bound = std::size("layer_name");
  for (const auto& c : kColumns) bound += 1 + std::strlen(c.name);
  for (const auto& r : results)
    bound += r.layer_name.size() + std::size(kColumns) * (1 + kNumberChars) + 1;
  // Not zeroed: only the pages written are touched.
  const auto text = std::make_unique_for_overwrite<char[]>(bound);
  char* at = put(text.get(), "layer_name");
  for (const auto& c : kColumns) at = put(put(at, ","), c.name);
  *at++ = '\n';
  for (const auto& r : results) {
    at = put(at, r.layer_name);
    for (const auto& c : kColumns) {
      *at++ = ',';
      at = put_number(at, r.*c.field);
    }
    *at++ = '\n';
  }
  out.write(text.get(), at - text.get());
}

}  // namespace

int evaluate_maestro(const std::string& mapping_path, const std::string& hw_path,
                     const std::string& costmodel, const std::string& format,
                     const std::map<std::string, std::string>& params, std::ostream& out) {
  if (format != "table" && format != "csv" && format != "json")
    throw InputError("--format expects table, csv or json, got '" + format + "'");
  for (const auto& [path, what] :
       {std::pair{mapping_path, "mapping"}, std::pair{hw_path, "hardware"}})
    if (!std::filesystem::exists(path))
      throw InputError(SourceLocation{path, 0, 0}, "", std::string(what) + " file does not exist");
  const mdc::Network net = mdc::load_mapping(mapping_path);
  const mdc::Hardware hw = mdc::load_hardware(hw_path);
  const PluginRegistry registry = load_plugins_named({costmodel});
  const auto model = registry.make_costmodel(costmodel, params);
  const auto* evaluator = dynamic_cast<const mdc::DirectiveEvaluator*>(model.get());
  if (evaluator == nullptr)
    throw InputError("cost model '" + costmodel +
                     "' cannot evaluate MAESTRO directives; use --costmodel mdc");
  std::vector<mdc::Result> results;
  results.reserve(net.layers.size());
  for (const auto& layer : net.layers) {
    mdc::validate(layer, hw, mapping_path);
    try {
      results.push_back(evaluator->evaluate_directives(layer, hw));
    } catch (const InputError& e) {
      // The engine names the directive's line when it has one, and says
      // which layer; add the file (and the layer's line otherwise).
      const int line = e.where().line > 0 ? e.where().line : layer.line;
      const std::string prefix = "layer '" + layer.name + "': ";
      const std::string problem =
          e.problem().rfind(prefix, 0) == 0 ? e.problem() : prefix + e.problem();
      throw InputError(SourceLocation{mapping_path, line, 0},
                       e.key().empty() ? std::string("Layer") : e.key(), problem);
    }
  }
  if (format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& r : results) {
      nlohmann::ordered_json row;
      row["layer_name"] = r.layer_name;
      for (const auto& c : kColumns) row[c.name] = r.*c.field;
      j.push_back(row);
    }
    out << j.dump(2) << "\n";
  } else if (format == "csv") {
    print_csv(results, out);
  } else {
    out << "network " << net.name << " on " << hw.num_pes << " PEs (NoC " << hw.noc_bw
        << " elements/cycle, off-chip " << hw.offchip_bw << ") by " << costmodel << "\n\n";
    out << "| layer | MACs | runtime (cycles) | energy (MAC units) | L1 req | L2 req | NoC BW "
           "(peak) | off-chip BW | avg PEs |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : results)
      out << "| " << r.layer_name << " | " << number(r.num_macs) << " | "
          << number(r.runtime_cycles) << " | " << std::setprecision(6) << r.energy_total_macunits
          << " | " << number(r.l1_size_req) << " | " << number(r.l2_size_req) << " | "
          << number(r.noc_bw_req_peak) << " | " << number(r.offchip_bw_req) << " | "
          << std::setprecision(6) << r.avg_utilized_pes << " |\n";
    for (const auto& r : results)
      if (r.num_macs != r.true_macs)
        out << "\nnote: layer " << r.layer_name << ": the directives cover " << number(r.num_macs)
            << " MACs, the layer has " << number(r.true_macs)
            << " (MAESTRO's iteration space, maestro_compat: strided map offsets that do not "
               "match the stride)\n";
  }
  return 0;
}

}  // namespace mapex::host
