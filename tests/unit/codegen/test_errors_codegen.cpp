// Unit tests for the fields of codegen errors (src/codegen/target.cpp,
// src/codegen/compile.cpp): an unknown target names its spec, a job that
// fails to compile names its entry and target.
#include "ir_fixtures.hpp"

#include "codegen/compile.h"

#include <string>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("codegen errors: an unknown target names its spec") {
  for (const char* spec : {"sm_1", "gfx1", "gfx942:xnack", "gfx942:fast+", "riscv"}) {
    CAPTURE(spec);
    auto t = codegen::resolve_target(spec);
    REQUIRE_FALSE(t);
    CHECK(t.error().code == Code::invalid_argument);
    CHECK(t.error().target == spec);
    CHECK(t.error().message.find(std::string("unknown target '") + spec + "'") !=
          std::string::npos);
  }
}

TEST_CASE("codegen errors: a job that fails to compile names its entry and target") {
  core::TargetDesc t = host();
  codegen::JobInput job{"fib", "kiln_fib_symbol", "this is not bitcode", {}};
  auto r = codegen::compile_job(job, t, core::CodegenOptions{});
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().entry == "fib");
  CHECK(r.error().target == "host");
  CHECK(r.error().message.find("job 'fib' (host)") != std::string::npos);
}
