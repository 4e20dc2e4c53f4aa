// The example the README points at: precompile examples/deferred.ll, then run
// examples/host_main.c (built by this directory's CMakeLists) on that cache.
#include "harness.hpp"

#include <doctest/doctest.h>

using namespace kiln_it;

TEST_SUITE_BEGIN("integration.example");

TEST_CASE("examples/host_main prints the example's results") {
#if defined(KILN_EXAMPLE_HOST) && defined(KILN_EXAMPLES)
  Cache cache;
  const std::string unit = (fs::path(KILN_EXAMPLES) / "deferred.ll").string();
  json j = precompile_ok(cache, {unit});
  for (const char* name : {"saxpy_like", "fib", "collatz", "fib_calls"}) {
    INFO(name);
    CHECK(root_names(j).count(name) == 1);
  }
  RunResult r = run({KILN_EXAMPLE_HOST, cache.db().string()});
  INFO(describe(r));
  CHECK(r.exit_code == 0);
  CHECK(r.out == "saxpy_like(2, 3, 4) = 10\n"
                 "fib(20) = 6765\n"
                 "collatz(27) = 111\n"
                 "fib_calls(10) = 177\n");

  // A cache without the roots: non-zero exit and kiln_last_error() on stderr.
  Cache empty;
  precompile_ok(empty, {"--entry", "nest_a", data("nested.ll")});
  RunResult bad = run({KILN_EXAMPLE_HOST, empty.db().string()});
  INFO(describe(bad));
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("saxpy_like") != std::string::npos);
#else
  MESSAGE("skipped: example host program not built (KILN_EXAMPLE_HOST)");
#endif
}

TEST_SUITE_END();
