// Keys and names never stand in for each other: a function named like
// another root's closure key (32 hex digits) is refused at precompile, and a
// name row of that form already in a cache file (an older cache, a crafted
// file) answers no load or kiln-inspect lookup of that key, which always
// reaches the closure the key spells.
#include "common.hpp"

#include <doctest/doctest.h>

#include <kiln/kiln.h>

#include <algorithm>
#include <cctype>
#include <fstream>

using namespace kiln_rel;

namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return char(std::toupper(c)); });
  return s;
}

// A host unit whose one function, `name`, returns 666 for any argument.
fs::path impostor_unit(const TempDir& dir, const std::string& file, const std::string& name) {
  fs::path p = dir.path() / file;
  std::ofstream(p) << "define i32 @\"" << name << "\"(i32 %x) {\n  ret i32 666\n}\n";
  return p;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_SUITE("reliability.security") {

TEST_CASE("a function named like another root's closure key is refused at precompile") {
  Cache cache;
  TempDir dir;
  json first = precompile_ok(cache, {data("nested.ll"), "--entry", "nest_a"});
  std::string key = closure(first, "nest_a");

  for (const std::string& name : {key, upper(key)}) {
    CAPTURE(name);
    fs::path attack = impostor_unit(dir, "attack.ll", name);
    RunResult text = run({precompile_bin().string(), "--cache", cache.db().string(),
                          attack.string()});
    INFO(describe(text));
    CHECK(text.exit_code == 2);
    CHECK(contains(text.err, "function '" + name + "' cannot be a root"));
    CHECK(contains(text.err, "rename it"));
    RunResult as_json = precompile(cache, {attack.string()});
    INFO(describe(as_json));
    CHECK(as_json.exit_code == 2);
    json j = json::parse(as_json.out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    CHECK(contains(j.dump(), "cannot be a root"));
  }
  // The key still loads the closure it spells, and no name of its form exists.
  Image image(cache, key);
  CHECK(image.fn<I32Fn>("nest_a")(1) == 333);
  Db db(cache.db());
  CHECK(db.rows("SELECT name FROM names WHERE length(name) = 32").empty());
}

TEST_CASE("a name row of key form planted in a cache answers no load or inspect of that key") {
  Cache cache;
  TempDir dir;
  json real = precompile_ok(cache, {data("nested.ll"), "--entry", "nest_a"});
  std::string key = closure(real, "nest_a");
  json other = precompile_ok(cache, {impostor_unit(dir, "impostor.ll", "impostor").string()});
  std::string impostor = closure(other, "impostor");
  std::string stray = std::string(31, '0') + "1"; // the key of no closure
  {
    Db db(cache.db());
    for (const std::string& name : {key, upper(key), stray})
      db.exec("INSERT INTO names(name, target, closure_key, updated_at) VALUES ('" + name +
              "', 'host', x'" + impostor + "', 0)");
  }

  // kiln_image_load, by the key in either case, with or without a target.
  for (const std::string& lookup : {key, upper(key)}) {
    CAPTURE(lookup);
    Image image(cache, lookup);
    CHECK(image.fn<I32Fn>("nest_a")(1) == 333);
    void* fn = nullptr;
    CHECK(kiln_image_lookup(image.get(), "impostor", &fn) == KILN_NOT_FOUND);
    kiln_cache* c = nullptr;
    REQUIRE(kiln_cache_open(cache.db().c_str(), &c) == KILN_OK);
    kiln_image* best = nullptr;
    REQUIRE_MESSAGE(kiln_image_load(c, lookup.c_str(), nullptr, &best) == KILN_OK,
                    kiln_last_error());
    CHECK(kiln_image_lookup(best, "nest_a", &fn) == KILN_OK);
    kiln_image_release(best);
    kiln_cache_close(c);
  }
  kiln_cache* c = nullptr;
  REQUIRE(kiln_cache_open(cache.db().c_str(), &c) == KILN_OK);
  kiln_image* none = nullptr;
  CHECK(kiln_image_load(c, stray.c_str(), "host", &none) == KILN_NOT_FOUND);
  CHECK(none == nullptr);
  kiln_cache_close(c);

  // kiln-inspect image: the same bytes as the real root's image.
  fs::path by_key = dir.path() / "by-key.so", by_name = dir.path() / "by-name.so";
  RunResult img = inspect(cache, {"image", key, "--target", "host", "-o", by_key.string()});
  INFO(describe(img));
  REQUIRE(img.exit_code == 0);
  CHECK(contains(img.err, "closure " + key));
  REQUIRE(inspect(cache, {"image", "nest_a", "--target", "host", "-o", by_name.string()})
              .exit_code == 0);
  CHECK(slurp(by_key) == slurp(by_name));

  // kiln-inspect graph and show: the real closure and its three members.
  RunResult graph = inspect(cache, {"graph", upper(key), "--json"});
  INFO(describe(graph));
  REQUIRE(graph.exit_code == 0);
  std::set<std::string> entries;
  json g = json::parse(graph.out);
  for (const json& n : g["nodes"])
    entries.insert(n["entry"].get<std::string>());
  CHECK(entries == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  RunResult show = inspect(cache, {"show", key, "--json"});
  INFO(describe(show));
  REQUIRE(show.exit_code == 0);
  CHECK(json::parse(show.out)["closure"] == key);

  // A key of no closure is not found, whatever name row spells it.
  for (const char* cmd : {"show", "graph"}) {
    CAPTURE(cmd);
    RunResult r = inspect(cache, {cmd, stray});
    CHECK(r.exit_code == 1);
    CHECK_FALSE(contains(r.out, impostor));
  }
  fs::path no_file = dir.path() / "none.so";
  CHECK(inspect(cache, {"image", stray, "--target", "host", "-o", no_file.string()}).exit_code == 1);
  CHECK_FALSE(fs::exists(no_file));

  // verify names each planted row as a problem, and nothing else.
  RunResult v = inspect(cache, {"verify", "--json"});
  INFO(describe(v));
  CHECK(v.exit_code != 0);
  std::set<std::string> flagged;
  const json report = json::parse(v.out);
  for (const json& p : report["problems"])
    flagged.insert(p["key"].get<std::string>());
  CHECK(flagged ==
        std::set<std::string>{key + " (host)", upper(key) + " (host)", stray + " (host)"});

  // gc drops them (a dry run only counts them), and nothing else changes.
  RunResult dry = inspect(cache, {"gc", "--dry-run", "--json"});
  INFO(describe(dry));
  REQUIRE(dry.exit_code == 0);
  CHECK(json::parse(dry.out)["dropped_key_form_names"] == 3);
  RunResult gc = inspect(cache, {"gc", "--json"});
  INFO(describe(gc));
  REQUIRE(gc.exit_code == 0);
  const json dropped = json::parse(gc.out);
  CHECK(dropped["dropped_key_form_names"] == 3);
  CHECK(dropped["evicted_closures"].empty());
  RunResult after = inspect(cache, {"verify", "--json"});
  INFO(describe(after));
  CHECK(after.exit_code == 0);
  {
    Db db(cache.db());
    CHECK(db.rows("SELECT name FROM names WHERE length(name) = 32").empty());
  }
  Image named(cache, "nest_a");
  CHECK(named.fn<I32Fn>("nest_a")(1) == 333);
  Image keyed(cache, key);
  CHECK(keyed.fn<I32Fn>("nest_a")(1) == 333);
  Image impostor_root(cache, "impostor");
  void* fn = nullptr;
  CHECK(kiln_image_lookup(impostor_root.get(), "impostor", &fn) == KILN_OK);
}

} // TEST_SUITE
