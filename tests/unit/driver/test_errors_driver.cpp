// Unit tests for the fields of the driver's errors (src/driver/driver.cpp):
// what Plan::create reports keeps the fields of where it arose and adds the
// entry and target it was planning.
#include "ir_fixtures.hpp"

#include <kiln/compiler.hpp>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

Error plan_error(const std::string& name, const std::string& ir,
                 std::vector<std::string> entries = {}, std::vector<std::string> targets = {}) {
  CompileRequest req;
  req.inputs = {SourceInput::memory(name, ir)};
  req.entries = std::move(entries);
  req.targets = std::move(targets);
  auto p = Plan::create(req);
  REQUIRE_FALSE(p);
  return p.error();
}

} // namespace

TEST_CASE("driver errors: an unknown target names it") {
  Error e = plan_error("nested.ll", data_file("nested.ll"), {}, {"host", "sm_1"});
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.target == "sm_1");
  CHECK(e.message.find("unknown target 'sm_1'") == 0);
}

TEST_CASE("driver errors: a missing entry names it") {
  Error e = plan_error("nested.ll", data_file("nested.ll"), {"no_such_entry"});
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.entry == "no_such_entry");
  CHECK(e.target.empty());
}

TEST_CASE("driver errors: a syntax error keeps its input, line and column") {
  Error e = plan_error("broken.ll", "define i32 @f() {\n  ret i32 %x\n}\n");
  CHECK(e.source == "broken.ll");
  CHECK(e.line == 2);
  CHECK(e.column == 11);
}

TEST_CASE("driver errors: a bad kiln_deferred names the job and the target planned") {
  Error e = plan_error("bdg.ll", data_file("bad_deferred_global.ll"));
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.entry == "bdg_parent");
  CHECK(e.target == "host");
  // The message is the one it always was: the target, then the job.
  CHECK(e.message.rfind("target host: job 'bdg_parent'", 0) == 0);
}

TEST_CASE("driver errors: a unit with no kernel names the GPU target") {
  Error e = plan_error("nested.ll", data_file("nested.ll"), {}, {"sm_90"});
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.target == "sm_90");
}
