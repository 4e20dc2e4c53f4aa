// LLVM's warnings for a job (src/ir/diagnostics.cpp, carried from the worker
// by src/codegen/worker/protocol.cpp): reported with the job they belong to,
// once each, never printed by LLVM itself.
#include "codegen/compile.h"
#include "codegen/worker/pool.h"
#include "fixtures/cache.hpp"
#include "fixtures/ir.hpp"
#include "fixtures/jobs.hpp"

#include <doctest/doctest.h>

using namespace kiln;
using namespace kiln::test;

namespace {

bool says_not_unrolled(const std::vector<std::string>& warnings) {
  return warnings.size() == 1 && warnings[0].find("loop not unrolled") != std::string::npos &&
         warnings[0].rfind("<unknown>", 0) != 0;
}

} // namespace

TEST_CASE("a job's LLVM warnings come back with it, in process and from a worker") {
  core::TargetDesc t = host();
  codegen::JobInput job = job_for(data_file("unroll_warning.ll"), "f", t, {});
  std::vector<std::string> in_process, isolated;
  REQUIRE(codegen::compile_job(job, t, {}, &in_process));
  CHECK(says_not_unrolled(in_process));
  REQUIRE(codegen::compile_job_isolated(job, t, {}, &isolated));
  CHECK(isolated == in_process);

  // A job without one has none.
  std::vector<std::string> none;
  REQUIRE(codegen::compile_job_isolated(job_for(data_file("nested.ll"), "nest_c", t, {}), t, {},
                                        &none));
  CHECK(none.empty());
}

TEST_CASE("the driver reports a job's warnings on that job") {
  TestCache c = empty_cache("kiln-warnings");
  c.report = precompile(data_request("unroll_warning.ll", {"f"}), c.path());
  REQUIRE(c.report.jobs.size() == 1);
  CHECK(says_not_unrolled(c.report.jobs[0].warnings));
}
