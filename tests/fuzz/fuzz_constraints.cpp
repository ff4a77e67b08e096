// Fuzz target: constraints YAML (README, "Mapspace constraints"), resolved
// against the conv layer of tests/data/tiny_net.yaml on tiny_arch.yaml and
// turned into a mapspace.
#include <mapex/constraints.hpp>
#include <mapex/mapspace.hpp>

#include "constraints_yaml.hpp"
#include "fuzz_check.hpp"
#include "yaml_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "constraints.yaml";
  const Operator& op = fuzz::tiny_net().layers().front().op;
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const YAML::Node root = yaml::load_text(fuzz::as_text(data, size), origin);
    const ConstraintSpec spec = parse_constraint_spec(origin, root);
    const MapspaceOptions options = resolve(spec, op, fuzz::tiny_arch());
    const Mapspace space(op, fuzz::tiny_arch(), options);
    (void)space.size();
  });
  return 0;
}
