// Fuzz target: MAESTRO mapping files (.m; refdata README, "Mapping file"),
// each layer checked against MAESTRO's default hardware.
#include <mapex/mdc.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "layer.m";
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const mdc::Network net = mdc::parse_mapping(fuzz::as_text(data, size), origin);
    const mdc::Hardware hw;
    for (const mdc::Layer& layer : net.layers) {
      (void)layer.true_macs();
      mdc::validate(layer, hw, origin);
    }
  });
  return 0;
}
