// The `mdc` cost model: MAESTRO's data-centric analysis (MAESTRO, IEEE
// Micro 2020, §IV) as a mapex plugin. Canonical mappings become directives
// by Marvel's Algorithm 1 (mapex/mdc.hpp, `from_mapping`); MAESTRO mapping
// files reach the same engine through the DirectiveEvaluator capability
// (see the comment in mapex/mdc.hpp for why it is a separate interface).

#include <mapex/mdc.hpp>
#include <mapex/plugin.hpp>

#include "engine.hpp"

namespace {

using mapex::mdc::Hardware;
using mapex::mdc::Result;

// Energy of one evaluation in pJ, by component, from the architecture's
// per-word energies (innermost buffer as L1, outermost on-chip buffer as
// L2); MAESTRO's MAC-unit energy is in Result::energy_total_macunits.
struct Energy {
  double mac = 0, l1 = 0, l2 = 0;
};

class BoundMdc final : public mapex::BoundCostModel {
 public:
  BoundMdc(const mapex::Operator& op, const mapex::Architecture& arch, bool check_capacity,
           bool maestro_compat)
      : op_(op), arch_(arch), check_capacity_(check_capacity), maestro_compat_(maestro_compat) {
    for (int i = 0; i < arch.num_levels(); ++i)
      if (arch.levels()[static_cast<std::size_t>(i)].kind == mapex::LevelKind::kBuffer) {
        if (l1_ < 0) l1_ = i;
        l2_ = i;
      }
  }

  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    if (auto error = mapping.structural_error(op_, arch_)) return mapex::Metrics::invalid(*error);
    Result r;
    try {
      const auto lowered = mapex::mdc::from_mapping(op_, arch_, mapping);
      const auto plan = mapex::mdc::engine::compile(lowered.layer, lowered.hardware,
                                                    op_.find_dim("N") >= 0, maestro_compat_);
      r = mapex::mdc::engine::analyse(plan);
    } catch (const mapex::InputError& e) {
      return mapex::Metrics::invalid(std::string("mdc: ") + e.problem());
    }
    const double word = arch_.word_bytes();
    if (check_capacity_) {
      const auto& l1 = arch_.levels()[static_cast<std::size_t>(l1_)];
      const auto& l2 = arch_.levels()[static_cast<std::size_t>(l2_)];
      if (r.l1_size_req * word > static_cast<double>(l1.size_bytes))
        return mapex::Metrics::invalid(
            l1.name + ": tiles need " +
            std::to_string(static_cast<long long>(r.l1_size_req * word)) +
            " B (double-buffered), capacity " + std::to_string(l1.size_bytes) + " B");
      if (l2_ != l1_ && r.l2_size_req * word > static_cast<double>(l2.size_bytes))
        return mapex::Metrics::invalid(
            l2.name + ": tiles need " +
            std::to_string(static_cast<long long>(r.l2_size_req * word)) +
            " B (double-buffered), capacity " + std::to_string(l2.size_bytes) + " B");
    }
    return to_metrics(r);
  }

 private:
  mapex::Metrics to_metrics(const Result& r) const {
    mapex::Metrics m;
    m.valid = true;
    m.macs = r.true_macs;
    m.latency_cycles = r.runtime_cycles;
    m.compute_cycles = r.compute_delay_avg;
    m.bound_by = "mdc";
    const auto& tensors = op_.tensors();
    // MAESTRO's tensors are input, filter, output; mapex's follow the
    // operator (inputs in order, then the output).
    std::vector<std::string> names;
    for (const auto& t : tensors)
      if (t.role == mapex::TensorRole::kInput) names.push_back(t.name);
    names.resize(2, "");
    names.push_back(op_.output().name);
    const double rd1[3] = {r.input_l1_rd, r.filter_l1_rd, r.output_l1_rd};
    const double wr1[3] = {r.input_l1_wr, r.filter_l1_wr, r.output_l1_wr};
    const double rd2[3] = {r.input_l2_rd, r.filter_l2_rd, r.output_l2_rd};
    const double wr2[3] = {r.input_l2_wr, r.filter_l2_wr, r.output_l2_wr};
    const auto& levels = arch_.levels();
    const double word = arch_.word_bytes();
    double total = r.num_macs * arch_.mac_energy_pj();
    m.energy_breakdown_pj.emplace_back("mac", total);
    for (int i = 0; i < arch_.num_levels(); ++i) {
      const auto& l = levels[static_cast<std::size_t>(i)];
      mapex::LevelMetrics lm;
      lm.level = l.name;
      lm.capacity_bytes =
          l.kind == mapex::LevelKind::kBuffer ? static_cast<double>(l.size_bytes) : 0;
      const bool is_l1 = i == l1_, is_l2 = i == l2_ && l2_ != l1_;
      for (int t = 0; t < 3; ++t) {
        mapex::TensorAccess a;
        a.tensor = names[static_cast<std::size_t>(t)];
        if (is_l1) {
          a.reads = rd1[t];
          a.writes = wr1[t];
        } else if (is_l2) {
          a.reads = rd2[t];
          a.writes = wr2[t];
        }
        lm.energy_pj += a.reads * l.read_energy_pj + a.writes * l.write_energy_pj;
        if (!a.tensor.empty()) lm.tensors.push_back(a);
      }
      if (is_l1) lm.required_bytes = r.l1_size_req * word;
      if (is_l2) lm.required_bytes = r.l2_size_req * word;
      total += lm.energy_pj;
      m.energy_breakdown_pj.emplace_back(l.name, lm.energy_pj);
      m.levels.push_back(lm);
    }
    m.energy_pj = total;
    const double peak = static_cast<double>(arch_.num_pes()) * arch_.macs_per_pe();
    m.utilization = m.latency_cycles > 0 ? r.true_macs / (m.latency_cycles * peak) : 0;
    return m;
  }

  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  bool check_capacity_;
  bool maestro_compat_;
  int l1_ = -1, l2_ = -1;
};

class Mdc final : public mapex::CostModel, public mapex::mdc::DirectiveEvaluator {
 public:
  explicit Mdc(const mapex::Params& params)
      : check_capacity_(params.get_bool("check_capacity")),
        maestro_compat_(params.get_bool("maestro_compat")) {}
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundMdc>(op, arch, check_capacity_, maestro_compat_);
  }
  Result evaluate_directives(const mapex::mdc::Layer& layer, const Hardware& hw) const override {
    const auto plan = mapex::mdc::engine::compile(layer, hw, layer.dim("N") > 0, maestro_compat_);
    Result r = mapex::mdc::engine::analyse(plan);
    r.layer_name = layer.name;
    return r;
  }

 private:
  bool check_capacity_;
  bool maestro_compat_;
};

const mapex::ParamSpec kParams[] = {
    {"check_capacity", mapex::ParamType::kBool, "true",
     "Mark canonical mappings whose double-buffered tiles overflow L1 or L2 invalid (MAESTRO "
     "itself only warns)."},
    {"maestro_compat", mapex::ParamType::kBool, "false",
     "Reproduce MAESTRO's own numbers (its iteration space, including its miscounts on strided "
     "layers and its order-dependent off-chip bandwidth) instead of the true ones."},
};

mapex::CostModel* make(const mapex::Params& params) { return new Mdc(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "mdc",
    "1.0.0",
    "MAESTRO's data-centric analysis (IEEE Micro 2020, §IV); canonical mappings via Marvel Alg. 1",
    kParams,
    std::size(kParams),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
