// The kapla plugin: KAPLA's intra-layer solver as a per-layer searcher
// (§IV-C, intra_layer.cpp) and, found by the host with dynamic_cast, its
// whole-network scheduler (§IV-B, inter_layer.cpp).

#include <mapex/plugin.hpp>
#include <mapex/schedule.hpp>

#include "inter_layer.hpp"
#include "intra_layer.hpp"

namespace {

class Kapla final : public mapex::Searcher, public mapex::NetworkScheduler {
 public:
  explicit Kapla(const mapex::Params& params)
      : refine_(params.get_bool("refine")), cache_alone_(params.get_bool("cache_alone")) {}
  mapex::SearchOutcome search(mapex::SearchContext& ctx) const override {
    return kapla::solve_intra_layer(ctx, refine_, cache_alone_);
  }
  mapex::NetworkSchedule schedule(const mapex::Network& net, const mapex::Architecture& arch,
                                  const mapex::CostModel& model,
                                  const mapex::ScheduleOptions& options) const override {
    return kapla::schedule_network(net, arch, model, options);
  }

 private:
  bool refine_;
  bool cache_alone_;
};

const mapex::ParamSpec kParams[] = {
    {"refine", mapex::ParamType::kBool, "true",
     "After Algorithm 1, steepest descent from its best scheme over neighbouring schemes (tiles "
     "and splits one step up or down, pairs of dimensions exchanging a step, other loop orders) "
     "until none improves; mapex's addition beyond the paper."},
    {"cache_alone", mapex::ParamType::kBool, "true",
     "At the innermost level below an array, also solve every loop order by caching without "
     "stacking and keep the cheaper (evalCost); mapex's addition beyond the paper."},
};

mapex::Searcher* make(const mapex::Params& params) { return new Kapla(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kSearcher,
    "kapla",
    "1.3.0",
    "KAPLA (§IV): intra-layer stacking and caching with greedy cost descending (Algorithm 1); "
    "whole networks with `mapex schedule` (segments, layer pipelining, top-k_S chains)",
    kParams,
    std::size(kParams),
    nullptr,
    &make};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
