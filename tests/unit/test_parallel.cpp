// mapex/parallel.hpp: every index is called exactly once, for few long
// tasks (parallel_for_each) and for many short ones (parallel_for_many),
// on a two-thread arena and on one.

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <mapex/parallel.hpp>
#include <vector>

namespace mapex {
namespace {

TEST(Parallel, EveryIndexRunsOnce) {
  for (const int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1000}}) {
      std::vector<std::atomic<int>> each(count), many(count);
      arena.execute([&] {
        parallel_for_each(count, [&](std::size_t i) { ++each[i]; });
        parallel_for_many(count, [&](std::size_t i) { ++many[i]; });
      });
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(each[i].load(), 1) << i;
        EXPECT_EQ(many[i].load(), 1) << i;
      }
    }
  }
}

}  // namespace
}  // namespace mapex
