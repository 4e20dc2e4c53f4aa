// Unit tests for the local SQLite store (src/storage/local/store.h): creation from the
// schema baseline, refusal of older and newer schemas, round trips, idempotent
// content-addressed writes, corruption detection, refusal of foreign files, and
// concurrent writers (threads and processes); target descriptions stored once,
// dictionary-compressed blobs, a quiet cache that is one small file.
#include "storage/local/store.h"

#include "fixtures/cache.hpp"
#include "fixtures/process.hpp"
#include "fixtures/zstd_bomb.hpp"
#include "storage/bundle.h"
#include "storage/transfer.h"
#include "storage/verify.h"
#include "support/compress.h"

#include <kiln/kiln.h>

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

// A raw connection to a database file, for inspecting and damaging it.
class RawDb {
public:
  explicit RawDb(const std::string& path, bool create = false) {
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    REQUIRE(rc == SQLITE_OK);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // Runs SQL; returns the error message, empty on success.
  std::string exec(const std::string& sql) {
    char* msg = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg);
    std::string out = rc == SQLITE_OK ? "" : (msg ? msg : "error");
    if (msg)
      sqlite3_free(msg);
    return out;
  }
  void must(const std::string& sql) {
    INFO(sql);
    CHECK(exec(sql) == "");
  }
  // The first column of the first row as an integer; -1 if no row.
  int64_t scalar(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    INFO(sql);
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  std::string text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    INFO(sql);
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
    std::string v;
    if (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* p = sqlite3_column_text(s, 0);
      v = p ? reinterpret_cast<const char*>(p) : "";
    }
    sqlite3_finalize(s);
    return v;
  }

private:
  sqlite3* db_ = nullptr;
};

std::string slurp(const std::string& path) {
  auto r = read_file(path);
  REQUIRE(r);
  return *r;
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

JobRecord make_job(int i, double compile_ms = 1.5) {
  JobRecord j;
  j.key = hash128("job-" + std::to_string(i));
  j.entry = "entry_" + std::to_string(i);
  j.symbol = "__kiln_deferred_" + hash128("sym-" + std::to_string(i)).hex();
  j.target = "host";
  j.triple = "x86_64-unknown-linux-gnu";
  j.cpu = "znver4";
  j.features = "+avx2,-avx512f";
  j.options = "-O2";
  j.module_hash = hash128("module-" + std::to_string(i));
  j.toolchain = "kiln-artifact-1 llvm-22";
  j.compile_ms = compile_ms;
  j.created_at = 1700000000 + i;
  return j;
}

std::string object_bytes(int i) {
  std::string s;
  for (int k = 0; k < 4000; ++k)
    s += char('a' + (k * 7 + i) % 26);
  return "OBJ" + std::to_string(i) + s;
}

Status put_simple(Store& st, int i, double compile_ms = 1.5) {
  return st.jobs().put_job(
      make_job(i, compile_ms), {{"obj", object_bytes(i)}},
      {{"__kiln_deferred_child" + std::to_string(i), "child_" + std::to_string(i)}});
}

// What concurrent writers of jobs 0 .. distinct - 1 must leave: each job
// once, with its artifact intact.
void check_each_job_once(const std::string& path, int distinct) {
  auto st = open_store(path);
  auto jobs = st->jobs().list_jobs();
  REQUIRE(jobs);
  CHECK(int(jobs->size()) == distinct);
  std::set<Hash128> keys;
  for (const JobRecord& j : *jobs)
    keys.insert(j.key);
  CHECK(int(keys.size()) == int(jobs->size()));
  CHECK(int(keys.size()) == distinct);
  for (int i = 0; i < distinct; ++i) {
    auto art = st->jobs().get_artifact(make_job(i).key, "obj");
    REQUIRE(art);
    CHECK(*art == object_bytes(i));
  }
  RawDb raw(path);
  CHECK(raw.scalar("SELECT count(*) FROM artifacts") == distinct);
}

std::string random_bytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed;
  for (char& c : s) {
    x = x * 1664525u + 1013904223u;
    c = char(x >> 24);
  }
  return s;
}

} // namespace

TEST_CASE("Store::open creates a 0600 file in 0700 directories and migrates it") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = dir.path() + "/a/b/kiln.db";
  {
    auto st = open_store(path);
    CHECK(st->path() == path);
  }
  struct stat sb;
  REQUIRE(::stat(path.c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0600);
  REQUIRE(::stat((dir.path() + "/a").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0700);
  REQUIRE(::stat((dir.path() + "/a/b").c_str(), &sb) == 0);
  CHECK((sb.st_mode & 0777) == 0700);

  CHECK(schema_version() >= 1);
  RawDb raw(path);
  CHECK(raw.scalar("PRAGMA user_version") == schema_version());
  CHECK(raw.scalar("PRAGMA application_id") == 0x4B494C4E);
  CHECK(raw.text("SELECT value FROM meta WHERE key = 'format'") == "kiln-cache");
  CHECK(raw.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                   "('jobs', 'artifacts', 'job_refs', 'closures', 'member_sets', 'images', "
                   "'names')") == 7);
  // A closure's members are read through this view of its member set.
  CHECK(raw.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'view' AND "
                   "name = 'closure_members'") == 1);
}

TEST_CASE("Store reopens an existing cache and keeps its contents") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 1));
  }
  {
    auto st = open_store(path);
    auto has = st->jobs().has_job(make_job(1).key, {"obj"});
    REQUIRE(has);
    CHECK(*has);
    auto jobs = st->jobs().list_jobs();
    REQUIRE(jobs);
    CHECK(jobs->size() == 1);
  }
  // A second connection while the first is open works too.
  auto a = open_store(path);
  auto b = open_store(path);
  REQUIRE(put_simple(*a, 2));
  auto has = b->jobs().has_job(make_job(2).key, {"obj"});
  REQUIRE(has);
  CHECK(*has);
  RawDb raw(path);
  CHECK(raw.scalar("PRAGMA user_version") == schema_version());
}

TEST_CASE("put_job, has_job, get_job, job_refs and get_artifact round trip") {
  TempDir dir = temp_dir("kiln-cache-test");
  auto st = open_store(cache_file(dir));
  JobRecord j = make_job(7, 12.25);
  std::string obj = object_bytes(7);
  std::string empty_art;
  REQUIRE(st->jobs().put_job(j, {{"obj", obj}, {"bc", empty_art}},
                             {{"__kiln_deferred_b", "child_b"}, {"__kiln_deferred_a", "child_a"}}));

  auto has = st->jobs().has_job(j.key, {"obj"});
  REQUIRE(has);
  CHECK(*has);
  has = st->jobs().has_job(j.key, {"obj", "bc"});
  REQUIRE(has);
  CHECK(*has);
  has = st->jobs().has_job(j.key, {});
  REQUIRE(has);
  CHECK(*has);
  has = st->jobs().has_job(j.key, {"obj", "ptx"});
  REQUIRE(has);
  CHECK_FALSE(*has);
  has = st->jobs().has_job(make_job(8).key, {"obj"});
  REQUIRE(has);
  CHECK_FALSE(*has);
  has = st->jobs().has_job(make_job(8).key, {});
  REQUIRE(has);
  CHECK_FALSE(*has);

  auto got = st->jobs().get_job(j.key);
  REQUIRE(got);
  CHECK(got->key == j.key);
  CHECK(got->entry == j.entry);
  CHECK(got->symbol == j.symbol);
  CHECK(got->target == j.target);
  CHECK(got->triple == j.triple);
  CHECK(got->cpu == j.cpu);
  CHECK(got->features == j.features);
  CHECK(got->options == j.options);
  CHECK(got->module_hash == j.module_hash);
  CHECK(got->toolchain == j.toolchain);
  CHECK(got->compile_ms == doctest::Approx(12.25));
  CHECK(got->created_at == j.created_at);

  auto art = st->jobs().get_artifact(j.key, "obj");
  REQUIRE(art);
  CHECK(*art == obj);
  auto empty = st->jobs().get_artifact(j.key, "bc");
  REQUIRE(empty);
  CHECK(empty->empty());

  auto missing = st->jobs().get_artifact(j.key, "ptx");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  auto missing_job = st->jobs().get_job(make_job(8).key);
  REQUIRE_FALSE(missing_job);
  CHECK(missing_job.error().code == Code::not_found);

  auto refs = st->jobs().job_refs(j.key);
  REQUIRE(refs);
  REQUIRE(refs->size() == 2);
  CHECK((*refs)[0].symbol == "__kiln_deferred_a"); // sorted by symbol
  CHECK((*refs)[0].entry == "child_a");
  CHECK((*refs)[1].symbol == "__kiln_deferred_b");
  CHECK((*refs)[1].entry == "child_b");

  auto infos = st->jobs().artifact_infos(j.key);
  REQUIRE(infos);
  REQUIRE(infos->size() == 2);
  CHECK((*infos)[0].format == "bc");
  CHECK((*infos)[1].format == "obj");
  CHECK((*infos)[1].raw_size == int64_t(obj.size()));
  CHECK((*infos)[1].stored_size < (*infos)[1].raw_size); // compressed
}

TEST_CASE("a job put twice is stored once and keeps its first content") {
  TempDir dir = temp_dir("kiln-cache-test");
  auto st = open_store(cache_file(dir));
  REQUIRE(put_simple(*st, 3, 1.0));
  Status again = put_simple(*st, 3, 99.0);
  INFO((again ? std::string() : again.error().message));
  CHECK(again);
  // Same key with different artifact bytes: still the first row.
  JobRecord j = make_job(3, 5.0);
  CHECK(st->jobs().put_job(j, {{"obj", "other bytes"}}, {}));

  auto jobs = st->jobs().list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 1);
  auto got = st->jobs().get_job(j.key);
  REQUIRE(got);
  CHECK(got->compile_ms == doctest::Approx(1.0));
  auto art = st->jobs().get_artifact(j.key, "obj");
  REQUIRE(art);
  CHECK(*art == object_bytes(3));
  auto refs = st->jobs().job_refs(j.key);
  REQUIRE(refs);
  CHECK(refs->size() == 1);

  RawDb raw(cache_file(dir));
  CHECK(raw.scalar("SELECT count(*) FROM artifacts") == 1);
}

TEST_CASE("a damaged artifact is corrupt, never a crash") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  Hash128 key = make_job(1).key;
  std::string hex = key.hex();
  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 1));
    REQUIRE(put_simple(*st, 2));
  }

  // Job 1's artifact row, rewritten behind the store's back.
  auto damage = [&](const std::string& set) {
    RawDb raw(path);
    raw.must("UPDATE artifacts SET " + set + " WHERE job_key = x'" + hex + "'");
  };
  SUBCASE("checksum mismatch") { damage("checksum = checksum + 1"); }
  SUBCASE("blob replaced by garbage") {
    damage("data = x'deadbeef00112233445566778899aabbccddeeff'");
  }
  SUBCASE("blob replaced by random bytes of the same length") {
    damage("data = randomblob(length(data))");
  }
  SUBCASE("blob is empty") { damage("data = x''"); }
  SUBCASE("blob truncated") { damage("data = substr(data, 1, length(data) / 2)"); }
  SUBCASE("raw size wrong") { damage("raw_size = raw_size + 1"); }
  SUBCASE("raw size negative") { damage("raw_size = -5"); }
  SUBCASE("raw size huge") { damage("raw_size = 9000000000000000000"); }

  auto st = open_store(path);
  auto art = st->jobs().get_artifact(key, "obj");
  REQUIRE_FALSE(art);
  CHECK(art.error().code == Code::corrupt);
  CHECK(art.error().message.find(hex) != std::string::npos);
  // The undamaged neighbour still reads back.
  auto other = st->jobs().get_artifact(make_job(2).key, "obj");
  REQUIRE(other);
  CHECK(*other == object_bytes(2));
}

TEST_CASE("a file that is not SQLite is refused as corrupt and left unchanged") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  std::string bytes;
  SUBCASE("random bytes") { bytes = random_bytes(8192, 42); }
  SUBCASE("text") { bytes = "this is not a database, just some text that happens to be long. " +
                            std::string(300, 'z'); }
  spit(path, bytes);
  auto st = Store::open(path);
  REQUIRE_FALSE(st);
  CHECK(st.error().code == Code::corrupt);
  CHECK(st.error().message.find(path) != std::string::npos);
  CHECK(slurp(path) == bytes);
  struct stat sb;
  CHECK(::stat((path + "-wal").c_str(), &sb) != 0);
}

TEST_CASE("a foreign SQLite database is refused and left unchanged") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = dir.path() + "/other.db";
  {
    RawDb raw(path, /*create=*/true);
    raw.must("CREATE TABLE people(name TEXT, age INTEGER)");
    raw.must("INSERT INTO people VALUES ('ada', 36), ('alan', 41)");
  }
  std::string before = slurp(path);
  auto st = Store::open(path);
  REQUIRE_FALSE(st);
  CHECK(st.error().code == Code::corrupt);
  CHECK(st.error().message.find(path) != std::string::npos);
  CHECK(slurp(path) == before);
  RawDb raw(path);
  CHECK(raw.scalar("SELECT count(*) FROM people") == 2);
  CHECK(raw.scalar("PRAGMA user_version") == 0);
  CHECK(raw.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'jobs'") == 0);
}

TEST_CASE("a cache with a newer schema is refused, naming both versions") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 1));
  }
  {
    RawDb raw(path);
    raw.must("PRAGMA user_version = 999");
    raw.must("PRAGMA application_id = " + std::to_string(0x4B494C4E));
  }
  std::string before = slurp(path);
  auto st = Store::open(path);
  REQUIRE_FALSE(st);
  CHECK(st.error().code != Code::ok);
  const std::string& msg = st.error().message;
  INFO(msg);
  CHECK(msg.find("999") != std::string::npos);
  CHECK(msg.find(std::to_string(schema_version())) != std::string::npos);
  CHECK(slurp(path) == before);
  RawDb raw(path);
  CHECK(raw.scalar("PRAGMA user_version") == 999);
  CHECK(raw.scalar("SELECT count(*) FROM jobs") == 1);
}

TEST_CASE("another application's SQLite file is refused unchanged; kiln.triton's cache is named "
          "with where its commands are") {
  TempDir dir = temp_dir("kiln-cache-test");
  // kiln.triton's tables (python/kiln/triton.py), and a file of anything else.
  const std::string triton = dir.path() + "/triton.db";
  const std::string other = dir.path() + "/other.db";
  {
    RawDb raw(triton, true);
    raw.must("CREATE TABLE blobs (sha256 BLOB PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID");
    raw.must("CREATE TABLE files (key TEXT, name TEXT, sha256 BLOB)");
    raw.must("CREATE TABLE groups (key TEXT, name TEXT, member TEXT)");
    raw.must("CREATE TABLE recency (key TEXT, name TEXT, used INTEGER)");
    RawDb raw_other(other, true);
    raw_other.must("CREATE TABLE groups (key TEXT)");
  }
  for (const std::string& path : {triton, other}) {
    CAPTURE(path);
    std::string before = slurp(path);
    for (bool read_only : {false, true}) {
      CAPTURE(read_only);
      auto st = read_only ? Store::open(path, OpenMode::read_only) : Store::open(path);
      REQUIRE_FALSE(st);
      CHECK(st.error().code == Code::corrupt);
      const std::string& msg = st.error().message;
      INFO(msg);
      CHECK(msg.find("not a Kiln cache") != std::string::npos);
      bool named = msg.find("Triton cache kept by kiln.triton") != std::string::npos &&
                   msg.find("python -m kiln.triton --cache " + path) != std::string::npos;
      CHECK(named == (path == triton));
      CHECK(slurp(path) == before);
    }
  }
}

TEST_CASE("a cache of a schema before the baseline is refused unchanged, saying to remove it") {
  // Schemas 1 to 12 came before the first release and are not converted:
  // the open names the version and what to do, and writes nothing (not
  // even the journal mode or the reserve beside it).
  for (int version : {1, 5, 12}) {
    CAPTURE(version);
    TempDir dir = temp_dir("kiln-cache-test");
    std::string path = cache_file(dir);
    {
      auto st = open_store(path);
      REQUIRE(put_simple(*st, 1));
    }
    {
      RawDb raw(path);
      raw.must("PRAGMA journal_mode = DELETE");
      raw.must("PRAGMA user_version = " + std::to_string(version));
    }
    std::string before = slurp(path);
    for (bool read_only : {false, true}) {
      CAPTURE(read_only);
      auto st = read_only ? Store::open(path, OpenMode::read_only) : Store::open(path);
      REQUIRE_FALSE(st);
      const std::string& msg = st.error().message;
      INFO(msg);
      CHECK(msg.find("schema version " + std::to_string(version) + ",") != std::string::npos);
      CHECK(msg.find("remove it") != std::string::npos);
      CHECK(msg.find(path) != std::string::npos);
      CHECK(slurp(path) == before);
    }
    CHECK(::access((path + "-wal").c_str(), F_OK) != 0);
    RawDb raw(path);
    CHECK(raw.scalar("PRAGMA user_version") == version);
    CHECK(raw.scalar("SELECT count(*) FROM jobs") == 1);
  }
}

TEST_CASE("closures and names: put, get, resolve, retarget to the latest") {
  TempDir dir = temp_dir("kiln-cache-test");
  auto st = open_store(cache_file(dir));
  for (int i = 1; i <= 4; ++i)
    REQUIRE(put_simple(*st, i));
  Hash128 j1 = make_job(1).key, j2 = make_job(2).key, j3 = make_job(3).key,
          j4 = make_job(4).key;

  ClosureRecord c1;
  c1.key = hash128("closure-1");
  c1.root_job = j1;
  c1.target = "host";
  // Given out of order: read back sorted by symbol.
  c1.members = {{"sym_b", j2, {}}, {"sym_a", j1, {}}};
  REQUIRE(st->closures().put_closure(c1, {{"root", "host", c1.key}}));

  auto got = st->closures().get_closure(c1.key);
  REQUIRE(got);
  CHECK(got->key == c1.key);
  CHECK(got->root_job == j1);
  CHECK(got->target == "host");
  REQUIRE(got->members.size() == 2);
  CHECK(got->members[0].symbol == "sym_a");
  CHECK(got->members[0].job == j1);
  CHECK(got->members[0].entry == "entry_1");
  CHECK(got->members[1].symbol == "sym_b");
  CHECK(got->members[1].job == j2);
  CHECK(got->members[1].entry == "entry_2");

  auto r = st->names().resolve_name("root", "host");
  REQUIRE(r);
  CHECK(*r == c1.key);

  // Idempotent.
  REQUIRE(st->closures().put_closure(c1, {{"root", "host", c1.key}}));

  // A later precompile of the same name points it at the new closure.
  ClosureRecord c2;
  c2.key = hash128("closure-2");
  c2.root_job = j3;
  c2.target = "host";
  c2.members = {{"sym_c", j3, {}}, {"sym_d", j4, {}}};
  REQUIRE(st->closures().put_closure(c2, {{"root", "host", c2.key}, {"root", "other", c2.key}}));
  r = st->names().resolve_name("root", "host");
  REQUIRE(r);
  CHECK(*r == c2.key);
  r = st->names().resolve_name("root", "other");
  REQUIRE(r);
  CHECK(*r == c2.key);
  // The old closure is still there.
  CHECK(st->closures().get_closure(c1.key));

  REQUIRE(st->closures().put_closure(c1, {{"another", "host", c1.key}}));

  auto nf = st->names().names_for("root");
  REQUIRE(nf);
  REQUIRE(nf->size() == 2);
  CHECK((*nf)[0].name == "root");
  CHECK((*nf)[0].target == "host");
  CHECK((*nf)[0].closure == c2.key);
  CHECK((*nf)[1].target == "other");
  auto none = st->names().names_for("nobody");
  REQUIRE(none);
  CHECK(none->empty());

  auto all = st->names().list_names();
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name == "another");
  CHECK((*all)[0].closure == c1.key);
  CHECK((*all)[1].name == "root");
  CHECK((*all)[2].name == "root");

  auto unknown = st->names().resolve_name("nobody", "host");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);
  CHECK(unknown.error().message.find("nobody") != std::string::npos);
  auto wrong_target = st->names().resolve_name("root", "sm_90");
  REQUIRE_FALSE(wrong_target);
  CHECK(wrong_target.error().code == Code::not_found);
  auto no_closure = st->closures().get_closure(hash128("closure-none"));
  REQUIRE_FALSE(no_closure);
  CHECK(no_closure.error().code == Code::not_found);
}

TEST_CASE("a closure naming a job that is not stored is refused and leaves nothing") {
  TempDir dir = temp_dir("kiln-cache-test");
  auto st = open_store(cache_file(dir));
  REQUIRE(put_simple(*st, 1));
  ClosureRecord c;
  c.key = hash128("closure-bad");
  c.root_job = make_job(1).key;
  c.target = "host";
  c.members = {{"sym_a", make_job(1).key, {}}, {"sym_x", hash128("no such job"), {}}};
  Status s = st->closures().put_closure(c, {{"bad", "host", c.key}});
  CHECK_FALSE(s);
  CHECK_FALSE(st->closures().get_closure(c.key));
  CHECK_FALSE(st->names().resolve_name("bad", "host"));
  // The store still works afterwards (the failed transaction was rolled back).
  CHECK(put_simple(*st, 2));
}

TEST_CASE("a name of key form is never recorded, and one already in a cache answers no lookup") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  auto st = open_store(path);
  for (int i = 1; i <= 2; ++i)
    REQUIRE(put_simple(*st, i));
  ClosureRecord real, impostor;
  real.key = hash128("the real closure");
  real.root_job = make_job(1).key;
  real.target = "host";
  real.members = {{"sym_a", make_job(1).key, {}}};
  impostor.key = hash128("the impostor");
  impostor.root_job = make_job(2).key;
  impostor.target = "host";
  impostor.members = {{"sym_b", make_job(2).key, {}}};
  std::string key = real.key.hex();
  std::string upper = key;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);

  // Each write that records a name refuses one spelling a key, whole.
  Status put = st->closures().put_closure(impostor, {{key, "host", impostor.key}});
  REQUIRE_FALSE(put);
  CHECK(put.error().code == Code::invalid_argument);
  CHECK_MESSAGE(put.error().message.find("root name '" + key + "' has the form of a closure key") !=
                    std::string::npos,
                put.error().message);
  CHECK(st->closures().get_closure(impostor.key).error().code == Code::not_found);
  REQUIRE(st->closures().put_closure(real, {{"real", "host", real.key}}));
  REQUIRE(st->closures().put_closure(impostor, {{"impostor", "host", impostor.key}}));
  auto pointed = st->names().point_name({upper, "host", impostor.key}, "attack.ll");
  REQUIRE_FALSE(pointed);
  CHECK(pointed.error().code == Code::invalid_argument);
  Status lib = st->images().put_library(impostor, {key, "host", impostor.key, {"impostor"}});
  REQUIRE_FALSE(lib);
  CHECK(lib.error().code == Code::invalid_argument);
  CHECK(lib.error().message.find("library name '" + key + "'") != std::string::npos);
  REQUIRE(st->images().put_library(impostor, {"lib", "host", impostor.key, {"impostor"}}));
  RawDb raw(path);
  CHECK(raw.scalar("SELECT count(*) FROM names") == 2);

  // Name rows of key form planted behind the store's back (an older cache,
  // a crafted file): a key-form lookup is the key's own closure, in either
  // case, or nothing; never the row.
  std::string stray = hash128("no closure has this key").hex();
  for (const std::string& name : {key, upper, stray})
    raw.must("INSERT INTO names(name, target, closure_key, updated_at) VALUES ('" + name +
             "', 'host', x'" + impostor.key.hex() + "', 0)");
  raw.must("INSERT INTO libraries(name, target, closure_key, updated_at) VALUES ('" + key +
           "', 'host', x'" + impostor.key.hex() + "', 0)");
  for (const std::string& lookup : {key, upper}) {
    CAPTURE(lookup);
    auto read = st->closures().read_root(lookup, "host", "");
    REQUIRE(read);
    CHECK(read->closure.key == real.key);
    CHECK(st->names().resolve_name(lookup, "host").error().code == Code::not_found);
    auto names = st->names().names_for(lookup);
    REQUIRE(names);
    CHECK(names->empty());
    CHECK(st->images().get_library(lookup, "host").error().code == Code::not_found);
    auto libs = st->images().list_libraries(lookup);
    REQUIRE(libs);
    CHECK(libs->empty());
  }
  auto missing = st->closures().read_root(stray, "host", "");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK(missing.error().message.find(stray) != std::string::npos);
  // Ordinary names still resolve by name only.
  auto by_name = st->closures().read_root("impostor", "host", "");
  REQUIRE(by_name);
  CHECK(by_name->closure.key == impostor.key);
}

TEST_CASE("images round trip; a damaged image is corrupt") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  ImageKey ik{hash128("closure-1"), "x86_64-linux", "lld 22.1.0"};
  std::string image = random_bytes(20000, 7) + std::string(20000, '\0');
  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 1));
    ClosureRecord c{ik.closure, make_job(1).key, "host", {{"sym_a", make_job(1).key, {}}}};
    REQUIRE(st->closures().put_closure(c, {{"root", "host", c.key}}));

    auto absent = st->images().get_image(ik);
    REQUIRE_FALSE(absent);
    CHECK(absent.error().code == Code::not_found);

    REQUIRE(st->images().put_image(ik, "so", image));
    auto got = st->images().get_image(ik);
    REQUIRE(got);
    CHECK(*got == image);
    // Idempotent, and keyed by arch and linker too.
    CHECK(st->images().put_image(ik, "so", image));
    CHECK_FALSE(st->images().get_image({ik.closure, "aarch64-linux", ik.linker}));
    CHECK_FALSE(st->images().get_image({ik.closure, ik.arch, "lld 23"}));
  }

  SUBCASE("checksum mismatch") {
    RawDb raw(path);
    raw.must("UPDATE images SET checksum = checksum - 1");
  }
  SUBCASE("garbage blob") {
    RawDb raw(path);
    raw.must("UPDATE images SET data = x'00ff00ff00ff00ff'");
  }
  SUBCASE("random blob of the same length") {
    RawDb raw(path);
    raw.must("UPDATE images SET data = randomblob(length(data))");
  }
  SUBCASE("negative size") {
    RawDb raw(path);
    raw.must("UPDATE images SET raw_size = -1");
  }
  auto st = open_store(path);
  auto got = st->images().get_image(ik);
  REQUIRE_FALSE(got);
  CHECK(got.error().code == Code::corrupt);
}

TEST_CASE("eight threads with their own Store write overlapping jobs into one file") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  { auto st = open_store(path); }

  constexpr int kThreads = 8, kPerThread = 24, kStride = 6; // neighbours overlap by 18
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      auto st = Store::open(path);
      ready.fetch_add(1);
      while (ready.load() < kThreads)
        std::this_thread::yield();
      if (!st) {
        failures.fetch_add(1);
        errors[t] = st.error().message;
        return;
      }
      for (int i = t * kStride; i < t * kStride + kPerThread; ++i) {
        Status s = put_simple(**st, i);
        if (!s) {
          failures.fetch_add(1);
          errors[t] = s.error().message;
        }
      }
    });
  for (std::thread& th : pool)
    th.join();
  for (const std::string& e : errors)
    CHECK(e == "");
  CHECK(failures.load() == 0);

  int distinct = (kThreads - 1) * kStride + kPerThread;
  check_each_job_once(path, distinct);
  RawDb raw(path);
  CHECK(raw.scalar("SELECT count(*) FROM job_refs") == distinct);
}

TEST_CASE("eight threads opening a fresh cache file at once all succeed") {
  // Each opener sees an empty file and races to migrate it; none may
  // mistake a half-seen migration for a foreign database.
  for (int round = 0; round < 15; ++round) {
    TempDir dir = temp_dir("kiln-cache-test");
    std::string path = cache_file(dir);
    constexpr int kThreads = 8;
    std::atomic<int> ready{0};
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kThreads)
          std::this_thread::yield();
        auto st = Store::open(path);
        if (!st) {
          errors[t] = st.error().message;
          return;
        }
        Status s = put_simple(**st, t % 3);
        if (!s)
          errors[t] = s.error().message;
      });
    for (std::thread& th : pool)
      th.join();
    INFO("round " << round);
    for (const std::string& e : errors)
      CHECK(e == "");
    auto st = open_store(path);
    auto jobs = st->jobs().list_jobs();
    REQUIRE(jobs);
    CHECK(jobs->size() == 3);
  }
}

TEST_CASE("four forked processes write overlapping jobs into one file") {
  TempDir dir = temp_dir("kiln-cache-test");
  std::string path = cache_file(dir);
  { auto st = open_store(path); }

  constexpr int kChildren = 4, kPerChild = 30, kStride = 10;
  std::vector<pid_t> kids;
  for (int c = 0; c < kChildren; ++c) {
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: no doctest assertions here; report through the exit status.
      int rc = 0;
      auto st = Store::open(path);
      if (!st) {
        std::fprintf(stderr, "child %d: %s\n", c, st.error().message.c_str());
        ::_exit(10);
      }
      for (int i = c * kStride; i < c * kStride + kPerChild; ++i) {
        Status s = put_simple(**st, i);
        if (!s) {
          std::fprintf(stderr, "child %d: %s\n", c, s.error().message.c_str());
          rc = 11;
        }
      }
      st->reset();
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  int distinct = (kChildren - 1) * kStride + kPerChild;
  check_each_job_once(path, distinct);
}

// --- schema 5 -----------------------------------------------------------------

namespace {

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

int64_t file_size(const std::string& path) {
  struct stat sb;
  REQUIRE(::stat(path.c_str(), &sb) == 0);
  return int64_t(sb.st_size);
}

// Runs `sql` on `db` with the values `bind` binds; REQUIREs that it is done.
void run_bound(sqlite3* db, const char* sql, const std::function<void(sqlite3_stmt*)>& bind) {
  sqlite3_stmt* s = nullptr;
  INFO(sql << ": " << sqlite3_errmsg(db));
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK);
  bind(s);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  INFO(sqlite3_errmsg(db));
  REQUIRE(rc == SQLITE_DONE);
}

void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
}
void bind_blob(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_blob(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
}

// Everything a cache holds, read through the store.
struct Contents {
  std::vector<JobRecord> jobs;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> artifacts; // by job
  std::map<std::string, std::vector<JobRef>> refs;
  std::vector<ClosureRecord> closures;
  std::vector<ImageRecord> images;
  std::vector<NameRecord> names;
  std::map<std::string, std::string> units;
};

Contents contents_of(Store& st) {
  Contents c;
  auto jobs = st.jobs().list_jobs();
  REQUIRE(jobs);
  c.jobs = jobs.take();
  for (const JobRecord& j : c.jobs) {
    auto infos = st.jobs().artifact_infos(j.key);
    REQUIRE(infos);
    for (const ArtifactInfo& i : *infos) {
      auto bytes = st.jobs().get_artifact(j.key, i.format);
      INFO((bytes ? std::string() : bytes.error().message));
      REQUIRE(bytes);
      c.artifacts[j.key.hex()].emplace_back(i.format, bytes.take());
    }
    auto refs = st.jobs().job_refs(j.key);
    REQUIRE(refs);
    c.refs[j.key.hex()] = refs.take();
  }
  auto closures = st.closures().list_closures();
  REQUIRE(closures);
  c.closures = closures.take();
  for (const ClosureRecord& cl : c.closures) {
    auto images = st.images().images_of(cl.key);
    REQUIRE(images);
    for (ImageRecord& i : *images)
      c.images.push_back(std::move(i));
  }
  auto names = st.names().list_names();
  REQUIRE(names);
  c.names = names.take();
  for (const NameRecord& n : c.names) {
    auto unit = st.names().name_unit(n.name, n.target);
    REQUIRE(unit);
    c.units[n.name + "\t" + n.target] = unit.take();
  }
  return c;
}

void check_same(const Contents& a, const Contents& b) {
  REQUIRE(a.jobs.size() == b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    const JobRecord &x = a.jobs[i], &y = b.jobs[i];
    CAPTURE(x.key.hex());
    CHECK(x.key == y.key);
    CHECK(x.entry == y.entry);
    CHECK(x.symbol == y.symbol);
    CHECK(x.target == y.target);
    CHECK(x.triple == y.triple);
    CHECK(x.cpu == y.cpu);
    CHECK(x.features == y.features);
    CHECK(x.options == y.options);
    CHECK(x.module_hash == y.module_hash);
    CHECK(x.toolchain == y.toolchain);
    CHECK(x.compile_ms == y.compile_ms);
    CHECK(x.created_at == y.created_at);
  }
  CHECK(a.artifacts == b.artifacts);
  REQUIRE(a.refs.size() == b.refs.size());
  for (const auto& [k, refs] : a.refs) {
    REQUIRE(b.refs.count(k));
    REQUIRE(refs.size() == b.refs.at(k).size());
    for (size_t i = 0; i < refs.size(); ++i) {
      CHECK(refs[i].symbol == b.refs.at(k)[i].symbol);
      CHECK(refs[i].entry == b.refs.at(k)[i].entry);
    }
  }
  REQUIRE(a.closures.size() == b.closures.size());
  for (size_t i = 0; i < a.closures.size(); ++i) {
    CHECK(a.closures[i].key == b.closures[i].key);
    CHECK(a.closures[i].root_job == b.closures[i].root_job);
    CHECK(a.closures[i].target == b.closures[i].target);
    REQUIRE(a.closures[i].members.size() == b.closures[i].members.size());
    for (size_t m = 0; m < a.closures[i].members.size(); ++m) {
      CHECK(a.closures[i].members[m].symbol == b.closures[i].members[m].symbol);
      CHECK(a.closures[i].members[m].job == b.closures[i].members[m].job);
      CHECK(a.closures[i].members[m].entry == b.closures[i].members[m].entry);
    }
  }
  REQUIRE(a.images.size() == b.images.size());
  for (size_t i = 0; i < a.images.size(); ++i) {
    CHECK(a.images[i].key.closure == b.images[i].key.closure);
    CHECK(a.images[i].key.arch == b.images[i].key.arch);
    CHECK(a.images[i].key.linker == b.images[i].key.linker);
    CHECK(a.images[i].format == b.images[i].format);
    CHECK(a.images[i].bytes == b.images[i].bytes);
  }
  REQUIRE(a.names.size() == b.names.size());
  for (size_t i = 0; i < a.names.size(); ++i) {
    CHECK(a.names[i].name == b.names[i].name);
    CHECK(a.names[i].target == b.names[i].target);
    CHECK(a.names[i].closure == b.names[i].closure);
  }
  CHECK(a.units == b.units);
}

// A unit of `n` small host functions u0 .. u<n-1>, each a root.
std::string small_functions(int n) {
  std::string ir;
  for (int i = 0; i < n; ++i)
    ir += "define i64 @u" + std::to_string(i) + "(i64 %x) {\n  %a = mul i64 %x, " +
          std::to_string(i + 1) + "\n  %b = add i64 %a, " + std::to_string(i) +
          "\n  ret i64 %b\n}\n";
  return ir;
}

CompileReport precompile_small(int n, const std::string& path, unsigned jobs = 2) {
  CompileRequest req;
  req.inputs = {SourceInput::memory("small.ll", small_functions(n))};
  req.remote = "off";
  req.jobs = jobs;
  return precompile(req, path);
}

// Blobs alike as compiled code is: one body, a few bytes that differ.
std::string alike_blob(int i) {
  static const std::string body = random_bytes(3000, 7);
  std::string s = body;
  for (int k = 0; k < 8; ++k)
    s[size_t(i * 131 + k * 373) % s.size()] = char(i + k);
  return s + "blob " + std::to_string(i);
}

Status put_alike(Store& st, int i) {
  return st.jobs().put_job(consistent_job("e" + std::to_string(i)), {{"obj", alike_blob(i)}}, {});
}

} // namespace

// --- schema 6 -----------------------------------------------------------------

namespace {

CompileReport compile_ok(const CompileRequest& req, const std::string& path) {
  auto r = compile(req, path);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  REQUIRE(r->ok());
  return r.take();
}

} // namespace

// --- schema 8 -----------------------------------------------------------------

namespace {

// nested.ll's deferred chain (nest_a → nest_b → nest_c: sets of 3 and 2
// members, and nest_c a lone root) and a library `library` of its last two
// roots, precompiled into a new cache.
TestCache chain_and_library(const std::string& prefix, const std::string& library) {
  TestCache c = empty_cache(prefix);
  compile_ok(data_request("nested.ll", {"nest_a", "nest_b", "nest_c"}), c.path());
  CompileRequest lib = data_request("nested.ll", {"nest_b", "nest_c"});
  lib.library = library;
  compile_ok(lib, c.path());
  return c;
}

} // namespace

TEST_CASE("an image whose arch and linker are missing is reported by verify and never found") {
  TestCache c = chain_and_library("kiln-links", "nest lib");
  c.open();
  auto closures = c.store->closures().list_closures();
  REQUIRE(closures);
  REQUIRE(!closures->empty());
  auto images = c.store->images().images_of(closures->front().key);
  REQUIRE(images);
  REQUIRE(!images->empty());
  const ImageKey key = images->front().key;
  c.store.reset();
  {
    RawDb raw(c.path());
    raw.must("PRAGMA foreign_keys = OFF");
    raw.must("DELETE FROM image_links");
  }
  c.open();
  auto problems = c.store->verify();
  REQUIRE(problems);
  bool reported = false;
  for (const Problem& p : *problems)
    reported |= p.message.find("arch and linker missing (image_links)") != std::string::npos;
  CHECK(reported);
  auto got = c.store->images().get_image(key);
  REQUIRE(!got);
  CHECK(got.error().code == Code::not_found);
  // A new link never takes the id the orphaned rows name, which would give
  // them its arch and linker: the new image is stored beside them, and found.
  const ImageKey other{key.closure, "sm_90", key.linker};
  REQUIRE(c.store->images().put_image(other, "cubin", "not this closure's host image"));
  CHECK(!c.store->images().get_image(key));
  REQUIRE(c.store->images().put_image(key, "so", images->front().bytes));
  auto again = c.store->images().get_image(key);
  REQUIRE(again);
  CHECK(*again == images->front().bytes);
  c.store.reset();
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM images WHERE link NOT IN (SELECT id FROM image_links)") >
          0);
  }
  // Compaction leaves such an image as it is and compresses the rest of its
  // format: inserted again, it would fail its foreign key, and with it
  // every compaction. One orphan "bin" image, then enough others for a
  // dictionary.
  c.open();
  const ImageKey orphan{key.closure, key.arch, "orphan linker"};
  REQUIRE(c.store->images().put_image(orphan, "bin", alike_blob(0)));
  c.store.reset();
  {
    RawDb raw(c.path());
    raw.must("PRAGMA foreign_keys = OFF");
    raw.must("DELETE FROM image_links WHERE linker = 'orphan linker'");
  }
  c.open();
  for (int i = 1; i <= kMinDictionarySamples; ++i)
    REQUIRE(c.store->images().put_image({key.closure, key.arch, "linker " + std::to_string(i)},
                                        "bin", alike_blob(i)));
  c.open(); // the writer's close compacts
  RawDb raw(c.path());
  CHECK(raw.scalar("SELECT count(*) FROM dictionaries WHERE kind = 'image bin'") == 1);
  CHECK(raw.scalar("SELECT count(*) FROM images WHERE format = 'bin' AND dict_id IS NULL") == 1);
  CHECK(raw.scalar("SELECT count(*) FROM images WHERE format = 'bin' AND dict_id IS NULL AND link "
                   "NOT IN (SELECT id FROM image_links)") == 1);
}

TEST_CASE("schema 5: an empty cache is one file of at most 32 kB; the last writer to close "
          "leaves no -wal or -shm") {
  TempDir dir = temp_dir("kiln-quiet");
  std::string path = cache_file(dir);
  auto one_file = [&] { return !exists(path + "-wal") && !exists(path + "-shm"); };
  { auto st = open_store(path); }
  CHECK(one_file());
  CHECK(file_size(path) <= 32 * 1024); // the benchmark's target
  {
    RawDb raw(path);
    CHECK(raw.scalar("PRAGMA page_size") == 1024);
    CHECK(raw.scalar("PRAGMA auto_vacuum") == 2); // incremental
    CHECK(raw.scalar("PRAGMA freelist_count") == 0);
  }
  // A loader's first open creates the cache, so it too leaves one file.
  TempDir dir2 = temp_dir("kiln-quiet");
  {
    auto st = open_store(cache_file(dir2));
    st->defer_checkpoint();
  }
  CHECK(!exists(cache_file(dir2) + "-wal"));
  CHECK(file_size(cache_file(dir2)) <= 32 * 1024);

  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 1));
  }
  CHECK(one_file());
  // A loader that writes leaves its frames for the next writer: no sync.
  {
    auto st = open_store(path);
    st->defer_checkpoint();
    Counters c;
    c.loads = 1;
    REQUIRE(st->upkeep().add_counters(c));
  }
  REQUIRE(exists(path + "-wal"));
  CHECK(file_size(path + "-wal") > 0);
  // So does one that wrote nothing while such frames wait.
  {
    auto st = open_store(path);
    st->defer_checkpoint();
    CHECK(st->jobs().get_job(make_job(1).key));
  }
  CHECK(exists(path + "-wal"));
  // Any other connection, when it is the last, checkpoints and cleans up.
  {
    auto st = open_store(path);
    CHECK(st->jobs().get_job(make_job(1).key));
  }
  CHECK(one_file());
  CHECK(stats_ok(*open_store(path)).counters.loads == 1);
  CHECK(one_file());
  // A loader that wrote nothing on a quiet cache leaves it quiet.
  {
    auto st = open_store(path);
    st->defer_checkpoint();
    CHECK(st->jobs().get_job(make_job(1).key));
  }
  CHECK(one_file());
  // A writer that is not the last to close leaves the WAL to the last.
  auto reader = open_store(path);
  {
    auto writer = open_store(path);
    REQUIRE(put_simple(*writer, 2));
  }
  CHECK(exists(path + "-wal"));
  reader.reset();
  CHECK(one_file());
  {
    RawDb raw(path);
    CHECK(raw.scalar("SELECT count(*) FROM jobs") == 2);
  }
  // A cache other users may read keeps its side files for their read-only
  // opens, the WAL emptied.
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  {
    auto st = open_store(path);
    REQUIRE(put_simple(*st, 3));
  }
  REQUIRE(exists(path + "-wal"));
  CHECK(file_size(path + "-wal") == 0);
  CHECK(exists(path + "-shm"));
  auto ro = Store::open(path, OpenMode::read_only);
  REQUIRE(ro);
  CHECK(*(*ro)->jobs().get_artifact(make_job(3).key, "obj") == object_bytes(3));
}

TEST_CASE("dictionaries: trained when a writer closes having stored enough blobs of a kind "
          "itself; new blobs use it; every reader gets the raw bytes") {
  TestCache c = open_cache("kiln-dict");
  int n = kMinDictionarySamples;
  for (int i = 0; i < n - 1; ++i)
    REQUIRE(put_alike(*c.store, i));
  c.open();
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM dictionaries") == 0);
    CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == n - 1);
  }
  // The writer that stores the kind's 32nd blob alone does not train: a
  // small request never pays for the dictionary at its close.
  REQUIRE(put_alike(*c.store, n - 1));
  c.open();
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM dictionaries") == 0);
    CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == n);
  }
  // Nor does a precompile's own size-limit gc (no vacuum).
  {
    GcOptions limit;
    limit.max_size = int64_t(1) << 40;
    limit.vacuum = false;
    REQUIRE(c.store->upkeep().gc(limit));
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM dictionaries") == 0);
  }
  // A writer that stores the kind's blobs itself, n of them, trains at its
  // close (a new file, the same blobs).
  c.store.reset();
  for (const char* side : {"", "-wal", "-shm"})
    ::unlink((c.path() + side).c_str());
  c.open();
  for (int i = 0; i < n; ++i)
    REQUIRE(put_alike(*c.store, i));
  c.open();
  int64_t plain = 0;
  for (int i = 0; i < n; ++i)
    plain += int64_t(zstd_compress(alike_blob(i)).size());
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM dictionaries") == 1);
    CHECK(raw.text("SELECT kind FROM dictionaries") == "artifact obj");
    CHECK(raw.scalar("SELECT samples FROM dictionaries") == n);
    CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == 0);
    int64_t stored = raw.scalar("SELECT sum(length(data)) FROM artifacts");
    int64_t dict = raw.scalar("SELECT length(data) FROM dictionaries");
    INFO("plain " << plain << ", with the dictionary " << stored << " + " << dict);
    CHECK(stored + dict < plain / 4);
  }
  for (int i = 0; i < n; ++i)
    CHECK(*c.store->jobs().get_artifact(consistent_job("e" + std::to_string(i)).key, "obj") ==
          alike_blob(i));
  // A new blob is compressed with the dictionary as it is stored.
  REQUIRE(put_alike(*c.store, 1000));
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == 0);
  }
  CHECK(*c.store->jobs().get_artifact(consistent_job("e1000").key, "obj") == alike_blob(1000));
  // Stats count the dictionary among the stored bytes.
  Stats st = stats_ok(*c.store);
  RawDb raw(c.path());
  CHECK(st.stored_bytes == raw.scalar("SELECT sum(length(data)) FROM artifacts") +
                               raw.scalar("SELECT length(data) FROM dictionaries"));
  auto rep = verify_cache(*c.store);
  REQUIRE(rep);
  CHECK(rep->problems.empty());
  c.store.reset();
  // Read-only, whether through the WAL's side files or the file alone.
  for (bool side_files : {false, true}) {
    CAPTURE(side_files);
    std::unique_ptr<Store> holder;
    if (side_files) {
      holder = open_store(c.path());
      holder->defer_checkpoint();
      REQUIRE(holder->upkeep().add_counters(Counters{.loads = 1}));
    }
    auto ro = Store::open(c.path(), OpenMode::read_only);
    REQUIRE(ro);
    for (int i : {0, n - 1, 1000})
      CHECK(*(*ro)->jobs().get_artifact(consistent_job("e" + std::to_string(i)).key, "obj") ==
            alike_blob(i));
    auto ro_rep = verify_cache(**ro);
    REQUIRE(ro_rep);
    CHECK(ro_rep->problems.empty());
  }
}

TEST_CASE("dictionaries: the same blobs give the same dictionary and bytes, in any order") {
  TestCache a = open_cache("kiln-dict-a"), b = open_cache("kiln-dict-b");
  int n = kMinDictionarySamples + 8;
  for (int i = 0; i < n; ++i) {
    REQUIRE(put_alike(*a.store, i));
    REQUIRE(put_alike(*b.store, n - 1 - i));
  }
  a.store.reset();
  b.store.reset();
  auto dump = [](const std::string& path) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    std::map<std::string, std::string> out;
    for (const char* sql : {"SELECT 'dict ' || kind, data FROM dictionaries",
                            "SELECT job_key, data FROM artifacts"}) {
      sqlite3_stmt* s = nullptr;
      REQUIRE(sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK);
      while (sqlite3_step(s) == SQLITE_ROW)
        out[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] =
            std::string(static_cast<const char*>(sqlite3_column_blob(s, 1)),
                        size_t(sqlite3_column_bytes(s, 1)));
      sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return out;
  };
  auto da = dump(a.path()), db = dump(b.path());
  CHECK(da.size() == size_t(n + 1));
  CHECK(da.count("dict artifact obj"));
  CHECK(da == db);
}

TEST_CASE("dictionaries: none for too few blobs or blobs a dictionary cannot help") {
  TestCache c = open_cache("kiln-dict-none");
  int n = kMinDictionarySamples + 4;
  // Unlike blobs: each one random.
  for (int i = 0; i < n; ++i)
    REQUIRE(c.store->jobs().put_job(consistent_job("r" + std::to_string(i)),
                                    {{"ptx", random_bytes(2000, uint32_t(i + 1))}}, {}));
  c.open();
  RawDb raw(c.path());
  CHECK(raw.scalar("SELECT count(*) FROM dictionaries") == 0);
  CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == n);
  // The attempt is recorded and not repeated at every close.
  CHECK(raw.text("SELECT value FROM meta WHERE key = 'dictionary attempt: artifact ptx'") ==
        std::to_string(n));
  REQUIRE(
      c.store->jobs().put_job(consistent_job("another"), {{"ptx", random_bytes(2000, 999)}}, {}));
  c.open();
  CHECK(raw.text("SELECT value FROM meta WHERE key = 'dictionary attempt: artifact ptx'") ==
        std::to_string(n));
  CHECK(*c.store->jobs().get_artifact(consistent_job("r3").key, "ptx") == random_bytes(2000, 4));
}

TEST_CASE("dictionaries: a damaged dictionary or blob is corrupt and verify names it") {
  TestCache c = open_cache("kiln-dict-damage");
  int n = kMinDictionarySamples;
  for (int i = 0; i < n; ++i)
    REQUIRE(put_alike(*c.store, i));
  c.store.reset();
  std::string victim = consistent_job("e3").key.hex();
  SUBCASE("a blob") {
    RawDb raw(c.path());
    REQUIRE(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NOT NULL") == n);
    raw.must("UPDATE artifacts SET data = substr(data, 1, 6) || randomblob(length(data) - 6) "
             "WHERE job_key = x'" + victim + "'");
  }
  SUBCASE("the dictionary") {
    RawDb raw(c.path());
    raw.must("UPDATE dictionaries SET data = substr(data, 1, 100) || x'00' || substr(data, 102)");
  }
  c.open();
  auto art = c.store->jobs().get_artifact(consistent_job("e3").key, "obj");
  REQUIRE_FALSE(art);
  CHECK(art.error().code == Code::corrupt);
  auto rep = verify_cache(*c.store);
  REQUIRE(rep);
  std::set<std::string> kinds, keys;
  for (const Problem& p : rep->problems) {
    kinds.insert(p.kind);
    keys.insert(p.key);
  }
  CHECK(keys.count(victim));
  if (kinds.count("dictionary"))
    CHECK(rep->problems.size() == size_t(n + 1)); // it, and every blob that needs it
  else
    CHECK(rep->problems.size() == 1);
  // New blobs of the kind are still stored and read.
  REQUIRE(put_alike(*c.store, 500));
  CHECK(*c.store->jobs().get_artifact(consistent_job("e500").key, "obj") == alike_blob(500));
}

TEST_CASE("dictionaries: a real precompile's objects and images; bundles carry raw bytes that "
          "a cache without the dictionary reads") {
  TestCache c = empty_cache("kiln-dict-real");
  c.report = precompile_small(40, c.path());
  REQUIRE(c.report.roots.size() == 40);
  CHECK(!exists(c.path() + "-wal"));
  {
    RawDb raw(c.path());
    CHECK(raw.scalar("SELECT count(*) FROM dictionaries WHERE kind IN ('artifact obj', "
                     "'image so')") == 2);
    CHECK(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NULL") == 0);
    CHECK(raw.scalar("SELECT count(*) FROM images WHERE dict_id IS NULL") == 0);
    CHECK(raw.scalar("SELECT count(*) FROM targets") == 1);
  }
  c.open();
  Contents here = contents_of(*c.store);
  auto rep = verify_cache(*c.store);
  REQUIRE(rep);
  CHECK(rep->problems.empty());
  Stats st = stats_ok(*c.store);
  INFO("stored " << st.stored_bytes << " of " << st.raw_bytes << " raw");
  CHECK(st.stored_bytes * 5 < st.raw_bytes);

  std::string file = c.dir.path() + "/all.kiln";
  REQUIRE(export_bundle(*c.store, file, {}));
  auto bytes = read_file(file);
  REQUIRE(bytes);
  auto data = decode_bundle(*bytes);
  REQUIRE(data);
  REQUIRE(data->jobs.size() == 40);
  for (const BundleData::Job& j : data->jobs)
    for (const Artifact& a : j.artifacts)
      CHECK(*c.store->jobs().get_artifact(j.record.key, a.format) == a.bytes);
  TestCache other = open_cache("kiln-dict-import");
  REQUIRE(import_bundle(*other.store, file));
  Contents there = contents_of(*other.store);
  CHECK(there.artifacts == here.artifacts);
  REQUIRE(there.images.size() == here.images.size());
  for (size_t i = 0; i < here.images.size(); ++i)
    CHECK(there.images[i].bytes == here.images[i].bytes);
  auto orep = verify_cache(*other.store);
  REQUIRE(orep);
  CHECK(orep->problems.empty());
}

TEST_CASE("a stored blob whose raw_size and frame claim more than they hold is refused without "
          "allocating the claim, with or without a dictionary") {
  TestCache c = open_cache("kiln-bomb");
  int n = kMinDictionarySamples;
  for (int i = 0; i < n; ++i)
    REQUIRE(put_alike(*c.store, i));
  c.open(); // trains the artifacts' dictionary
  {
    RawDb raw(c.path());
    REQUIRE(raw.scalar("SELECT count(*) FROM artifacts WHERE dict_id IS NOT NULL") == n);
  }
  auto hex_of = [](const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
      out += digits[b >> 4];
      out += digits[b & 15];
    }
    return out;
  };
  const uint64_t gib = uint64_t(1) << 30;
  // Job 0 keeps its dictionary; job 1 is made plain.
  struct Case {
    std::string frame;
    uint64_t raw_size;
    std::string message;
  } cases[] = {
      // 1 GiB of zeros in 32 KiB: refused by the maximum before decoding.
      {kiln::test::zero_frame(gib), gib,
       "blob claims 1073741824 decoded bytes, over the " + std::to_string(max_decoded_size()) +
           "-byte maximum (KILN_MAX_DECODED_SIZE)"},
      // Within the maximum and the ratio, but only 2 MiB and 4 KiB of it
      // present: decoding holds about that much.
      {kiln::test::zero_frame(uint64_t(100) << 20, true, uint64_t(2) << 20, 4 << 10),
       uint64_t(100) << 20, "compressed blob is truncated (2101248 of 104857600 bytes decoded)"},
  };
  REQUIRE(max_decoded_size() >= (size_t(100) << 20));
  for (const Case& k : cases) {
    for (int i : {0, 1}) {
      CAPTURE(i);
      CAPTURE(k.raw_size);
      std::string key = consistent_job("e" + std::to_string(i)).key.hex();
      {
        RawDb raw(c.path());
        raw.must("UPDATE artifacts SET data = x'" + hex_of(k.frame) +
                 "', raw_size = " + std::to_string(k.raw_size) +
                 (i == 1 ? ", dict_id = NULL" : "") + " WHERE job_key = x'" + key + "'");
      }
      REQUIRE(kiln::test::reset_peak_rss());
      long before = kiln::test::rss_kib();
      auto art = c.store->jobs().get_artifact(consistent_job("e" + std::to_string(i)).key, "obj");
      long grown_kib = kiln::test::peak_rss_kib() - before;
      REQUIRE_FALSE(art);
      CHECK(art.error().code == Code::corrupt);
      CHECK(art.error().message.find(key) != std::string::npos);
      CHECK(art.error().message.find(k.message) != std::string::npos);
      INFO("grew " << grown_kib << " KiB");
      CHECK(grown_kib < 16 * 1024);
    }
  }
  // The neighbours still read back.
  CHECK(*c.store->jobs().get_artifact(consistent_job("e2").key, "obj") == alike_blob(2));
}

// SQLite's memory statistics are a process setting: Kiln turns them off
// where it starts SQLite, and leaves a program's own settings where the
// program started SQLite first (README, "Embedding Kiln").
TEST_CASE("SQLite memory statistics: off where Kiln starts SQLite and the program's own "
          "where it started SQLite first") {
  const char* name = "SQLite memory statistics: off where Kiln starts SQLite and the program's "
                     "own where it started SQLite first";
  std::string role = child_role();
  if (role.empty()) {
    check_child(run_child(name, "kiln-first"));
    check_child(run_child(name, "program-first"));
    return;
  }
  child_ran();
  if (role == "program-first") {
    REQUIRE(sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1) == SQLITE_OK);
    REQUIRE(sqlite3_initialize() == SQLITE_OK);
  }
  TempDir dir = temp_dir("kiln-cache-test");
  {
    auto store = Store::open(cache_file(dir));
    REQUIRE(store);
    CHECK((*store)->upkeep().stats());
  }
  // The program's own database, after Kiln's: counted only with statistics.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(":memory:", &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1)", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  if (role == "kiln-first")
    CHECK(sqlite3_memory_used() == 0);
  else
    CHECK(sqlite3_memory_used() > 0);
  sqlite3_close(db);
}
