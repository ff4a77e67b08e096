// Moves inside a mapspace (mapex/moves.hpp).

#include <algorithm>
#include <mapex/divisors.hpp>
#include <mapex/moves.hpp>
#include <utility>

namespace mapex {
namespace {

// A move looks this many candidate values past the current one for an
// admitted value before giving up in that direction: the nearest admitted
// value is usually the next one, and a long scan of refused values would
// cost a membership test each.
constexpr int kMaxScan = 16;

std::vector<std::int64_t> candidate_values(std::int64_t bound, bool factors_only) {
  if (factors_only) return divisors(bound);
  std::vector<std::int64_t> out;
  if (bound <= 4096) {
    for (std::int64_t v = 1; v <= bound; ++v) out.push_back(v);
    return out;
  }
  out = divisors(bound);
  // Doubling stops before it could pass the bound (and overflow near 2^63).
  for (std::int64_t v = 1; v < bound; v *= 2) {
    out.push_back(v);
    if (v > bound / 2) break;
  }
  out.push_back(bound);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::int64_t current_value(const LevelMapping& lm, LevelKind kind, DimId d) {
  const auto i = static_cast<std::size_t>(d);
  const auto& v = kind == LevelKind::kSpatial ? lm.split : lm.tile;
  return i < v.size() ? v[i] : 1;
}

}  // namespace

MapspaceMoves::MapspaceMoves(const Mapspace& space) : space_(&space) {
  const Operator& op = space.op();
  for (const auto& dim : op.dims())
    values_.push_back(candidate_values(dim.bound, space.options().factors_only));
  const auto& levels = space.arch().levels();
  for (int l = 0; l < static_cast<int>(levels.size()); ++l) {
    const LevelKind kind = levels[static_cast<std::size_t>(l)].kind;
    if (kind != LevelKind::kDram) movable_levels_.push_back(l);
    if (kind != LevelKind::kSpatial) order_levels_.push_back(l);
  }
}

bool MapspaceMoves::admitted(const Mapping& m) const { return !space_->reject_reason(m); }

Mapping MapspaceMoves::with_value(const Mapping& m, int l, DimId d, std::int64_t value) const {
  Mapping out = m;
  LevelMapping& lm = out.level(l);
  const bool spatial =
      space_->arch().levels()[static_cast<std::size_t>(l)].kind == LevelKind::kSpatial;
  auto& v = spatial ? lm.split : lm.tile;
  if (v.size() < static_cast<std::size_t>(space_->op().num_dims()))
    v.resize(static_cast<std::size_t>(space_->op().num_dims()), 1);
  v[static_cast<std::size_t>(d)] = value;
  // A placement on the array's axes was for the old splits.
  if (spatial) lm.axes.clear();
  return out;
}

std::optional<Mapping> MapspaceMoves::step(const Mapping& m, int l, DimId d, int dir,
                                           int stride) const {
  const auto kind = space_->arch().levels()[static_cast<std::size_t>(l)].kind;
  const std::int64_t now = current_value(m.level(l), kind, d);
  const auto& vals = values(d);
  auto i =
      static_cast<std::ptrdiff_t>(std::lower_bound(vals.begin(), vals.end(), now) - vals.begin());
  // `now` need not be a candidate (an edge tile of a large bound): start
  // from the candidates on either side of it.
  if (dir < 0)
    --i;
  else if (i < static_cast<std::ptrdiff_t>(vals.size()) && vals[static_cast<std::size_t>(i)] == now)
    ++i;
  std::optional<Mapping> found;
  int left = stride;
  for (int scanned = 0;
       scanned < kMaxScan * stride && i >= 0 && i < static_cast<std::ptrdiff_t>(vals.size());
       ++scanned, i += dir) {
    Mapping next = with_value(m, l, d, vals[static_cast<std::size_t>(i)]);
    if (!admitted(next)) continue;
    found = std::move(next);
    if (--left == 0) break;
  }
  return found;
}

bool MapspaceMoves::loops(const Mapping& m, int l, DimId d) const {
  const Operator& op = space_->op();
  const Architecture& arch = space_->arch();
  const auto i = static_cast<std::size_t>(d);
  const std::int64_t here = m.span(op, arch, l)[i];
  const std::int64_t below = l == 0 ? 1 : m.span(op, arch, l - 1)[i];
  return here > below;
}

std::vector<Mapping> MapspaceMoves::neighbours(const Mapping& m) const {
  std::vector<Mapping> out;
  const int dims = space_->op().num_dims();
  for (int l : movable_levels_)
    for (DimId d = 0; d < dims; ++d)
      for (int dir : {-1, +1})
        if (auto next = step(m, l, d, dir)) out.push_back(std::move(*next));
  for (int l : order_levels_) {
    const auto& order = m.level(l).order;
    for (std::size_t i = 0; i < order.size(); ++i)
      for (std::size_t j = i + 1; j < order.size(); ++j) {
        if (!loops(m, l, order[i]) || !loops(m, l, order[j])) continue;
        Mapping next = m;
        std::swap(next.level(l).order[i], next.level(l).order[j]);
        if (admitted(next)) out.push_back(std::move(next));
      }
  }
  return out;
}

std::optional<Mapping> MapspaceMoves::random_neighbour(const Mapping& m, std::mt19937_64& rng,
                                                       int max_attempts, int max_stride) const {
  const int dims = space_->op().num_dims();
  // Every tile or split slot and every level's order weigh alike.
  const auto slots = movable_levels_.size() * static_cast<std::size_t>(dims);
  const auto total = slots + order_levels_.size();
  if (total == 0 || dims == 0) return std::nullopt;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    const auto pick = std::uniform_int_distribution<std::size_t>(0, total - 1)(rng);
    if (pick < slots) {
      const int l = movable_levels_[pick / static_cast<std::size_t>(dims)];
      const auto d = static_cast<DimId>(pick % static_cast<std::size_t>(dims));
      const int dir = std::bernoulli_distribution(0.5)(rng) ? 1 : -1;
      const int stride =
          max_stride > 1 ? std::uniform_int_distribution<int>(1, max_stride)(rng) : 1;
      if (auto next = step(m, l, d, dir, stride)) return next;
      continue;
    }
    const int l = order_levels_[pick - slots];
    const auto& order = m.level(l).order;
    if (order.size() < 2) continue;
    std::uniform_int_distribution<std::size_t> pos(0, order.size() - 1);
    const std::size_t i = pos(rng), j = pos(rng);
    if (i == j || (!loops(m, l, order[i]) && !loops(m, l, order[j]))) continue;
    Mapping next = m;
    std::swap(next.level(l).order[i], next.level(l).order[j]);
    if (admitted(next)) return next;
  }
  return std::nullopt;
}

std::optional<Mapping> MapspaceMoves::crossover(const Mapping& a, const Mapping& b,
                                                std::mt19937_64& rng) const {
  Mapping child = a;
  std::bernoulli_distribution coin(0.5);
  const int dims = space_->op().num_dims();
  for (DimId d = 0; d < dims; ++d) {
    if (!coin(rng)) continue;
    for (int l : movable_levels_) {
      const auto kind = space_->arch().levels()[static_cast<std::size_t>(l)].kind;
      child = with_value(child, l, d, current_value(b.level(l), kind, d));
    }
  }
  for (int l : order_levels_)
    if (coin(rng)) child.level(l).order = b.level(l).order;
  if (!admitted(child)) return std::nullopt;
  return child;
}

std::vector<std::int64_t> VisitedMappings::key(const Mapping& m) const {
  std::vector<std::int64_t> k;
  const auto put = [&k](const auto& v) {
    k.push_back(static_cast<std::int64_t>(v.size()));
    k.insert(k.end(), v.begin(), v.end());
  };
  const auto& levels = space_->arch().levels();
  for (int l = 0; l < static_cast<int>(m.levels().size()); ++l) {
    const LevelMapping& lm = m.level(l);
    put(lm.tile);
    put(lm.split);
    put(lm.cluster.split);
    put(lm.cluster.tile);
    put(lm.cluster.order);
    put(lm.keep);
    if (l >= static_cast<int>(levels.size()) ||
        levels[static_cast<std::size_t>(l)].kind == LevelKind::kSpatial) {
      put(lm.order);
      continue;
    }
    // Only the loops that run: where one-trip loops sit changes nothing.
    const std::uint32_t running = space_->free_loops(m, l);
    std::vector<DimId> order;
    for (DimId d : lm.order)
      if (d >= 0 && d < 32 && (running >> d & 1u)) order.push_back(d);
    put(order);
  }
  return k;
}

bool VisitedMappings::insert(const Mapping& m) { return seen_.insert(key(m)).second; }

bool VisitedMappings::contains(const Mapping& m) const { return seen_.count(key(m)) > 0; }

}  // namespace mapex
