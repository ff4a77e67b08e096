#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <mapex/parallel.hpp>

#include "tsan_annotations.hpp"

namespace mapex {
namespace {

/// Addresses of the happens-before edges TSan cannot see through the
/// uninstrumented oneTBB (tsan_annotations.hpp). Globals, so that a task
/// can acquire before it reads anything its spawner wrote, such as the
/// body's captures; only the addresses matter.
[[maybe_unused]] int spawn_edge = 0;
[[maybe_unused]] int join_edge = 0;

}  // namespace

void parallel_for_each(std::size_t count, const std::function<void(std::size_t)>& task) {
  const auto body = [&task](std::size_t i) {
    MAPEX_TSAN_ACQUIRE(&spawn_edge);
    task(i);
    MAPEX_TSAN_RELEASE(&join_edge);
  };
  MAPEX_TSAN_RELEASE(&spawn_edge);
  // One index per task (simple_partitioner): a few long tasks of uneven length.
  tbb::parallel_for(std::size_t{0}, count, body, tbb::simple_partitioner());
  MAPEX_TSAN_ACQUIRE(&join_edge);
}

void parallel_for_many(std::size_t count, const std::function<void(std::size_t)>& task) {
  const auto body = [&task](const tbb::blocked_range<std::size_t>& range) {
    MAPEX_TSAN_ACQUIRE(&spawn_edge);
    for (std::size_t i = range.begin(); i != range.end(); ++i) task(i);
    MAPEX_TSAN_RELEASE(&join_edge);
  };
  MAPEX_TSAN_RELEASE(&spawn_edge);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count), body);
  MAPEX_TSAN_ACQUIRE(&join_edge);
}

}  // namespace mapex
