// Template cost model: the compute bound alone. Data movement is free, so a
// mapping's latency is the cycles its PEs need, edge tiles and idle PEs
// included; what separates it from the roofline is the memory side. It is
// the bound to normalise to when studying PE utilisation only (Marvel §6
// discusses under-utilisation from folds separately from bandwidth).
//
// Copy this folder to start a plugin: keep one descriptor and one
// MAPEX_PLUGIN line per shared object, include only <mapex/...> headers,
// and build with mapex_add_plugin (see ../../README.md).

#include <mapex/analysis.hpp>
#include <mapex/plugin.hpp>

namespace {

class BoundIdealCompute final : public mapex::BoundCostModel {
 public:
  BoundIdealCompute(const mapex::Operator& op, const mapex::Architecture& arch, bool check_capacity)
      : op_(op), arch_(arch), check_capacity_(check_capacity) {}

  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    return check_capacity_ ? mapex::capacity_error(op_, arch_, mapping) : std::nullopt;
  }

  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    if (auto reason = precheck(mapping)) return mapex::Metrics::invalid(*reason);
    const mapex::NestAnalysis a = mapex::analyse(op_, arch_, mapping);
    mapex::Metrics m;
    m.valid = true;
    m.macs = a.macs;
    m.compute_cycles = a.compute_cycles;
    m.latency_cycles = a.compute_cycles;
    m.bound_by = "compute";
    m.energy_pj = a.macs * arch_.mac_energy_pj();
    m.energy_breakdown_pj = {{"mac", m.energy_pj}};
    const double peak = static_cast<double>(arch_.num_pes()) * arch_.macs_per_pe();
    m.utilization = a.macs / (m.latency_cycles * peak);
    return m;
  }

 private:
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  bool check_capacity_;
};

class IdealCompute final : public mapex::CostModel {
 public:
  explicit IdealCompute(bool check_capacity) : check_capacity_(check_capacity) {}
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundIdealCompute>(op, arch, check_capacity_);
  }

 private:
  bool check_capacity_;
};

const mapex::ParamSpec kParams[] = {
    {"check_capacity", mapex::ParamType::kBool, "true",
     "Mark mappings whose tiles overflow a buffer invalid."},
};

mapex::CostModel* make(const mapex::Params& params) {
  return new IdealCompute(params.get_bool("check_capacity"));
}

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "ideal_compute",
    "1.0.0",
    "Compute bound only: cycles of the PEs, data movement free",
    kParams,
    std::size(kParams),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
