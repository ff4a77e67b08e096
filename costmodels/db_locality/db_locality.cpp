// The `db_locality` cost model: Marvel's distinct-block off-chip model
// (TACO 2021, §5.1; mapex/db_locality.hpp) as a stand-alone off-chip
// traffic model. It reads only the off-chip part of a mapping, the tile of
// the buffer right below DRAM and DRAM's loop order over those tiles, and
// reports the DRAM traffic in blocks, its transfer time and energy. The
// on-chip part is another model's job (mdc, as in Marvel's decoupled search).

#include <algorithm>
#include <mapex/analysis.hpp>
#include <mapex/db_locality.hpp>
#include <mapex/plugin.hpp>

namespace {

using mapex::db::Layout;

class BoundDb final : public mapex::BoundCostModel {
 public:
  BoundDb(const mapex::Operator& op, const mapex::Architecture& arch, std::int64_t block_bytes,
          bool best_layouts, bool check_capacity)
      : op_(op),
        arch_(arch),
        dram_(arch.num_levels() - 1),
        outer_(arch.num_levels() - 2),
        model_(op, block_bytes > 0 ? block_bytes : dram_level().block_bytes, arch.word_bytes()),
        best_layouts_(best_layouts),
        check_capacity_(check_capacity) {
    // The block counts (Marvel §5.1) are of words of one size.
    mapex::require_uniform_word_bits(op, arch, "cost model 'db_locality'");
    if (outer_ < 0 ||
        arch.levels()[static_cast<std::size_t>(outer_)].kind != mapex::LevelKind::kBuffer)
      throw mapex::InputError("architecture '" + arch.name() +
                              "': the db_locality model needs a buffer right below DRAM (the "
                              "level-3 tiles live there)");
  }

  std::optional<std::string> precheck(const mapex::Mapping& mapping) const override {
    if (auto error = mapping.structural_error(op_, arch_)) return error;
    if (auto refused = unsupported(mapping))
      return "db_locality: level '" + refused->level + "': " + refused->reason;
    if (!check_capacity_) return std::nullopt;
    if (auto error = mapex::capacity_error(op_, arch_, mapping)) return error;
    const auto choice = model_.evaluate(tile_of(mapping), layouts_for(tile_of(mapping)));
    return capacity_error(choice);
  }

  mapex::Metrics evaluate(const mapex::Mapping& mapping) const override {
    if (auto error = mapping.structural_error(op_, arch_)) return mapex::Metrics::invalid(*error);
    if (auto refused = unsupported(mapping))
      return mapex::Metrics::invalid("db_locality: level '" + refused->level +
                                     "': " + refused->reason);
    const auto tile = tile_of(mapping);
    const auto choice = model_.evaluate(tile, layouts_for(tile));
    if (check_capacity_) {
      // On-chip tiles that overflow a buffer make the mapping illegal
      // whatever its off-chip traffic; then the level-3 tile's blocks.
      if (auto error = mapex::capacity_error(op_, arch_, mapping))
        return mapex::Metrics::invalid(*error);
      if (auto error = capacity_error(choice)) return mapex::Metrics::invalid(*error);
    }
    const auto traffic = model_.traffic(tile, mapping.level(dram_).order, choice.layouts);

    mapex::Metrics m;
    m.valid = true;
    m.macs = static_cast<double>(op_.macs());
    const double peak = static_cast<double>(arch_.num_pes()) * arch_.macs_per_pe();
    m.compute_cycles = m.macs / peak;
    const auto& dram = dram_level();
    const double words_per_block = model_.block_words();
    mapex::LevelMetrics dm;
    dm.level = dram.name;
    for (std::size_t t = 0; t < op_.tensors().size(); ++t) {
      mapex::TensorAccess a;
      a.tensor = op_.tensors()[t].name;
      a.reads = traffic.read_blocks[t] * words_per_block;
      a.writes = traffic.write_blocks[t] * words_per_block;
      dm.energy_pj += a.reads * dram.read_energy_pj + a.writes * dram.write_energy_pj;
      dm.tensors.push_back(a);
    }
    const double bytes = traffic.total_blocks() * static_cast<double>(model_.block_bytes());
    dm.transfer_cycles =
        dram.bandwidth_gbps ? bytes / arch_.bytes_per_cycle(*dram.bandwidth_gbps) : 0;
    // Separate read and write ports each limit their own blocks.
    double read_blocks = 0, write_blocks = 0;
    for (std::size_t t = 0; t < op_.tensors().size(); ++t) {
      read_blocks += traffic.read_blocks[t];
      write_blocks += traffic.write_blocks[t];
    }
    const auto block = static_cast<double>(model_.block_bytes());
    if (dram.read_bandwidth_gbps)
      dm.transfer_cycles =
          std::max(dm.transfer_cycles,
                   read_blocks * block / arch_.bytes_per_cycle(*dram.read_bandwidth_gbps));
    if (dram.write_bandwidth_gbps)
      dm.transfer_cycles =
          std::max(dm.transfer_cycles,
                   write_blocks * block / arch_.bytes_per_cycle(*dram.write_bandwidth_gbps));
    for (int i = 0; i < arch_.num_levels(); ++i) {
      const auto& l = arch_.levels()[static_cast<std::size_t>(i)];
      if (i == dram_) {
        m.levels.push_back(dm);
        continue;
      }
      mapex::LevelMetrics lm;
      lm.level = l.name;
      lm.capacity_bytes =
          l.kind == mapex::LevelKind::kBuffer ? static_cast<double>(l.size_bytes) : 0;
      if (i == outer_) lm.required_bytes = choice.required_bytes * (l.double_buffered ? 2 : 1);
      m.levels.push_back(lm);
    }
    m.latency_cycles = std::max(m.compute_cycles, dm.transfer_cycles);
    m.bound_by = dm.transfer_cycles > m.compute_cycles ? dram.name : "compute";
    const double mac_energy = m.macs * arch_.mac_energy_pj();
    m.energy_breakdown_pj = {{"mac", mac_energy}, {dram.name, dm.energy_pj}};
    m.energy_pj = mac_energy + dm.energy_pj;
    m.utilization = m.latency_cycles > 0 ? m.macs / (m.latency_cycles * peak) : 0;
    return m;
  }

 private:
  const mapex::Level& dram_level() const { return arch_.levels()[static_cast<std::size_t>(dram_)]; }
  std::vector<std::int64_t> tile_of(const mapex::Mapping& mapping) const {
    return mapping.level(outer_).tile;
  }
  std::vector<Layout> layouts_for(const std::vector<std::int64_t>& tile) const {
    if (best_layouts_) return model_.best_layouts(tile).layouts;
    std::vector<Layout> out;
    for (const auto& t : op_.tensors()) out.push_back(mapex::db::Model::row_major(t));
    return out;
  }
  // ---- keep/bypass and partitions ----

  /// The distinct-block model counts DRAM traffic per level-3 tile, so every
  /// tensor must live in the buffer below DRAM; a tensor that bypasses it
  /// moves in the tiles of a level further in, which the model has no term
  /// for. Bypass below that buffer does not touch the off-chip traffic.
  std::optional<mapex::Unsupported> unsupported(const mapex::Mapping& mapping) const override {
    for (int t = 0; t < static_cast<int>(op_.tensors().size()); ++t)
      if (!mapping.keeps(op_, arch_, outer_, t))
        return mapex::Unsupported{
            arch_.levels()[static_cast<std::size_t>(outer_)].name, "keep",
            "bypasses tensor '" + op_.tensors()[static_cast<std::size_t>(t)].name +
                "'; cost model 'db_locality' (Marvel §5.1) counts DRAM traffic in the tiles of "
                "the buffer below DRAM and cannot model a tensor that skips it"};
    return std::nullopt;
  }

  /// A partitioned buffer below DRAM: each partition holds the distinct
  /// blocks of its own tensors (double-buffered when the level is).
  std::optional<std::string> partition_error(const mapex::db::OffchipChoice& choice) const {
    const auto& l = arch_.levels()[static_cast<std::size_t>(outer_)];
    for (const auto& p : l.partitions) {
      double blocks = 0;
      for (std::size_t t = 0; t < op_.tensors().size(); ++t)
        if (l.partition_of(op_.tensors()[t].name) == &p) blocks += choice.blocks[t];
      const double need =
          blocks * static_cast<double>(model_.block_bytes()) * (l.double_buffered ? 2.0 : 1.0);
      if (need > static_cast<double>(p.size_bytes))
        return l.name + "/" + p.name + ": distinct DRAM blocks need " +
               std::to_string(static_cast<long long>(need)) + " B" +
               (l.double_buffered ? " (x2 double-buffered)" : "") + ", partition capacity " +
               std::to_string(p.size_bytes) + " B";
    }
    return std::nullopt;
  }

  // ---- end of keep/bypass and partitions ----

  std::optional<std::string> capacity_error(const mapex::db::OffchipChoice& choice) const {
    const auto& l = arch_.levels()[static_cast<std::size_t>(outer_)];
    if (auto error = partition_error(choice)) return error;
    if (choice.required_bytes <= mapex::db::usable_bytes(l)) return std::nullopt;
    return l.name + ": distinct DRAM blocks need " +
           std::to_string(static_cast<long long>(choice.required_bytes)) + " B" +
           (l.double_buffered ? " (x2 double-buffered)" : "") + ", capacity " +
           std::to_string(l.size_bytes) + " B";
  }

  const mapex::Operator& op_;
  const mapex::Architecture& arch_;
  int dram_;
  int outer_;
  mapex::db::Model model_;
  bool best_layouts_;
  bool check_capacity_;
};

class Db final : public mapex::CostModel {
 public:
  explicit Db(const mapex::Params& params)
      : block_bytes_(params.get_int("block_bytes")),
        check_capacity_(params.get_bool("check_capacity")) {
    const auto& layout = params.get_string("layout");
    if (layout != "best" && layout != "row_major")
      throw mapex::InputError(
          mapex::SourceLocation{}, "layout",
          "cost model 'db_locality' expects best or row_major, got '" + layout + "'");
    best_layouts_ = layout == "best";
    if (block_bytes_ < 0)
      throw mapex::InputError(mapex::SourceLocation{}, "block_bytes",
                              "cost model 'db_locality' expects a block size >= 0 (0: the "
                              "architecture's DRAM block), got " +
                                  std::to_string(block_bytes_));
  }
  std::unique_ptr<mapex::BoundCostModel> bind(const mapex::Operator& op,
                                              const mapex::Architecture& arch) const override {
    return std::make_unique<BoundDb>(op, arch, block_bytes_, best_layouts_, check_capacity_);
  }

 private:
  std::int64_t block_bytes_;
  bool best_layouts_ = true;
  bool check_capacity_;
};

const mapex::ParamSpec kParams[] = {
    {"block_bytes", mapex::ParamType::kInt, "0",
     "DRAM block size in bytes; 0 takes the architecture's DRAM block_bytes."},
    {"layout", mapex::ParamType::kString, "best",
     "DRAM layout of every tensor: best (the dimension order touching the fewest blocks for the "
     "mapping's tile) or row_major (subscripts in declared order)."},
    {"check_capacity", mapex::ParamType::kBool, "true",
     "Mark mappings whose level-3 tile's blocks (double-buffered) overflow the buffer below DRAM "
     "invalid."},
};

mapex::CostModel* make(const mapex::Params& params) { return new Db(params); }

const mapex::PluginDescriptor kDescriptor{
    mapex::kPluginAbiVersion,
    MAPEX_BUILD_ID,
    mapex::PluginKind::kCostModel,
    "db_locality",
    "1.0.0",
    "Distinct-block off-chip traffic model (Marvel TACO 2021 §5.1): DRAM blocks per level-3 tile",
    kParams,
    std::size(kParams),
    &make,
    nullptr};

}  // namespace

MAPEX_PLUGIN(kDescriptor)
