// Unit tests for the fields of the embedding API's errors
// (src/api/compiler_c_api.cpp, include/kiln/jit.hpp): compile-or-load passes
// on the fields of where an error arose and names the root it was loading,
// and error_info is a copy of the fields.
#include "ir_fixtures.hpp"

#include "support/fault.h"

#include <kiln/jit.hpp>

#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Fixture {
  TempDir dir = [] {
    auto d = TempDir::create("kiln-api-errors");
    REQUIRE(d);
    return d.take();
  }();
  Cache cache = [this] {
    auto c = Cache::open(dir.path() + "/kiln.db");
    REQUIRE(c);
    return c.take();
  }();

  Error fails(const std::string& ir, const std::string& entry, const std::string& target = "host") {
    std::vector<Source> sources{{"unit.ll", ir}};
    auto r = compile_or_load(cache, sources, entry, target);
    REQUIRE_FALSE(r);
    return r.error();
  }
};

} // namespace

TEST_CASE("api errors: error_info is a copy of the fields") {
  Error e = make_error(Code::not_found, "m")
                .with_entry("e")
                .with_target("t")
                .at("s", 3, 4)
                .with_job("0123456789abcdef0123456789abcdef");
  ErrorInfo i = error_info(e);
  CHECK(i.code == Code::not_found);
  CHECK(i.message == "m");
  CHECK(i.entry == "e");
  CHECK(i.target == "t");
  CHECK(i.source == "s");
  CHECK(i.line == 3);
  CHECK(i.column == 4);
  CHECK(i.job == "0123456789abcdef0123456789abcdef");

  // Nothing is read from the message any more.
  ErrorInfo text = error_info(
      make_error(Code::invalid_argument, "unit.ll:2:3: error: in job 'f' for target sm_90"));
  CHECK(text.source.empty());
  CHECK(text.line == 0);
  CHECK(text.entry.empty());
  CHECK(text.target.empty());
}

TEST_CASE("api errors: compile_or_load's input errors carry their fields") {
  Fixture f;
  Error syntax = f.fails("define i64 @f() {\n  ret i64 %nope\n}\n", "f");
  CHECK(syntax.code == Code::invalid_argument);
  CHECK(syntax.source == "unit.ll");
  CHECK(syntax.line == 2);
  CHECK(syntax.column == 11);

  Error target = f.fails(kBase, "f", "sm_1");
  CHECK(target.code == Code::invalid_argument);
  CHECK(target.target == "sm_1");

  Error entry = f.fails(kBase, "no_such_function");
  CHECK(entry.code == Code::invalid_argument);
  CHECK(entry.entry == "no_such_function");

  Error deferred = f.fails(data_file("bad_deferred_global.ll"), "bdg_parent");
  CHECK(deferred.entry == "bdg_parent");
  CHECK(deferred.target == "host");
}

TEST_CASE("api errors: a job that fails names its entry, target and key") {
  Fixture f;
  // Every write to the cache fails from here on: the job compiles but
  // cannot be stored, so it fails.
  fault::set_plan("sqlite-write");
  std::vector<Source> sources{{"unit.ll", kBase}};
  auto r = compile_or_load(f.cache, sources, "f", "host");
  fault::set_plan("");
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().entry == "f");
  CHECK(r.error().target == "host");
  CHECK(is_hash128_hex(r.error().job));
  CHECK(r.error().message.find("(" + r.error().job + ")") != std::string::npos);
}

TEST_CASE("api errors: an image that cannot load here names its root") {
  if (present_target() != "host")
    return; // a GPU is present: the image loads
  Fixture f;
  std::string ir = data_file("gpu_nvptx.ll"); // the sources are views
  std::vector<Source> sources{{"gpu_nvptx.ll", ir}};
  auto r = compile_or_load(f.cache, sources, "k_nested", "sm_90");
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().code == Code::unavailable);
  CHECK(r.error().entry == "k_nested");
  CHECK(r.error().target == "sm_90");
}
