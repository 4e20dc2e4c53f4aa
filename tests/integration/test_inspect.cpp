// kiln-inspect reads back what kiln-precompile stored: `ls` lists the same
// jobs, references and names; `show` resolves a job key or a root name.
#include "harness.hpp"

#include <doctest/doctest.h>

using namespace kiln_it;

namespace {

json inspect_json(const Cache& cache, const std::vector<std::string>& args) {
  RunResult r = inspect(cache, args);
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  REQUIRE(j.is_object());
  return j;
}

void check_artifacts(const json& artifacts) {
  INFO("artifacts: " << artifacts.dump());
  REQUIRE(artifacts.is_array());
  CHECK(!artifacts.empty());
  for (const json& a : artifacts) {
    CHECK(a["format"].is_string());
    REQUIRE(a["raw_size"].is_number_integer());
    REQUIRE(a["stored_size"].is_number_integer());
    CHECK(a["raw_size"].get<long long>() > 0);
    CHECK(a["stored_size"].get<long long>() > 0);
  }
}

} // namespace

TEST_SUITE_BEGIN("integration.inspect");

TEST_CASE("ls --json lists the precompiled jobs, their references and the root") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  json ls = inspect_json(cache, {"ls", "--json"});
  INFO("ls: " << ls.dump());
  REQUIRE(ls["jobs"].is_array());
  REQUIRE(ls["names"].is_array());

  std::map<std::string, std::string> entry_of_key;
  for (const json& jb : pre["jobs"])
    entry_of_key[jb["key"].get<std::string>()] = jb["entry"].get<std::string>();

  CHECK(ls["jobs"].size() == pre["jobs"].size());
  for (const json& jb : ls["jobs"]) {
    INFO("ls job: " << jb.dump());
    REQUIRE(is_hex32(jb["key"]));
    const std::string k = jb["key"].get<std::string>();
    REQUIRE(entry_of_key.count(k) == 1);
    CHECK(jb["entry"] == entry_of_key[k]);
    CHECK(jb["target"] == job(pre, entry_of_key[k])["target"]);
    CHECK(jb.contains("options"));
    check_artifacts(jb["artifacts"]);
    // ls names each reference's child by entry; precompile gave its key.
    std::map<std::string, std::string> want;
    for (const auto& [symbol, child] : refs(job(pre, entry_of_key[k])))
      want[symbol] = entry_of_key[child];
    std::map<std::string, std::string> got;
    REQUIRE(jb["refs"].is_array());
    for (const json& ref : jb["refs"])
      got[ref["symbol"].get<std::string>()] = ref["entry"].get<std::string>();
    CHECK(got == want);
  }

  REQUIRE(ls["names"].size() == 1);
  CHECK(ls["names"][0]["name"] == "dia_root");
  CHECK(ls["names"][0]["target"] == root(pre, "dia_root")["target"]);
  CHECK(ls["names"][0]["closure"] == closure(pre, "dia_root"));
}

TEST_CASE("show KEY --json describes one job") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  for (const json& jb : pre["jobs"]) {
    const std::string k = jb["key"].get<std::string>();
    json s = inspect_json(cache, {"show", k, "--json"});
    INFO("show " << k << ": " << s.dump());
    CHECK(s["kind"] == "job");
    CHECK(s["key"] == k);
    CHECK(s["entry"] == jb["entry"]);
    CHECK(s["target"] == jb["target"]);
    CHECK(s.contains("options"));
    CHECK(s.contains("toolchain"));
    CHECK(s["module_hash"].is_string());
    CHECK(!s["module_hash"].get<std::string>().empty());
    CHECK(s["symbol"].is_string());
    check_artifacts(s["artifacts"]);
    REQUIRE(s["refs"].is_array());
    CHECK(s["refs"].size() == jb["refs"].size());
  }
  // The module hash is the hash of the job's code: four functions, four hashes.
  std::set<std::string> hashes;
  for (const json& jb : pre["jobs"])
    hashes.insert(
        inspect_json(cache, {"show", jb["key"].get<std::string>(), "--json"})["module_hash"]
            .dump());
  CHECK(hashes.size() == 4);
}

TEST_CASE("show ROOT --json lists the closure's members") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  json s = inspect_json(cache, {"show", "dia_root", "--json"});
  INFO("show dia_root: " << s.dump());
  CHECK(s["kind"] == "root");
  CHECK(s["name"] == "dia_root");
  CHECK(s["closure"] == closure(pre, "dia_root"));
  REQUIRE(s["members"].is_array());
  CHECK(s["members"].size() == 4); // dia_s once, though reached twice

  std::set<std::string> member_keys;
  std::map<std::string, std::string> key_of_symbol;
  for (const json& m : s["members"]) {
    REQUIRE(is_hex32(m["key"]));
    member_keys.insert(m["key"].get<std::string>());
    CHECK(m["key"] == key(pre, m["entry"].get<std::string>()));
    if (m["symbol"].is_string())
      key_of_symbol[m["symbol"].get<std::string>()] = m["key"].get<std::string>();
  }
  CHECK(member_keys == keys(pre));
  // Each deferred symbol of the closure resolves to the job precompile named.
  for (const json& jb : pre["jobs"])
    for (const auto& [symbol, child] : refs(jb)) {
      INFO("symbol " << symbol);
      REQUIRE(key_of_symbol.count(symbol) == 1);
      CHECK(key_of_symbol[symbol] == child);
    }
}

TEST_CASE("show ROOT follows the latest precompile of that name") {
  Cache cache;
  precompile_ok(cache, {"--entry", "chg_parent", data("change_v1.ll")});
  json v2 = precompile_ok(cache, {"--entry", "chg_parent", data("change_v2.ll")});
  json s = inspect_json(cache, {"show", "chg_parent", "--json"});
  INFO("show chg_parent: " << s.dump());
  CHECK(s["closure"] == closure(v2, "chg_parent"));
  std::set<std::string> member_keys;
  for (const json& m : s["members"])
    member_keys.insert(m["key"].get<std::string>());
  CHECK(member_keys == keys(v2));
}

TEST_CASE("show of an unknown key or name fails") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  for (const char* what : {"nosuch_name", "0123456789abcdef0123456789abcdef"}) {
    RunResult r = inspect(cache, {"show", what, "--json"});
    INFO(what << ": " << describe(r));
    CHECK(r.exit_code != 0);
    CHECK(!r.err.empty());
  }
}

TEST_SUITE_END();
