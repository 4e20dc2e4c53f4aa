// Names that never change meaning by accident: a root that fails keeps its
// name where it was; a name moved to another closure is reported (stderr and
// --json) with both closures and the units they came from; `kiln-inspect
// show` prints the unit a name came from.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <fstream>

using namespace kiln_it;

namespace {

// change_v1.ll with chg_child's body made uncompilable (an unknown
// instruction in inline asm): the file parses, the child's job fails.
std::string broken_child(const TempDir& dir) {
  std::ifstream in(data("change_v1.ll"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string from = "  %r = add i32 %x, 1\n";
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(),
               "  %a = call i32 asm sideeffect \"not_an_instruction $0\", \"=r\"()\n"
               "  %r = add i32 %x, %a\n");
  std::string path = (dir.path() / "change_broken.ll").string();
  std::ofstream(path) << text;
  return path;
}

const json& root_of(const json& j, const std::string& name) {
  for (const json& r : j["roots"])
    if (r["name"] == name)
      return r;
  FAIL("no root " << name);
  static json none;
  return none;
}

std::string closure_named(const Cache& cache, const std::string& name) {
  RunResult r = inspect(cache, {"show", name, "--json"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  return json::parse(r.out)["closure"].get<std::string>();
}

} // namespace

TEST_SUITE_BEGIN("integration.names");

TEST_CASE("a root that fails keeps its name on the closure it named before") {
  Cache cache;
  TempDir dir;
  json v1 = precompile_ok(cache, {data("change_v1.ll")});
  std::string before = root_of(v1, "chg_parent")["closure"];
  REQUIRE(closure_named(cache, "chg_parent") == before);

  RunResult broken = precompile(cache, {broken_child(dir)});
  INFO(describe(broken));
  json b = json::parse(broken.out, nullptr, false);
  REQUIRE(!b.is_discarded());
  CHECK(root_of(b, "chg_parent").contains("error"));
  CHECK_FALSE(root_of(b, "chg_parent").contains("name_moved"));
  CHECK(broken.err.find("moved from closure") == std::string::npos);

  CHECK(closure_named(cache, "chg_parent") == before);
  Image image(cache, "chg_parent");
  CHECK(image.fn<I32Fn>("chg_parent")(5) == 12); // still v1's
}

TEST_CASE("a name moved to another closure is reported with both closures and units") {
  Cache cache;
  json v1 = precompile_ok(cache, {data("change_v1.ll")});
  std::string old_closure = root_of(v1, "chg_parent")["closure"];
  CHECK_FALSE(root_of(v1, "chg_parent").contains("name_moved")); // a new name moves nothing

  RunResult again = precompile(cache, {data("change_v1.ll")});
  INFO(describe(again));
  REQUIRE(again.exit_code == 0);
  CHECK(again.err.find("moved from closure") == std::string::npos); // the same closure

  RunResult v2 = precompile(cache, {data("change_v2.ll")});
  INFO(describe(v2));
  REQUIRE(v2.exit_code == 0);
  json j = json::parse(v2.out);
  const json& root = root_of(j, "chg_parent");
  std::string new_closure = root["closure"];
  REQUIRE(new_closure != old_closure);
  REQUIRE(root.contains("name_moved"));
  const json& moved = root["name_moved"];
  CHECK(moved["name"] == "chg_parent");
  CHECK(moved["target"] == "host");
  CHECK(moved["old_closure"] == old_closure);
  CHECK(moved["new_closure"] == new_closure);
  CHECK(moved["old_unit"] == data("change_v1.ll"));
  CHECK(moved["new_unit"] == data("change_v2.ll"));
  CHECK(v2.err.find("name chg_parent (host) moved from closure " + old_closure + " (unit " +
                    data("change_v1.ll") + ") to " + new_closure + " (unit " +
                    data("change_v2.ll") + ")") != std::string::npos);
  CHECK(closure_named(cache, "chg_parent") == new_closure);

  // v1 again: its request memo answers without compiling, and moving the
  // name back is reported all the same.
  RunResult back = precompile(cache, {data("change_v1.ll")});
  INFO(describe(back));
  REQUIRE(back.exit_code == 0);
  json b = json::parse(back.out);
  CHECK(b["memo"] == true);
  const json& back_root = root_of(b, "chg_parent");
  REQUIRE(back_root.contains("name_moved"));
  CHECK(back_root["name_moved"]["old_closure"] == new_closure);
  CHECK(back_root["name_moved"]["new_closure"] == old_closure);
  CHECK(back_root["name_moved"]["old_unit"] == data("change_v2.ll"));
  CHECK(back.err.find("moved from closure " + new_closure) != std::string::npos);
  CHECK(closure_named(cache, "chg_parent") == old_closure);
}

TEST_CASE("kiln-inspect show prints the unit a name came from") {
  Cache cache;
  precompile_ok(cache, {data("change_v1.ll"), data("nested.ll")});
  RunResult text = inspect(cache, {"show", "nest_a"});
  INFO(describe(text));
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("unit        " + data("change_v1.ll") + ", " + data("nested.ll") + "\n") !=
        std::string::npos);
  RunResult js = inspect(cache, {"show", "nest_a", "--json"});
  INFO(describe(js));
  REQUIRE(js.exit_code == 0);
  CHECK(json::parse(js.out)["unit"] == data("change_v1.ll") + ", " + data("nested.ll"));
}

TEST_SUITE_END();
