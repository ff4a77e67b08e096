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

/// The distinct primes of n > 0, ascending (trial division: trip counts
/// are at most a bound, so at most ~46,000 steps below 2^31).
std::vector<std::int64_t> prime_factors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t p = 2; p <= n / p; ++p) {
    if (n % p != 0) continue;
    out.push_back(p);
    while (n % p == 0) n /= p;
  }
  if (n > 1) out.push_back(n);
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

std::vector<std::int64_t> MapspaceMoves::spans(const Mapping& m, DimId d) const {
  const Operator& op = space_->op();
  const Architecture& arch = space_->arch();
  const int levels = arch.num_levels();
  std::vector<std::int64_t> out;
  for (int l = 0; l + 1 < levels; ++l)
    out.push_back(m.span(op, arch, l)[static_cast<std::size_t>(d)]);
  out.push_back(op.dims()[static_cast<std::size_t>(d)].bound);
  return out;
}

std::optional<Mapping> MapspaceMoves::with_spans(const Mapping& m, DimId d,
                                                 const std::vector<std::int64_t>& spans) const {
  const auto& levels = space_->arch().levels();
  Mapping out = m;
  std::int64_t child = 1;
  for (int l = 0; l + 1 < static_cast<int>(levels.size()); ++l) {
    const std::int64_t span = spans[static_cast<std::size_t>(l)];
    if (levels[static_cast<std::size_t>(l)].kind == LevelKind::kSpatial) {
      if (m.level(l).cluster.active() || span % child != 0) return std::nullopt;
      const std::int64_t split = span / child;
      if (current_value(m.level(l), LevelKind::kSpatial, d) != split)
        out = with_value(out, l, d, split);
    } else if (current_value(m.level(l), LevelKind::kBuffer, d) != span) {
      out = with_value(out, l, d, span);
    }
    child = span;
  }
  return out;
}

bool MapspaceMoves::move_factor(std::vector<std::int64_t>& spans, int from, int to,
                                std::int64_t factor) const {
  if (from == to || factor < 2) return false;
  const auto at = [&spans](int l) { return spans[static_cast<std::size_t>(l)]; };
  const auto child = [&](int l) { return l == 0 ? std::int64_t{1} : at(l - 1); };
  // Every trip count from the lower of the two levels to the higher must be
  // whole, or scaling the spans between changes the others.
  for (int l = std::min(from, to); l <= std::max(from, to); ++l)
    if (at(l) % child(l) != 0) return false;
  if ((at(from) / child(from)) % factor != 0) return false;
  // From below: the spans from `from` up to `to` shrink by the factor; from
  // above: those from `to` up to `from` grow by it. The trips in between
  // keep their values.
  if (from < to)
    for (int l = from; l < to; ++l) spans[static_cast<std::size_t>(l)] /= factor;
  else
    for (int l = to; l < from; ++l) spans[static_cast<std::size_t>(l)] *= factor;
  return true;
}

std::optional<Mapping> MapspaceMoves::transfer(const Mapping& m, DimId d, int from, int to,
                                               std::int64_t factor) const {
  const int levels = space_->arch().num_levels();
  if (d < 0 || d >= space_->op().num_dims() || from < 0 || to < 0 || from >= levels || to >= levels)
    return std::nullopt;
  std::vector<std::int64_t> s = spans(m, d);
  if (!move_factor(s, from, to, factor)) return std::nullopt;
  auto out = with_spans(m, d, s);
  if (!out || !admitted(*out)) return std::nullopt;
  return out;
}

std::vector<Mapping> MapspaceMoves::transfers(const Mapping& m) const {
  std::vector<Mapping> out;
  const int levels = space_->arch().num_levels();
  for (DimId d = 0; d < space_->op().num_dims(); ++d) {
    const std::vector<std::int64_t> s = spans(m, d);
    for (int from = 0; from < levels; ++from) {
      const std::int64_t child = from == 0 ? 1 : s[static_cast<std::size_t>(from - 1)];
      if (s[static_cast<std::size_t>(from)] % child != 0) continue;
      const auto primes = prime_factors(s[static_cast<std::size_t>(from)] / child);
      for (int to = 0; to < levels; ++to)
        for (std::int64_t p : primes)
          if (auto next = transfer(m, d, from, to, p)) out.push_back(std::move(*next));
    }
  }
  return out;
}

std::optional<Mapping> MapspaceMoves::random_transfer(const Mapping& m, std::mt19937_64& rng,
                                                      int count, int max_attempts) const {
  const int dims = space_->op().num_dims();
  const int levels = space_->arch().num_levels();
  if (dims == 0 || levels < 2 || count < 1) return std::nullopt;
  const auto draw = [&rng](std::size_t n) {
    return static_cast<std::size_t>(uniform_below(rng, n));
  };
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    std::vector<std::vector<std::int64_t>> s(static_cast<std::size_t>(dims));
    bool moved = true;
    for (int i = 0; i < count && moved; ++i) {
      const auto d = static_cast<DimId>(draw(static_cast<std::size_t>(dims)));
      auto& sd = s[static_cast<std::size_t>(d)];
      if (sd.empty()) sd = spans(m, d);
      // A source level whose trip count is whole and above 1.
      std::vector<int> sources;
      for (int l = 0; l < levels; ++l) {
        const std::int64_t child = l == 0 ? 1 : sd[static_cast<std::size_t>(l - 1)];
        const std::int64_t span = sd[static_cast<std::size_t>(l)];
        if (span % child == 0 && span / child > 1) sources.push_back(l);
      }
      moved = !sources.empty();
      if (!moved) break;
      const int from = sources[draw(sources.size())];
      int to = static_cast<int>(draw(static_cast<std::size_t>(levels - 1)));
      if (to >= from) ++to;  // any level but the source
      const std::int64_t child = from == 0 ? 1 : sd[static_cast<std::size_t>(from - 1)];
      const auto primes = prime_factors(sd[static_cast<std::size_t>(from)] / child);
      moved = move_factor(sd, from, to, primes[draw(primes.size())]);
    }
    if (!moved) continue;
    std::optional<Mapping> out = m;
    for (DimId d = 0; d < dims && out; ++d)
      if (!s[static_cast<std::size_t>(d)].empty())
        out = with_spans(*out, d, s[static_cast<std::size_t>(d)]);
    if (out && !(*out == m) && admitted(*out)) return out;
  }
  return std::nullopt;
}

std::optional<Mapping> MapspaceMoves::graft_splits(const Mapping& a, const Mapping& b) const {
  const auto& levels = space_->arch().levels();
  Mapping child = a;
  bool changed = false;
  for (DimId d = 0; d < space_->op().num_dims(); ++d) {
    bool differs = false;
    for (int l : movable_levels_)
      if (levels[static_cast<std::size_t>(l)].kind == LevelKind::kSpatial &&
          current_value(a.level(l), LevelKind::kSpatial, d) !=
              current_value(b.level(l), LevelKind::kSpatial, d))
        differs = true;
    if (!differs) continue;
    changed = true;
    for (int l : movable_levels_) {
      const auto kind = levels[static_cast<std::size_t>(l)].kind;
      child = with_value(child, l, d, current_value(b.level(l), kind, d));
    }
  }
  if (!changed || !admitted(child)) return std::nullopt;
  return child;
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
