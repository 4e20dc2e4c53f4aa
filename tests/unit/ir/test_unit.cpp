// Unit tests for ingest (src/ir/unit.cpp): parsing and linking a unit, and
// the fields of its errors (a parse error carries its input, line and column,
// a link error its input).
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

Error ingest_error(const std::vector<ir::Input>& inputs) {
  llvm::LLVMContext ctx;
  auto r = ir::ingest(ctx, inputs);
  REQUIRE_FALSE(r);
  return r.error();
}

} // namespace

TEST_CASE("ingest: a syntax error names the input and the line") {
  llvm::LLVMContext ctx;
  std::string ir = "define i32 @ok(i32 %x) {\n  ret i32 %x\n}\n\ndefine i32 @bad(i32 %x) {\n"
                   "  %r = add i33x %x, 1\n  ret i32 %r\n}\n";
  auto r = ir::ingest(ctx, {{"memory_unit.ll", ir, true}});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::invalid_argument);
  INFO(r.error().message);
  CHECK(r.error().message.find("memory_unit.ll") != std::string::npos);
  CHECK(r.error().message.find(":6:") != std::string::npos);

  std::string path = kData + "/bad_syntax.ll";
  auto f = ir::ingest(ctx, {{path, {}, false}});
  REQUIRE_FALSE(f);
  CHECK(f.error().code == Code::invalid_argument);
  INFO(f.error().message);
  CHECK(f.error().message.find("bad_syntax.ll") != std::string::npos);
  CHECK(f.error().message.find(":13:") != std::string::npos);

  auto missing = ir::ingest(ctx, {{kData + "/does_not_exist.ll", {}, false}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::invalid_argument);
  CHECK(missing.error().message.find("does_not_exist.ll") != std::string::npos);

  auto none = ir::ingest(ctx, {});
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::invalid_argument);
}

TEST_CASE("ingest links several inputs into one unit; exported_functions lists roots") {
  llvm::LLVMContext ctx;
  auto u = ir::ingest(ctx, {{kData + "/multi_a.ll", {}, false}, {kData + "/multi_b.ll", {}, false}});
  INFO((u ? std::string() : u.error().message));
  REQUIRE(u);
  auto roots = ir::exported_functions(**u);
  CHECK(std::find(roots.begin(), roots.end(), "mf_root") != roots.end());
  CHECK(std::find(roots.begin(), roots.end(), "mf_child") != roots.end());
  CHECK(std::find(roots.begin(), roots.end(), "kiln_deferred") == roots.end());

  llvm::LLVMContext ctx2;
  auto h = ir::ingest(ctx2, {{kData + "/helper.ll", {}, false}});
  REQUIRE(h);
  auto hr = ir::exported_functions(**h);
  CHECK(std::find(hr.begin(), hr.end(), "hlp_helper") == hr.end()); // internal
  CHECK(std::find(hr.begin(), hr.end(), "hlp_root") != hr.end());
}

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
