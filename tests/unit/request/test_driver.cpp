// Unit tests for the driver (src/request/plan.cpp, through
// include/kiln/compiler.hpp): Plan's job graph, cycles, runs into a cache, and
// the fields of what Plan::create reports (those of where an error arose, and
// the entry and target it was planning); and the driver over in-memory
// records (fixtures/memory_records.hpp) that fail where a test says.
#include "request/request.h"
#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/ir.hpp"
#include "fixtures/memory_records.hpp"
#include "codegen/worker/pool.h"

#include "support/fault.h"
#include "support/files.h"

#include <kiln/compiler.hpp>

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Function.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

CompileRequest request_for(const std::string& name, const std::string& bytes,
                           std::vector<std::string> entries = {}) {
  CompileRequest req;
  req.inputs = {SourceInput::memory(name, bytes)};
  req.entries = std::move(entries);
  req.jobs = 2;
  return req;
}

Plan must_plan(const CompileRequest& req) {
  auto p = Plan::create(req);
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p);
  return p.take();
}

std::vector<std::string> keys_of(const CompileReport& r) {
  std::vector<std::string> out;
  for (const JobReport& j : r.jobs)
    out.push_back(j.key);
  return out;
}

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

TEST_CASE("Plan::describe gives the same keys twice and from a second Plan") {
  std::string ir = data_file("nested.ll");
  Plan a = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  CHECK(a.job_count() == 3);
  CompileReport r1 = a.describe();
  CompileReport r2 = a.describe();
  REQUIRE(r1.jobs.size() == 3);
  CHECK(keys_of(r1) == keys_of(r2));
  // Another Plan, and another input name: same keys.
  Plan b = must_plan(request_for("elsewhere/renamed.ll", ir, {"nest_a"}));
  CompileReport r3 = b.describe();
  CHECK(keys_of(r1) == keys_of(r3));
  REQUIRE(r1.roots.size() == 1);
  REQUIRE(r3.roots.size() == 1);
  CHECK(r1.roots[0].name == "nest_a");
  CHECK(r1.roots[0].target == "host");
  CHECK(r1.roots[0].closure.size() == 32);
  CHECK(r1.roots[0].closure == r3.roots[0].closure);

  // Each job's refs point at the other jobs' keys by their symbols.
  std::vector<std::string> key_list = keys_of(r1);
  std::set<std::string> keys(key_list.begin(), key_list.end());
  CHECK(keys.size() == 3);
  for (const JobReport& j : r1.jobs) {
    CHECK(j.target == "host");
    CHECK(j.options == "-O2");
    CHECK(is_deferred_symbol(j.symbol));
    for (const auto& [sym, child] : j.refs) {
      CHECK(keys.count(child) == 1);
      auto it = std::find_if(r1.jobs.begin(), r1.jobs.end(),
                             [&](const JobReport& o) { return o.key == child; });
      REQUIRE(it != r1.jobs.end());
      CHECK(it->symbol == sym);
    }
  }
}

TEST_CASE("Plan: a cycle a -> b -> c -> a terminates with three jobs") {
  Plan p = must_plan(request_for("cycle.ll", data_file("cycle.ll"), {"cyc_a"}));
  CHECK(p.job_count() == 3);
  CompileReport r = p.describe();
  REQUIRE(r.jobs.size() == 3);
  std::set<std::string> entries;
  for (const JobReport& j : r.jobs) {
    entries.insert(j.entry);
    CHECK(j.refs.size() == 1);
  }
  CHECK(entries == std::set<std::string>{"cyc_a", "cyc_b", "cyc_c"});

  // Every member as a root: still three jobs, three distinct closures.
  Plan all = must_plan(request_for("cycle.ll", data_file("cycle.ll")));
  CHECK(all.job_count() == 3);
  CompileReport ra = all.describe();
  REQUIRE(ra.roots.size() == 3);
  std::set<std::string> closures;
  for (const RootReport& rr : ra.roots)
    closures.insert(rr.closure);
  CHECK(closures.size() == 3);
  CHECK(keys_of(ra) == keys_of(r)); // discovery from cyc_a first
}

TEST_CASE("Plan: a self-recursive deferred reference is one job") {
  Plan p = must_plan(request_for("self.ll", data_file("self_recursive.ll")));
  CompileReport r = p.describe();
  CHECK(p.job_count() == r.jobs.size());
  for (const JobReport& j : r.jobs)
    for (const auto& [sym, child] : j.refs)
      if (sym == j.symbol)
        CHECK(child == j.key);
}

TEST_CASE("Plan::run compiles into a cache; a second run finds every job cached") {
  TestCache c = empty_cache("kiln-plan-test");
  std::string cache = c.path();
  std::string ir = data_file("nested.ll");

  Plan first = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  auto r1 = first.run(cache);
  INFO((r1 ? std::string() : r1.error().message));
  REQUIRE(r1);
  CHECK(r1->ok());
  REQUIRE(r1->jobs.size() == 3);
  for (const JobReport& j : r1->jobs) {
    INFO(j.entry << ": " << j.error);
    CHECK(j.status == JobStatus::compiled);
  }
  REQUIRE(r1->roots.size() == 1);
  CHECK(r1->roots[0].error == "");
  CHECK(r1->roots[0].closure == first.describe().roots[0].closure);

  Plan second = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  std::vector<Progress> progress;
  CompileRequest req = request_for("nested.ll", ir, {"nest_a"});
  req.progress = [&](const Progress& p) { progress.push_back(p); };
  Plan third = must_plan(req);
  auto r2 = second.run(cache);
  REQUIRE(r2);
  CHECK(r2->ok());
  CHECK(keys_of(*r2) == keys_of(*r1));
  for (const JobReport& j : r2->jobs)
    CHECK(j.status == JobStatus::cached);
  REQUIRE(r2->roots.size() == 1);
  CHECK(r2->roots[0].closure == r1->roots[0].closure);

  auto r3 = third.run(cache);
  REQUIRE(r3);
  REQUIRE(progress.size() == 3);
  for (const Progress& p : progress) {
    CHECK(p.status == "cached");
    CHECK(p.total == 3);
  }
  CHECK(progress.back().done == 3);

  // The cache holds the jobs once each, and the root's name resolves.
  auto st = open_store(cache);
  auto jobs = st->jobs().list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 3);
  auto named = st->names().resolve_name("nest_a", "host");
  REQUIRE(named);
  CHECK(named->hex() == r1->roots[0].closure);
  auto closure = st->closures().get_closure(*named);
  REQUIRE(closure);
  CHECK(closure->members.size() == 3);
}

// A plan that takes over a second says how far discovery has got (the
// slow-plan fault point makes this one count as slow from its start): the
// first report before any job is extracted, the last once all are, and
// never more jobs extracted than found.
TEST_CASE("a slow plan reports its discovery's progress") {
  std::string ir = "declare ptr @kiln_deferred(ptr)\n";
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    std::string body = "  %a = add i64 %x, " + std::to_string(i) + "\n";
    if (i + 1 < n)
      body += "  %p = call ptr @kiln_deferred(ptr @c" + std::to_string(i + 1) + ")\n";
    ir += "define i64 @c" + std::to_string(i) + "(i64 %x) {\n" + body + "  ret i64 %a\n}\n";
  }
  std::vector<Progress> seen;
  CompileRequest req = request_for("chain.ll", ir, {"c0"});
  req.progress = [&](const Progress& p) { seen.push_back(p); };

  // Not slow: no report while planning.
  Plan quick = must_plan(req);
  CHECK(quick.job_count() == size_t(n));
  CHECK(seen.empty());

  fault::set_plan("slow-plan");
  auto slow = Plan::create(req);
  fault::set_plan("");
  REQUIRE(slow);
  CHECK(slow->job_count() == size_t(n));
  REQUIRE(seen.size() >= 2);
  CHECK(seen.front().done == 0);
  CHECK(seen.front().total == 1);
  CHECK(seen.front().entry == "c0");
  CHECK(seen.back().done == size_t(n));
  CHECK(seen.back().total == size_t(n));
  for (size_t i = 0; i < seen.size(); ++i) {
    INFO("report " << i);
    CHECK(seen[i].status == "planning");
    CHECK(seen[i].target == "host");
    CHECK(seen[i].done <= seen[i].total);
    if (i) {
      CHECK(seen[i].done >= seen[i - 1].done);
      CHECK(seen[i].total >= seen[i - 1].total);
    }
  }
  // The same plan either way.
  CHECK(keys_of(quick.describe()) == keys_of(slow->describe()));
}

TEST_CASE("Plan::create input errors are invalid_argument") {
  std::string ir = data_file("nested.ll");
  SUBCASE("unknown target") {
    CompileRequest req = request_for("nested.ll", ir);
    req.targets = {"not_a_target"};
    auto p = Plan::create(req);
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("not_a_target") != std::string::npos);
  }
  SUBCASE("missing entry") {
    auto p = Plan::create(request_for("nested.ll", ir, {"no_such_entry"}));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("no_such_entry") != std::string::npos);
  }
  SUBCASE("bad optimization level") {
    CompileRequest req = request_for("nested.ll", ir);
    req.opt_level = 4;
    auto p = Plan::create(req);
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
  }
  SUBCASE("syntax error") {
    auto p = Plan::create(request_for("broken.ll", "define i32 @f( {\n"));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("broken.ll") != std::string::npos);
  }
  SUBCASE("kiln_deferred on a global") {
    auto p = Plan::create(request_for("bdg.ll", data_file("bad_deferred_global.ll")));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == Code::invalid_argument);
    CHECK(p.error().message.find("bdg_parent") != std::string::npos);
  }
}

TEST_CASE("Plan: options are part of the keys") {
  std::string ir = data_file("nested.ll");
  CompileRequest o2 = request_for("nested.ll", ir, {"nest_a"});
  CompileRequest o0 = o2;
  o0.opt_level = 0;
  CompileRequest dbg = o2;
  dbg.debug = true;
  auto k2 = keys_of(must_plan(o2).describe());
  auto k0 = keys_of(must_plan(o0).describe());
  auto kg = keys_of(must_plan(dbg).describe());
  REQUIRE(k2.size() == 3);
  REQUIRE(k0.size() == 3);
  REQUIRE(kg.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(k2[i] != k0[i]);
    CHECK(k2[i] != kg[i]);
  }
}

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

TEST_CASE("driver errors: a function named like a closure key cannot be a root") {
  // Another root's closure key (the form is what matters): were it recorded
  // as this function's name, a load by that key would get this code.
  std::string key = hash128("another root's closure").hex();
  std::string ir = "define i32 @ok(i32 %x) {\n  ret i32 %x\n}\ndefine i32 @\"" + key +
                   "\"(i32 %x) {\n  ret i32 0\n}\n";
  for (const auto& entries : {std::vector<std::string>{}, std::vector<std::string>{key}}) {
    CAPTURE(entries.size());
    Error e = plan_error("shadow.ll", ir, entries);
    CHECK(e.code == Code::invalid_argument);
    CHECK(e.entry == key);
    CHECK(e.target == "host");
    CHECK_MESSAGE(e.message.find("function '" + key + "' cannot be a root") == 0, e.message);
    CHECK(e.message.find("form of a closure key") != std::string::npos);
    CHECK(e.message.find("rename it") != std::string::npos);
  }
  // Not a root, it is just a function: only `ok` is planned.
  auto plan = Plan::create(request_for("shadow.ll", ir, {"ok"}));
  REQUIRE(plan);
  CHECK(plan->describe().roots.size() == 1);
  // A library may not be named so either.
  CompileRequest lib = request_for("shadow.ll", ir, {"ok"});
  lib.library = key;
  auto refused = Plan::create(lib);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::invalid_argument);
  CHECK(refused.error().message.find("library name '" + key + "'") == 0);
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

TEST_CASE("bitcode that crashes LLVM's reader is an input error, and the caller lives") {
  // A fuzz finding (tests/fuzz/regressions): LLVM 22's reader dereferences
  // a null GEP index while it materialises this module. The driver has a
  // worker read bitcode first, so the crash ends the worker, not this process.
  std::string bytes = kiln::read_file(std::string(KILN_SOURCE_DIR) +
                                      "/tests/fuzz/regressions/"
                                      "ir_ingest-gep-index-reader-crash.bc")
                          .take();
  Error e = plan_error("hostile.bc", bytes);
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.source == "hostile.bc");
  CHECK(e.message.find("reading 'hostile.bc'") != std::string::npos);
  CHECK(e.message.find("LLVM's bitcode reader crashed") != std::string::npos);
  // Bitcode the reader survives plans as before, through the same check.
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  auto m = llvm::parseAssemblyString(data_file("nested.ll"), diag, ctx);
  REQUIRE(m);
  std::string bc;
  llvm::raw_string_ostream os(bc);
  llvm::WriteBitcodeToFile(*m, os);
  os.flush();
  Plan p = must_plan(request_for("nested.bc", bc, {"nest_a"}));
  CHECK(p.job_count() == 3);
  // Without a worker, bitcode is read here as before: a plan needs none.
  codegen::stop_idle_workers();
  {
    EnvVar nowhere("KILN_CODEGEN_WORKER", "/nonexistent/kiln-codegen-worker");
    Plan q = must_plan(request_for("nested.bc", bc, {"nest_a"}));
    CHECK(q.job_count() == 3);
  }
}

// --- the driver over in-memory records ----------------------------------------

namespace {

CompileReport run_ok(Plan& plan, storage::Records& records) {
  auto r = request::run(plan, records);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  return r.take();
}

Error injected(const std::string& what) { return make_error(Code::unavailable, what + " (injected)"); }

} // namespace

TEST_CASE("driver over in-memory records: a deferred graph is recorded, and a second run "
          "stores nothing") {
  MemoryRecords mem;
  std::string ir = data_file("nested.ll");
  Plan first = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  CompileReport r1 = run_ok(first, mem);
  CHECK(r1.ok());
  REQUIRE(r1.jobs.size() == 3);
  CHECK(mem.calls("put_job") == 3);
  CHECK(mem.calls("put_closure") == 1);
  auto named = mem.names().resolve_name("nest_a", "host");
  REQUIRE(named);
  CHECK(named->hex() == r1.roots[0].closure);
  auto closure = mem.closures().get_closure(*named);
  REQUIRE(closure);
  CHECK(closure->members.size() == 3);
  // The driver linked the closure's image and stored it (a load needs no
  // linker then).
  auto image = mem.images().get_image_any_linker(*named, core::image_arch(closure->target));
  INFO((image ? std::string() : image.error().message));
  CHECK(image);

  Plan second = must_plan(request_for("nested.ll", ir, {"nest_a"}));
  CompileReport r2 = run_ok(second, mem);
  CHECK(r2.ok());
  for (const JobReport& j : r2.jobs)
    CHECK(j.status == JobStatus::cached);
  CHECK(mem.calls("put_job") == 3); // nothing compiled, nothing stored again
  std::vector<storage::Problem> problems;
  REQUIRE(mem.upkeep().check_rows(problems));
  CHECK(problems.empty());
}

TEST_CASE("driver over in-memory records: a job that cannot be stored fails alone, and its "
          "root names nothing") {
  MemoryRecords mem;
  mem.fail("put_job", injected("no space for the job"), 1); // the second job's put fails
  Plan plan = must_plan(request_for("nested.ll", data_file("nested.ll"), {"nest_a"}));
  CompileReport r = run_ok(plan, mem);
  CHECK_FALSE(r.ok());
  int failed = 0;
  for (const JobReport& j : r.jobs)
    if (j.status == JobStatus::failed) {
      ++failed;
      CHECK(j.error.find("no space for the job (injected)") != std::string::npos);
    }
  CHECK(failed == 2); // the failing call and every later one
  REQUIRE(r.roots.size() == 1);
  CHECK_FALSE(r.roots[0].error.empty());
  auto named = mem.names().resolve_name("nest_a", "host");
  REQUIRE_FALSE(named);
  CHECK(named.error().code == Code::not_found);
  auto jobs = mem.jobs().list_jobs();
  REQUIRE(jobs);
  CHECK(jobs->size() == 1);
  // Healed, the next run compiles what is missing and names the root.
  mem.heal();
  Plan again = must_plan(request_for("nested.ll", data_file("nested.ll"), {"nest_a"}));
  CompileReport r2 = run_ok(again, mem);
  CHECK(r2.ok());
  CHECK(mem.names().resolve_name("nest_a", "host"));
}

TEST_CASE("driver over in-memory records: a closure that cannot be recorded is its root's "
          "error, and the name keeps naming what it named") {
  MemoryRecords mem;
  Plan v1 = must_plan(request_for("change.ll", data_file("change_v1.ll"), {"chg_parent"}));
  CompileReport r1 = run_ok(v1, mem);
  REQUIRE(r1.ok());
  auto before = mem.names().resolve_name("chg_parent", "host");
  REQUIRE(before);

  mem.fail("put_closure", injected("the closure table is full"));
  Plan v2 = must_plan(request_for("change.ll", data_file("change_v2.ll"), {"chg_parent"}));
  CompileReport r2 = run_ok(v2, mem);
  CHECK_FALSE(r2.ok());
  REQUIRE(r2.roots.size() == 1);
  CHECK(r2.roots[0].error.find("the closure table is full (injected)") != std::string::npos);
  auto after = mem.names().resolve_name("chg_parent", "host");
  REQUIRE(after);
  CHECK(*after == *before);

  // The closure recorded, but the name not moved: the same.
  mem.heal();
  mem.fail("point_name", injected("the name cannot move"));
  Plan v2b = must_plan(request_for("change.ll", data_file("change_v2.ll"), {"chg_parent"}));
  CompileReport r3 = run_ok(v2b, mem);
  CHECK_FALSE(r3.ok());
  CHECK(r3.roots[0].error.find("the name cannot move (injected)") != std::string::npos);
  after = mem.names().resolve_name("chg_parent", "host");
  REQUIRE(after);
  CHECK(*after == *before);

  mem.heal();
  Plan v2c = must_plan(request_for("change.ll", data_file("change_v2.ll"), {"chg_parent"}));
  CompileReport r4 = run_ok(v2c, mem);
  CHECK(r4.ok());
  after = mem.names().resolve_name("chg_parent", "host");
  REQUIRE(after);
  CHECK(*after != *before);
  CHECK(after->hex() == r4.roots[0].closure);
}

TEST_CASE("driver over in-memory records: read-only records are refused before any work") {
  MemoryRecords mem(true);
  Plan plan = must_plan(request_for("nested.ll", data_file("nested.ll"), {"nest_a"}));
  auto r = request::run(plan, mem);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().message.find("compile into it") != std::string::npos);
  CHECK(mem.calls("put_job") == 0);
  CHECK(mem.calls("has_job") == 0);
}
