#include <algorithm>
#include <map>
#include <mapex/analysis.hpp>
#include <mapex/mapspace.hpp>

namespace mapex {
namespace {

/// Chains of per-level choices for one dimension of bound `bound`: for a
/// buffer the tile, for a spatial level the split. DRAM (last) is left out.
void build_chains(const Architecture& arch, std::int64_t bound, bool factors_only,
                  std::vector<std::int64_t>& prefix, std::int64_t child_span, size_t level,
                  std::vector<std::vector<std::int64_t>>& out) {
  if (level + 1 == arch.levels().size()) {
    out.push_back(prefix);
    return;
  }
  const Level& l = arch.levels()[level];
  if (l.kind == LevelKind::kSpatial) {
    for (std::int64_t s = 1; s <= l.fanout() && child_span * (s - 1) < bound; ++s) {
      const std::int64_t span = std::min(child_span * s, bound);
      if (factors_only && (span != child_span * s || bound % span != 0)) continue;
      prefix.push_back(s);
      build_chains(arch, bound, factors_only, prefix, span, level + 1, out);
      prefix.pop_back();
    }
    return;
  }
  for (std::int64_t tile = child_span; tile <= bound; ++tile) {
    if (factors_only && (tile % child_span != 0 || bound % tile != 0)) continue;
    prefix.push_back(tile);
    build_chains(arch, bound, factors_only, prefix, tile, level + 1, out);
    prefix.pop_back();
  }
}

BigInt factorial(int k) {
  BigInt f = 1;
  for (int i = 2; i <= k; ++i) f *= i;
  return f;
}

}  // namespace

std::uint64_t uniform_below(std::mt19937_64& rng, std::uint64_t n) {
  const std::uint64_t max = std::mt19937_64::max();
  const std::uint64_t limit = max - (max % n + 1) % n;  // accept [0, limit]
  std::uint64_t x = rng();
  while (x > limit) x = rng();
  return x % n;
}

Mapspace::Mapspace(const Operator& op, const Architecture& arch, MapspaceOptions options)
    : op_(&op), arch_(&arch), options_(options) {
  for (const auto& dim : op.dims()) {
    std::vector<std::vector<std::int64_t>> chains;
    std::vector<std::int64_t> prefix;
    build_chains(arch, dim.bound, options_.factors_only, prefix, 1, 0, chains);
    chains_.push_back(std::move(chains));
  }
  for (int i = 0; i < arch.num_levels(); ++i)
    if (arch.levels()[static_cast<size_t>(i)].holds_data()) data_levels_.push_back(i);
}

std::vector<std::vector<DimId>> Mapspace::free_dims(
    const std::vector<std::size_t>& chain_index) const {
  // A loop is free (its order matters) when its trip count is above 1.
  std::vector<std::vector<DimId>> out(data_levels_.size());
  for (DimId d = 0; d < op_->num_dims(); ++d) {
    const auto& chain = chains_[static_cast<size_t>(d)][chain_index[static_cast<size_t>(d)]];
    const std::int64_t bound = op_->dims()[static_cast<size_t>(d)].bound;
    std::int64_t child = 1;
    size_t k = 0;
    for (int i = 0; i < arch_->num_levels(); ++i) {
      const Level& l = arch_->levels()[static_cast<size_t>(i)];
      const bool last = i + 1 == arch_->num_levels();
      const std::int64_t value = last ? bound : chain[static_cast<size_t>(i)];
      if (l.kind == LevelKind::kSpatial) {
        child = std::min(child * value, bound);
        continue;
      }
      if ((value + child - 1) / child > 1) out[k].push_back(d);
      child = value;
      ++k;
    }
  }
  return out;
}

BigInt Mapspace::size() const {
  // Dynamic programme over dimensions: the state is the number of free
  // loops at each data level so far; orders multiply in at the end.
  std::map<std::vector<int>, BigInt> states{{std::vector<int>(data_levels_.size(), 0), 1}};
  std::vector<std::size_t> index(static_cast<size_t>(op_->num_dims()), 0);
  for (DimId d = 0; d < op_->num_dims(); ++d) {
    std::map<std::vector<int>, BigInt> next;
    for (std::size_t c = 0; c < chains_[static_cast<size_t>(d)].size(); ++c) {
      index[static_cast<size_t>(d)] = c;
      const auto free = free_dims(index);
      std::vector<int> delta(data_levels_.size(), 0);
      for (size_t k = 0; k < free.size(); ++k)
        delta[k] = static_cast<int>(std::count(free[k].begin(), free[k].end(), d));
      for (const auto& [state, count] : states) {
        std::vector<int> s = state;
        for (size_t k = 0; k < s.size(); ++k) s[k] += delta[k];
        next[s] += count;
      }
    }
    states = std::move(next);
  }
  BigInt total = 0;
  for (const auto& [state, count] : states) {
    BigInt orders = 1;
    for (int k : state) orders *= factorial(k);
    total += count * orders;
  }
  return total;
}

std::optional<std::string> Mapspace::chain_reject_reason(
    const std::vector<std::size_t>& chain_index) const {
  for (int i = 0; i + 1 < arch_->num_levels(); ++i) {
    const Level& l = arch_->levels()[static_cast<size_t>(i)];
    if (l.kind != LevelKind::kSpatial) continue;
    std::int64_t used = 1;
    int parallel = 0;
    for (DimId d = 0; d < op_->num_dims(); ++d) {
      const std::int64_t s = chains_[static_cast<size_t>(d)][chain_index[static_cast<size_t>(d)]]
                                    [static_cast<size_t>(i)];
      used *= s;
      parallel += s > 1;
    }
    if (used > l.fanout())
      return "fanout: " + l.name + " uses " + std::to_string(used) + " children of " +
             std::to_string(l.fanout());
    const int max_parallel = options_.max_parallel_dims > 0 ? options_.max_parallel_dims
                                                            : static_cast<int>(l.shape.size());
    if (parallel > max_parallel)
      return "parallel_dims: " + l.name + " splits " + std::to_string(parallel) +
             " dimensions, at most " + std::to_string(max_parallel) + " allowed";
  }
  if (options_.check_capacity) {
    const Mapping m = build(chain_index, std::vector<std::vector<DimId>>(data_levels_.size()));
    if (auto error = capacity_error(*op_, *arch_, m)) return "capacity: " + *error;
  }
  return std::nullopt;
}

std::optional<std::string> Mapspace::reject_reason(const Mapping& mapping) const {
  if (auto error = mapping.structural_error(*op_, *arch_)) return "structure: " + *error;
  for (int i = 0; i < arch_->num_levels(); ++i) {
    const Level& l = arch_->levels()[static_cast<size_t>(i)];
    if (l.kind != LevelKind::kSpatial) continue;
    int parallel = 0;
    for (auto s : mapping.level(i).split) parallel += s > 1;
    const int max_parallel = options_.max_parallel_dims > 0 ? options_.max_parallel_dims
                                                            : static_cast<int>(l.shape.size());
    if (parallel > max_parallel)
      return "parallel_dims: " + l.name + " splits " + std::to_string(parallel) +
             " dimensions, at most " + std::to_string(max_parallel) + " allowed";
  }
  if (options_.check_capacity)
    if (auto error = capacity_error(*op_, *arch_, mapping)) return "capacity: " + *error;
  return std::nullopt;
}

Mapping Mapspace::build(const std::vector<std::size_t>& chain_index,
                        const std::vector<std::vector<DimId>>& orders) const {
  Mapping m = Mapping::trivial(*op_, *arch_);
  for (int i = 0; i + 1 < arch_->num_levels(); ++i) {
    const Level& l = arch_->levels()[static_cast<size_t>(i)];
    auto& lm = m.level(i);
    for (DimId d = 0; d < op_->num_dims(); ++d) {
      const std::int64_t v = chains_[static_cast<size_t>(d)][chain_index[static_cast<size_t>(d)]]
                                    [static_cast<size_t>(i)];
      (l.kind == LevelKind::kSpatial ? lm.split : lm.tile)[static_cast<size_t>(d)] = v;
    }
  }
  // Orders: loops with one trip first (outermost; their place is moot), in
  // operator order, then the free loops in the given order.
  for (size_t k = 0; k < data_levels_.size(); ++k) {
    auto& order = m.level(data_levels_[k]).order;
    const auto& free = orders[k];
    order.clear();
    for (DimId d = 0; d < op_->num_dims(); ++d)
      if (std::find(free.begin(), free.end(), d) == free.end()) order.push_back(d);
    order.insert(order.end(), free.begin(), free.end());
  }
  return m;
}

Mapspace::Cursor::Cursor(const Mapspace& space)
    : space_(&space), chain_index_(static_cast<size_t>(space.op().num_dims()), 0) {
  for (const auto& chains : space.chains_)
    if (chains.empty()) done_ = true;
}

void Mapspace::Cursor::load_chains() {
  free_dims_ = space_->free_dims(chain_index_);
  order_ = free_dims_;  // sorted: the first permutation
  chains_ok_ = !space_->chain_reject_reason(chain_index_);
}

bool Mapspace::Cursor::advance_orders() {
  for (size_t k = order_.size(); k-- > 0;) {
    if (std::next_permutation(order_[k].begin(), order_[k].end())) return true;
    // wrapped around to sorted; carry into the next level
  }
  return false;
}

bool Mapspace::Cursor::advance_chains() {
  for (size_t d = chain_index_.size(); d-- > 0;) {
    if (++chain_index_[d] < space_->chains_[d].size()) return true;
    chain_index_[d] = 0;
  }
  return false;
}

bool Mapspace::Cursor::next(Mapping& out) {
  if (done_) return false;
  if (!started_) {
    started_ = true;
    load_chains();
  } else if (!advance_orders()) {
    if (!advance_chains()) {
      done_ = true;
      return false;
    }
    load_chains();
  }
  while (!chains_ok_) {
    std::uint64_t skipped = 1;
    for (const auto& free : free_dims_)
      for (size_t i = 2; i <= free.size(); ++i) skipped *= i;
    visited_ += skipped;
    rejected_ += skipped;
    if (!advance_chains()) {
      done_ = true;
      return false;
    }
    load_chains();
  }
  ++visited_;
  out = space_->build(chain_index_, order_);
  return true;
}

std::optional<Mapping> Mapspace::sample(std::mt19937_64& rng, int max_attempts) const {
  std::vector<std::size_t> index(static_cast<size_t>(op_->num_dims()));
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    for (size_t d = 0; d < index.size(); ++d)
      index[d] = static_cast<std::size_t>(uniform_below(rng, chains_[d].size()));
    if (chain_reject_reason(index)) continue;
    auto orders = free_dims(index);
    for (auto& order : orders) {
      // Fisher-Yates with fully specified draws (std::shuffle's are not).
      for (size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[static_cast<size_t>(uniform_below(rng, i))]);
    }
    return build(index, orders);
  }
  return std::nullopt;
}

}  // namespace mapex
