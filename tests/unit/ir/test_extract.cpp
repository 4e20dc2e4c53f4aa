// Unit tests for job extraction (src/ir/extract.cpp): canonical job modules,
// kiln_deferred lowering, and the errors a bad reference gets, with their
// fields (the entry and, where the IR has one, the debug location).
#include "fixtures/ir.hpp"

#include <kiln/compiler.hpp>

#include <llvm/IR/Function.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

Error extract_error(const std::string& ir, const std::string& entry) {
  auto r = extract(ir, entry);
  REQUIRE_FALSE(r);
  return r.error();
}

} // namespace

TEST_CASE("extract_job: local value and block names do not change the job") {
  auto a = must_extract(kBase, "f");
  auto b = must_extract(kRenamed, "f");
  CHECK(a.bitcode == b.bitcode);
  CHECK(a.refs.empty());
}

TEST_CASE("extract_job: the input's name does not change the job") {
  auto a = must_extract(kBase, "f", "a.ll");
  auto b = must_extract(kBase, "f", "/some/where/else/other_name.ll");
  CHECK(a.bitcode == b.bitcode);
}

TEST_CASE("extract_job: unrelated functions and globals, and their order, do not change the job") {
  auto base = must_extract(kBase, "f");
  auto others = must_extract(kWithOthers, "f");
  auto reordered = must_extract(kWithOthersReordered, "f");
  CHECK(base.bitcode == others.bitcode);
  CHECK(base.bitcode == reordered.bitcode);
  // And a job that does use some of them is order-independent too.
  auto k1 = must_extract(kWithOthers, "k");
  auto k2 = must_extract(kWithOthersReordered, "k");
  CHECK(k1.bitcode == k2.bitcode);
  CHECK(k1.bitcode != base.bitcode);
}

TEST_CASE("extract_job: debug info does not change a job extracted without debug") {
  auto plain = must_extract(kBase, "f", "unit.ll", /*debug=*/false);
  auto with_dbg = must_extract(kWithDebug, "f", "unit.ll", /*debug=*/false);
  CHECK(plain.bitcode == with_dbg.bitcode);
  {
    // Nothing of the debug info may survive, module flags included.
    llvm::LLVMContext ctx;
    auto m = parse_bitcode(ctx, with_dbg.bitcode);
    CHECK(m->getNamedMetadata("llvm.dbg.cu") == nullptr);
    CHECK(m->getNamedMetadata("llvm.ident") == nullptr);
    CHECK(m->getModuleFlag("Debug Info Version") == nullptr);
    CHECK(m->getModuleFlag("Dwarf Version") == nullptr);
    REQUIRE(m->getFunction("f"));
    CHECK(m->getFunction("f")->getSubprogram() == nullptr);
  }

  // With debug kept, the debug info is part of the job.
  auto kept = must_extract(kWithDebug, "f", "unit.ll", /*debug=*/true);
  CHECK(kept.bitcode != with_dbg.bitcode);
  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, kept.bitcode);
  llvm::Function* f = m->getFunction("f");
  REQUIRE(f);
  CHECK(f->getSubprogram() != nullptr);
}

TEST_CASE("extract_job: a changed entry body changes the job") {
  auto a = must_extract(kBase, "f");
  auto b = must_extract(kChangedBody, "f");
  CHECK(a.bitcode != b.bitcode);
}

TEST_CASE("extract_job: the job module names only what the entry reaches") {
  auto k = must_extract(kWithOthers, "k");
  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, k.bitcode);
  REQUIRE(m->getFunction("k"));
  CHECK_FALSE(m->getFunction("k")->isDeclaration());
  CHECK(m->getFunction("h") != nullptr);
  CHECK(m->getGlobalVariable("unrelated", /*AllowInternal=*/true) != nullptr);
  CHECK(m->getFunction("f") == nullptr);
  CHECK(m->getFunction("g") == nullptr);
  CHECK(m->getTargetTriple().str() == host().triple);
}

TEST_CASE("extract_job lowers kiln_deferred(@f) to f's deferred symbol") {
  auto parent = must_extract(kDeferred, "parent");
  std::string sym = deferred_symbol_for("child");
  REQUIRE(parent.refs.size() == 1);
  CHECK(parent.refs[0].symbol == sym);
  CHECK(parent.refs[0].entry == "child");

  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, parent.bitcode);
  CHECK(m->getFunction("kiln_deferred") == nullptr);
  llvm::Function* child = m->getFunction("child");
  CHECK((child == nullptr || child->isDeclaration()));
  llvm::Function* decl = m->getFunction(sym);
  REQUIRE(decl);
  CHECK(decl->isDeclaration());
  REQUIRE(m->getFunction("parent"));
  CHECK_FALSE(m->getFunction("parent")->isDeclaration());

  // The child's own job has no references, and its body is there.
  auto c = must_extract(kDeferred, "child");
  CHECK(c.refs.empty());
  auto cm = parse_bitcode(ctx, c.bitcode);
  REQUIRE(cm->getFunction("child"));
  CHECK_FALSE(cm->getFunction("child")->isDeclaration());
}

TEST_CASE("extract_job: a child's body change does not change its parent's job") {
  auto v1 = must_extract(data_file("change_v1.ll"), "chg_parent");
  auto v2 = must_extract(data_file("change_v2.ll"), "chg_parent");
  CHECK(v1.bitcode == v2.bitcode);
  CHECK(v1.refs == v2.refs);
  auto c1 = must_extract(data_file("change_v1.ll"), "chg_child");
  auto c2 = must_extract(data_file("change_v2.ll"), "chg_child");
  CHECK(c1.bitcode != c2.bitcode);
}

TEST_CASE("extract_job: a deferred reference inside an internal helper is the entry's") {
  auto root = must_extract(data_file("helper.ll"), "hlp_root");
  REQUIRE(root.refs.size() == 1);
  CHECK(root.refs[0].entry == "hlp_child");
  CHECK(root.refs[0].symbol == deferred_symbol_for("hlp_child"));

  llvm::LLVMContext ctx;
  auto m = parse_bitcode(ctx, root.bitcode);
  llvm::Function* helper = m->getFunction("hlp_helper");
  REQUIRE(helper);
  CHECK_FALSE(helper->isDeclaration());
  llvm::Function* child = m->getFunction("hlp_child");
  CHECK((child == nullptr || child->isDeclaration()));
  CHECK(m->getFunction("kiln_deferred") == nullptr);
}

TEST_CASE("extract_job: references are sorted by symbol and unique") {
  const char* ir = R"(
declare ptr @kiln_deferred(ptr)
define i32 @c1(i32 %x) { ret i32 %x }
define i32 @c2(i32 %x) { ret i32 %x }
define i32 @p(i32 %x) {
  %a = call ptr @kiln_deferred(ptr @c2)
  %b = call ptr @kiln_deferred(ptr @c1)
  %c = call ptr @kiln_deferred(ptr @c2)
  %r1 = call i32 %a(i32 %x)
  %r2 = call i32 %b(i32 %r1)
  %r3 = call i32 %c(i32 %r2)
  ret i32 %r3
}
)";
  auto p = must_extract(ir, "p");
  REQUIRE(p.refs.size() == 2);
  CHECK(p.refs[0].symbol < p.refs[1].symbol);
  std::set<std::string> entries{p.refs[0].entry, p.refs[1].entry};
  CHECK(entries == std::set<std::string>{"c1", "c2"});
}

// Every job of a deferred graph is extracted from what it reaches: a job
// that cloned the whole unit would make planning quadratic in the graph.
TEST_CASE("extract_job: a job that defers is built from what it reaches, byte for byte as the "
          "whole-unit clone") {
  // A chain with an internal helper, a global, a self-reference and a pointer
  // cast around the marker's argument, under -g and without.
  const char* ir = R"(
declare ptr @kiln_deferred(ptr)
@counter = global i64 0
define i64 @c2(i64 %x) { ret i64 %x }
define internal i64 @helper(i64 %x) {
  %p = call ptr @kiln_deferred(ptr @c2)
  %r = call i64 %p(i64 %x)
  ret i64 %r
}
define i64 @c1(i64 %x) {
  %n = load i64, ptr @counter
  %m = add i64 %n, 1
  store i64 %m, ptr @counter
  %self = call ptr @kiln_deferred(ptr @c1)
  %h = call i64 @helper(i64 %x)
  ret i64 %h
}
define i64 @c0(i64 %x) {
  %p = call ptr @kiln_deferred(ptr @c1)
  %q = call ptr @kiln_deferred(ptr @c2)
  %r = call i64 %p(i64 %x)
  %s = call i64 %q(i64 %r)
  ret i64 %s
}
)";
  for (bool debug : {false, true}) {
    llvm::LLVMContext ctx;
    auto unit = ir::ingest(ctx, {{"chain.ll", ir, true}});
    REQUIRE(unit);
    for (const char* entry : {"c0", "c1", "c2"}) {
      INFO(entry << (debug ? " -g" : ""));
      auto fast = ir::extract_job(**unit, entry, config(debug));
      auto whole = ir::extract_job_by_unit_clone(**unit, entry, config(debug));
      REQUIRE(fast);
      REQUIRE(whole);
      CHECK_FALSE(fast->by_unit_clone);
      CHECK(whole->by_unit_clone);
      CHECK(fast->bitcode == whole->bitcode);
      CHECK(fast->refs == whole->refs);
      CHECK(fast->callees == whole->callees);
      auto m = parse_bitcode(ctx, fast->bitcode);
      CHECK(m->getFunction("kiln_deferred") == nullptr);
    }
  }
}

TEST_CASE("extract_job errors: missing entry names the entry") {
  auto r = extract(kBase, "no_such_function");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().message.find("no_such_function") != std::string::npos);

  const char* decl_only = "declare i32 @ext(i32)\n";
  auto d = extract(decl_only, "ext");
  REQUIRE_FALSE(d);
  CHECK(d.error().code == Code::invalid_argument);
  CHECK(d.error().message.find("ext") != std::string::npos);

  auto marker = extract(kDeferred, "kiln_deferred");
  REQUIRE_FALSE(marker);
  CHECK(marker.error().code == Code::invalid_argument);
}

TEST_CASE("extract_job errors: kiln_deferred on a global variable names the parent") {
  auto r = extract(data_file("bad_deferred_global.ll"), "bdg_parent");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  CHECK(r.error().message.find("bdg_parent") != std::string::npos);
  CHECK(r.error().message.find("bdg_data") != std::string::npos);

  // Reached through a helper, the error still names the entry being extracted.
  const char* via_helper = R"(
declare ptr @kiln_deferred(ptr)
@gv = global i32 1
define internal i32 @helper(i32 %x) {
  %p = call ptr @kiln_deferred(ptr @gv)
  %r = call i32 %p(i32 %x)
  ret i32 %r
}
define i32 @outer(i32 %x) {
  %r = call i32 @helper(i32 %x)
  ret i32 %r
}
)";
  auto h = extract(via_helper, "outer");
  REQUIRE_FALSE(h);
  CHECK(h.error().code == Code::invalid_argument);
  CHECK(h.error().message.find("outer") != std::string::npos);
}

TEST_CASE("extract_job errors: kiln_deferred on a declaration or used indirectly") {
  const char* on_decl = R"(
declare ptr @kiln_deferred(ptr)
declare i32 @nowhere(i32)
define i32 @p(i32 %x) {
  %q = call ptr @kiln_deferred(ptr @nowhere)
  %r = call i32 %q(i32 %x)
  ret i32 %r
}
)";
  auto d = extract(on_decl, "p");
  REQUIRE_FALSE(d);
  CHECK(d.error().code == Code::invalid_argument);
  CHECK(d.error().message.find("'p'") != std::string::npos);

  const char* escaped = R"(
declare ptr @kiln_deferred(ptr)
@slot = global ptr null
define void @p() {
  store ptr @kiln_deferred, ptr @slot
  ret void
}
)";
  auto e = extract(escaped, "p");
  REQUIRE_FALSE(e);
  CHECK(e.error().code == Code::invalid_argument);
  CHECK(e.error().message.find("'p'") != std::string::npos);
}

TEST_CASE("ir errors: a missing entry names it") {
  Error e = extract_error(kBase, "no_such_function");
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.entry == "no_such_function");
  CHECK(e.source.empty());
}

TEST_CASE("ir errors: a bad kiln_deferred names the job") {
  Error global = extract_error(data_file("bad_deferred_global.ll"), "bdg_parent");
  INFO(global.message);
  CHECK(global.code == Code::invalid_argument);
  CHECK(global.entry == "bdg_parent");

  const std::string two_args = R"(
declare ptr @kiln_deferred(ptr, ptr)
define void @child() {
  ret void
}
define ptr @parent() {
  %p = call ptr @kiln_deferred(ptr @child, ptr @child)
  ret ptr %p
}
)";
  Error arity = extract_error(two_args, "parent");
  INFO(arity.message);
  CHECK(arity.entry == "parent");
  CHECK(arity.line == 0); // no debug location
  CHECK(arity.source.empty());
}

TEST_CASE("ir errors: a bad kiln_deferred with a debug location carries its file and line") {
  // The error is about the job of `root`, which reaches `parent`.
  const std::string ir = R"(
declare ptr @kiln_deferred(ptr)
@g = global i64 0

define ptr @parent() !dbg !4 {
  %p = call ptr @kiln_deferred(ptr @g), !dbg !7
  ret ptr %p
}

define ptr @root() {
  %p = call ptr @parent()
  ret ptr %p
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C99, file: !1, producer: "t", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "parent.c", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = distinct !DISubprogram(name: "parent", scope: !1, file: !1, line: 10, type: !5, scopeLine: 10, spFlags: DISPFlagDefinition, unit: !0)
!5 = !DISubroutineType(types: !6)
!6 = !{null}
!7 = !DILocation(line: 12, column: 9, scope: !4)
)";
  Error e = extract_error(ir, "root");
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.entry == "root");
  CHECK(e.source == "parent.c");
  CHECK(e.line == 12);
  CHECK(e.column == 9);
  CHECK(e.message.find("at parent.c:12") != std::string::npos);
}

TEST_CASE("ir errors: another target's intrinsic names the job") {
  const std::string ir = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
define i32 @tid() {
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  ret i32 %t
}
)";
  Error e = extract_error(ir, "tid");
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.entry == "tid");
}
