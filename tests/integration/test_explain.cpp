// "Why did it miss?": kiln-inspect explain names the key components in
// which two stored jobs differ (-O 2 against -O 3: opt_level only; a job
// against itself: none; another entry: entry and module hash), and
// kiln-precompile --explain gives each job's components.
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>


using namespace kiln_it;

namespace {

const char* const kComponents[] = {"module_hash", "entry",     "target",   "triple",   "cpu",
                                   "features",    "opt_level", "debug",    "toolchain"};

bool is_component(const std::string& c) {
  for (const char* k : kComponents)
    if (c == k)
      return true;
  return false;
}

} // namespace

TEST_SUITE("integration.explain") {

TEST_CASE("explain: -O 2 and -O 3 keys differ only in opt_level") {
  Cache cache;
  json o2 = precompile_ok(cache, {"-O", "2", "--entry", "nest_a", data("nested.ll")});
  json o3 = precompile_ok(cache, {"-O", "3", "--entry", "nest_a", data("nested.ll")});
  const std::string k2 = key(o2, "nest_a"), k3 = key(o3, "nest_a");
  REQUIRE(k2 != k3);

  json e = inspect_json(cache, {"explain", k2, k3, "--json"});
  INFO("explain: " << e.dump());
  CHECK(e["same"] == false);
  REQUIRE(e["differences"].is_array());
  REQUIRE(e["differences"].size() == 1);
  CHECK(e["differences"][0]["component"] == "opt_level");
  CHECK(e["differences"][0]["a"] == "2");
  CHECK(e["differences"][0]["b"] == "3");

  RunResult human = inspect(cache, {"explain", k2, k3});
  INFO(describe(human));
  CHECK(human.exit_code == 0);
  CHECK(human.out.find("opt_level") != std::string::npos);
}

TEST_CASE("explain: a key against itself is the same; different entries differ") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  const std::string ka = key(pre, "nest_a"), kb = key(pre, "nest_b");
  json same = inspect_json(cache, {"explain", ka, ka, "--json"});
  INFO("explain same: " << same.dump());
  CHECK(same["same"] == true);
  CHECK(same["differences"] == json::array());

  json diff = inspect_json(cache, {"explain", ka, kb, "--json"});
  INFO("explain a b: " << diff.dump());
  CHECK(diff["same"] == false);
  std::set<std::string> comps;
  for (const json& d : diff["differences"]) {
    REQUIRE(d["component"].is_string());
    CHECK(d.contains("a"));
    CHECK(d.contains("b"));
    CHECK(is_component(d["component"].get<std::string>()));
    comps.insert(d["component"].get<std::string>());
  }
  CHECK(comps.count("entry") == 1);
  CHECK(comps.count("module_hash") == 1);
  CHECK(comps.count("opt_level") == 0);
  CHECK(comps.count("target") == 0);

  RunResult r = inspect(cache, {"explain", ka, "0123456789abcdef0123456789abcdef", "--json"});
  INFO("explain unknown: " << describe(r));
  CHECK(r.exit_code == kExitNotFound);
}

TEST_CASE("kiln-precompile --explain --json gives each job's key components") {
  Cache cache;
  json o2 = precompile_ok(cache, {"--explain", "-O", "2", "--entry", "nest_a", data("nested.ll")});
  json o3 = precompile_ok(cache, {"--explain", "-O", "3", "--entry", "nest_a", data("nested.ll")});
  for (const json* pre : {&o2, &o3})
    for (const json& jb : (*pre)["jobs"]) {
      INFO("job: " << jb.dump());
      REQUIRE(jb.contains("components"));
      REQUIRE(jb["components"].is_object());
      for (const char* c : kComponents)
        CHECK_MESSAGE(jb["components"].contains(c), "no component " << c);
      CHECK(jb["components"]["entry"] == jb["entry"]);
    }
  // The same jobs at -O 2 and -O 3: components differ in opt_level only.
  for (const char* entry : {"nest_a", "nest_b", "nest_c"}) {
    CAPTURE(entry);
    const json& c2 = job(o2, entry)["components"];
    const json& c3 = job(o3, entry)["components"];
    for (const char* c : kComponents) {
      CAPTURE(c);
      if (std::string(c) == "opt_level")
        CHECK(c2[c] != c3[c]);
      else
        CHECK(c2[c] == c3[c]);
    }
  }
  CHECK(job(o2, "nest_a")["components"]["module_hash"] !=
        job(o2, "nest_b")["components"]["module_hash"]);
}

} // TEST_SUITE
