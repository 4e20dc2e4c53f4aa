// The request memo (kiln-precompile's direct mode): a repeated request is
// answered from the cache without parsing IR or loading the compiler, with
// the same report a full run gives; anything that changes the request or
// its toolchain misses.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace kiln_it;

namespace {

// The jobs list without statuses, in order: a memo hit must list the jobs
// in the order a plan discovers them.
json ordered_jobs(const json& j) {
  json out = json::array();
  for (const json& job : j["jobs"]) {
    json copy = job;
    copy.erase("status");
    out.push_back(copy);
  }
  return out;
}

std::vector<std::string> env_precompile(const std::vector<std::string>& env, const Cache& cache,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(precompile_bin().string());
  argv.push_back("--cache");
  argv.push_back(cache.db().string());
  argv.push_back("--json");
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

} // namespace

TEST_SUITE("integration.memo") {

TEST_CASE("a repeated request is a memo hit with the same report, in the same order") {
  Cache cache;
  for (const char* unit : {"nested.ll", "cycle.ll", "diamond.ll", "chain8.ll"}) {
    CAPTURE(unit);
    json first = precompile_ok(cache, {data(unit)});
    CHECK(first["memo"] == false);
    json second = precompile_ok(cache, {data(unit)});
    CHECK(second["memo"] == true);
    CHECK(statuses(second) == std::set<std::string>{"cached"});
    CHECK(ordered_jobs(second) == ordered_jobs(first));
    CHECK(second["roots"] == first["roots"]);
  }
}

TEST_CASE("functions named with a tab and a newline are answered from the memo") {
  // LLVM accepts any bytes in a quoted name; the memo stores them as packed
  // fields, so such a request is memoised like any other.
  Cache cache;
  TempDir dir;
  std::ofstream(dir.path() / "odd.ll")
      << "define i32 @\"a\\09b\"(i32 %x) {\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n"
         "define i32 @\"c\\0Ad\"(i32 %x) {\n  %y = call i32 @\"a\\09b\"(i32 %x)\n"
         "  %z = mul i32 %y, 2\n  ret i32 %z\n}\n";
  json first = precompile_ok(cache, {"odd.ll"}, dir.path());
  CHECK(first["memo"] == false);
  CHECK(root_names(first) == std::set<std::string>{"a\tb", "c\nd"});
  json second = precompile_ok(cache, {"odd.ll"}, dir.path());
  CHECK(second["memo"] == true);
  CHECK(statuses(second) == std::set<std::string>{"cached"});
  CHECK(second["roots"] == first["roots"]);
  Image img(cache, "c\nd");
  CHECK(img.fn<I32Fn>("c\nd")(4) == 10);
}

TEST_CASE("the memo is keyed by bytes, not by file names or directories") {
  Cache cache;
  TempDir elsewhere;
  json first = precompile_ok(cache, {data("nested.ll")});
  fs::copy_file(data("nested.ll"), elsewhere.path() / "renamed.ll");
  json again = precompile_ok(cache, {"renamed.ll"}, elsewhere.path());
  CHECK(again["memo"] == true);
  CHECK(normalized(again) == normalized(first));
}

TEST_CASE("a different request misses the memo") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  CHECK(precompile_ok(cache, {data("nested.ll"), "-O1"})["memo"] == false);
  CHECK(precompile_ok(cache, {data("nested.ll"), "-g"})["memo"] == false);
  CHECK(precompile_ok(cache, {data("change_v1.ll")})["memo"] == false);
  // The same jobs reached through a new request: cached, not recompiled.
  json other = precompile_ok(cache, {data("nested.ll"), "--entry", "nest_a"});
  CHECK(other["memo"] == false);
  CHECK(statuses(other) == std::set<std::string>{"cached"});
  CHECK(precompile_ok(cache, {data("nested.ll"), "--entry", "nest_a"})["memo"] == true);
}

TEST_CASE("a memo whose closures were evicted is a miss, and the request completes") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  RunResult gc = inspect(cache, {"gc", "--max-size", "0"});
  REQUIRE_MESSAGE(gc.exit_code == 0, describe(gc));
  json again = precompile_ok(cache, {data("nested.ll")});
  CHECK(again["memo"] == false);
  CHECK(statuses(again) == std::set<std::string>{"compiled"});
  Image img(cache, "nest_a");
  CHECK(img.lookup("nest_a") != nullptr);
}

TEST_CASE("a memo hit re-points names at its closures") {
  Cache cache;
  json v1 = precompile_ok(cache, {data("change_v1.ll")});
  json v2 = precompile_ok(cache, {data("change_v2.ll")});
  REQUIRE(v1["roots"] != v2["roots"]);
  json again = precompile_ok(cache, {data("change_v1.ll")});
  CHECK(again["memo"] == true);
  RunResult ls = inspect(cache, {"ls", "--json"});
  REQUIRE(ls.exit_code == 0);
  for (const json& r : v1["roots"])
    CHECK_MESSAGE(ls.out.find(r["closure"].get<std::string>()) != std::string::npos,
                  "name " << r["name"] << " does not point at the v1 closure again");
}

TEST_CASE("a memo hit needs no compiler library; a miss does") {
  Cache cache;
  precompile_ok(cache, {data("nested.ll")});
  RunResult hit = run(env_precompile({"KILN_COMPILER_LIBRARY=/nonexistent/libkiln-compiler.so"},
                                     cache, {data("nested.ll")}));
  CHECK_MESSAGE(hit.exit_code == 0, describe(hit));
  CHECK(json::parse(hit.out)["memo"] == true);
  RunResult miss = run(env_precompile({"KILN_COMPILER_LIBRARY=/nonexistent/libkiln-compiler.so"},
                                      cache, {data("cycle.ll")}));
  CHECK(miss.exit_code == 1); // a missing library: the toolchain is unusable
  CHECK(miss.err.find("cannot load the compiler library") != std::string::npos);
}

TEST_CASE("a changed device toolchain file invalidates the memo") {
  const char* libdevice = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
  if (!fs::exists(libdevice)) {
    MESSAGE("skipped: no CUDA libdevice at " << libdevice);
    return;
  }
  Cache cache;
  TempDir dir;
  fs::path copy = dir.path() / "libdevice.10.bc";
  fs::copy_file(libdevice, copy);
  std::vector<std::string> env{"KILN_LIBDEVICE=" + copy.string(), "KILN_PTXAS="};
  // k_amd calls AMD's library, which no NVIDIA image can link: k_nv only.
  std::vector<std::string> args{data("gpu_math.ll"), "--target", "sm_90", "--entry", "k_nv",
                                "--no-link"};
  RunResult first = run(env_precompile(env, cache, args));
  REQUIRE_MESSAGE(first.exit_code == 0, describe(first));
  RunResult second = run(env_precompile(env, cache, args));
  REQUIRE_MESSAGE(second.exit_code == 0, describe(second));
  CHECK(json::parse(second.out)["memo"] == true);
  // Same bytes, new identity (as after reinstalling the toolkit): the memo
  // cannot tell, so it misses; the jobs themselves are still cached.
  { std::ofstream(copy, std::ios::app); }
  fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5));
  RunResult third = run(env_precompile(env, cache, args));
  REQUIRE_MESSAGE(third.exit_code == 0, describe(third));
  json j = json::parse(third.out);
  CHECK(j["memo"] == false);
  CHECK(statuses(j) == std::set<std::string>{"cached"});
}

} // TEST_SUITE
