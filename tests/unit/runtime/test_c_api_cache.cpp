// Unit tests for the C and C++ APIs over a whole cache (src/runtime/c_api_cache.cpp):
// kiln_cache_verify and kiln::Cache::verify on a real precompiled cache that
// is clean, then damaged on disk (an artifact's bytes and an image's bytes
// overwritten behind the store's back), and on a NULL handle.
#include "fixtures/cache.hpp"

#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace kiln;
using namespace kiln::test;

namespace {

// nested.ll's nest_a precompiled for the host, with its image.
TestCache compiled() { return nested_cache("kiln-c-api-cache-test"); }

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("c_api_cache: a clean precompiled cache verifies with no problems") {
  TestCache c = compiled();
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
  TestCache c = compiled();
  const std::string root_job = c.job_key("nest_a");
  // An artifact whose stored bytes no longer decompress, and an image whose
  // checksum no longer matches its bytes.
  REQUIRE(raw_exec(c.path(), "UPDATE artifacts SET data = X'00112233445566778899' WHERE "
                             "job_key = x'" + root_job + "' AND format = 'obj'") == 1);
  REQUIRE(raw_exec(c.path(), "UPDATE images SET checksum = checksum + 1 WHERE closure_key = x'" +
                             c.root_closure() + "'") == 1);

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  size_t problems = 0;
  CHECK(kiln_cache_verify(cache, &problems) == KILN_CORRUPT);
  CHECK(problems >= 2);
  std::string first = kiln_last_error();
  CHECK(contains(first, "artifact obj of job " + root_job));

  auto wrapped = Cache::open(c.path());
  REQUIRE(wrapped);
  auto found = wrapped->verify();
  REQUIRE(found);
  CHECK(found->size() == problems);
  REQUIRE_FALSE(found->empty());
  CHECK(found->front().message == first);
  bool artifact = false, image = false;
  for (const CacheProblem& p : *found) {
    if (p.kind == "artifact" && p.key == root_job)
      artifact = true;
    if (p.kind == "image" && p.key == c.root_closure() && contains(p.message, "fails its checksum"))
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
