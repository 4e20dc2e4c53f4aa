// A C++ front end embedding Kiln through find_package(kiln): compile-or-load
// a unit held in memory, twice (a miss, then a hit), and call the result.
//   consumer_cpp CACHE_PATH
#include <kiln/jit.hpp>

#include <cstdint>
#include <cstdio>

#include "unit.inc"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer_cpp CACHE_PATH\n");
    return 2;
  }
  auto cache = kiln::Cache::open(argv[1]);
  if (!cache) {
    std::fprintf(stderr, "consumer_cpp: %s\n", cache.error().message.c_str());
    return 1;
  }
  const kiln::Source sources[] = {{"unit.ll", {kUnit, sizeof kUnit - 1}}};
  for (int round = 0; round < 2; ++round) {
    auto loaded = kiln::compile_or_load(*cache, sources, "sum_squares", "host");
    if (!loaded) {
      std::fprintf(stderr, "consumer_cpp: %s\n", loaded.error().message.c_str());
      return 1;
    }
    auto fn = loaded->image.function<int64_t(int64_t)>("sum_squares");
    if (!fn) {
      std::fprintf(stderr, "consumer_cpp: %s\n", fn.error().message.c_str());
      return 1;
    }
    std::printf("cpp %s: sum_squares(10) = %lld (%zu jobs)\n", loaded->hit ? "hit" : "miss",
                static_cast<long long>((*fn)(10)), loaded->report.jobs.size());
  }
  return 0;
}
