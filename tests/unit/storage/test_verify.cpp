// Unit tests for the one verification of a cache (src/storage/verify.h):
// a consistent cache has no problems; a job whose key no longer matches its
// components, a closure whose key does not match its members and an image a
// loader would refuse are each reported, by kind and key, and so is damage
// SQLite finds in the file; and the C and C++ APIs report what the library
// finds.
#include "storage/verify.h"

#include "fixtures/cache.hpp"

#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::storage;
using namespace kiln::test;

namespace {

void put_job(Store& store, const JobRecord& j, const std::vector<JobRef>& refs = {}) {
  Status s = store.jobs().put_job(j, {{"obj", "object of " + j.entry}}, refs);
  INFO((s ? std::string() : s.error().message));
  REQUIRE(s);
}

/// root → child, both stored, and the closure of root under its right key,
/// named "root".
struct Healthy {
  JobRecord root, child;
  ClosureRecord closure;
};

Healthy put_healthy(Store& store) {
  Healthy h{consistent_job("root"), consistent_job("child"), {}};
  put_job(store, h.child);
  put_job(store, h.root, {{h.child.symbol, "child"}});
  h.closure = closure_of(h.root, {h.child});
  Status s = store.closures().put_closure(h.closure, {{"root", "host", h.closure.key}});
  REQUIRE(s);
  return h;
}

VerifyReport verify_ok(Store& store) {
  auto rep = verify_cache(store);
  INFO((rep ? std::string() : rep.error().message));
  REQUIRE(rep);
  return rep.take();
}

std::string describe(const VerifyReport& rep) {
  std::string out;
  for (const Problem& p : rep.problems)
    out += p.kind + " " + p.key + ": " + p.message + "\n";
  return out;
}

/// The problems of this kind about this key.
std::vector<Problem> about(const VerifyReport& rep, const std::string& kind,
                           const std::string& key) {
  std::vector<Problem> out;
  for (const Problem& p : rep.problems)
    if (p.kind == kind && p.key == key)
      out.push_back(p);
  return out;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("verify_cache: a consistent cache has no problems and counts what it walked") {
  TestCache c = open_cache();
  VerifyReport empty = verify_ok(*c.store);
  CHECK(empty.ok());
  CHECK(empty.jobs == 0);
  CHECK(empty.closures == 0);

  put_healthy(*c.store);
  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  CHECK(rep.ok());
  CHECK(rep.jobs == 2);
  CHECK(rep.closures == 1);
  auto problems = c.store->verify();
  REQUIRE(problems);
  CHECK(problems->empty());
}

TEST_CASE("verify_cache reports a job whose stored components do not give its key") {
  TestCache c = open_cache();
  Healthy h = put_healthy(*c.store);

  // Stored under a key its components do not hash to.
  JobRecord moved = consistent_job("moved");
  moved.key = hash128("not the key of moved");
  put_job(*c.store, moved);
  // Components that are not even well formed.
  JobRecord malformed = consistent_job("malformed");
  malformed.options = "-Ofast";
  put_job(*c.store, malformed);

  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  CHECK_FALSE(rep.ok());
  CHECK(rep.jobs == 4);
  auto m = about(rep, "job", moved.key.hex());
  REQUIRE(m.size() == 1);
  CHECK(contains(m[0].message, "does not match its stored components"));
  CHECK(contains(m[0].message, "moved"));
  auto bad = about(rep, "job", malformed.key.hex());
  REQUIRE(bad.size() == 1);
  CHECK(contains(bad[0].message, "-Ofast"));
  // The consistent jobs are not blamed.
  CHECK(about(rep, "job", h.root.key.hex()).empty());
  CHECK(about(rep, "job", h.child.key.hex()).empty());
  CHECK(rep.problems.size() == 2);

  // Store::verify is the same check.
  auto problems = c.store->verify();
  REQUIRE(problems);
  CHECK(problems->size() == rep.problems.size());
}

TEST_CASE("verify_cache reports a closure whose key does not match its members") {
  TestCache c = open_cache();
  Healthy h = put_healthy(*c.store);
  ClosureRecord forged = h.closure;
  forged.key = hash128("a key the members do not hash to");
  REQUIRE(c.store->closures().put_closure(forged, {{"forged", "host", forged.key}}));

  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  CHECK(rep.closures == 2);
  auto f = about(rep, "closure", forged.key.hex());
  REQUIRE(f.size() == 1);
  CHECK(contains(f[0].message, "does not match its key"));
  CHECK(about(rep, "closure", h.closure.key.hex()).empty());
  CHECK(rep.problems.size() == 1);
}

TEST_CASE("verify_cache reports a closure whose rows are wrong once, not again by its key") {
  TestCache c = open_cache();
  Healthy h = put_healthy(*c.store);
  // The root is stored but not among the members: the rows say so, and the
  // key check would say it again.
  ClosureRecord rootless;
  rootless.root_job = h.root.key;
  rootless.target = "host";
  rootless.members = {{h.child.symbol, h.child.key, ""}};
  rootless.key = hash128("rootless");
  REQUIRE(c.store->closures().put_closure(rootless, {}));

  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  auto r = about(rep, "closure", rootless.key.hex());
  REQUIRE(r.size() == 1);
  CHECK(contains(r[0].message, "root job is not a member"));
}

TEST_CASE("verify_cache reports a stored image a loader would refuse") {
  TestCache c = open_cache();
  Healthy h = put_healthy(*c.store);
  REQUIRE(
      c.store->images().put_image({h.closure.key, "x86_64-linux", "lld 22"}, "elf", "not an ELF"));

  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  auto junk = about(rep, "image", h.closure.key.hex());
  REQUIRE(junk.size() == 1);
  CHECK(rep.problems.size() == 1);

  // A real ELF of this machine that does not define the closure's symbols
  // (libkiln-link: this program, with every layer linked in, is larger
  // than a stored image may decode to).
  TestCache other = open_cache();
  Healthy o = put_healthy(*other.store);
  auto self = read_file(KILN_TEST_LINK_LIBRARY);
  REQUIRE(self);
  REQUIRE(other.store->images().put_image({o.closure.key, "x86_64-linux", "lld 22"}, "elf", *self));
  VerifyReport lacking = verify_ok(*other.store);
  INFO(describe(lacking));
  auto l = about(lacking, "image", o.closure.key.hex());
  REQUIRE(l.size() == 1);
  CHECK(contains(l[0].message, "lacks"));
}

TEST_CASE("kiln_cache_verify and kiln::Cache::verify report what verify_cache finds") {
  TestCache c = open_cache();
  Healthy h = put_healthy(*c.store);
  {
    kiln_cache* handle = nullptr;
    REQUIRE(kiln_cache_open(c.path().c_str(), &handle) == KILN_OK);
    size_t problems = 99;
    CHECK(kiln_cache_verify(handle, &problems) == KILN_OK);
    CHECK(problems == 0);
    CHECK(kiln_cache_verify(handle, nullptr) == KILN_OK);
    kiln_cache_close(handle);
  }

  JobRecord moved = consistent_job("moved");
  moved.key = hash128("not the key of moved");
  put_job(*c.store, moved);
  REQUIRE(
      c.store->images().put_image({h.closure.key, "x86_64-linux", "lld 22"}, "elf", "not an ELF"));
  VerifyReport rep = verify_ok(*c.store);
  REQUIRE(rep.problems.size() == 2);

  kiln_cache* handle = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &handle) == KILN_OK);
  size_t problems = 0;
  CHECK(kiln_cache_verify(handle, &problems) == KILN_CORRUPT);
  CHECK(problems == 2);
  CHECK(std::string(kiln_last_error()) == rep.problems.front().message);
  kiln_cache_close(handle);

  size_t untouched = 7;
  CHECK(kiln_cache_verify(nullptr, &untouched) == KILN_INVALID_ARGUMENT);
  CHECK(untouched == 0);

  auto cache = kiln::Cache::open(c.path());
  REQUIRE(cache);
  auto found = cache->verify();
  REQUIRE(found);
  REQUIRE(found->size() == rep.problems.size());
  for (size_t i = 0; i < found->size(); ++i) {
    CHECK((*found)[i].kind == rep.problems[i].kind);
    CHECK((*found)[i].key == rep.problems[i].key);
    CHECK((*found)[i].message == rep.problems[i].message);
  }
}

TEST_CASE("damage SQLite itself finds while verifying is a problem listed: KILN_CORRUPT never "
          "comes with none") {
  TestCache c = open_cache();
  put_healthy(*c.store);
  c.store.reset(); // the last connection: everything is in the file
  int64_t page_size = 0, root = 0;
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(c.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, "SELECT (SELECT page_size FROM pragma_page_size), rootpage "
                                   "FROM sqlite_master WHERE name = 'artifacts'",
                               -1, &s, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    page_size = sqlite3_column_int64(s, 0);
    root = sqlite3_column_int64(s, 1);
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  REQUIRE(root > 1);
  {
    // The artifacts table's root page gets a b-tree page type SQLite has
    // none of: opening still works (it reads the schema), verify does not.
    FILE* f = std::fopen(c.path().c_str(), "r+b");
    REQUIRE(f);
    REQUIRE(std::fseek(f, long((root - 1) * page_size), SEEK_SET) == 0);
    REQUIRE(std::fputc(0x77, f) == 0x77);
    std::fclose(f);
  }
  c.open();
  VerifyReport rep = verify_ok(*c.store);
  INFO(describe(rep));
  auto found = about(rep, "cache", c.path());
  REQUIRE(found.size() == 1);
  CHECK(contains(found[0].message, "malformed"));

  kiln_cache* handle = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &handle) == KILN_OK);
  size_t problems = 0;
  CHECK(kiln_cache_verify(handle, &problems) == KILN_CORRUPT);
  CHECK(problems >= 1);
  kiln_cache_close(handle);
}
