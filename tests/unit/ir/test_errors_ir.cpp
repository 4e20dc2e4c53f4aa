// Unit tests for the fields of IR errors (src/ir/unit.cpp, src/ir/extract.cpp):
// a parse error carries its input, line and column, a link error its input,
// an extraction error its entry and, where the IR has one, its debug location.
#include "ir_fixtures.hpp"

#include <string>

using namespace kiln;
using namespace kiln::test;

namespace {

Error ingest_error(const std::vector<ir::Input>& inputs) {
  llvm::LLVMContext ctx;
  auto r = ir::ingest(ctx, inputs);
  REQUIRE_FALSE(r);
  return r.error();
}

Error extract_error(const std::string& ir, const std::string& entry) {
  auto r = extract(ir, entry);
  REQUIRE_FALSE(r);
  return r.error();
}

} // namespace

TEST_CASE("ir errors: a syntax error carries the input, line and column") {
  Error e = ingest_error({{"bad.ll", "define i64 @f() {\n  ret i64 %nope\n}\n", true}});
  INFO(e.message);
  CHECK(e.code == Code::invalid_argument);
  CHECK(e.source == "bad.ll");
  CHECK(e.line == 2);
  CHECK(e.column == 11); // at %nope
  // The fields say what the message says.
  CHECK(e.message.find("bad.ll:2:11:") != std::string::npos);
  CHECK(e.entry.empty());
  CHECK(e.target.empty());

  // The second of two inputs: its own name and line.
  Error second = ingest_error({{"a.ll", "define i32 @g() {\n  ret i32 1\n}\n", true},
                               {"b.ll", "\n\ndefine i32 @h() {\n  ret i32 %nope\n}\n", true}});
  INFO(second.message);
  CHECK(second.source == "b.ll");
  CHECK(second.line == 4);
  CHECK(second.column == 11);
}

TEST_CASE("ir errors: a file's syntax error carries its path") {
  std::string path = kData + "/bad_syntax.ll";
  Error e = ingest_error({{path, {}, false}});
  INFO(e.message);
  CHECK(e.source == path);
  CHECK(e.line == 13);
  CHECK(e.message.find(":13:") != std::string::npos);
}

TEST_CASE("ir errors: an unreadable file, bad bitcode and a failed link name the input only") {
  std::string missing = kData + "/does_not_exist.ll";
  Error unread = ingest_error({{missing, {}, false}});
  CHECK(unread.source == missing);
  CHECK(unread.line == 0);
  CHECK(unread.column == 0);

  Error bitcode = ingest_error({{"broken.bc", std::string("BC\xC0\xDE\x01\x02\x03", 7), true}});
  INFO(bitcode.message);
  CHECK(bitcode.source == "broken.bc");
  CHECK(bitcode.line == 0);
  CHECK(bitcode.column == 0);

  Error link = ingest_error({{"one.ll", "define i32 @f() {\n  ret i32 1\n}\n", true},
                             {"two.ll", "define i32 @f() {\n  ret i32 2\n}\n", true}});
  INFO(link.message);
  CHECK(link.message.find("cannot link 'two.ll'") != std::string::npos);
  CHECK(link.source == "two.ll");
  CHECK(link.line == 0);
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
