// Timeloop's files in and out (issue 19, part 1; README, "Timeloop files"):
// the two test specifications (a convolution on an Eyeriss-like chip, a
// GEMM on a 16 x 16 weight-stationary array) import, search and export;
// import -> export -> import gives the same files; the exported best
// mapping evaluates to the same cycles; every refusal exits 2 at its key.

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <regex>

#include "cli_runner.hpp"

namespace mapex {
namespace {

using test::run_cli;
using test::slurp;
const std::string kTl = std::string(MAPEX_TEST_DATA_DIR) + "/timeloop/";
const std::string kWork = MAPEX_TEST_WORK_DIR;

#define EXPECT_HAS(haystack, needle)                    \
  EXPECT_NE((haystack).find(needle), std::string::npos) \
      << "missing '" << (needle) << "' in: " << (haystack)

struct Spec {
  std::string name;
  std::vector<std::string> files;  // problem, architecture, constraints, ERT
  std::string mapping;
};

Spec eyeriss() {
  return {"eyeriss",
          {kTl + "conv_prob.yaml", kTl + "eyeriss_like_arch.yaml",
           kTl + "eyeriss_like_constraints.yaml", kTl + "eyeriss_like_ERT.yaml"},
          kTl + "eyeriss_like_map.yaml"};
}

Spec ws16() {
  return {"ws16",
          {kTl + "gemm_prob.yaml", kTl + "ws16_arch.yaml", kTl + "ws16_constraints.yaml",
           kTl + "ws16_ERT.yaml"},
          kTl + "ws16_map.yaml"};
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = kWork + "/timeloop_" + name;
  boost::filesystem::remove_all(dir);
  return dir;
}

std::string import(const std::vector<std::string>& files, const std::string& dir) {
  std::vector<std::string> args{"import", "timeloop"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"-o", dir});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return dir;
}

double cycles_of(const std::string& dir, const std::string& mapping) {
  const auto r = run_cli({"evaluate", "--workload", dir + "/workload.yaml", "--arch",
                          dir + "/arch.yaml", "--mapping", mapping, "--format", "csv"});
  EXPECT_EQ(r.status, 0) << r.err;
  // CSV: a header, then `layer,valid,latency_cycles,...`.
  std::smatch m;
  const std::regex re(R"(\n[^,]*,1,([0-9.e+]+),)");
  if (!std::regex_search(r.out, m, re)) {
    ADD_FAILURE() << "no valid latency_cycles in " << r.out;
    return -1;
  }
  return std::stod(m[1].str());
}

class TimeloopSpec : public ::testing::TestWithParam<Spec (*)()> {};

// Import with the hand-written mapping, export it, import again with the
// exported mapping: the same four files, byte for byte.
TEST_P(TimeloopSpec, ImportExportImportGivesTheSameFiles) {
  const Spec spec = GetParam()();
  auto files = spec.files;
  files.push_back(spec.mapping);
  const std::string first = import(files, fresh_dir(spec.name + "_rt1"));
  const std::string exported = kWork + "/timeloop_" + spec.name + "_exported.yaml";
  const auto e =
      run_cli({"export", "timeloop", "--workload", first + "/workload.yaml", "--arch",
               first + "/arch.yaml", "--mapping", first + "/mapping.yaml", "-o", exported});
  ASSERT_EQ(e.status, 0) << e.err;
  files.back() = exported;
  const std::string second = import(files, fresh_dir(spec.name + "_rt2"));
  for (const char* f : {"workload.yaml", "arch.yaml", "constraints.yaml", "mapping.yaml"}) {
    const std::string a = slurp(first + "/" + f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, slurp(second + "/" + f)) << f;
  }
}

// Done-when of issue 19: search on the imported files, export the best
// mapping, import it back: it evaluates to the cycles the search reported.
TEST_P(TimeloopSpec, SearchedBestMappingKeepsItsCyclesThroughTimeloop) {
  const Spec spec = GetParam()();
  const std::string dir = import(spec.files, fresh_dir(spec.name + "_search"));
  const auto s =
      run_cli({"search", "--workload", dir + "/workload.yaml", "--arch", dir + "/arch.yaml",
               "--constraints", dir + "/constraints.yaml", "--searcher", "random",
               "--max-evaluations", "2000", "--seed", "3", "--format", "json"});
  ASSERT_EQ(s.status, 0) << s.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(s.out, m, std::regex(R"("latency_cycles": ([0-9.e+]+))"))) << s.out;
  const double searched = std::stod(m[1].str());
  ASSERT_TRUE(
      std::regex_search(s.out, m, std::regex(R"re("mapping_yaml": "((?:[^"\\]|\\.)*)")re")));
  std::string yaml = std::regex_replace(m[1].str(), std::regex(R"(\\n)"), "\n");
  yaml = std::regex_replace(yaml, std::regex(R"(\\")"), "\"");
  const std::string best = test::write_work_file("timeloop_" + spec.name + "_best.yaml", yaml);
  EXPECT_DOUBLE_EQ(cycles_of(dir, best), searched);

  const std::string exported = kWork + "/timeloop_" + spec.name + "_best_tl.yaml";
  const auto e = run_cli({"export", "timeloop", "--workload", dir + "/workload.yaml", "--arch",
                          dir + "/arch.yaml", "--mapping", best, "-o", exported});
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_HAS(slurp(exported), "type: spatial");
  auto files = spec.files;
  files.push_back(exported);
  const std::string back = import(files, fresh_dir(spec.name + "_back"));
  EXPECT_DOUBLE_EQ(cycles_of(back, back + "/mapping.yaml"), searched);
  // The Timeloop files are also read directly: the exported mapping on the
  // Timeloop problem and architecture.
  const auto direct = run_cli({"evaluate", "--workload", spec.files[0], "--arch", spec.files[1],
                               "--mapping", exported, "--format", "csv"});
  ASSERT_EQ(direct.status, 0) << direct.err;
  EXPECT_HAS(direct.out, ",1," + std::to_string(static_cast<long long>(searched)) + ",");
}

INSTANTIATE_TEST_SUITE_P(Specs, TimeloopSpec, ::testing::Values(&eyeriss, &ws16),
                         [](const auto& spec_info) { return spec_info.param().name; });

// `mapex search` and `mapex mapspace` take the Timeloop files as they are:
// constraints read with the problem and chip given beside them.
TEST(TimeloopImport, SearchAndMapspaceTakeTimeloopFilesDirectly) {
  const auto s = run_cli({"search", "--workload", kTl + "gemm_prob.yaml", "--arch",
                          kTl + "ws16_arch.yaml", "--constraints", kTl + "ws16_constraints.yaml",
                          "--searcher", "exhaustive", "--format", "json"});
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_HAS(s.out, "\"complete\": true");
  // 64 x 32 x 32 MACs on at most 256 PEs: 512 cycles of compute at best.
  EXPECT_HAS(s.out, "\"compute_cycles\": 512.0");
  const auto m = run_cli({"mapspace", "--workload", kTl + "gemm_prob.yaml", "--arch",
                          kTl + "ws16_arch.yaml", "--constraints", kTl + "ws16_constraints.yaml"});
  ASSERT_EQ(m.status, 0) << m.err;
  EXPECT_HAS(m.out, "keep/bypass choices");
  // The exhaustive search walked exactly the counted space.
  std::smatch n;
  ASSERT_TRUE(std::regex_search(s.out, n, std::regex(R"("evaluations": ([0-9]+))")));
  EXPECT_HAS(m.out, "| buffer capacity (double-buffered where set) | " + n[1].str() + " (");
}

// `mapex run` takes Timeloop files as an experiment's workload and chip.
TEST(TimeloopImport, ExperimentRunsOnTimeloopFiles) {
  const auto exp =
      test::write_work_file("timeloop_run.yaml",
                            "name: timeloop_run\nseed: 1\nbudget: {evaluations: 200}\n"
                            "workloads:\n  - file: " +
                                kTl +
                                "gemm_prob.yaml\n"
                                "architectures:\n  - " +
                                kTl +
                                "ws16_arch.yaml\n"
                                "searchers:\n  - plugin: random\ncostmodels:\n  - roofline\n");
  const auto r = run_cli({"run", exp, "-o", kWork + "/timeloop_run.h5", "--quiet", "-j", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "| gemm_64x32x32 | gemm_64x32x32 | ws16 ");
  EXPECT_HAS(r.out, "1 jobs, 0 failed");
}

// Hand-counted conversions of the Eyeriss-like spec.
TEST(TimeloopImport, EyerissLikeChipHasTheCountedLevelsSizesAndEnergies) {
  const std::string dir = import(eyeriss().files, fresh_dir("eyeriss_counts"));
  const std::string arch = slurp(dir + "/arch.yaml");
  // 12 entries x 16 bits; the 14 column buffers over the glb (X), 12 PEs
  // under each (Y); 2048 rows x 64 bits.
  EXPECT_HAS(arch, "{name: ifmap_spad, kind: buffer, size_bytes: 24,");
  EXPECT_HAS(arch, "{name: shared_glb_spatial, kind: spatial, shape: [14, 1]");
  EXPECT_HAS(arch, "{name: DummyBuffer_spatial, kind: spatial, shape: [1, 12]");
  EXPECT_HAS(arch, "{name: shared_glb, kind: buffer, size_bytes: 16384,");
  // ERT: the dearest read (18 pJ) over 4 words a row; 16 words/cycle of
  // 2 B at 1 GHz = 32 GB/s; DRAM 512 pJ over 4 words, 4 words/cycle.
  EXPECT_HAS(arch, "read_energy_pj: 4.5, write_energy_pj: 3.5");
  EXPECT_HAS(arch, "read_bandwidth_gbps: 32, write_bandwidth_gbps: 32");
  EXPECT_HAS(arch, "{name: DRAM, kind: dram, block_bytes: 8, read_energy_pj: 128");
  EXPECT_HAS(arch, "mac: {energy_pj: 0.8, per_pe: 1}");
  const std::string workload = slurp(dir + "/workload.yaml");
  EXPECT_HAS(workload, "subscripts: [N, C, R + P, S + Q]");
  const std::string constraints = slurp(dir + "/constraints.yaml");
  // split 4 of NPQRSCM on a fan-out with X of size 1: N, P, Q, R cannot
  // split; Timeloop's weights_spad permutation RC is C outside R innermost.
  EXPECT_HAS(constraints, "DummyBuffer_spatial: {max_factor: {R: 1, P: 1, Q: 1, N: 1}");
  EXPECT_HAS(constraints, "innermost: [C, R], keep: [Weights], bypass: [Inputs, Outputs]");
  EXPECT_HAS(constraints, "min_utilization: 0.25");
}

// The weight-stationary constraints, each Timeloop form in mapex terms.
TEST(TimeloopImport, Ws16ConstraintsBecomeFactorBoundsPinsAndKeeps) {
  const std::string dir = import(ws16().files, fresh_dir("ws16_constraints"));
  const std::string c = slurp(dir + "/constraints.yaml");
  // `M<=64 K>=1, permutation: K`; `default_max_factor: 4` at DRAM; the
  // array's `M=1`; the register's `N=1 K=1` and keep/bypass; the keep at
  // DRAM says nothing (DRAM keeps all) and is left out.
  EXPECT_HAS(c, "GlobalBuffer: {max_factor: {M: 64}, min_factor: {K: 1}, innermost: [K]}");
  EXPECT_HAS(c, "DRAM: {max_factor: {M: 4, N: 4, K: 4}}");
  EXPECT_HAS(c, "GlobalBuffer_spatial: {max_factor: {M: 1}, min_factor: {M: 1}}");
  EXPECT_HAS(c,
             "WeightReg: {max_factor: {N: 1, K: 1}, min_factor: {N: 1, K: 1}, keep: [B], "
             "bypass: [A, Z]}");
  EXPECT_HAS(c, "explore_bypass: true");
  EXPECT_HAS(c, "max_parallel_dims: 3");
  const std::string a = slurp(dir + "/arch.yaml");
  // 4096 rows x 128 bits; 16 x 16 PEs (meshX 16); 16 pJ per 16-byte row.
  EXPECT_HAS(a,
             "{name: GlobalBuffer, kind: buffer, size_bytes: 65536, double_buffered: true, "
             "read_energy_pj: 1, write_energy_pj: 1, bandwidth_gbps: 32}");
  EXPECT_HAS(a, "shape: [16, 16]");
}

// Hand-counted tiles of eyeriss_like_map.yaml: each level's tile is the
// product of its factors and every factor below it; permutations reversed.
TEST(TimeloopImport, EyerissLikeMappingHasTheCountedTiles) {
  auto files = eyeriss().files;
  files.push_back(eyeriss().mapping);
  const std::string dir = import(files, fresh_dir("eyeriss_map"));
  const std::string m = slurp(dir + "/mapping.yaml");
  // psum M2; weights C2 R3 over it; the column's 12 PEs split S3 x C4 on Y;
  // the 14 columns split Q8 on X; the glb loops P8; DRAM M8.
  EXPECT_HAS(m, "psum_spad:\n  tile: {R: 1, S: 1, P: 1, Q: 1, C: 1, M: 2, N: 1}");
  EXPECT_HAS(m,
             "weights_spad:\n  tile: {R: 3, S: 1, P: 1, Q: 1, C: 2, M: 2, N: 1}\n"
             "  order: [S, Q, P, M, N, C, R]\n  keep: [Weights]");
  EXPECT_HAS(m, "DummyBuffer_spatial:\n  split: {S: 3, C: 4}\n  axes: {S: [1, 3], C: [1, 4]}");
  EXPECT_HAS(m, "DummyBuffer:\n  tile: {R: 3, S: 3, P: 1, Q: 1, C: 8, M: 2, N: 1}");
  EXPECT_HAS(m, "shared_glb_spatial:\n  split: {Q: 8}\n  axes: {Q: [8, 1]}");
  EXPECT_HAS(m, "shared_glb:\n  tile: {R: 3, S: 3, P: 8, Q: 8, C: 8, M: 2, N: 1}");
  EXPECT_HAS(m, "keep: [Inputs, Outputs]");
  // 73,728 MACs on 12 x 8 = 96 busy PEs: 768 compute cycles.
  const auto r = run_cli({"evaluate", "--workload", dir + "/workload.yaml", "--arch",
                          dir + "/arch.yaml", "--mapping", dir + "/mapping.yaml"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "compute_cycles   768");
  EXPECT_HAS(r.out, "macs             73728");
}

// ----------------------------------------------------------- bad input

std::string write(const std::string& name, const std::string& text) {
  return test::write_work_file("timeloop_bad_" + name, text);
}

std::string expect_bad(const std::vector<std::string>& files) {
  std::vector<std::string> args{"import", "timeloop"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"-o", fresh_dir("bad")});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("mapex: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(boost::filesystem::exists(kWork + "/timeloop_bad")) << "wrote files on bad input";
  return r.err;
}

const char* const kProblem = R"(problem:
  shape:
    name: g
    dimensions: [M, N, K]
    data_spaces:
      - {name: A, projection: [M, K]}
      - {name: B, projection: [K, N]}
      - {name: Z, projection: [M, N], read_write: true}
  instance: {M: 8, N: 8, K: 8}
)";

TEST(TimeloopImportErrors, ProjectionNamingAnUnknownDimension) {
  const auto p =
      write("proj.yaml", std::regex_replace(kProblem, std::regex(R"(\[K, N\])"), "[K, X]"));
  const auto err = expect_bad({p});
  EXPECT_HAS(err, "proj.yaml:7:35:");
  EXPECT_HAS(err, "key 'projection'");
  EXPECT_HAS(err, "unknown dimension 'X'");
}

TEST(TimeloopImportErrors, MoreDataSpacesThanTimeloopAllows) {
  std::string text = kProblem;
  const std::string extra =
      "      - {name: E1, projection: [M]}\n      - {name: E2, projection: [N]}\n"
      "      - {name: E3, projection: [K]}\n";
  text.insert(text.find("  instance"), extra);
  const auto err = expect_bad({write("spaces.yaml", text)});
  EXPECT_HAS(err, "spaces.yaml:6:7:");
  EXPECT_HAS(err, "key 'data_spaces'");
  EXPECT_HAS(err, "6 data spaces; Timeloop allows at most 5");
}

TEST(TimeloopImportErrors, MultiCharacterDimensionNamesAreFine) {
  std::string text = std::regex_replace(kProblem, std::regex(R"(\bK\b)"), "Kc");
  const auto p = write("long.yaml", text);
  const std::string dir = fresh_dir("long");
  const auto r = run_cli({"import", "timeloop", p, "-o", dir});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(slurp(dir + "/workload.yaml"), "dims: {M: 8, N: 8, Kc: 8}");
}

TEST(TimeloopImportErrors, SparseDensitiesAreRefused) {
  const std::string text = std::string(kProblem) + "  densities: {A: 0.5}\n";
  const auto err = expect_bad({write("dens.yaml", text)});
  EXPECT_HAS(err, "key 'densities'");
  EXPECT_HAS(err, "sparse");
}

TEST(TimeloopImportErrors, SparseOptimizationsAreRefused) {
  const auto err =
      expect_bad({write("sparse.yaml", std::string(kProblem) + "sparse_optimizations: {}\n")});
  EXPECT_HAS(err, "sparse.yaml:10:1: key 'sparse_optimizations'");
  EXPECT_HAS(err, "sparse");
}

TEST(TimeloopImportErrors, V04NodeListIsRefused) {
  const auto err = expect_bad({write("v04.yaml",
                                     "architecture:\n  version: 0.4\n  nodes:\n"
                                     "  - !Component\n    name: MainMemory\n    class: DRAM\n")});
  EXPECT_HAS(err, "v04.yaml:3:3: key 'nodes'");
  EXPECT_HAS(err, "v0.4 front end");
}

const char* const kArch = R"(architecture:
  version: 0.3
  subtree:
    - name: sys
      local:
        - {name: DRAM, class: DRAM, attributes: {width: 64, word_bits: 8}}
        - {name: Buf, class: SRAM, attributes: {depth: 64, width: 64, word_bits: 8}}
      subtree:
        - name: PE[0..15]
          local:
            - {name: Reg, class: regfile, attributes: {depth: 4, width: 8, word_bits: 8, meshX: 4}}
            - {name: mac, class: intmac, attributes: {meshX: 4}}
)";

TEST(TimeloopImportErrors, PerLevelWordWidthsAreRefused) {
  const auto a =
      write("bits.yaml", std::regex_replace(kArch, std::regex("depth: 4, width: 8, word_bits: 8"),
                                            "depth: 4, width: 16, word_bits: 16"));
  const auto err = expect_bad({a});
  EXPECT_HAS(err, "bits.yaml:11:");
  EXPECT_HAS(err, "key 'word_bits'");
  EXPECT_HAS(err, "per tensor, not per level");
}

TEST(TimeloopImportErrors, SparseStorageAttributesAreRefused) {
  const auto a = write("meta.yaml", std::regex_replace(kArch, std::regex("depth: 64, width: 64"),
                                                       "depth: 64, metadata_depth: 8, width: 64"));
  const auto err = expect_bad({a});
  EXPECT_HAS(err, "meta.yaml:7:");
  EXPECT_HAS(err, "key 'metadata_depth'");
}

TEST(TimeloopImportErrors, UserNetworksAreRefused) {
  std::string text = kArch;
  text.insert(text.find("        - {name: Buf"),
              "        - {name: Noc, class: XY_NoC, attributes: {datawidth: 8}}\n");
  const auto err = expect_bad({write("noc.yaml", text)});
  EXPECT_HAS(err, "key 'class'");
  EXPECT_HAS(err, "networks");
}

TEST(TimeloopImportErrors, TwoDimensionalSplitIsRefused) {
  // Buf fans out 4 x 4 (meshX 4 of 16 PEs): a split that puts M on X and N
  // on Y cannot be stated in mapex.
  const auto c =
      write("split.yaml",
            "architecture_constraints:\n  targets:\n"
            "    - {target: Buf, type: spatial, factors: K=1, permutation: MNK, split: 1}\n");
  const auto err = expect_bad({write("p2.yaml", kProblem), write("a2.yaml", kArch), c});
  EXPECT_HAS(err, "split.yaml:3:");
  EXPECT_HAS(err, "key 'split'");
  EXPECT_HAS(err, "2-D fan-out");
}

TEST(TimeloopImportErrors, OutermostPermutationPinsAreRefused) {
  const auto c = write("perm.yaml",
                       "mapspace_constraints:\n"
                       "  - {target: Buf, type: temporal, permutation: M_K}\n");
  const auto err = expect_bad({write("p3.yaml", kProblem), write("a3.yaml", kArch), c});
  EXPECT_HAS(err, "perm.yaml:2:");
  EXPECT_HAS(err, "key 'permutation'");
  EXPECT_HAS(err, "outermost");
}

TEST(TimeloopImportErrors, DramBypassIsRefused) {
  const auto c = write("dram.yaml",
                       "mapspace_constraints:\n"
                       "  - {target: DRAM, type: bypass, bypass: [A]}\n");
  const auto err = expect_bad({write("p4.yaml", kProblem), write("a4.yaml", kArch), c});
  EXPECT_HAS(err, "key 'bypass'");
  EXPECT_HAS(err, "DRAM keeps every tensor");
}

TEST(TimeloopImportErrors, UnknownTargetAndDimensionInConstraints) {
  const auto c1 = write("target.yaml", "mapspace_constraints:\n  - {target: L9, type: temporal}\n");
  EXPECT_HAS(expect_bad({write("p5.yaml", kProblem), write("a5.yaml", kArch), c1}),
             "target.yaml:2:14: key 'target': unknown storage level 'L9'");
  const auto c2 = write("factor.yaml",
                        "mapspace_constraints:\n  - {target: Buf, type: temporal, factors: Q=2}\n");
  EXPECT_HAS(expect_bad({write("p6.yaml", kProblem), write("a6.yaml", kArch), c2}),
             "unknown dimension 'Q'");
}

TEST(TimeloopImportErrors, MappingFactorsMustMultiplyToTheBounds) {
  const auto m =
      write("map.yaml", "mapping:\n  - {target: Buf, type: temporal, factors: M=2 N=8 K=8}\n");
  const auto err = expect_bad({write("p7.yaml", kProblem), write("a7.yaml", kArch), m});
  EXPECT_HAS(err, "map.yaml:2:");
  EXPECT_HAS(err, "key 'mapping'");
  EXPECT_HAS(err, "factors of M multiply to 2");
}

TEST(TimeloopImportErrors, ResidualFactorsAreRefused) {
  const auto m = write("resid.yaml",
                       "mapping:\n  - {target: Buf, type: temporal, factors: \"M=3,2 N=8 K=8\"}\n");
  const auto err = expect_bad({write("p10.yaml", kProblem), write("a10.yaml", kArch), m});
  EXPECT_HAS(err, "resid.yaml:2:");
  EXPECT_HAS(err, "key 'factors'");
  EXPECT_HAS(err, "residual factor (M=3,2)");
}

TEST(TimeloopImportErrors, SectionInTwoFiles) {
  const auto err = expect_bad({write("p8.yaml", kProblem), write("p9.yaml", kProblem)});
  EXPECT_HAS(err, "p9.yaml:1:1: key 'problem'");
  EXPECT_HAS(err, "given twice");
}

// Each of the other refusals, at its key, with its reason: (name, text
// replacing a piece of kArch or kProblem, key, reason).
struct Refusal {
  const char* name;
  const char* from;
  const char* to;
  const char* key;
  const char* reason;
};

TEST(TimeloopImportErrors, EveryOtherRefusalNamesItsKeyAndReason) {
  const std::vector<Refusal> cases = {
      {"v02", "architecture:\n  version: 0.3", "arch:\n  version: 0.3", "key 'arch'", "v0.2"},
      {"nosize", "depth: 64, width: 64, word_bits: 8", "width: 64, word_bits: 8", "key 'depth'",
       "has no size"},
      {"macfan", "{meshX: 4}", "{instances: 32, meshX: 4}", "key 'instances'",
       "no fan-out below its innermost buffer"},
      {"overbook", "depth: 64, width", "depth: 64, allow_overbooking: true, width",
       "key 'allow_overbooking'", "always fit"},
      {"cluster", "depth: 64, width", "depth: 64, cluster_size: 2, width", "key 'cluster_size'",
       "cluster"},
      {"twosub", "      subtree:\n        - name: PE[0..15]",
       "      subtree:\n        - name: Other\n        - name: PE[0..15]", "key 'subtree'",
       "one subtree per level"},
      {"unknown", "architecture:\n  version: 0.3", "archtecture: {}\narchitecture:\n  version: 0.3",
       "key 'archtecture'", "unknown Timeloop section"},
  };
  for (const auto& c : cases) {
    std::string text = kArch;
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, std::string(c.from).size(), c.to);
    const auto err = expect_bad({write(std::string(c.name) + ".yaml", text)});
    EXPECT_HAS(err, std::string(c.name) + ".yaml:");
    EXPECT_HAS(err, c.key);
    EXPECT_HAS(err, c.reason);
  }
  const std::vector<Refusal> problems = {
      {"flatten", "    dimensions: [M, N, K]", "    dimensions: [M, N, K]\n    flatten: []",
       "key 'flatten'", "flattened"},
      {"expr", "projection: [K, N]}", "projection: '[K, N]'}", "key 'projection'", "v0.4"},
      {"tworw", "{name: B, projection: [K, N]}", "{name: B, projection: [K, N], read_write: true}",
       "key 'read_write'", "exactly one read_write"},
  };
  for (const auto& c : problems) {
    std::string text = kProblem;
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.name;
    text.replace(at, std::string(c.from).size(), c.to);
    const auto err = expect_bad({write(std::string(c.name) + ".yaml", text)});
    EXPECT_HAS(err, c.key);
    EXPECT_HAS(err, c.reason);
  }
  const std::vector<std::pair<std::string, std::string>> constraints = {
      {"{target: Buf, type: temporal, no_reuse: [A]}", "key 'no_reuse'"},
      {"{target: Buf, type: max_overbooked_proportion, proportion: 0.1}", "key 'type'"},
      {"{target: Buf, type: temporal, attributes: {factors: M=2}}", "key 'attributes'"},
  };
  for (size_t i = 0; i < constraints.size(); ++i) {
    const auto c = write("c" + std::to_string(i) + ".yaml",
                         "mapspace_constraints:\n  - " + constraints[i].first + "\n");
    const auto err = expect_bad({write("pc.yaml", kProblem), write("ac.yaml", kArch), c});
    EXPECT_HAS(err, constraints[i].second);
    EXPECT_HAS(err, "cannot be carried over to mapex");
  }
}

TEST(TimeloopExportErrors, EdgeTilesHaveNoTimeloopFactors) {
  const std::string dir = import(ws16().files, fresh_dir("edge"));
  const auto m = write("edge_map.yaml",
                       "WeightReg: {tile: {M: 1, N: 1, K: 1}, order: [M, N, K]}\n"
                       "GlobalBuffer: {tile: {M: 48, N: 32, K: 32}, order: [M, N, K]}\n");
  const auto r = run_cli({"export", "timeloop", "--workload", dir + "/workload.yaml", "--arch",
                          dir + "/arch.yaml", "--mapping", m});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_HAS(r.err, "edge_map.yaml");
  EXPECT_HAS(r.err, "key 'mapping'");
  EXPECT_HAS(r.err, "edge tiles");
}

}  // namespace
}  // namespace mapex
