// Moving roots to another cache: export and import of bundles through
// kiln-inspect (a round trip that loads, named roots only, re-import that
// changes nothing, damaged, truncated or foreign files refused without
// change), signed bundles (imported under the key and the requirement;
// altered, unsigned or unverifiable ones refused without change), the
// cache's own files refused as an export, image or import path, and a
// cache file copied elsewhere under another name that still loads and
// verifies.
#include "inspect_helpers.hpp"

#include "../unit/fixtures/env.hpp"

#include <doctest/doctest.h>

#include <optional>

using namespace kiln_it;
using kiln::test::EnvVar;

namespace {

/// Creates an empty cache file through the C API (kiln-inspect itself never
/// creates a cache).
void make_empty(const Cache& cache) {
  kiln_cache* c = nullptr;
  kiln_status st = kiln_cache_open(cache.db().c_str(), &c);
  REQUIRE_MESSAGE(st == KILN_OK, kiln_status_name(st) << ": " << kiln_last_error());
  kiln_cache_close(c);
}

} // namespace

TEST_SUITE("integration.bundle") {

// ---------------------------------------------------------------- export / import

TEST_CASE("export and import carry roots to another cache that loads them") {
  Cache a;
  json n = precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  json c = precompile_ok(a, {"--entry", "cyc_a", data("cycle.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "all.kiln";
  RunResult ex = inspect(a, {"export", bundle.string()});
  INFO("export: " << describe(ex));
  REQUIRE(ex.exit_code == 0);
  REQUIRE(fs::exists(bundle));
  CHECK(fs::file_size(bundle) > 0);

  Cache b;
  make_empty(b);
  json im = inspect_json(b, {"import", bundle.string(), "--json"});
  INFO("import: " << im.dump());
  CHECK(num(im, "closures") == 2);
  CHECK(num(im, "jobs") == 6);
  CHECK(num(im, "names") == 2);
  CHECK(num(im, "images") >= 0);
  CHECK(num(im, "images") <= 2);

  CHECK(call(b, "nest_a", "nest_a", 1) == 333);
  CHECK(call(b, "cyc_a", "cyc_a", 3) == 1111);
  CHECK(inspect_json(b, {"verify", "--json"})["ok"] == true);

  json la = inspect_json(a, {"ls", "--json"});
  json lb = inspect_json(b, {"ls", "--json"});
  CHECK(ls_keys(lb) == ls_keys(la));
  CHECK(ls_names(lb) == ls_names(la));
  for (const json& nm : lb["names"]) {
    const std::string name = nm["name"].get<std::string>();
    CHECK(nm["closure"] == (name == "nest_a" ? closure(n, "nest_a") : closure(c, "cyc_a")));
  }

  // Importing the same bundle again changes nothing.
  RunResult before = inspect(b, {"ls", "--json"});
  RunResult again = inspect(b, {"import", bundle.string(), "--json"});
  INFO("re-import: " << describe(again));
  CHECK(again.exit_code == 0);
  CHECK(inspect(b, {"ls", "--json"}).out == before.out);
  CHECK(num(stats(b), "closures") == 2);
  CHECK(call(b, "nest_a", "nest_a", 2) == 336);
}

TEST_CASE("export of named roots carries only their closures") {
  Cache a;
  precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(a, {"--entry", "cyc_a", data("cycle.ll")});
  precompile_ok(a, {"--entry", "dia_root", data("diamond.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "some.kiln";
  RunResult ex = inspect(a, {"export", bundle.string(), "nest_a", "dia_root", "--json"});
  INFO("export: " << describe(ex));
  REQUIRE(ex.exit_code == 0);

  Cache b; // no cache file yet: import creates it
  json im = inspect_json(b, {"import", bundle.string(), "--json"});
  INFO("import: " << im.dump());
  CHECK(num(im, "closures") == 2);
  CHECK(num(im, "jobs") == 7);
  CHECK(num(im, "names") == 2);
  CHECK(ls_names(inspect_json(b, {"ls", "--json"})) ==
        std::set<std::string>{"nest_a", "dia_root"});
  CHECK(call(b, "dia_root", "dia_root", 5) == 1026);

  // A root by closure key.
  const std::string nest_closure =
      inspect_json(a, {"show", "nest_a", "--json"})["closure"].get<std::string>();
  const fs::path by_key = tmp.path() / "by-key.kiln";
  RunResult ek = inspect(a, {"export", by_key.string(), nest_closure});
  INFO("export by closure key: " << describe(ek));
  REQUIRE(ek.exit_code == 0);
  Cache c;
  make_empty(c);
  json ik = inspect_json(c, {"import", by_key.string(), "--json"});
  INFO("import by-key bundle: " << ik.dump());
  CHECK(num(ik, "closures") == 1);
  CHECK(num(ik, "jobs") == 3);
  CHECK(call(c, nest_closure, "nest_a", 1) == 333);

  RunResult missing = inspect(a, {"export", (tmp.path() / "x.kiln").string(), "nosuch_name"});
  INFO("export nosuch_name: " << describe(missing));
  CHECK(missing.exit_code == kExitNotFound);
}

TEST_CASE("import of a damaged, truncated or foreign file fails and changes nothing") {
  Cache a;
  precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(a, {"--entry", "chain0", data("chain8.ll")});
  TempDir tmp;
  const fs::path bundle = tmp.path() / "good.kiln";
  REQUIRE(inspect(a, {"export", bundle.string()}).exit_code == 0);
  const std::string good = slurp(bundle);
  REQUIRE(good.size() > 16);

  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0xff);
  write_file(tmp.path() / "flipped.kiln", flipped);
  write_file(tmp.path() / "truncated.kiln", good.substr(0, good.size() / 2));
  write_file(tmp.path() / "short.kiln", good.substr(0, 8));
  write_file(tmp.path() / "empty.kiln", "");
  write_file(tmp.path() / "text.kiln", slurp(data("nested.ll")));

  // One cache with other content, one that already holds the bundle's roots.
  Cache other;
  precompile_ok(other, {"--entry", "dia_root", data("diamond.ll")});
  Cache same;
  make_empty(same);
  REQUIRE(inspect(same, {"import", bundle.string()}).exit_code == 0);

  for (const Cache* target : {&other, &same}) {
    const std::string ls0 = inspect(*target, {"ls", "--json"}).out;
    for (const char* bad : {"flipped.kiln", "truncated.kiln", "short.kiln", "empty.kiln",
                            "text.kiln", "does-not-exist.kiln"}) {
      RunResult r = inspect(*target, {"import", (tmp.path() / bad).string(), "--json"});
      INFO("import " << bad << ": " << describe(r));
      CHECK(r.exit_code != 0);
      CHECK(!r.err.empty());
      CHECK(inspect(*target, {"ls", "--json"}).out == ls0);
    }
    CHECK(inspect_json(*target, {"verify", "--json"})["ok"] == true);
  }
  CHECK(call(other, "dia_root", "dia_root", 5) == 1026);
}

// ---------------------------------------------------------------- signed bundles

TEST_CASE("signed bundles: imported under the key and requirement; others refused unchanged") {
  const std::string key = "8f1e3a5b7c9d0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a9b0c2d4e6f8a0b1c3d5e7f";
  const std::string other_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  Cache a;
  precompile_ok(a, {"--entry", "nest_a", data("nested.ll")});
  TempDir tmp;
  const fs::path signed_bundle = tmp.path() / "signed.kiln";
  const fs::path unsigned_bundle = tmp.path() / "unsigned.kiln";
  const fs::path flipped_bundle = tmp.path() / "flipped.kiln";
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    RunResult ex = inspect(a, {"export", signed_bundle.string()});
    REQUIRE_MESSAGE(ex.exit_code == 0, describe(ex));
    CHECK(ex.out.find(key) == std::string::npos);
  }
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    REQUIRE(inspect(a, {"export", unsigned_bundle.string()}).exit_code == 0);
  }
  const std::string good = slurp(signed_bundle);
  REQUIRE(good.size() > 40);
  CHECK(good[8] == 2); // the signed envelope's version
  CHECK(slurp(unsigned_bundle)[8] == 1);
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x01);
  write_file(flipped_bundle, flipped);

  // A cache that requires signatures through its setting.
  Cache b;
  make_empty(b);
  RunResult set = inspect(b, {"config", "require_signed", "1"});
  REQUIRE_MESSAGE(set.exit_code == 0, describe(set));
  json shown = inspect_json(b, {"config", "--json"});
  CHECK(shown["require_signed"] == true);
  CHECK(shown["require_signed_source"] == "setting");
  const std::string ls0 = inspect(b, {"ls", "--json"}).out;
  auto refused = [&](const Cache& target, const fs::path& file, const std::string& why) {
    RunResult r = inspect(target, {"import", file.string(), "--json"});
    INFO("import " << file.filename() << ": " << describe(r));
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(why) != std::string::npos);
    CHECK(r.err.find(key) == std::string::npos);
    CHECK(r.err.find(other_key) == std::string::npos);
  };
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    refused(b, flipped_bundle, "signature does not match");
    refused(b, unsigned_bundle, "not signed");
  }
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    refused(b, signed_bundle, "no KILN_SIGNING_KEY");
  }
  {
    EnvVar k("KILN_SIGNING_KEY", other_key);
    refused(b, signed_bundle, "signature does not match");
  }
  CHECK(inspect(b, {"ls", "--json"}).out == ls0);
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    RunResult im = inspect(b, {"import", signed_bundle.string(), "--json"});
    REQUIRE_MESSAGE(im.exit_code == 0, describe(im));
    CHECK(json::parse(im.out)["closures"] == 1);
  }
  CHECK(call(b, "nest_a", "nest_a", 1) == 333);
  CHECK(inspect_json(b, {"verify", "--json"})["ok"] == true);

  // The requirement from the environment; and a key without it still
  // refuses an altered bundle while it accepts an unsigned one.
  Cache c;
  make_empty(c);
  const std::string ls_c = inspect(c, {"ls", "--json"}).out;
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    EnvVar req("KILN_REQUIRE_SIGNED", "1");
    refused(c, unsigned_bundle, "not signed");
  }
  {
    EnvVar k("KILN_SIGNING_KEY", key);
    refused(c, flipped_bundle, "signature does not match");
    CHECK(inspect(c, {"ls", "--json"}).out == ls_c);
    RunResult im = inspect(c, {"import", unsigned_bundle.string()});
    CHECK_MESSAGE(im.exit_code == 0, describe(im));
  }
  CHECK(call(c, "nest_a", "nest_a", 1) == 333);
  // A malformed key is a usage error that does not show the key.
  {
    EnvVar k("KILN_SIGNING_KEY", "abcdef");
    RunResult r = inspect(c, {"import", signed_bundle.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("abcdef") == std::string::npos);
  }
  // A cache that requires signatures exports nothing unsigned: without the
  // key the export is refused and no file is written.
  {
    EnvVar k("KILN_SIGNING_KEY", nullptr);
    EnvVar req("KILN_REQUIRE_SIGNED", "1");
    const fs::path refused_export = tmp.path() / "refused.kiln";
    RunResult r = inspect(a, {"export", refused_export.string()});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("KILN_SIGNING_KEY is not set") != std::string::npos);
    CHECK_FALSE(fs::exists(refused_export));
  }
}

// ---------------------------------------------------------------- the cache's own files

TEST_CASE("export, image -o, library -o and import refuse the cache itself and its side files, "
          "however they are spelled, and leave it whole") {
  const std::string key = "8f1e3a5b7c9d0e2f4a6b8c0d1e3f5a7b9c1d3e5f7a9b0c2d4e6f8a0b1c3d5e7f";
  EnvVar k("KILN_SIGNING_KEY", key); // every export would otherwise succeed
  Cache a;
  precompile_ok(a, {"--library", "vis", "--target", "host", "--entry", "nest_a",
                    data("nested.ll")});
  REQUIRE(inspect(a, {"config", "require_signed", "1"}).exit_code == 0);
  const fs::path db = a.db();
  const std::string ls0 = inspect(a, {"ls", "--json"}).out;
  TempDir tmp;
  fs::create_directories(a.dir() / "sub");
  fs::create_hard_link(db, tmp.path() / "hard.db");
  fs::create_symlink(db, tmp.path() / "sym.db");
  const std::string d = a.dir().string();
  struct Dest {
    std::string path;
    std::string which; // what the message calls it
  };
  const std::vector<Dest> dests = {
      {db.string(), "is the cache"},
      {d + "/./kiln.db", "is the cache"},
      {d + "/sub/../kiln.db", "is the cache"},
      {(tmp.path() / "hard.db").string(), "is the cache"},
      {(tmp.path() / "sym.db").string(), "is the cache"},
      {db.string() + "-wal", "is the wal file of the cache"},
      {d + "/sub/../kiln.db-shm", "is the shm file of the cache"},
      {db.string() + "-journal", "is the journal file of the cache"},
  };
  auto refused = [&](const RunResult& r, const Dest& dest, const std::string& role) {
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(role + " '" + dest.path + "' " + dest.which) != std::string::npos);
  };
  for (const Dest& dest : dests) {
    CAPTURE(dest.path);
    refused(inspect(a, {"export", dest.path}), dest, "export destination");
    refused(inspect(a, {"export", dest.path, "nest_a"}), dest, "export destination");
    refused(inspect(a, {"image", "nest_a", "--target", "host", "-o", dest.path}), dest,
            "image destination");
    refused(inspect(a, {"library", "vis", "--target", "host", "-o", dest.path}), dest,
            "image destination");
    refused(inspect(a, {"import", dest.path}), dest, "import source");
  }
  // Relative to the working directory, as a user types it.
  for (std::string rel : {"kiln.db", "./kiln.db", "sub/../kiln.db", "kiln.db-wal"}) {
    CAPTURE(rel);
    RunResult r = run({inspect_bin().string(), "--cache", "kiln.db", "export", rel}, a.dir());
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("export destination '" + rel + "' is the") != std::string::npos);
  }

  // Nothing was written over the cache or beside it, and it is whole: its
  // roots, its library, its setting.
  CHECK(slurp(db).rfind("SQLite format 3", 0) == 0);
  for (const char* side : {"-wal", "-shm", "-journal"})
    if (fs::exists(db.string() + side))
      CHECK(fs::file_size(db.string() + side) <= 4u << 20); // SQLite's, not a bundle
  CHECK(fs::equivalent(tmp.path() / "hard.db", db));
  CHECK(fs::is_symlink(tmp.path() / "sym.db"));
  CHECK(inspect(a, {"ls", "--json"}).out == ls0);
  json config = inspect_json(a, {"config", "--json"});
  CHECK(config["require_signed"] == true);
  CHECK(config["require_signed_source"] == "setting");
  RunResult lib = inspect(a, {"library", "vis", "--target", "host", "--json"});
  CHECK_MESSAGE(lib.exit_code == 0, describe(lib));
  CHECK(inspect_json(a, {"verify", "--json"})["ok"] == true);
  CHECK(call(a, "nest_a", "nest_a", 1) == 333);
  // And the same commands still write anywhere else.
  const fs::path out = tmp.path() / "out.kiln";
  CHECK(inspect(a, {"export", out.string()}).exit_code == 0);
  CHECK(inspect(a, {"library", "vis", "--target", "host", "-o", (tmp.path() / "vis.so").string()})
            .exit_code == 0);
  Cache b;
  make_empty(b);
  RunResult im = inspect(b, {"import", out.string()});
  CHECK_MESSAGE(im.exit_code == 0, describe(im));
}

// ---------------------------------------------------------------- relocation

TEST_CASE("a cache file copied elsewhere under another name still loads") {
  Cache cache;
  json pre = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  precompile_ok(cache, {"--no-link", "--entry", "dia_root", data("diamond.ll")});
  TempDir elsewhere;
  fs::create_directories(elsewhere.path() / "deep" / "er");
  const fs::path moved = elsewhere.path() / "deep" / "er" / "moved-cache.sqlite";
  fs::copy_file(cache.db(), moved);

  std::string why;
  std::optional<int> v = try_call(moved, "nest_a", "nest_a", 1, &why);
  CHECK_MESSAGE(v.has_value(), "load from the copy failed: " << why);
  if (v)
    CHECK(*v == 333);
  // By closure key too, and a root whose image is linked on first load.
  v = try_call(moved, closure(pre, "nest_a"), "nest_a", 2, &why);
  CHECK_MESSAGE(v.has_value(), "load by closure key from the copy failed: " << why);
  if (v)
    CHECK(*v == 336);
  v = try_call(moved, "dia_root", "dia_root", 5, &why);
  CHECK_MESSAGE(v.has_value(), "relinking load from the copy failed: " << why);
  if (v)
    CHECK(*v == 1026);

  RunResult verify = inspect_at(moved, {"verify", "--json"});
  INFO("verify copy: " << describe(verify));
  CHECK(verify.exit_code == 0);
  RunResult ls = inspect_at(moved, {"ls", "--json"});
  REQUIRE(ls.exit_code == 0);
  CHECK(ls_names(json::parse(ls.out)) == std::set<std::string>{"nest_a", "dia_root"});
}

} // TEST_SUITE
