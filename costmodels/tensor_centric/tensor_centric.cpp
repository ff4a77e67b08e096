// The `tensor_centric` cost-model plugin: KAPLA's cost model (§IV-A) over
// the tensor-centric directives (§III-B) and the generic hardware template
// (§III-C). The arithmetic lives in engine.cpp.

#include <mapex/error.hpp>
#include <mapex/nn_dataflow_bridge.hpp>
#include <mapex/plugin.hpp>

#include "engine.hpp"

namespace {

/// Both models step loops only at buffer levels (KAPLA §III-B, nn_dataflow's
/// loop blocking), so a cluster level's temporal loops have no image.
std::optional<mapex::Unsupported> cluster_level(const mapex::Architecture& arch,
                                                const mapex::Mapping& mapping) {
  for (int i = 0; i < arch.num_levels(); ++i)
    if (mapping.level(i).cluster.active())
      return mapex::Unsupported{arch.levels()[static_cast<std::size_t>(i)].name, "cluster",
                                "cost model 'tensor_centric' cannot model a cluster level "
                                "(temporal loops between two spatial splits, FLASH Table 2): "
                                "KAPLA's and nn_dataflow's loop nests step only at buffer levels"};
  return std::nullopt;
}

// ---- keep/bypass ----

/// KAPLA's model charges one network per exchange (§III-C): a tensor whose
/// bypass makes it cross the networks of two spatial levels at once cannot
/// be charged.
std::optional<mapex::Unsupported> bypass_across_networks(const mapex::Operator& op,
                                                         const mapex::Architecture& arch,
                                                         const mapex::Mapping& mapping) {
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t) {
    const auto chain = mapping.keeping_levels(op, arch, t);
    for (std::size_t j = 0; j + 1 < chain.size(); ++j) {
      int networks = 0, bypassed = -1;
      for (int i = chain[j] + 1; i < chain[j + 1]; ++i) {
        if (arch.levels()[static_cast<std::size_t>(i)].kind == mapex::LevelKind::kSpatial)
          ++networks;
        else if (bypassed < 0)
          bypassed = i;
      }
      if (bypassed >= 0 && networks > 1)
        return mapex::Unsupported{
            arch.levels()[static_cast<std::size_t>(bypassed)].name, "keep",
            "bypasses tensor '" + op.tensors()[static_cast<std::size_t>(t)].name +
                "', which then crosses the networks of " + std::to_string(networks) +
                " spatial levels at once; cost model 'tensor_centric' (KAPLA §III-C) charges one "
                "network per exchange"};
    }
  }
  return std::nullopt;
}

/// nn_dataflow keeps every data category in the REGF.
std::optional<mapex::Unsupported> regf_bypass(const mapex::Operator& op,
                                              const mapex::Architecture& arch,
                                              const mapex::ndf::Problem& pr,
                                              const mapex::Mapping& mapping) {
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
    if (!mapping.keeps(op, arch, pr.roles.regf, t))
      return mapex::Unsupported{
          arch.levels()[static_cast<std::size_t>(pr.roles.regf)].name, "keep",
          "bypasses tensor '" + op.tensors()[static_cast<std::size_t>(t)].name +
              "'; cost model 'tensor_centric' (model=nn_dataflow) keeps every data category in "
              "the REGF"};
  return std::nullopt;
}

// ---- end of keep/bypass ----

/// KAPLA's directive model (engine.cpp).
class BoundDirectives final : public mapex::BoundCostModel {
 public:
  BoundDirectives(const mapex::Operator& op, const mapex::Architecture& arch)
      : op_(op), arch_(arch) {}
  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    if (auto refused = bypass_across_networks(op_, arch_, mapping))
      return "level '" + refused->level + "': " + refused->reason;
    return mapex::tc::validity_error(op_, arch_, mapping);
  }
  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    if (auto refused = bypass_across_networks(op_, arch_, mapping))
      return mapex::Metrics::invalid("level '" + refused->level + "': " + refused->reason);
    return mapex::tc::evaluate(op_, arch_, mapping);
  }
  // A bound for partial mappings (mapex/bounds.hpp): the compute bound over
  // the most PEs a completion can engage; the MAC energy; with every tensor
  // kept at the innermost buffer (the default), the operand reads (and
  // output writes) every MAC makes there (engine.cpp counts them per MAC);
  // and idle energy over at least that latency. Every other term is
  // non-negative.
  std::optional<mapex::Score> lower_bound(const mapex::PartialMapping& partial) const override {
    mapex::Score s{true, mapex::compute_cycles_bound(op_, arch_, partial), 0};
    const double macs = static_cast<double>(op_.macs());
    s.energy_pj = macs * arch_.mac_energy_pj();
    const mapex::Level& inner = arch_.levels().front();
    const auto& keep = partial.mapping->level(0).keep;
    if (inner.kind == mapex::LevelKind::kBuffer && inner.partitions.empty() && keep.empty())
      for (const auto& t : op_.tensors()) {
        s.energy_pj += macs * inner.read_energy_of(t.name);
        if (t.role == mapex::TensorRole::kOutput)
          s.energy_pj += macs * inner.write_energy_of(t.name);
      }
    double idle = 0;
    for (const auto& level : arch_.levels()) idle += level.idle_energy_pj_per_cycle;
    s.energy_pj += idle * s.latency_cycles;
    return s;
  }

  std::optional<mapex::Unsupported> unsupported(const mapex::Mapping& mapping) const override {
    if (auto refused = cluster_level(arch_, mapping)) return refused;
    return bypass_across_networks(op_, arch_, mapping);
  }

 private:
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
};

/// nn_dataflow's model (nn_dataflow.cpp), on mappings that are
/// nn_dataflow schemes.
class BoundNnDataflow final : public mapex::ndf::BoundNnDataflowModel {
 public:
  BoundNnDataflow(const mapex::Operator& op, const mapex::Architecture& arch,
                  mapex::ndf::Problem problem)
      : op_(op), arch_(arch), problem_(std::move(problem)) {}
  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    if (auto err = mapping.structural_error(op_, arch_)) return err;
    if (auto refused = regf_bypass(op_, arch_, problem_, mapping))
      return "level '" + refused->level + "': " + refused->reason;
    mapex::ndf::Scheme scheme;
    return mapex::ndf::scheme_from_mapping(problem_, mapping, scheme);
  }
  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    if (auto err = mapping.structural_error(op_, arch_)) return mapex::Metrics::invalid(*err);
    if (auto refused = regf_bypass(op_, arch_, problem_, mapping))
      return mapex::Metrics::invalid("level '" + refused->level + "': " + refused->reason);
    return mapex::ndf::to_metrics(op_, arch_, problem_,
                                  mapex::ndf::evaluate_mapping(problem_, mapping));
  }
  const mapex::ndf::Problem& problem() const override { return problem_; }
  std::optional<mapex::Unsupported> unsupported(const mapex::Mapping& mapping) const override {
    if (auto refused = cluster_level(arch_, mapping)) return refused;
    return regf_bypass(op_, arch_, problem_, mapping);
  }

 private:
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  mapex::ndf::Problem problem_;
};

class TensorCentric final : public mapex::CostModel {
 public:
  explicit TensorCentric(const mapex::Params& params)
      : model_(params.get_string("model")),
        bypass_(params.get_string("gbuf_bypass")),
        ifmap_layout_(params.get_string("ifmap_layout")),
        forwarding_(params.get_string("forwarding")) {
    if (model_ != "kapla" && model_ != "nn_dataflow")
      throw mapex::InputError(
          "cost model 'tensor_centric': model must be kapla or nn_dataflow, "
          "got '" +
          model_ + "'");
  }
  /// nn_dataflow's model pins filters under no_time_mux; KAPLA's does not.
  bool pins_on_no_time_mux() const override { return model_ == "nn_dataflow"; }
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    // KAPLA's and nn_dataflow's time models have one bandwidth per level.
    if (const int i = arch.first_split_ports(); i >= 0)
      throw mapex::InputError(mapex::SourceLocation{}, "read_bandwidth_gbps",
                              "cost model 'tensor_centric' cannot model separate read and write "
                              "bandwidths (level '" +
                                  arch.levels()[static_cast<std::size_t>(i)].name +
                                  "' of architecture '" + arch.name() + "')");
    // Both models count buffers and traffic in words of one size.
    mapex::require_uniform_word_bits(op, arch,
                                     "cost model 'tensor_centric' (model=" + model_ + ")");
    if (model_ == "kapla") return std::make_unique<BoundDirectives>(op, arch);
    mapex::ndf::Problem problem;
    if (auto err = mapex::ndf::make_problem(op, arch, bypass_, ifmap_layout_, forwarding_, problem))
      throw mapex::InputError("cost model 'tensor_centric' (model=nn_dataflow), layer '" +
                              op.name() + "' on '" + arch.name() + "': " + *err);
    return std::make_unique<BoundNnDataflow>(op, arch, std::move(problem));
  }

 private:
  std::string model_, bypass_, ifmap_layout_, forwarding_;
};

mapex::CostModel* make(const mapex::Params& params) { return new TensorCentric(params); }

const mapex::ParamSpec kParams[] = {
    {"model", mapex::ParamType::kString, "kapla",
     "kapla: KAPLA's directive model (§IV-A, README). nn_dataflow: the model KAPLA's results "
     "come from (stanford-mast/nn_dataflow 198a527), on mappings that are nn_dataflow schemes."},
    {"gbuf_bypass", mapex::ParamType::kString, "",
     "nn_dataflow: data that may bypass the GBUF, as letters i, o, f (empty: none, KAPLA's "
     "--disable-bypass i o f), for mappings without `keep` at the GBUF; a mapping's `keep` "
     "there fixes what the GBUF holds."},
    {"ifmap_layout", mapex::ParamType::kString, "",
     "nn_dataflow: the input's DRAM layout as ORDER:HxW,HxW,HxW,HxW (OUTP, OFMP, BATP, INPP); "
     "empty: the layer's own partition projected onto the memory channels."},
    {"forwarding", mapex::ParamType::kString, "arch",
     "nn_dataflow: GBUF sharing between nodes (access forwarding): arch (the node array's "
     "noc.forwarding), on or off."},
};

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "tensor_centric",
    "1.0.0",
    "KAPLA's tensor-centric model (§IV-A), or nn_dataflow's model that scores KAPLA's "
    "results (model=nn_dataflow)",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
