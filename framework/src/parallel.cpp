#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <mapex/parallel.hpp>

namespace mapex {

void parallel_for_each(std::size_t count, const std::function<void(std::size_t)>& task) {
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, count, 1),
      [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t i = range.begin(); i != range.end(); ++i) task(i);
      },
      tbb::simple_partitioner());
}

}  // namespace mapex
