// Unit tests for ingest (src/ir/unit.cpp): parsing and linking a unit.
#include "ir_fixtures.hpp"

#include <kiln/compiler.hpp>

#include <llvm/IR/Function.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

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
