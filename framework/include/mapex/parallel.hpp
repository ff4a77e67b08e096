#pragma once
/// \file
/// Task parallelism for plugins, so that a plugin needs nothing beyond
/// this include directory: the core runs the tasks on the calling thread's
/// oneTBB arena (the host sizes it with `-j`).

#include <cstddef>
#include <functional>

namespace mapex {

/// Calls `task(0)` ... `task(count - 1)`, concurrently, one index per task:
/// meant for a few long tasks of uneven length (one intra-layer solve
/// each), where grouping indices would leave a core idle behind the
/// slowest group. Returns when every call has returned; rethrows an
/// exception one of them threw. Tasks may themselves run parallel work.
void parallel_for_each(std::size_t count, const std::function<void(std::size_t)>& task);

/// The same for many short tasks (a bound per child of a search node):
/// oneTBB groups the indices into chunks as it balances the load. Each
/// index is still called once, on some thread, in no fixed order.
void parallel_for_many(std::size_t count, const std::function<void(std::size_t)>& task);

}  // namespace mapex
