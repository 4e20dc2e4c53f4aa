// Job and closure keys are content hashes: the same unit gives the same keys
// whatever process, working directory, input file name, thread count or input
// encoding produced them. Each comparison uses fresh caches, so nothing is
// "cached" and both sides really computed their keys.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace kiln_it;

namespace {

// Two fresh-cache runs must agree on every job (key, entry, target, refs) and
// every root (name, target, closure).
void check_same_keys(const json& a, const json& b) {
  INFO("first:  " << normalized(a).dump());
  INFO("second: " << normalized(b).dump());
  CHECK(!a["jobs"].empty());
  CHECK(normalized(a) == normalized(b));
}

} // namespace

TEST_SUITE_BEGIN("integration.determinism");

TEST_CASE("same keys from two separate processes") {
  for (const char* unit : {"chain8.ll", "diamond.ll", "cycle.ll"}) {
    INFO(unit);
    Cache first, second;
    json a = precompile_ok(first, {data(unit)});
    json b = precompile_ok(second, {data(unit)});
    check_same_keys(a, b);
  }
}

TEST_CASE("same keys from another working directory") {
  TempDir elsewhere;
  Cache first, second;
  // Relative path from the fixtures directory vs absolute path from elsewhere.
  json a = precompile_ok(first, {"chain8.ll"}, fs::path(data("chain8.ll")).parent_path());
  json b = precompile_ok(second, {data("chain8.ll")}, elsewhere.path());
  check_same_keys(a, b);
}

TEST_CASE("same keys from a copy of the input under another file name") {
  TempDir dir;
  fs::create_directories(dir.path() / "sub dir");
  const fs::path copy = dir.path() / "sub dir" / "renamed_unit.ll";
  fs::copy_file(data("diamond.ll"), copy);
  Cache first, second;
  json a = precompile_ok(first, {data("diamond.ll")});
  json b = precompile_ok(second, {copy.string()});
  check_same_keys(a, b);
}

TEST_CASE("same keys with -j1, -j2 and -j4") {
  for (const char* unit : {"chain8.ll", "diamond.ll"}) {
    INFO(unit);
    Cache c1, c2, c4;
    json a = precompile_ok(c1, {"-j", "1", data(unit)});
    json b = precompile_ok(c2, {"-j", "2", data(unit)});
    json c = precompile_ok(c4, {"-j", "4", data(unit)});
    check_same_keys(a, b);
    check_same_keys(a, c);
  }
}

TEST_CASE("same keys from textual IR and from its bitcode") {
  const fs::path as = llvm_as();
  if (as.empty()) {
    MESSAGE("skipped: llvm-as not found (KILN_LLVM_AS)");
    return;
  }
  TempDir dir;
  const fs::path bc = dir.path() / "diamond.bc";
  RunResult r = run({as.string(), data("diamond.ll"), "-o", bc.string()});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  Cache first, second;
  json a = precompile_ok(first, {data("diamond.ll")});
  json b = precompile_ok(second, {bc.string()});
  check_same_keys(a, b);
}

TEST_CASE("same keys whatever the order of a unit's files") {
  Cache first, second;
  json a = precompile_ok(first, {data("multi_a.ll"), data("multi_b.ll")});
  json b = precompile_ok(second, {data("multi_b.ll"), data("multi_a.ll")});
  check_same_keys(a, b);
}

TEST_CASE("--target host gives the same keys as the default target") {
  Cache first, second;
  json a = precompile_ok(first, {data("nested.ll")});
  json b = precompile_ok(second, {"--target", "host", data("nested.ll")});
  check_same_keys(a, b);
}

TEST_CASE("job and closure keys do not depend on which other roots were requested") {
  Cache first, second;
  json one = precompile_ok(first, {"--entry", "dia_root", data("diamond.ll")});
  json all = precompile_ok(second, {data("diamond.ll")});
  CHECK(root_names(all) == std::set<std::string>{"dia_root", "dia_l", "dia_r", "dia_s"});
  CHECK(all["jobs"].size() == 4);
  CHECK(keys(all) == keys(one));
  CHECK(closure(all, "dia_root") == closure(one, "dia_root"));
}

TEST_SUITE_END();
