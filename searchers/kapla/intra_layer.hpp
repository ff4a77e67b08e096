#pragma once
// KAPLA's intra-layer solver (KAPLA §IV-C, Algorithm 1), shared by the
// per-layer searcher and the inter-layer scheduler.

#include <mapex/search.hpp>

namespace kapla {

/// Solves the layer of `ctx` level by level with bottom-up stacking and
/// caching; the best scheme is `ctx.best_mapping()`. Stops with "solved",
/// "budget" or the level where no valid scheme exists. With `refine`, a
/// final steepest descent over neighbouring schemes (mapex's addition beyond
/// Algorithm 1) polishes the best scheme. With `cache_alone`, the innermost
/// level also tries caching without stacking (mapex's addition).
mapex::SearchOutcome solve_intra_layer(mapex::SearchContext& ctx, bool refine = true,
                                       bool cache_alone = true);

}  // namespace kapla
