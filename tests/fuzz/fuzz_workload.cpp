// Fuzz target: workload (network) YAML (README, "Workload files"), then
// what every job computes from a layer before searching: MAC counts and
// the mapspace on the small test chip, whose construction must not depend
// on the size of the bounds (issue 18, hangs on large dimensions). A
// mapspace's refusal is placed at the layer's entry, as the host does.
#include <mapex/layer_location.hpp>
#include <mapex/mapspace.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "workload.yaml";
  const std::string text = fuzz::as_text(data, size);
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const Network net = Network::parse(text, origin);
    for (const Layer& layer : net.layers()) {
      (void)layer.op.macs();
      try {
        const Mapspace space(layer.op, fuzz::tiny_arch());
        (void)space.size();
      } catch (const InputError& e) {
        throw placed_at(e, layer_location(text, origin, layer.op.name()));
      }
    }
  });
  return 0;
}
