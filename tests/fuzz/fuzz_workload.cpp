// Fuzz target: workload (network) YAML (README, "Workload files"), then
// what every job computes from a layer before searching: MAC counts and
// the mapspace on the small test chip, whose construction must not depend
// on the size of the bounds (issue 18, hangs on large dimensions).
#include <mapex/mapspace.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "workload.yaml";
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const Network net = Network::parse(fuzz::as_text(data, size), origin);
    for (const Layer& layer : net.layers()) {
      (void)layer.op.macs();
      const Mapspace space(layer.op, fuzz::tiny_arch());
      (void)space.size();
    }
  });
  return 0;
}
