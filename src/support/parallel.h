// Running independent tasks on a few threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace kiln {

/// Runs task(i) for every i in [0, n), on up to `threads` threads, this one
/// among them; each thread takes the next index until none is left. A
/// thread that cannot start (no memory, a thread limit) leaves its share to
/// the others. `task` must not throw.
template <typename Task> void parallel_for(size_t n, unsigned threads, Task&& task) {
  if (n == 0)
    return;
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(std::min<size_t>(n, 1u << 16))));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;)
      task(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::exception&) {
      break;
    }
  }
  work();
  for (std::thread& t : pool)
    t.join();
}

} // namespace kiln
