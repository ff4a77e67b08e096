// Fuzz target: mapping YAML (README, "Mapping files") for the conv layer of
// tests/data/tiny_net.yaml on tests/data/tiny_arch.yaml, then the nest
// analysis of what was accepted.
#include <mapex/analysis.hpp>
#include <mapex/mapping.hpp>

#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "mapping.yaml";
  const Operator& op = fuzz::tiny_net().layers().front().op;
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const Mapping m = Mapping::parse(fuzz::as_text(data, size), origin, op, fuzz::tiny_arch());
    if (!capacity_error(op, fuzz::tiny_arch(), m)) (void)analyse(op, fuzz::tiny_arch(), m);
  });
  return 0;
}
