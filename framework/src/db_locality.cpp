// The distinct-block locality model (Marvel, TACO 2021, §5.1).

#include <algorithm>
#include <cmath>
#include <mapex/db_locality.hpp>
#include <mapex/error.hpp>
#include <numeric>

namespace mapex::db {
namespace {

// Blocks of one reference from its subscript extents `e` (per tensor
// dimension) and the full extents `full`. `run_dims` receives how many
// innermost layout dimensions form the contiguous run (§5.1: the innermost
// access is divided by the block size; dimensions the tile covers whole
// extend the run because their rows are adjacent in DRAM).
struct Shape {
  double run = 1;    // elements in one contiguous run
  double other = 1;  // number of runs
};

Shape shape_of(const std::vector<double>& e, const std::vector<double>& full,
               const Layout& layout) {
  Shape s;
  std::size_t i = layout.size();
  if (i == 0) return s;
  --i;
  s.run = e[static_cast<std::size_t>(layout[i])];
  while (i > 0 &&
         e[static_cast<std::size_t>(layout[i])] >= full[static_cast<std::size_t>(layout[i])]) {
    --i;
    s.run *= e[static_cast<std::size_t>(layout[i])];
  }
  for (std::size_t k = 0; k < i; ++k) s.other *= e[static_cast<std::size_t>(layout[k])];
  return s;
}

double ceil_div(double x, double b) { return std::ceil(x / b - 1e-9); }

std::vector<double> as_double(const std::vector<std::int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

double volume(const std::vector<std::int64_t>& tile) {
  double v = 1;
  for (auto t : tile) v *= static_cast<double>(t);
  return v;
}

}  // namespace

double Traffic::total_blocks() const {
  return std::accumulate(read_blocks.begin(), read_blocks.end(), 0.0) +
         std::accumulate(write_blocks.begin(), write_blocks.end(), 0.0);
}

Model::Model(const Operator& op, std::int64_t block_bytes, double word_bytes)
    : op_(&op), block_bytes_(block_bytes), word_bytes_(word_bytes) {
  if (block_bytes <= 0)
    throw InputError(SourceLocation{}, "block_bytes",
                     "the DRAM block size must be positive, got " + std::to_string(block_bytes));
  if (!(word_bytes > 0))
    throw InputError(SourceLocation{}, "word_bits", "the word size must be positive");
  block_words_ = std::max(1.0, static_cast<double>(block_bytes) / word_bytes);
  const auto bounds = op.bounds_as_extents();
  for (int t = 0; t < static_cast<int>(op.tensors().size()); ++t)
    full_.push_back(extents(t, bounds));
}

std::vector<double> Model::extents(int t, const std::vector<double>& tile) const {
  const Tensor& tensor = op_->tensors()[static_cast<std::size_t>(t)];
  std::vector<double> e;
  e.reserve(tensor.subscripts.size());
  for (const auto& s : tensor.subscripts) e.push_back(s.extent(tile));
  return e;
}

Layout Model::row_major(const Tensor& tensor) {
  Layout l(tensor.subscripts.size());
  std::iota(l.begin(), l.end(), 0);
  return l;
}

std::vector<Layout> Model::layouts(int t) const {
  std::vector<Layout> out;
  Layout l = row_major(op_->tensors()[static_cast<std::size_t>(t)]);
  do out.push_back(l);
  while (std::next_permutation(l.begin(), l.end()));
  return out;
}

double Model::blocks(int t, const std::vector<std::int64_t>& tile, const Layout& layout) const {
  const Shape s = shape_of(extents(t, as_double(tile)), full_[static_cast<std::size_t>(t)], layout);
  return ceil_div(s.run, block_words_) * s.other;
}

double Model::blocks_smooth(int t, const std::vector<double>& tile, const Layout& layout) const {
  const Shape s = shape_of(extents(t, tile), full_[static_cast<std::size_t>(t)], layout);
  return ((s.run - 1) / block_words_ + 1) * s.other;
}

double Model::dmc(const std::vector<std::int64_t>& tile, const std::vector<Layout>& layouts) const {
  double total = 0;
  for (int t = 0; t < static_cast<int>(layouts.size()); ++t)
    total += blocks(t, tile, layouts[static_cast<std::size_t>(t)]);
  return total / volume(tile);
}

std::vector<double> Model::dmc_gradient(const std::vector<std::int64_t>& tile,
                                        const std::vector<Layout>& layouts) const {
  // The smooth DMC is a ratio of low-degree polynomials in the tile sizes
  // once the contiguous run is fixed: central differences with a small
  // step are exact to rounding. The run is fixed at the point itself, so a
  // dimension covered whole is differentiated inside the run it joins.
  const std::vector<double> at = as_double(tile);
  // Per tensor, which dimensions the tile covers whole: they stay inside
  // the contiguous run under the small steps (and the others outside).
  std::vector<std::vector<double>> whole;
  for (int t = 0; t < static_cast<int>(layouts.size()); ++t) {
    auto w = extents(t, at);
    const auto& full = full_[static_cast<std::size_t>(t)];
    for (std::size_t j = 0; j < w.size(); ++j) w[j] = w[j] >= full[j] ? -1e300 : 1e300;
    whole.push_back(std::move(w));
  }
  auto smooth_dmc = [&](const std::vector<double>& x) {
    double total = 0;
    for (int t = 0; t < static_cast<int>(layouts.size()); ++t) {
      const Shape s = shape_of(extents(t, x), whole[static_cast<std::size_t>(t)],
                               layouts[static_cast<std::size_t>(t)]);
      total += ((s.run - 1) / block_words_ + 1) * s.other;
    }
    double v = 1;
    for (double d : x) v *= d;
    return total / v;
  };
  std::vector<double> grad(at.size(), 0);
  for (std::size_t d = 0; d < at.size(); ++d) {
    const double h = 1e-3;
    auto up = at, down = at;
    up[d] += h;
    down[d] -= h;
    grad[d] = (smooth_dmc(up) - smooth_dmc(down)) / (2 * h);
  }
  return grad;
}

std::vector<DimId> Model::order(const std::vector<std::int64_t>& tile,
                                const std::vector<Layout>& layouts) const {
  const auto grad = dmc_gradient(tile, layouts);
  std::vector<DimId> one_trip, multi;
  for (DimId d = 0; d < op_->num_dims(); ++d) {
    const auto b = op_->dims()[static_cast<std::size_t>(d)].bound;
    (tile[static_cast<std::size_t>(d)] >= b ? one_trip : multi).push_back(d);
  }
  std::stable_sort(multi.begin(), multi.end(), [&](DimId a, DimId b) {
    return grad[static_cast<std::size_t>(a)] > grad[static_cast<std::size_t>(b)];
  });
  one_trip.insert(one_trip.end(), multi.begin(), multi.end());
  return one_trip;
}

OffchipChoice Model::evaluate(const std::vector<std::int64_t>& tile,
                              std::vector<Layout> layouts) const {
  OffchipChoice c;
  c.tile = tile;
  for (int t = 0; t < static_cast<int>(layouts.size()); ++t)
    c.blocks.push_back(blocks(t, tile, layouts[static_cast<std::size_t>(t)]));
  c.layouts = std::move(layouts);
  c.total_blocks = std::accumulate(c.blocks.begin(), c.blocks.end(), 0.0);
  c.dmc = c.total_blocks / volume(tile);
  c.required_bytes = c.total_blocks * static_cast<double>(block_bytes_);
  c.order = order(tile, c.layouts);
  return c;
}

OffchipChoice Model::best_layouts(const std::vector<std::int64_t>& tile) const {
  std::vector<Layout> best;
  const auto x = as_double(tile);
  for (int t = 0; t < static_cast<int>(op_->tensors().size()); ++t) {
    const auto e = extents(t, x);
    double best_blocks = 0;
    Layout chosen;
    for (const auto& l : layouts(t)) {
      const Shape s = shape_of(e, full_[static_cast<std::size_t>(t)], l);
      const double b = ceil_div(s.run, block_words_) * s.other;
      if (chosen.empty() || b < best_blocks) {
        best_blocks = b;
        chosen = l;
      }
    }
    best.push_back(chosen);
  }
  return evaluate(tile, std::move(best));
}

Traffic Model::traffic(const std::vector<std::int64_t>& tile, const std::vector<DimId>& order,
                       const std::vector<Layout>& layouts) const {
  Traffic tr;
  const auto& dims = op_->dims();
  std::vector<double> trips(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d)
    trips[d] = std::ceil(static_cast<double>(dims[d].bound) / static_cast<double>(tile[d]));
  for (int t = 0; t < static_cast<int>(op_->tensors().size()); ++t) {
    const Tensor& tensor = op_->tensors()[static_cast<std::size_t>(t)];
    // Fetches: every advance of a loop at or outside the innermost
    // relevant loop brings a new (or evicted) tile of this tensor.
    std::size_t innermost = order.size();
    for (std::size_t k = 0; k < order.size(); ++k) {
      const DimId d = order[k];
      if (trips[static_cast<std::size_t>(d)] > 1 && op_->relevant(t, d)) innermost = k;
    }
    double fetches = 1;
    if (innermost < order.size())
      for (std::size_t k = 0; k <= innermost; ++k)
        fetches *= trips[static_cast<std::size_t>(order[k])];
    const double per_tile = blocks(t, tile, layouts[static_cast<std::size_t>(t)]);
    if (tensor.role == TensorRole::kOutput) {
      double distinct_tiles = 1;
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (op_->relevant(t, static_cast<DimId>(d))) distinct_tiles *= trips[d];
      tr.write_blocks.push_back(per_tile * fetches);
      tr.read_blocks.push_back(per_tile * std::max(0.0, fetches - distinct_tiles));
    } else {
      tr.read_blocks.push_back(per_tile * fetches);
      tr.write_blocks.push_back(0);
    }
  }
  return tr;
}

double usable_bytes(const Level& level) {
  return static_cast<double>(level.size_bytes) / (level.double_buffered ? 2.0 : 1.0);
}

std::vector<OffchipChoice> search_offchip(const Model& model,
                                          const std::vector<std::vector<std::int64_t>>& tile_values,
                                          double capacity_bytes, std::size_t keep,
                                          double* considered) {
  return search_offchip(model, tile_values, capacity_bytes, keep, TileFilter{}, considered);
}

std::vector<OffchipChoice> search_offchip(const Model& model,
                                          const std::vector<std::vector<std::int64_t>>& tile_values,
                                          double capacity_bytes, std::size_t keep,
                                          const TileFilter& admit, double* considered,
                                          std::uint64_t* rejected) {
  if (rejected) *rejected = 0;
  const Operator& op = model.op();
  const std::size_t n = tile_values.size();
  const int num_tensors = static_cast<int>(op.tensors().size());
  std::vector<std::vector<Layout>> all_layouts;
  double layout_combinations = 1;
  for (int t = 0; t < num_tensors; ++t) {
    all_layouts.push_back(model.layouts(t));
    layout_combinations *= static_cast<double>(all_layouts.back().size());
  }
  // Best-first list of (dmc, -volume, index, tile).
  struct Kept {
    double dmc;
    double volume;
    std::uint64_t index;
    std::vector<std::int64_t> tile;
  };
  std::vector<Kept> kept;
  auto better = [](const Kept& a, const Kept& b) {
    if (a.dmc != b.dmc) return a.dmc < b.dmc;
    if (a.volume != b.volume) return a.volume > b.volume;
    return a.index < b.index;
  };
  std::vector<std::size_t> at(n, 0);
  std::vector<std::int64_t> tile(n);
  std::uint64_t index = 0;
  for (const auto& v : tile_values)
    if (v.empty()) return {};
  const double block_bytes = static_cast<double>(model.block_bytes());
  while (true) {
    for (std::size_t d = 0; d < n; ++d) tile[d] = tile_values[d][at[d]];
    // Tensors are independent: the best layout of each minimises both the
    // DMC and the capacity it needs (§5.1, layouts as dimension orders).
    double total = 0;
    for (int t = 0; t < num_tensors; ++t) {
      double best = -1;
      for (const auto& l : all_layouts[static_cast<std::size_t>(t)]) {
        const double b = model.blocks(t, tile, l);
        if (best < 0 || b < best) best = b;
      }
      total += best;
    }
    if (total * block_bytes <= capacity_bytes) {
      Kept k{total / volume(tile), volume(tile), index, tile};
      // The filter is asked only here, so its cost is paid for the few
      // tiles that would be kept.
      const bool wanted = kept.size() < keep || better(k, kept.back());
      const bool admitted = wanted && (!admit || admit(tile));
      if (wanted && !admitted && rejected) ++*rejected;
      if (admitted) {
        kept.insert(std::upper_bound(kept.begin(), kept.end(), k, better), k);
        if (kept.size() > keep) kept.pop_back();
      }
    }
    ++index;
    std::size_t d = n;
    while (d > 0) {
      --d;
      if (++at[d] < tile_values[d].size()) break;
      at[d] = 0;
      if (d == 0) {
        d = n + 1;
        break;
      }
    }
    if (d == n + 1 || n == 0) break;
  }
  if (considered) *considered = static_cast<double>(index) * layout_combinations;
  std::vector<OffchipChoice> out;
  for (const auto& k : kept) out.push_back(model.best_layouts(k.tile));
  return out;
}

OffchipChoice minimal_choice(const Model& model,
                             const std::vector<std::vector<std::int64_t>>& tile_values) {
  std::vector<std::int64_t> tile;
  for (const auto& v : tile_values)
    tile.push_back(v.empty() ? 1 : *std::min_element(v.begin(), v.end()));
  return model.best_layouts(tile);
}

std::string format_layout(const Operator& op, int t, const Layout& layout) {
  const Tensor& tensor = op.tensors()[static_cast<std::size_t>(t)];
  std::string s;
  for (int p : layout)
    s += "[" + format_affine(tensor.subscripts[static_cast<std::size_t>(p)], op.dims()) + "]";
  return s;
}

}  // namespace mapex::db
