// Fuzz target: tensor-centric directives (README, "Tensor-centric
// directives") for the layers of tests/data/tiny_net.yaml on tiny_arch.yaml,
// each turned into the mapping it describes.
#include <mapex/directives.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "directives.txt";
  std::vector<const Operator*> ops;
  for (const Layer& layer : fuzz::tiny_net().layers()) ops.push_back(&layer.op);
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const auto layers = parse_directives(fuzz::as_text(data, size), origin, ops, fuzz::tiny_arch());
    for (const LayerDirectives& d : layers) {
      const int index = fuzz::tiny_net().find_layer(d.layer);
      if (index < 0) continue;
      (void)to_mapping(d, fuzz::tiny_net().layers()[static_cast<std::size_t>(index)].op,
                       fuzz::tiny_arch(), origin);
    }
  });
  return 0;
}
