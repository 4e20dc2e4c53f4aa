// Unit tests for the C and C++ APIs over a whole cache (src/runtime/c_api_cache.cpp):
// kiln_cache_verify and kiln::Cache::verify on a real precompiled cache that
// is clean, then damaged on disk (an artifact's bytes and an image's bytes
// overwritten behind the store's back), and on a NULL handle.
#include "support/files.h"

#include <kiln/compiler.hpp>
#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <sqlite3.h>

#include <string>
#include <vector>

using namespace kiln;

namespace {

// nested.ll's nest_a precompiled for the host, with its image.
struct Compiled {
  TempDir dir;
  std::string closure;  ///< 32 hex
  std::string root_job; ///< 32 hex
  std::string path() const { return dir.path() + "/kiln.db"; }
};

Compiled compiled() {
  auto dir = TempDir::create("kiln-c-api-cache-test");
  REQUIRE(dir);
  Compiled c{dir.take(), "", ""};
  auto ir = read_file(std::string(KILN_TEST_DATA) + "/nested.ll");
  REQUIRE(ir);
  CompileRequest req;
  req.inputs = {SourceInput::memory("nested.ll", *ir)};
  req.entries = {"nest_a"};
  req.remote = "off";
  req.jobs = 2;
  auto plan = Plan::create(req);
  REQUIRE(plan);
  auto report = plan->run(c.path());
  INFO((report ? std::string() : report.error().message));
  REQUIRE(report);
  REQUIRE(report->ok());
  REQUIRE(report->roots.size() == 1);
  REQUIRE(report->roots[0].image);
  c.closure = report->roots[0].closure;
  for (const JobReport& j : report->jobs)
    if (j.entry == "nest_a")
      c.root_job = j.key;
  REQUIRE(c.root_job.size() == 32);
  return c;
}

// Writes straight into the cache file, as a bad disk or a stray writer might.
void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  char* msg = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  std::string err = msg ? msg : "";
  sqlite3_free(msg);
  int changed = sqlite3_changes(db);
  sqlite3_close(db);
  INFO(sql << ": " << err);
  REQUIRE(rc == SQLITE_OK);
  REQUIRE(changed == 1);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("c_api_cache: a clean precompiled cache verifies with no problems") {
  Compiled c = compiled();
  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  size_t problems = 42;
  CHECK(kiln_cache_verify(cache, &problems) == KILN_OK);
  CHECK(problems == 0);
  CHECK(kiln_cache_verify(cache, nullptr) == KILN_OK);
  kiln_cache_close(cache);

  auto wrapped = Cache::open(c.path());
  REQUIRE(wrapped);
  auto found = wrapped->verify();
  REQUIRE(found);
  CHECK(found->empty());
}

TEST_CASE("c_api_cache: verify on a NULL handle is invalid_argument and zeroes the count") {
  size_t problems = 9;
  CHECK(kiln_cache_verify(nullptr, &problems) == KILN_INVALID_ARGUMENT);
  CHECK(problems == 0);
  CHECK(contains(kiln_last_error(), "kiln_cache_verify"));
  CHECK(kiln_cache_verify(nullptr, nullptr) == KILN_INVALID_ARGUMENT);
}

TEST_CASE("c_api_cache: bytes damaged on disk are corrupt, counted, and the first described") {
  Compiled c = compiled();
  // An artifact whose stored bytes no longer decompress, and an image whose
  // checksum no longer matches its bytes.
  raw_exec(c.path(), "UPDATE artifacts SET data = X'00112233445566778899' WHERE job_key = '" +
                         c.root_job + "' AND format = 'obj'");
  raw_exec(c.path(), "UPDATE images SET checksum = checksum + 1 WHERE closure_key = '" +
                         c.closure + "'");

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  size_t problems = 0;
  CHECK(kiln_cache_verify(cache, &problems) == KILN_CORRUPT);
  CHECK(problems >= 2);
  std::string first = kiln_last_error();
  CHECK(contains(first, "artifact obj of job " + c.root_job));

  auto wrapped = Cache::open(c.path());
  REQUIRE(wrapped);
  auto found = wrapped->verify();
  REQUIRE(found);
  CHECK(found->size() == problems);
  REQUIRE_FALSE(found->empty());
  CHECK(found->front().message == first);
  bool artifact = false, image = false;
  for (const CacheProblem& p : *found) {
    if (p.kind == "artifact" && p.key == c.root_job)
      artifact = true;
    if (p.kind == "image" && p.key == c.closure && contains(p.message, "fails its checksum"))
      image = true;
  }
  CHECK(artifact);
  CHECK(image);

  // Verifying reads only: the damage is reported again, unchanged.
  size_t again = 0;
  CHECK(kiln_cache_verify(cache, &again) == KILN_CORRUPT);
  CHECK(again == problems);
  kiln_cache_close(cache);
}
