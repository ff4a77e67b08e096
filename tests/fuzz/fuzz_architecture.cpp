// Fuzz target: architecture YAML (README, "Architecture files").
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  const std::string origin = "arch.yaml";
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const Architecture arch = Architecture::parse(fuzz::as_text(data, size), origin);
    for (const Level& level : arch.levels()) (void)level.fanout();
  });
  return 0;
}
