// Tensor-centric directives (KAPLA §III-B): round trips through the
// canonical mapping and the text form, a hand-written scheme in Listing 1's
// style, and every parse and conversion error with its line and reason.

#include <gtest/gtest.h>

#include <mapex/directives.hpp>
#include <mapex/generators.hpp>
#include <mapex/mapspace.hpp>
#include <random>

#include "test_chips.hpp"

namespace mapex {
namespace {

const std::string kExperiments = MAPEX_EXPERIMENTS_DIR;

Architecture multinode() {
  return Architecture::load(kExperiments + "/architectures/kapla_multinode.yaml");
}

Mapping round_trip(const Operator& op, const Architecture& arch, const Mapping& m) {
  const std::string text = format_directives(to_directives(op, arch, m), op);
  const auto parsed = parse_directives(text, "rt.kd", {&op}, arch);
  EXPECT_EQ(parsed.size(), 1u);
  const Mapping back = to_mapping(parsed.front(), op, arch, "rt.kd");
  // Printing the parsed scheme gives the same text.
  EXPECT_EQ(format_directives(to_directives(op, arch, back), op), text);
  return back;
}

TEST(Directives, SampledMappingsRoundTripOnTheMultiNodeChip) {
  const Architecture arch = multinode();
  const Operator op = make_conv2d("conv", Conv2dShape{8, 16, 32, 14, 14, 3, 3});
  const Mapspace space(op, arch);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 40; ++i) {
    auto m = space.sample(rng, 200);
    if (!m) continue;
    SCOPED_TRACE(m->summary(op, arch));
    EXPECT_EQ(round_trip(op, arch, *m), normalise_orders(*m, op, arch));
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(Directives, TrivialAndEdgeTileMappingsRoundTrip) {
  const Architecture arch = test::chip({4, 2});
  const Operator op = make_gemm("g", 6, 5, 7);
  Mapping m = Mapping::trivial(op, arch);
  EXPECT_EQ(round_trip(op, arch, m), normalise_orders(m, op, arch));
  m.level(0).tile = {2, 1, 3};
  m.level(1).split = {3, 1, 1};
  m.level(2).tile = {6, 5, 3};  // K: 3 of 7, an edge tile at DRAM
  m.level(2).order = {2, 1, 0};
  m.level(3).order = {1, 0, 2};
  ASSERT_FALSE(m.structural_error(op, arch)) << *m.structural_error(op, arch);
  EXPECT_EQ(round_trip(op, arch, m), normalise_orders(m, op, arch));
}

TEST(Directives, PrintsListingSyntax) {
  const Architecture arch = test::chip({4});
  const Operator op = make_gemm("g", 8, 4, 4);
  Mapping m = Mapping::trivial(op, arch);
  m.level(0).tile = {1, 1, 4};
  m.level(1).split = {4, 1, 1};
  m.level(2).tile = {8, 4, 4};
  m.level(2).order = {0, 2, 1};  // N innermost, then M (K has one trip)
  EXPECT_EQ(format_directives(to_directives(op, arch, m), op),
            "g:\n"
            "  L1:\n"
            "    tensor{A}(M=1, K=4)\n"
            "    tensor{B}(N=1, K=4)\n"
            "    tensor{C}(M=1, N=1)\n"
            "    stack(M+=1, 4)\n"
            "    update(N+=1)\n"
            "    update(M+=4)\n"
            "  L2:\n"
            "    tensor{A}(M=8, K=4)\n"
            "    tensor{B}(N=4, K=4)\n"
            "    tensor{C}(M=8, N=4)\n");
}

TEST(Directives, HandWrittenRowStationaryScheme) {
  // Listing 1's CONV:REGF in loop dimensions: a PE column per output row
  // (Q), a PE row per filter row (S), a 1-D convolution along P inside.
  const Architecture arch = multinode();
  const Operator op = make_conv2d("CONV", Conv2dShape{4, 4, 6, 19, 19, 5, 5});
  const std::string text =
      "% Listing 1, CONV layer\n"
      "CONV:\n"
      "  REGF:\n"
      "    tensor{Input}(N=1, C=2, P=1, Q=1, R=5, S=1)\n"
      "    tensor{Weight}(K=1, C=2, R=5, S=1)\n"
      "    tensor{Output}(N=1, K=1, P=1, Q=1)\n"
      "    stack(Q+=1, 5)   % PE columns\n"
      "    stack(S+=1, 5)   % PE rows\n"
      "    update(P+=1)     % 1-D conv\n"
      "    update(Q+=5)     # folding\n"
      "    update(C+=2)\n"
      "  GBUF:\n"
      "    tensor{Input}(N=1, C=4, P=15, Q=15, R=5, S=5, shr=6)\n"
      "    tensor{Weight}(K=1, C=4, R=5, S=5, shr=4)\n"
      "    tensor{Output}(N=1, K=1, P=15, Q=15)\n"
      "    stack(K+=1, 6)\n"
      "    stack(N+=1, 4)\n"
      "    update(C+=4)\n";
  const auto parsed = parse_directives(text, "rs.kd", {&op}, arch);
  ASSERT_EQ(parsed.size(), 1u);
  const Mapping m = to_mapping(parsed[0], op, arch, "rs.kd");
  EXPECT_EQ(m.level(0).tile, (std::vector<std::int64_t>{1, 1, 2, 1, 1, 5, 1}));
  EXPECT_EQ(m.level(1).split, (std::vector<std::int64_t>{1, 1, 1, 1, 5, 1, 5}));
  EXPECT_EQ(m.level(2).tile, (std::vector<std::int64_t>{1, 1, 4, 15, 15, 5, 5}));
  EXPECT_EQ(m.level(3).split, (std::vector<std::int64_t>{4, 6, 1, 1, 1, 1, 1}));
  // GBUF loops, outermost first: one-trip loops, then C, Q, P.
  const auto& order = m.level(2).order;
  EXPECT_EQ(std::vector<DimId>(order.end() - 3, order.end()), (std::vector<DimId>{2, 4, 3}));
  // Shared input: replicated over the 6 K-nodes, stored once (shr 6).
  EXPECT_EQ(sharing_factor(op, arch, m, 2, 0), 6);
  EXPECT_EQ(sharing_factor(op, arch, m, 2, 1), 4);  // weights over the N-nodes
  EXPECT_EQ(sharing_factor(op, arch, m, 0, 0), 1);  // PE level: systolic, no sharing
}

TEST(Directives, SeveralLayersInOneText) {
  const Architecture arch = test::chip({2});
  const Operator a = make_gemm("a", 2, 2, 2);
  const Operator b = make_gemm("b", 2, 2, 2);
  const std::string one = format_directives(to_directives(a, arch, Mapping::trivial(a, arch)), a);
  const std::string two = format_directives(to_directives(b, arch, Mapping::trivial(b, arch)), b);
  const auto parsed = parse_directives(one + two, "two.kd", {&a, &b}, arch);
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].layer, "a");
  EXPECT_EQ(parsed[1].layer, "b");
  EXPECT_EQ(parsed[1].line, 13);
}

// --- errors ----------------------------------------------------------------

struct ErrorCase {
  const char* name;
  std::string text;  ///< replaces the body of a valid scheme
  std::string message;
};

std::string valid_body() {
  return "g:\n"
         "  L1:\n"
         "    tensor{A}(M=1, K=2)\n"
         "    tensor{B}(N=1, K=2)\n"
         "    tensor{C}(M=1, N=1)\n"
         "    stack(M+=1, 2)\n"
         "    update(N+=1)\n"
         "    update(M+=2)\n"
         "    update(K+=2)\n"
         "  L2:\n"
         "    tensor{A}(M=4, K=4)\n"
         "    tensor{B}(N=2, K=4)\n"
         "    tensor{C}(M=4, N=2)\n";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

std::string error_of(const std::string& text) {
  const Architecture arch = test::chip({2});
  const Operator op = make_gemm("g", 4, 2, 4);
  try {
    const auto parsed = parse_directives(text, "bad.kd", {&op}, arch);
    for (const auto& l : parsed) to_mapping(l, op, arch, "bad.kd");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Directives, ValidBodyIsValid) { EXPECT_EQ(error_of(valid_body()), "no error"); }

TEST(Directives, EveryErrorNamesLineAndReason) {
  const std::string v = valid_body();
  const std::vector<ErrorCase> cases = {
      {"unknown layer", replace(v, "g:", "h:"),
       "bad.kd:1:1: key 'h': 'h' is neither a layer of the workload nor a level"},
      {"level outside layer", "L1:\n", "bad.kd:1:1: key 'L1': level section 'L1' outside a layer"},
      {"directive outside level", "g:\n  update(M+=1)\n",
       "bad.kd:2:3: directive 'update(M+=1)' outside a level section"},
      {"unknown directive", replace(v, "    update(N+=1)\n", "    unroll(N)\n"),
       "bad.kd:7:5: expected tensor{...}(...), stack(...) or update(...), got 'unroll(N)'"},
      {"unknown dimension", replace(v, "update(N+=1)", "update(X+=1)"),
       "bad.kd:7:5: key 'X': layer 'g' has no dimension 'X' (it has M, N, K)"},
      {"unknown tensor", replace(v, "tensor{C}(M=1, N=1)", "tensor{D}(M=1, N=1)"),
       "bad.kd:5:5: key 'D': layer 'g' has no tensor 'D' at level 'L1'"},
      {"dimension not indexing", replace(v, "tensor{A}(M=1, K=2)", "tensor{A}(M=1, K=2, N=1)"),
       "bad.kd:3:5: key 'N': dimension N does not index tensor 'A'"},
      {"missing size", replace(v, "tensor{A}(M=1, K=2)", "tensor{A}(M=1)"),
       "bad.kd:3:5: key 'K': tensor{A} at level 'L1' gives no size for K"},
      {"inconsistent size", replace(v, "tensor{B}(N=1, K=2)", "tensor{B}(N=1, K=4)"),
       "bad.kd:4:5: key 'K': tensor{B} has K=4 but another tensor at level 'L1' has K=2"},
      {"size beyond bound", replace(v, "tensor{C}(M=4, N=2)", "tensor{C}(M=4, N=3)"),
       "bad.kd:13:5: key 'N': size 3 of N outside [1, 2]"},
      {"not a number", replace(v, "M=1, K=2", "M=one, K=2"),
       "bad.kd:3:5: key 'M': expected a positive integer, got 'one'"},
      {"missing tensor", replace(v, "    tensor{C}(M=4, N=2)\n", ""),
       "bad.kd:10:3: key 'C': layer 'g': level 'L2' declares no tensor{C}"},
      {"stack shift", replace(v, "stack(M+=1, 2)", "stack(M+=2, 2)"),
       "bad.kd:6:5: key 'M': stack shifts M by 2; mapex stacks partition, so the shift must be "
       "the stacked span 1"},
      {"stack two dims", replace(v, "stack(M+=1, 2)", "stack(M+=1, N+=1, 2)"),
       "bad.kd:6:5: key 'stack': expected stack(DIM+=SHIFT, REPL) with one dimension"},
      {"update two dims", replace(v, "update(N+=1)", "update(N+=1, M+=2)"),
       "bad.kd:7:5: key 'update': expected update(DIM+=STEP) with one dimension"},
      {"update step", replace(v, "update(M+=2)", "update(M+=1)"),
       "bad.kd:8:5: key 'M': update steps M by 1; the step must be the stacked span 2"},
      {"update twice", replace(v, "update(K+=2)", "update(M+=2)"),
       "bad.kd:9:5: key 'M': dimension M updated twice at level 'L1'"},
      {"missing update", replace(v, "    update(K+=2)\n", ""),
       "bad.kd:2:3: key 'K': level 'L1': K grows from 2 to 4 at 'L2' but no update steps along it"},
      {"malformed update", replace(v, "update(K+=2)", "update(K=2)"),
       "bad.kd:9:5: key 'update': expected DIM+=N, got 'K=2'"},
      {"unclosed", replace(v, "update(K+=2)", "update(K+=2"),
       "bad.kd:9:5: key 'update': expected update(...)"},
      {"wrong shr", replace(v, "tensor{A}(M=4, K=4)", "tensor{A}(M=4, K=4, shr=2)"),
       "bad.kd:11:5: key 'shr': tensor{A} at level 'L2' has shr=2 but the chip and stacks give 1"},
      {"missing level",
       "g:\n  L1:\n    tensor{A}(M=1, K=1)\n    tensor{B}(N=1, K=1)\n"
       "    tensor{C}(M=1, N=1)\n",
       "bad.kd:1:1: key 'L2': layer 'g' has no directives for level 'L2'"},
      {"dram section", v + "  DRAM:\n",
       "bad.kd:14:3: key 'DRAM': layer 'g': 'DRAM' is not a buffer"},
      {"level twice", v + "  L2:\n", "bad.kd:14:3: key 'L2': layer 'g': level 'L2' given twice"},
      {"layer twice", v + v, "bad.kd:14:1: key 'g': layer 'g' given twice"},
      {"stack beyond fan-out",
       replace(replace(v, "stack(M+=1, 2)", "stack(M+=1, 4)"), "    update(M+=2)\n", ""),
       "bad.kd:6:5: key 'repl': stacks at level 'L1' use more units than the 2 of level 'PEs'"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.message), std::string::npos) << e;
  }
}

TEST(Directives, AdjacentArraysAreRefusedWithTheirNames) {
  const Architecture arch =
      Architecture::make("two_arrays", 1000, 8, 1, 1,
                         {test::buffer("L1", 64), test::spatial("A", {2}), test::spatial("B", {2}),
                          test::buffer("L2", 1024), test::dram()});
  const Operator op = make_gemm("g", 2, 2, 2);
  try {
    to_directives(op, arch, Mapping::trivial(op, arch));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'A' and 'B' are adjacent"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mapex
