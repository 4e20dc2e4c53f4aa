// Unit tests for the local SQLite store (src/storage/local/store.h): creation, migration,
// round trips, idempotent content-addressed writes, corruption detection,
// refusal of foreign files, and concurrent writers (threads and processes).
#include "storage/local/store.h"

#include "fixtures/cache.hpp"

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
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
  return st.put_job(make_job(i, compile_ms), {{"obj", object_bytes(i)}},
                    {{"__kiln_deferred_child" + std::to_string(i), "child_" + std::to_string(i)}});
}

// What concurrent writers of jobs 0 .. distinct - 1 must leave: each job
// once, with its artifact intact.
void check_each_job_once(const std::string& path, int distinct) {
  auto st = open_store(path);
  auto jobs = st->list_jobs();
  REQUIRE(jobs);
  CHECK(int(jobs->size()) == distinct);
  std::set<Hash128> keys;
  for (const JobRecord& j : *jobs)
    keys.insert(j.key);
  CHECK(int(keys.size()) == int(jobs->size()));
  CHECK(int(keys.size()) == distinct);
  for (int i = 0; i < distinct; ++i) {
    auto art = st->get_artifact(make_job(i).key, "obj");
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
                   "('jobs', 'artifacts', 'job_refs', 'closures', 'closure_members', "
                   "'images', 'names')") == 7);
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
    auto has = st->has_job(make_job(1).key, {"obj"});
    REQUIRE(has);
    CHECK(*has);
    auto jobs = st->list_jobs();
    REQUIRE(jobs);
    CHECK(jobs->size() == 1);
  }
  // A second connection while the first is open works too.
  auto a = open_store(path);
  auto b = open_store(path);
  REQUIRE(put_simple(*a, 2));
  auto has = b->has_job(make_job(2).key, {"obj"});
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
  REQUIRE(st->put_job(j, {{"obj", obj}, {"bc", empty_art}},
                      {{"__kiln_deferred_b", "child_b"}, {"__kiln_deferred_a", "child_a"}}));

  auto has = st->has_job(j.key, {"obj"});
  REQUIRE(has);
  CHECK(*has);
  has = st->has_job(j.key, {"obj", "bc"});
  REQUIRE(has);
  CHECK(*has);
  has = st->has_job(j.key, {});
  REQUIRE(has);
  CHECK(*has);
  has = st->has_job(j.key, {"obj", "ptx"});
  REQUIRE(has);
  CHECK_FALSE(*has);
  has = st->has_job(make_job(8).key, {"obj"});
  REQUIRE(has);
  CHECK_FALSE(*has);
  has = st->has_job(make_job(8).key, {});
  REQUIRE(has);
  CHECK_FALSE(*has);

  auto got = st->get_job(j.key);
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

  auto art = st->get_artifact(j.key, "obj");
  REQUIRE(art);
  CHECK(*art == obj);
  auto empty = st->get_artifact(j.key, "bc");
  REQUIRE(empty);
  CHECK(empty->empty());

  auto missing = st->get_artifact(j.key, "ptx");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  auto missing_job = st->get_job(make_job(8).key);
  REQUIRE_FALSE(missing_job);
  CHECK(missing_job.error().code == Code::not_found);

  auto refs = st->job_refs(j.key);
  REQUIRE(refs);
  REQUIRE(refs->size() == 2);
  CHECK((*refs)[0].symbol == "__kiln_deferred_a"); // sorted by symbol
  CHECK((*refs)[0].entry == "child_a");
  CHECK((*refs)[1].symbol == "__kiln_deferred_b");
  CHECK((*refs)[1].entry == "child_b");

  auto infos = st->artifact_infos(j.key);
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
  CHECK(st->put_job(j, {{"obj", "other bytes"}}, {}));

  auto jobs = st->list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 1);
  auto got = st->get_job(j.key);
  REQUIRE(got);
  CHECK(got->compile_ms == doctest::Approx(1.0));
  auto art = st->get_artifact(j.key, "obj");
  REQUIRE(art);
  CHECK(*art == object_bytes(3));
  auto refs = st->job_refs(j.key);
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
    raw.must("UPDATE artifacts SET " + set + " WHERE job_key = '" + hex + "'");
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
  auto art = st->get_artifact(key, "obj");
  REQUIRE_FALSE(art);
  CHECK(art.error().code == Code::corrupt);
  CHECK(art.error().message.find(hex) != std::string::npos);
  // The undamaged neighbour still reads back.
  auto other = st->get_artifact(make_job(2).key, "obj");
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
  REQUIRE(st->put_closure(c1, {{"root", "host", c1.key}}));

  auto got = st->get_closure(c1.key);
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

  auto r = st->resolve_name("root", "host");
  REQUIRE(r);
  CHECK(*r == c1.key);

  // Idempotent.
  REQUIRE(st->put_closure(c1, {{"root", "host", c1.key}}));

  // A later precompile of the same name points it at the new closure.
  ClosureRecord c2;
  c2.key = hash128("closure-2");
  c2.root_job = j3;
  c2.target = "host";
  c2.members = {{"sym_c", j3, {}}, {"sym_d", j4, {}}};
  REQUIRE(st->put_closure(c2, {{"root", "host", c2.key}, {"root", "other", c2.key}}));
  r = st->resolve_name("root", "host");
  REQUIRE(r);
  CHECK(*r == c2.key);
  r = st->resolve_name("root", "other");
  REQUIRE(r);
  CHECK(*r == c2.key);
  // The old closure is still there.
  CHECK(st->get_closure(c1.key));

  REQUIRE(st->put_closure(c1, {{"another", "host", c1.key}}));

  auto nf = st->names_for("root");
  REQUIRE(nf);
  REQUIRE(nf->size() == 2);
  CHECK((*nf)[0].name == "root");
  CHECK((*nf)[0].target == "host");
  CHECK((*nf)[0].closure == c2.key);
  CHECK((*nf)[1].target == "other");
  auto none = st->names_for("nobody");
  REQUIRE(none);
  CHECK(none->empty());

  auto all = st->list_names();
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name == "another");
  CHECK((*all)[0].closure == c1.key);
  CHECK((*all)[1].name == "root");
  CHECK((*all)[2].name == "root");

  auto unknown = st->resolve_name("nobody", "host");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);
  CHECK(unknown.error().message.find("nobody") != std::string::npos);
  auto wrong_target = st->resolve_name("root", "sm_90");
  REQUIRE_FALSE(wrong_target);
  CHECK(wrong_target.error().code == Code::not_found);
  auto no_closure = st->get_closure(hash128("closure-none"));
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
  Status s = st->put_closure(c, {{"bad", "host", c.key}});
  CHECK_FALSE(s);
  CHECK_FALSE(st->get_closure(c.key));
  CHECK_FALSE(st->resolve_name("bad", "host"));
  // The store still works afterwards (the failed transaction was rolled back).
  CHECK(put_simple(*st, 2));
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
    REQUIRE(st->put_closure(c, {{"root", "host", c.key}}));

    auto absent = st->get_image(ik);
    REQUIRE_FALSE(absent);
    CHECK(absent.error().code == Code::not_found);

    REQUIRE(st->put_image(ik, "so", image));
    auto got = st->get_image(ik);
    REQUIRE(got);
    CHECK(*got == image);
    // Idempotent, and keyed by arch and linker too.
    CHECK(st->put_image(ik, "so", image));
    CHECK_FALSE(st->get_image({ik.closure, "aarch64-linux", ik.linker}));
    CHECK_FALSE(st->get_image({ik.closure, ik.arch, "lld 23"}));
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
  auto got = st->get_image(ik);
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
    auto jobs = st->list_jobs();
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

TEST_CASE("a schema-1 cache is migrated to the current schema in place, keeping its rows") {
  TempDir dir = temp_dir("kiln-migrate");
  std::string path = dir.path() + "/old.db";
  {
    // Build what a schema-1 Kiln wrote: its migration, its header, one job.
    auto v1 = kiln::read_file(std::string(KILN_SOURCE_DIR) + "/schema/0001_initial.sql");
    REQUIRE(v1);
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    std::string sql = *v1 + "PRAGMA application_id=1263094862; PRAGMA user_version=1;"
                             "INSERT INTO jobs VALUES ('" + std::string(32, 'a') +
                      "', 'f', 'sym', 'host', 't', 'c', '', '-O2', '" + std::string(32, 'b') +
                      "', 'tc', 1.0, 0);";
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto st = kiln::storage::Store::open(path);
  REQUIRE_MESSAGE(st, st.error().message);
  auto jobs = (*st)->list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 1);
  // Schema 2's tables are there and work.
  CHECK((*st)->set_setting("max_size", "1024"));
  CHECK(*(*st)->max_size() == 1024);
  kiln::storage::Counters c;
  c.loads = 3;
  CHECK((*st)->add_counters(c));
  CHECK((*st)->stats()->counters.loads == 3);
  st->reset();
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  CHECK(sqlite3_column_int(s, 0) == kiln::storage::schema_version());
  sqlite3_finalize(s);
  sqlite3_close(db);
}
