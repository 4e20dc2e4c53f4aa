// Unit tests for compile-or-load without LLVM until it is needed
// (src/memo/on_demand.cpp): the report types' functions, a repeated request
// answered from the memo (the first call compiles, the second is a memo hit
// with every job cached), and a compiler library that cannot be loaded
// failing only a request the memo cannot answer. The library is loaded once
// per process, so that last case runs in a fresh process of this program.
#include "memo/memo.h"

#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/process.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr const char* kMissingLibrary = "/nonexistent/kiln/libkiln-compiler.so.0";
constexpr const char* kChildCase = "on_demand child: a memo miss without the compiler library";
constexpr const char* kMarkerVar = "KILN_TEST_ON_DEMAND_MARKER";

CompileRequest nested_request() { return data_request("nested.ll", {"nest_a"}); }

std::string status_of(const CompileReport& rep) {
  std::string out;
  for (const JobReport& j : rep.jobs)
    out += j.entry + ":" + job_status_name(j.status) + " ";
  return out;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("on_demand: job_status_name names every status") {
  CHECK(std::string(job_status_name(JobStatus::compiled)) == "compiled");
  CHECK(std::string(job_status_name(JobStatus::cached)) == "cached");
  CHECK(std::string(job_status_name(JobStatus::failed)) == "failed");
  CHECK(std::string(job_status_name(static_cast<JobStatus>(42))) == "?");
}

TEST_CASE("on_demand: a report is ok unless a job failed or a root has an error") {
  CompileReport empty;
  CHECK(empty.ok());

  CompileReport rep;
  rep.jobs.resize(2);
  rep.jobs[0].status = JobStatus::compiled;
  rep.jobs[1].status = JobStatus::cached;
  rep.roots.resize(1);
  rep.roots[0].name = "f";
  // A note (no image linked) is not a failure.
  rep.roots[0].note = "no nvJitLink here";
  CHECK(rep.ok());

  CompileReport failed_job = rep;
  failed_job.jobs[1].status = JobStatus::failed;
  CHECK_FALSE(failed_job.ok());
  // JobReport's default status is failed: a job never run is not a success.
  CompileReport unrun = rep;
  unrun.jobs.emplace_back();
  CHECK_FALSE(unrun.ok());

  CompileReport failed_root = rep;
  failed_root.roots[0].error = "linking root 'f': undefined symbol";
  CHECK_FALSE(failed_root.ok());
}

TEST_CASE("on_demand: the first request compiles, the same request again is a memo hit") {
  TestCache c = empty_cache("kiln-on-demand-test");
  std::string cache = c.path();
  CompileRequest req = nested_request();

  auto first = compile_on_demand(req, cache);
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first);
  INFO(status_of(*first));
  CHECK(first->ok());
  CHECK_FALSE(first->memo_hit);
  REQUIRE(first->jobs.size() == 3);
  for (const JobReport& j : first->jobs)
    CHECK(j.status == JobStatus::compiled);
  REQUIRE(first->roots.size() == 1);
  CHECK(first->roots[0].name == "nest_a");
  CHECK(first->roots[0].image);
  CHECK(first->roots[0].closure.size() == 32);

  auto second = compile_on_demand(req, cache);
  INFO((second ? std::string() : second.error().message));
  REQUIRE(second);
  INFO(status_of(*second));
  CHECK(second->ok());
  CHECK(second->memo_hit);
  REQUIRE(second->jobs.size() == 3);
  for (const JobReport& j : second->jobs)
    CHECK(j.status == JobStatus::cached);
  REQUIRE(second->roots.size() == 1);
  CHECK(second->roots[0].name == "nest_a");
  CHECK(second->roots[0].target == "host");
  CHECK(second->roots[0].closure == first->roots[0].closure);
  CHECK(second->roots[0].image);

  // Another request (other options) is not answered by that memo.
  CompileRequest o0 = req;
  o0.opt_level = 0;
  auto other = compile_on_demand(o0, cache);
  REQUIRE(other);
  CHECK_FALSE(other->memo_hit);
  CHECK(other->roots[0].closure != first->roots[0].closure);
}

TEST_CASE("on_demand: a miss reports progress through the library boundary, and a callback "
          "that throws is an error, not a crash") {
  TestCache c = empty_cache("kiln-on-demand-test");
  std::string cache = c.path();
  CompileRequest req = nested_request();
  std::vector<Progress> seen;
  req.progress = [&](const Progress& p) { seen.push_back(p); };
  auto first = compile_on_demand(req, cache);
  INFO((first ? std::string() : first.error().message));
  REQUIRE(first);
  REQUIRE_FALSE(first->memo_hit);
  REQUIRE_FALSE(seen.empty());
  size_t compiled = 0;
  for (const Progress& p : seen) {
    if (p.status == "planning") // only for a plan that takes a second
      continue;
    CHECK(p.total == 3);
    CHECK(p.done <= p.total);
    compiled += p.status == "compiled";
  }
  CHECK(compiled == 3);
  CHECK(seen.back().done == 3);
  CHECK(seen.back().target == "host");

  CompileRequest o1 = req;
  o1.opt_level = 1;
  o1.progress = [](const Progress&) { throw std::runtime_error("display closed"); };
  auto thrown = compile_on_demand(o1, cache);
  REQUIRE_FALSE(thrown);
  CHECK(thrown.error().code == Code::internal);
  CHECK(contains(thrown.error().message, "display closed"));
  // The cache is whole: the same request without the callback is answered.
  o1.progress = nullptr;
  auto again = compile_on_demand(o1, cache);
  REQUIRE(again);
  CHECK(again->ok());
}

TEST_CASE("on_demand: a compiler library that cannot be loaded fails only a memo miss, "
          "naming its path") {
  TempDir dir = temp_dir("kiln-on-demand-test");
  std::string marker = dir.path() + "/child-passed";
  EnvVar library("KILN_COMPILER_LIBRARY", kMissingLibrary);
  EnvVar mark(kMarkerVar, marker.c_str());
  auto child = run_process({self_path(), "--no-skip", std::string("--test-case=") + kChildCase});
  REQUIRE(child);
  INFO(child->output);
  CHECK(child->exit_code == 0);
  auto passed = read_file(marker);
  REQUIRE(passed);
  CHECK(*passed == "passed");
}

// Run by the case above in a fresh process, where the compiler library has
// not been loaded yet and $KILN_COMPILER_LIBRARY names a missing file.
TEST_CASE("on_demand child: a memo miss without the compiler library" * doctest::skip()) {
  const char* marker = std::getenv(kMarkerVar);
  const char* library = std::getenv("KILN_COMPILER_LIBRARY");
  REQUIRE(marker);
  REQUIRE(library);
  REQUIRE(std::string(library) == kMissingLibrary);
  TestCache c = empty_cache("kiln-on-demand-child");
  std::string cache = c.path();
  CompileRequest req = nested_request();

  // kiln::compile (linked into this program) leaves the memo.
  auto compiled = compile(req, cache);
  REQUIRE(compiled);
  REQUIRE(compiled->ok());

  // The memo answers without the library.
  auto hit = compile_on_demand(req, cache);
  INFO((hit ? std::string() : hit.error().message));
  REQUIRE(hit);
  REQUIRE(hit->memo_hit);
  REQUIRE(hit->ok());

  // A miss needs the library, and says which file it could not load.
  CompileRequest o0 = req;
  o0.opt_level = 0;
  auto miss = compile_on_demand(o0, cache);
  REQUIRE_FALSE(miss);
  INFO(miss.error().message);
  REQUIRE(miss.error().code == Code::unavailable);
  REQUIRE(contains(miss.error().message, kMissingLibrary));
  // Still answered from the memo after the failed load.
  auto again = compile_on_demand(req, cache);
  REQUIRE(again);
  REQUIRE(again->memo_hit);

  REQUIRE(write_file_atomic(marker, "passed"));
}
