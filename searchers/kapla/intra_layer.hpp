#pragma once
// KAPLA's intra-layer solver (KAPLA §IV-C, Algorithm 1), shared by the
// per-layer searcher and the inter-layer scheduler.

#include <mapex/search.hpp>

namespace kapla {

/// Solves the layer of `ctx` level by level with bottom-up stacking and
/// caching; the best scheme is `ctx.best_mapping()`. Stops with "solved",
/// "budget" or the level where no valid scheme exists.
mapex::SearchOutcome solve_intra_layer(mapex::SearchContext& ctx);

}  // namespace kapla
