// The memo's answer (memo/memo.cpp memo_replay): a repeated request is
// answered from what the first one recorded, and images that are missing
// (a first request with --no-link, or gc) are linked then, on the request's
// -j, each root's once; over in-memory records, a hit reads no job and a
// memo that cannot be recorded costs only the next request's speed.
#include "request/request.h"
#include "memo/memo.h"
#include "fixtures/cache.hpp"
#include "fixtures/memory_records.hpp"

#include <kiln/compiler.hpp>
#include <kiln/kiln.h>

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("memo: a hit links the images a --no-link precompile left out, and every root loads") {
  TestCache c = empty_cache("kiln-memo-replay");
  CompileRequest req = data_request("nested.ll", {"nest_a", "nest_b", "nest_c"});
  req.link_images = false;
  auto first = compile(req, c.path());
  REQUIRE(first);
  REQUIRE(first->ok());
  for (const RootReport& r : first->roots)
    CHECK_FALSE(r.image);
  c.open();
  CHECK(stats_ok(*c.store).images == 0);
  c.store.reset();

  req.link_images = true;
  req.jobs = 2;
  auto again = compile(req, c.path());
  REQUIRE(again);
  REQUIRE(again->ok());
  CHECK(again->memo_hit);
  for (const RootReport& r : again->roots) {
    CHECK_MESSAGE(r.image, r.name);
    CHECK_MESSAGE(r.error.empty(), r.error);
  }
  c.open();
  CHECK(stats_ok(*c.store).images == 3);
  c.store.reset();

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  void* f = nullptr;
  REQUIRE(kiln_image_lookup(img, "nest_a", &f) == KILN_OK);
  CHECK(reinterpret_cast<int (*)(int)>(f)(1) == 333);
  kiln_image_release(img);
  kiln_cache_close(cache);

  // Once more: the images are there, nothing is linked again.
  auto third = compile(req, c.path());
  REQUIRE(third);
  CHECK(third->memo_hit);
  c.open();
  CHECK(stats_ok(*c.store).images == 3);
}

TEST_CASE("memo over in-memory records: a repeated request is answered from its memo, reading "
          "no job") {
  MemoryRecords mem;
  CompileRequest req = data_request("nested.ll", {"nest_a"});
  auto first = request::answer(req, {"", &mem});
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first);
  REQUIRE(first->ok());
  CHECK(mem.calls("put_memo") == 1);
  int has_job = mem.calls("has_job");
  CHECK(has_job > 0);

  auto second = request::answer(req, {"", &mem});
  REQUIRE(second);
  CHECK(second->ok());
  CHECK(mem.calls("get_memo") >= 1);
  CHECK(mem.calls("has_job") == has_job); // answered without the plan
  REQUIRE(second->roots.size() == 1);
  CHECK(second->roots[0].closure == first->roots[0].closure);
  for (const JobReport& j : second->jobs)
    CHECK(j.status == JobStatus::cached);
}

TEST_CASE("memo over in-memory records: a memo that cannot be recorded fails nothing, and the "
          "next request runs the plan") {
  MemoryRecords mem;
  mem.fail("put_memo", make_error(Code::unavailable, "no room for memos (injected)"));
  CompileRequest req = data_request("nested.ll", {"nest_a"});
  auto first = request::answer(req, {"", &mem});
  REQUIRE(first);
  CHECK(first->ok());
  CHECK(mem.calls("put_memo") >= 1);
  int has_job = mem.calls("has_job");
  auto second = request::answer(req, {"", &mem});
  REQUIRE(second);
  CHECK(second->ok());
  CHECK(mem.calls("has_job") > has_job); // no memo: the plan ran, finding every job
  CHECK(second->roots[0].closure == first->roots[0].closure);
}

TEST_CASE("the request path's stages, driven one at a time: memo misses, plan, run, record, then "
          "the memo answers; a caller whose memo lookup missed is not looked up again") {
  MemoryRecords mem;
  CompileRequest req = data_request("nested.ll", {"nest_a"});
  const request::Where where{"", &mem};
  auto key = memo::memo_key(req);
  REQUIRE(key);
  auto miss = request::memo(req, where, key);
  REQUIRE(miss);
  CHECK_FALSE(*miss);
  auto plan = request::plan(req);
  REQUIRE(plan);
  CHECK(mem.calls("put_job") == 0); // planning touches no cache
  auto report = request::run(*plan, mem);
  REQUIRE(report);
  CHECK(report->ok());
  CHECK_FALSE(report->first_failure());
  CHECK(mem.calls("put_memo") == 0);
  request::record(mem, key, *plan, *report);
  CHECK(mem.calls("put_memo") == 1);
  auto hit = request::memo(req, where, key);
  REQUIRE(hit);
  REQUIRE(*hit);
  CHECK((*hit)->memo_hit);

  // Told the memo missed (libkiln asked it already): the plan runs, with no
  // second lookup, and the memo is recorded again.
  int lookups = mem.calls("get_memo");
  request::Asked asked;
  asked.memo_missed = true;
  auto again = request::answer(req, where, asked);
  REQUIRE(again);
  CHECK_FALSE(again->memo_hit);
  CHECK(mem.calls("get_memo") == lookups);
  CHECK(mem.calls("put_memo") == 2);
}
