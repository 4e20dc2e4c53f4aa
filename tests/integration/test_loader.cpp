// The loader's two paths, each in a process that only loads: a cached image
// loads without LLVM or the linker; a missing image is relinked from the
// closure's job artifacts (bringing in the linker), stored, and the next
// process loads it without the linker again.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

using namespace kiln_it;

namespace {

RunResult probe(const Cache& cache, const std::string& name, const std::string& arg) {
  return run({KILN_LOAD_PROBE, cache.db().string(), name, arg});
}

} // namespace

TEST_SUITE("integration.loader") {

TEST_CASE("a cached image loads without mapping LLVM or the linker") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  RunResult r = probe(cache, "nest_a", "5");
  REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
  // nest_a(5) = (5 + 100 + 10) * 3; a process that only loads maps neither
  // LLVM nor the linker, nor the libraries of the Redis tier and signing;
  // served by the published host images, not SQLite or zstd either.
  CHECK(r.out == "result=345 llvm=0 linker=0 hiredis=0 sodium=0 sqlite=0 zstd=0\n");
  // Without them (removed, as a commit would), the same load reads the
  // cache file, and its close publishes them again.
  std::string published = cache.db().string() + "-images";
  REQUIRE(std::remove(published.c_str()) == 0);
  RunResult file = probe(cache, "nest_a", "5");
  REQUIRE_MESSAGE(file.exit_code == 0, describe(file));
  CHECK(file.out == "result=345 llvm=0 linker=0 hiredis=0 sodium=0 sqlite=1 zstd=1\n");
  CHECK(std::filesystem::exists(published));
  CHECK(probe(cache, "nest_a", "5").out.find("sqlite=0 zstd=0") != std::string::npos);
}

TEST_CASE("a missing image is relinked from job artifacts, stored, then loaded warm") {
  Cache cache;
  json j = precompile_ok(cache, {"--no-link", data("nested.ll")});
  RunResult warm_ref;
  {
    Cache linked;
    precompile_ok(linked, {data("nested.ll")});
    warm_ref = probe(linked, "nest_a", "5");
    REQUIRE_MESSAGE(warm_ref.exit_code == 0, describe(warm_ref));
  }
  RunResult cold = probe(cache, "nest_a", "5");
  REQUIRE_MESSAGE(cold.exit_code == 0, describe(cold));
  CHECK(cold.out.find("linker=1") != std::string::npos);
  CHECK(cold.out.find("llvm=1") != std::string::npos);

  RunResult warm = probe(cache, "nest_a", "5");
  REQUIRE_MESSAGE(warm.exit_code == 0, describe(warm));
  CHECK(warm.out.find("llvm=0 linker=0") != std::string::npos);
  // Same result whether the image came from precompile or from the loader.
  CHECK(warm.out.substr(0, warm.out.find(' ')) == warm_ref.out.substr(0, warm_ref.out.find(' ')));
}

TEST_CASE("without a linker, a missing image is KILN_UNAVAILABLE and a cached one still loads") {
  Cache cache;
  precompile_ok(cache, {"--no-link", data("nested.ll")});
  ::setenv("KILN_LINK_LIBRARY", "", 1);
  RunResult r = probe(cache, "nest_a", "5");
  ::unsetenv("KILN_LINK_LIBRARY");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("linker") != std::string::npos);
  Cache linked;
  precompile_ok(linked, {data("nested.ll")});
  ::setenv("KILN_LINK_LIBRARY", "", 1);
  RunResult ok = probe(linked, "nest_a", "5");
  ::unsetenv("KILN_LINK_LIBRARY");
  CHECK_MESSAGE(ok.exit_code == 0, describe(ok));
}

} // TEST_SUITE
