// Host code and the CPU that loads it: portable host targets (host:CPU)
// precompile anywhere; a load of code needing CPU features this machine
// lacks is refused before dlopen, naming them; a load without a target picks
// the best host build this CPU runs; and the portability answers of
// kiln-inspect (import --check, check-portable) say the same as the loader.
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>

#include <kiln/kiln.h>

#include <string>
#include <vector>

using namespace kiln_it;

namespace {

#if defined(__x86_64__)
constexpr const char* kPortable = "host:x86-64-v2";
// Richest first: the first whose code this machine cannot run is the test's.
const std::vector<std::string> kRicher = {"host:x86-64-v4",   "host:sapphirerapids",
                                          "host:graniterapids", "host:diamondrapids",
                                          "host:znver4",      "host:znver5"};
#else
constexpr const char* kPortable = "host:generic";
const std::vector<std::string> kRicher = {"host:neoverse-v1", "host:neoverse-v2",
                                          "host:neoverse-v3", "host:apple-m4"};
#endif

// The one closure of `report` for `target`.
json for_target(const json& report, const std::string& target) {
  for (const json& c : report["details"])
    if (c["target"] == target)
      return c;
  FAIL("no closure for " << target << " in " << report.dump());
  return {};
}

// A target of kRicher whose code this machine cannot run, precompiled into
// `cache` (alone: each candidate is tried in a cache of its own); empty when
// this machine runs them all.
std::string precompile_unsupported(const Cache& cache) {
  for (const std::string& t : kRicher) {
    Cache probe;
    RunResult r = precompile(probe, {"--entry", "hlp_root", "--target", t, data("helper.ll")});
    if (r.exit_code != 0)
      continue; // a CPU this LLVM does not know
    json report = inspect_json(probe, {"check-portable", "--json"});
    if (!for_target(report, t)["loadable"].get<bool>()) {
      precompile_ok(cache, {"--entry", "hlp_root", "--target", t, data("helper.ll")});
      return t;
    }
  }
  return {};
}

struct Load {
  kiln_status status;
  std::string error;
  int result = 0;
};

Load load(const Cache& cache, const char* target) {
  kiln_cache* c = nullptr;
  REQUIRE(kiln_cache_open(cache.db().c_str(), &c) == KILN_OK);
  kiln_image* img = nullptr;
  Load out{kiln_image_load(c, "hlp_root", target, &img), "", 0};
  if (out.status != KILN_OK) {
    out.error = kiln_last_error();
  } else {
    void* fn = nullptr;
    REQUIRE(kiln_image_lookup(img, "hlp_root", &fn) == KILN_OK);
    out.result = reinterpret_cast<int (*)(int)>(fn)(4);
    kiln_image_release(img);
  }
  kiln_cache_close(c);
  return out;
}

} // namespace

TEST_SUITE("integration.host_cpu") {

TEST_CASE("code for a CPU this one is not is refused, portable code loads, and both are reported") {
  Cache cache;
  std::string richer = precompile_unsupported(cache);
  if (richer.empty()) {
    MESSAGE("skipped: this machine runs code for every CPU tried");
    return;
  }
  precompile_ok(cache, {"--entry", "hlp_root", "--target", kPortable, data("helper.ll")});

  json portable = inspect_json(cache, {"check-portable", "--json"});
  INFO("check-portable: " << portable.dump());
  CHECK(num(portable, "closures") == 2);
  CHECK(num(portable, "loadable") == 1);
  json refused = for_target(portable, richer);
  CHECK(refused["component"] == "cpu");
  REQUIRE_FALSE(refused["missing_features"].empty());
  std::string missing = refused["missing_features"][0];
  CHECK(for_target(portable, kPortable)["loadable"] == true);
  CHECK(refused["names"] == json::array({"hlp_root"}));

  // The loader says the same, before any image reaches dlopen.
  Load bad = load(cache, richer.c_str());
  CHECK(bad.status == KILN_UNAVAILABLE);
  INFO("refusal: " << bad.error);
  CHECK(bad.error.find("built for CPU " + richer.substr(5)) != std::string::npos);
  CHECK(bad.error.find("needs CPU features this machine lacks: ") != std::string::npos);
  CHECK(bad.error.find(missing) != std::string::npos);
  CHECK(bad.error.find(refused["reason"].get<std::string>()) != std::string::npos);

  Load good = load(cache, kPortable);
  REQUIRE_MESSAGE(good.status == KILN_OK, good.error);
  CHECK(good.result == 23);
  // Without a target, the build this CPU runs is the one loaded.
  Load any = load(cache, nullptr);
  REQUIRE_MESSAGE(any.status == KILN_OK, any.error);
  CHECK(any.result == 23);

  // A bundle of both, checked without a cache: the same answer, nothing written.
  TempDir tmp;
  const fs::path bundle = tmp.path() / "both.kiln";
  REQUIRE(inspect(cache, {"export", bundle.string()}).exit_code == 0);
  Cache fresh;
  json check = inspect_json(fresh, {"import", bundle.string(), "--check", "--json"});
  INFO("import --check: " << check.dump());
  CHECK(num(check, "closures") == 2);
  CHECK(num(check, "loadable") == 1);
  CHECK(num(check, "not_loadable") == 1);
  CHECK(for_target(check, richer)["component"] == "cpu");
  CHECK(for_target(check, richer)["missing_features"] == refused["missing_features"]);
  CHECK(for_target(check, kPortable)["loadable"] == true);
  CHECK_FALSE(fs::exists(fresh.db()));
  RunResult text = inspect(fresh, {"import", bundle.string(), "--check"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("1 of 2 closures load on this machine") != std::string::npos);
  CHECK(text.out.find(missing) != std::string::npos);
  CHECK_FALSE(fs::exists(fresh.db()));
}

TEST_CASE("portable host targets keep their own names and images apart") {
  Cache cache;
  precompile_ok(cache, {"--entry", "hlp_root", "--target", kPortable, data("helper.ll")});
  // Only the portable build exists: a load for plain host finds nothing.
  Load plain = load(cache, "host");
  CHECK(plain.status == KILN_NOT_FOUND);
  Load any = load(cache, nullptr);
  REQUIRE_MESSAGE(any.status == KILN_OK, any.error);
  CHECK(any.result == 23);
}

} // TEST_SUITE
