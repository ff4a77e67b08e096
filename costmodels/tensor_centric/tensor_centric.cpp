// The `tensor_centric` cost-model plugin: KAPLA's cost model (§IV-A) over
// the tensor-centric directives (§III-B) and the generic hardware template
// (§III-C). The arithmetic lives in engine.cpp.

#include <mapex/plugin.hpp>

#include "engine.hpp"

namespace {

class BoundTensorCentric final : public mapex::BoundCostModel {
 public:
  BoundTensorCentric(const mapex::Operator& op, const mapex::Architecture& arch)
      : op_(op), arch_(arch) {}
  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    return mapex::tc::validity_error(op_, arch_, mapping);
  }
  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    return mapex::tc::evaluate(op_, arch_, mapping);
  }

 private:
  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
};

class TensorCentric final : public mapex::CostModel {
 public:
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundTensorCentric>(op, arch);
  }
};

mapex::CostModel* make(const mapex::Params&) { return new TensorCentric(); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "tensor_centric",
    "1.0.0",
    "KAPLA's tensor-centric model (§IV-A): accesses from tensor sizes and updates, "
    "broadcast, forwarding and buffer sharing, roofline latency",
    nullptr,
    0,
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
