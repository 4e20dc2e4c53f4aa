// kiln-inspect verify: a healthy cache (linked, relinked-on-load and
// --no-link roots) is ok; a job whose artifact fails its checksum or does not
// decompress, a job whose stored components no longer give its key, and a
// closure whose stored image is damaged, are each named, with exit 1, and
// the healthy ones are not blamed. The library's checks themselves are
// unit-tested in tests/unit/storage/test_verify.cpp.
#include "inspect_helpers.hpp"

#include <doctest/doctest.h>


using namespace kiln_it;

namespace {

/// Runs one SQL statement on the cache file with the sqlite3 CLI; REQUIREs success.
void sql(const Cache& cache, const std::string& statement) {
  RunResult r = run({"/usr/bin/sqlite3", cache.db().string(), statement});
  INFO("sqlite3 " << statement << ": " << describe(r));
  REQUIRE(r.exit_code == 0);
}

} // namespace

TEST_SUITE("integration.verify") {

TEST_CASE("verify: a healthy cache is ok with no problems") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  precompile_ok(cache, {"--no-link", "--entry", "dia_root", data("diamond.ll")});
  json v = inspect_json(cache, {"verify", "--json"});
  INFO("verify: " << v.dump());
  CHECK(v["ok"] == true);
  CHECK(v["problems"] == json::array());
  RunResult human = inspect(cache, {"verify"});
  INFO(describe(human));
  CHECK(human.exit_code == 0);
}

TEST_CASE("verify names a job whose artifact fails its checksum or does not decompress") {
  if (!have("/usr/bin/sqlite3")) {
    MESSAGE("skipping: /usr/bin/sqlite3 is not installed");
    return;
  }
  const char* const damages[] = {
      "UPDATE artifacts SET checksum = ~checksum WHERE job_key = x'%s'",
      "UPDATE artifacts SET data = zeroblob(64) WHERE job_key = x'%s'"};
  for (const char* damage : damages) {
    CAPTURE(damage);
    Cache cache;
    json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
    const std::string victim = key(pre, "nest_c");
    std::string stmt = damage;
    stmt.replace(stmt.find("%s"), 2, victim);
    sql(cache, stmt);

    json v = inspect_json(cache, {"verify", "--json"}, kExitNotFound);
    INFO("verify: " << v.dump());
    CHECK(v["ok"] == false);
    REQUIRE(v["problems"].is_array());
    REQUIRE(!v["problems"].empty());
    bool named = false;
    for (const json& p : v["problems"]) {
      REQUIRE(p["kind"].is_string());
      REQUIRE(p["key"].is_string());
      REQUIRE(p["message"].is_string());
      CHECK(!p["message"].get<std::string>().empty());
      named |= p["key"] == victim;
      // The healthy jobs are not blamed (the closure holding the damaged job may be).
      CHECK(p["key"] != key(pre, "nest_a"));
      CHECK(p["key"] != key(pre, "nest_b"));
    }
    CHECK_MESSAGE(named, "no problem names the damaged job " << victim);

    RunResult human = inspect(cache, {"verify"});
    INFO(describe(human));
    CHECK(human.exit_code == kExitNotFound);
    CHECK((human.out + human.err).find(victim) != std::string::npos);
  }
}

TEST_CASE("verify names the closure whose stored image is damaged") {
  if (!have("/usr/bin/sqlite3")) {
    MESSAGE("skipping: /usr/bin/sqlite3 is not installed");
    return;
  }
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json other = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  const std::string victim = closure(pre, "nest_a");
  sql(cache, "UPDATE images SET data = zeroblob(100) WHERE closure_key = x'" + victim + "'");

  json v = inspect_json(cache, {"verify", "--json"}, kExitNotFound);
  INFO("verify: " << v.dump());
  CHECK(v["ok"] == false);
  REQUIRE(v["problems"].is_array());
  bool named = false;
  for (const json& p : v["problems"]) {
    REQUIRE(p["kind"].is_string());
    REQUIRE(p["key"].is_string());
    REQUIRE(p["message"].is_string());
    named |= p["key"] == victim;
    CHECK(p["key"] != closure(other, "cyc_a"));
  }
  CHECK_MESSAGE(named, "no problem names the closure " << victim);
}


TEST_CASE("verify names a job whose stored components no longer give its key") {
  if (!have("/usr/bin/sqlite3")) {
    MESSAGE("skipping: /usr/bin/sqlite3 is not installed");
    return;
  }
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  const std::string victim = key(pre, "nest_b");
  sql(cache, "UPDATE jobs SET options = options || ' -g' WHERE key = x'" + victim + "'");

  json v = inspect_json(cache, {"verify", "--json"}, kExitNotFound);
  INFO("verify: " << v.dump());
  CHECK(v["ok"] == false);
  REQUIRE(v["problems"].is_array());
  REQUIRE(v["problems"].size() == 1);
  const json& p = v["problems"][0];
  CHECK(p["kind"] == "job");
  CHECK(p["key"] == victim);
  CHECK(p["message"].get<std::string>().find("does not match its stored components") !=
        std::string::npos);

  RunResult human = inspect(cache, {"verify"});
  INFO(describe(human));
  CHECK(human.exit_code == kExitNotFound);
  CHECK(human.out.find(victim) != std::string::npos);
  CHECK(human.out.find("1 problem(s)") != std::string::npos);
}

} // TEST_SUITE
