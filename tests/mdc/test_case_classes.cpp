// The mdc engine analyses one case per class and counts the others
// (costmodels/mdc/engine.cpp, CaseOrder::case_class: cases that agree on
// the innermost directive past Init and on which states are edges move and
// cost the same, MAESTRO §IV-B). Here every layer of every MAESTRO
// reference case, in both iteration spaces, is analysed once with that
// reuse and once with every case analysed: the results must agree bit for
// bit, and so must the errors.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <mapex/error.hpp>
#include <mapex/mdc.hpp>
#include <string>

#include "engine.hpp"

namespace mapex::mdc {
namespace {

// Every number of a Result (the layer name is not the engine's).
constexpr double Result::*kFields[] = {&Result::num_macs,           &Result::true_macs,
                                       &Result::runtime_cycles,     &Result::energy_total_macunits,
                                       &Result::l1_size_req,        &Result::l2_size_req,
                                       &Result::input_l1_size_req,  &Result::filter_l1_size_req,
                                       &Result::output_l1_size_req, &Result::input_l2_size_req,
                                       &Result::filter_l2_size_req, &Result::output_l2_size_req,
                                       &Result::input_l2_rd,        &Result::input_l2_wr,
                                       &Result::filter_l2_rd,       &Result::filter_l2_wr,
                                       &Result::output_l2_rd,       &Result::output_l2_wr,
                                       &Result::input_l1_rd,        &Result::input_l1_wr,
                                       &Result::filter_l1_rd,       &Result::filter_l1_wr,
                                       &Result::output_l1_rd,       &Result::output_l1_wr,
                                       &Result::noc_bw_req_peak,    &Result::noc_bw_req_avg,
                                       &Result::offchip_bw_req,     &Result::avg_utilized_pes,
                                       &Result::ingress_delay_avg,  &Result::egress_delay_avg,
                                       &Result::compute_delay_avg};

// The analysis's result, or its error message.
struct Outcome {
  bool failed = false;
  std::string error;
  Result result;
};
Outcome analyse_plan(const engine::Plan& plan) {
  Outcome o;
  try {
    o.result = engine::analyse(plan);
  } catch (const InputError& e) {
    o.failed = true;
    o.error = e.what();
  }
  return o;
}

TEST(MdcCaseClasses, ReuseGivesTheNumbersOfAnAnalysisOfEveryCase) {
  const std::filesystem::path cases = std::string(MAPEX_MAESTRO_REFDATA) + "/cases";
  int compared = 0, failed_alike = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cases)) {
    const auto mapping = entry.path() / "mapping.m", hw_file = entry.path() / "hw.m";
    if (!std::filesystem::exists(mapping) || !std::filesystem::exists(hw_file)) continue;
    Network net;
    Hardware hw;
    try {
      net = load_mapping(mapping.string());
      hw = load_hardware(hw_file.string());
    } catch (const InputError&) {
      continue;  // the reference cases of bad input files
    }
    for (const Layer& layer : net.layers)
      for (const bool compat : {false, true}) {
        engine::Plan reused;
        try {
          reused = engine::compile(layer, hw, layer.dim("N") > 0, compat);
        } catch (const InputError&) {
          continue;  // directives the plan rejects: no analysis to compare
        }
        engine::Plan every_case = reused;
        every_case.reuse_case_classes = false;
        const Outcome a = analyse_plan(reused), b = analyse_plan(every_case);
        const std::string where = entry.path().filename().string() + " " + layer.name +
                                  (compat ? " (maestro_compat)" : "");
        ASSERT_EQ(a.failed, b.failed) << where;
        if (a.failed) {
          EXPECT_EQ(a.error, b.error) << where;
          ++failed_alike;
          continue;
        }
        for (const auto field : kFields)
          EXPECT_EQ(std::memcmp(&(a.result.*field), &(b.result.*field), sizeof(double)), 0)
              << where << ": " << a.result.*field << " against " << b.result.*field;
        ++compared;
      }
  }
  // Both iteration spaces of the 253 reference cases' layers: thousands.
  EXPECT_GT(compared, 2000);
  RecordProperty("compared", compared);
  RecordProperty("failed_alike", failed_alike);
}

}  // namespace
}  // namespace mapex::mdc
