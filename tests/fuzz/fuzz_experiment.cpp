// Fuzz target: experiment YAML (README, "Experiment files"), read as if it
// lay in experiments/marvel/ so that the shipped workloads and
// architectures it names resolve, then expanded into jobs.
#include "fuzz_check.hpp"
#include "host/experiment.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mapex;
  static const std::string origin = fuzz::source_path("experiments/marvel/fuzz_input.yaml");
  fuzz::expect_clean(origin, fuzz::Located::kLineColumn, [&] {
    const host::Experiment e = host::parse_experiment(fuzz::as_text(data, size), origin);
    (void)host::expand_jobs(e);
  });
  return 0;
}
