// Deferred-reference semantics end to end: precompile each fixture with the
// real kiln-precompile, check the job graph it reports (--json), then load the
// root's image in-process through the C API and check what it computes.
#include "harness.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

using namespace kiln_it;

TEST_SUITE_BEGIN("integration.semantics");

TEST_CASE("nested: a deferred job that defers again (a -> b -> c)") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});

  CHECK(j["jobs"].size() == 3);
  CHECK(entries(j) == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  CHECK(keys(j).size() == 3);
  CHECK(statuses(j) == std::set<std::string>{"compiled"});
  CHECK(ref_keys(job(j, "nest_a")) == std::vector<std::string>{key(j, "nest_b")});
  CHECK(ref_keys(job(j, "nest_b")) == std::vector<std::string>{key(j, "nest_c")});
  CHECK(job(j, "nest_c")["refs"].empty());
  CHECK(root_names(j) == std::set<std::string>{"nest_a"});

  Image image(cache, "nest_a");
  CHECK(image.fn<I32Fn>("nest_a")(1) == 333);
  CHECK(image.fn<I32Fn>("nest_a")(0) == 330);
  // Any job of the closure can be looked up by its original entry name.
  CHECK(image.fn<I32Fn>("nest_b")(0) == 30);
  CHECK(image.fn<I32Fn>("nest_c")(7) == 21);
}

TEST_CASE("self-reference: factorial through its own deferred pointer") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "fact", data("self_recursive.ll")});

  REQUIRE(j["jobs"].size() == 1);
  const std::string fact = key(j, "fact");
  CHECK(ref_keys(job(j, "fact")) == std::vector<std::string>{fact});

  Image image(cache, "fact");
  auto f = image.fn<I32Fn>("fact");
  CHECK(f(1) == 1);
  CHECK(f(5) == 120);
  CHECK(f(10) == 3628800);
}

TEST_CASE("cycle: a -> b -> c -> a terminates at compile and run time") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});

  CHECK(j["jobs"].size() == 3);
  CHECK(keys(j).size() == 3);
  CHECK(ref_keys(job(j, "cyc_a")) == std::vector<std::string>{key(j, "cyc_b")});
  CHECK(ref_keys(job(j, "cyc_b")) == std::vector<std::string>{key(j, "cyc_c")});
  CHECK(ref_keys(job(j, "cyc_c")) == std::vector<std::string>{key(j, "cyc_a")});

  Image image(cache, "cyc_a");
  auto a = image.fn<I32Fn>("cyc_a");
  CHECK(a(0) == 1000);
  CHECK(a(3) == 1111);
  CHECK(a(4) == 2112);
  CHECK(image.fn<I32Fn>("cyc_b")(0) == 2000);
  CHECK(image.fn<I32Fn>("cyc_c")(2) == 2101);
}

TEST_CASE("cycle: every member as a root gives three jobs and three closures") {
  Cache cache;
  json one = precompile_ok(cache, {"--entry", "cyc_a", data("cycle.ll")});
  Cache other;
  json all = precompile_ok(other, {data("cycle.ll")});

  CHECK(root_names(all) == std::set<std::string>{"cyc_a", "cyc_b", "cyc_c"});
  CHECK(all["jobs"].size() == 3);
  // Job keys do not depend on which roots were asked for.
  CHECK(keys(all) == keys(one));
  // A closure is keyed by its root too: same members, three distinct keys.
  std::set<std::string> closures{closure(all, "cyc_a"), closure(all, "cyc_b"),
                                 closure(all, "cyc_c")};
  CHECK(closures.size() == 3);
  CHECK(closure(all, "cyc_a") == closure(one, "cyc_a"));

  Image image(other, "cyc_c");
  CHECK(image.fn<I32Fn>("cyc_c")(2) == 2101);
}

TEST_CASE("diamond: the shared child is one job referenced by one key") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});

  CHECK(j["jobs"].size() == 4);
  CHECK(keys(j).size() == 4);
  const std::string s = key(j, "dia_s"); // REQUIREs exactly one dia_s job
  CHECK(ref_keys(job(j, "dia_l")) == std::vector<std::string>{s});
  CHECK(ref_keys(job(j, "dia_r")) == std::vector<std::string>{s});
  std::vector<std::string> lr{key(j, "dia_l"), key(j, "dia_r")};
  std::sort(lr.begin(), lr.end());
  CHECK(ref_keys(job(j, "dia_root")) == lr);
  CHECK(job(j, "dia_s")["refs"].empty());

  Image image(cache, "dia_root");
  CHECK(image.fn<I32Fn>("dia_root")(5) == 1026);
  CHECK(image.fn<I32Fn>("dia_s")(21) == 42);
}

TEST_CASE("direct call and deferred reference to the same function") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "dd_root", data("direct_and_deferred.ll")});

  CHECK(j["jobs"].size() == 2);
  CHECK(entries(j) == std::set<std::string>{"dd_root", "dd_f"});
  CHECK(ref_keys(job(j, "dd_root")) == std::vector<std::string>{key(j, "dd_f")});

  Image image(cache, "dd_root");
  CHECK(image.fn<I32Fn>("dd_root")(1) == 8017);
  CHECK(image.fn<I32Fn>("dd_f")(0) == 7);
}

TEST_CASE("deferred reference inside an internal helper belongs to the entry's job") {
  Cache cache;
  // No --entry: every externally visible defined function is a root; the
  // internal helper is neither a root nor a job of its own.
  json j = precompile_ok(cache, {data("helper.ll")});

  CHECK(root_names(j) == std::set<std::string>{"hlp_child", "hlp_root"});
  CHECK(entries(j) == std::set<std::string>{"hlp_child", "hlp_root"});
  CHECK(j["jobs"].size() == 2); // hlp_child: a root and a deferred child, one job
  CHECK(ref_keys(job(j, "hlp_root")) == std::vector<std::string>{key(j, "hlp_child")});
  CHECK(job(j, "hlp_child")["refs"].empty());
  CHECK(closure(j, "hlp_root") != closure(j, "hlp_child"));

  Image image(cache, "hlp_root");
  CHECK(image.fn<I32Fn>("hlp_root")(4) == 23);
}

TEST_CASE("a global used by a parent and its deferred children is one object") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "glob_root", data("global_shared.ll")});

  CHECK(entries(j) == std::set<std::string>{"glob_root", "glob_child", "glob_get"});
  CHECK(j["jobs"].size() == 3);

  Image image(cache, "glob_root");
  auto root_fn = image.fn<VoidI32Fn>("glob_root");
  auto get = image.fn<VoidI32Fn>("glob_get");
  CHECK(get() == 0);
  CHECK(root_fn() == 2); // root's increment + child's increment, read by getter
  CHECK(root_fn() == 4);
  CHECK(get() == 4);
}

TEST_CASE("a chain of eight nested deferred jobs all run") {
  Cache cache;
  json j = precompile_ok(cache, {"--entry", "chain0", data("chain8.ll")});

  REQUIRE(j["jobs"].size() == 8);
  CHECK(keys(j).size() == 8);
  for (int i = 0; i < 7; ++i) {
    INFO("chain" << i);
    CHECK(ref_keys(job(j, "chain" + std::to_string(i))) ==
          std::vector<std::string>{key(j, "chain" + std::to_string(i + 1))});
  }
  CHECK(job(j, "chain7")["refs"].empty());

  Image image(cache, "chain0");
  CHECK(image.fn<I32Fn>("chain0")(1000) == 1255);
  CHECK(image.fn<I32Fn>("chain0")(0) == 255);
  CHECK(image.fn<I32Fn>("chain3")(0) == 248);
  CHECK(image.fn<I32Fn>("chain7")(0) == 128);
}

TEST_CASE("a child-only change recompiles only the child and changes the result") {
  Cache cache;
  json v1 = precompile_ok(cache, {"--entry", "chg_parent", data("change_v1.ll")});
  CHECK(statuses(v1) == std::set<std::string>{"compiled"});
  CHECK(v1["jobs"].size() == 2);

  Image image_v1(cache, "chg_parent");
  auto parent_v1 = image_v1.fn<I32Fn>("chg_parent");
  CHECK(parent_v1(5) == 12);

  json v2 = precompile_ok(cache, {"--entry", "chg_parent", data("change_v2.ll")});
  CHECK(v2["jobs"].size() == 2);
  CHECK(job(v2, "chg_parent")["status"] == "cached");
  CHECK(job(v2, "chg_child")["status"] == "compiled");
  CHECK(key(v2, "chg_parent") == key(v1, "chg_parent"));
  CHECK(key(v2, "chg_child") != key(v1, "chg_child"));
  // The parent's code names the child by a symbol derived from its identity,
  // not its body: same symbol, now resolved to the new child's key.
  auto refs_v1 = refs(job(v1, "chg_parent"));
  auto refs_v2 = refs(job(v2, "chg_parent"));
  REQUIRE(refs_v1.size() == 1);
  REQUIRE(refs_v2.size() == 1);
  CHECK(refs_v2.begin()->first == refs_v1.begin()->first);
  CHECK(refs_v2.begin()->second == key(v2, "chg_child"));
  CHECK(closure(v2, "chg_parent") != closure(v1, "chg_parent"));

  {
    // The name now means the latest precompile (v2).
    Image image_v2(cache, "chg_parent");
    CHECK(image_v2.fn<I32Fn>("chg_parent")(5) == 210);
    CHECK(image_v2.fn<I32Fn>("chg_child")(5) == 105);
    // Two images loaded at once stay independent.
    CHECK_MESSAGE(parent_v1(5) == 12, "the v1 image changed behaviour after v2 was loaded");
  }

  // The old closure is still loadable by its key.
  Image by_key(cache, closure(v1, "chg_parent"));
  CHECK(by_key.fn<I32Fn>("chg_parent")(5) == 12);

  // Precompiling v1 again compiles nothing and points the name back at v1.
  json again = precompile_ok(cache, {"--entry", "chg_parent", data("change_v1.ll")});
  CHECK(statuses(again) == std::set<std::string>{"cached"});
  CHECK(closure(again, "chg_parent") == closure(v1, "chg_parent"));
}

TEST_CASE("a unit of two files is linked before its jobs are found") {
  Cache cache;
  json j = precompile_ok(cache, {data("multi_a.ll"), data("multi_b.ll"), "--entry", "mf_root"});
  CHECK(entries(j) == std::set<std::string>{"mf_root", "mf_child"});
  CHECK(ref_keys(job(j, "mf_root")) == std::vector<std::string>{key(j, "mf_child")});

  Image image(cache, "mf_root");
  CHECK(image.fn<I32Fn>("mf_root")(10) == 28);
}

TEST_CASE("--entry and --target take exactly one value, even before several files") {
  // Pinned usage: [--entry NAME]... [--target SPEC]... FILE...
  Cache cache;
  json j = precompile_ok(
      cache, {"--entry", "mf_root", "--target", "host", data("multi_a.ll"), data("multi_b.ll")});
  CHECK(root_names(j) == std::set<std::string>{"mf_root"});
  Cache other;
  json k = precompile_ok(other, {"--target", "host", data("multi_a.ll"), data("multi_b.ll")});
  CHECK(root_names(k) == std::set<std::string>{"mf_root", "mf_child"});
}

TEST_CASE("without --entry every externally visible function is a root, jobs shared") {
  Cache cache;
  json j = precompile_ok(cache, {data("nested.ll")});

  CHECK(root_names(j) == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  CHECK(j["jobs"].size() == 3);
  std::set<std::string> closures{closure(j, "nest_a"), closure(j, "nest_b"), closure(j, "nest_c")};
  CHECK(closures.size() == 3);

  Image image(cache, "nest_b");
  CHECK(image.fn<I32Fn>("nest_b")(0) == 30);
}

TEST_CASE("a second precompile of the same unit reports every job cached") {
  Cache cache;
  json first = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  CHECK(statuses(first) == std::set<std::string>{"compiled"});
  json second = precompile_ok(cache, {"--entry", "dia_root", data("diamond.ll")});
  CHECK(second["jobs"].size() == 4);
  CHECK(statuses(second) == std::set<std::string>{"cached"});
  CHECK(normalized(second) == normalized(first));

  Image image(cache, "dia_root");
  CHECK(image.fn<I32Fn>("dia_root")(5) == 1026);
}

TEST_CASE("a deferred child precompiled later as a root reuses its cached jobs") {
  Cache cache;
  json a = precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});
  json b = precompile_ok(cache, {"--entry", "nest_b", data("nested.ll")});
  CHECK(entries(b) == std::set<std::string>{"nest_b", "nest_c"});
  CHECK(statuses(b) == std::set<std::string>{"cached"});
  CHECK(key(b, "nest_b") == key(a, "nest_b"));
  CHECK(key(b, "nest_c") == key(a, "nest_c"));

  Image image(cache, "nest_b");
  CHECK(image.fn<I32Fn>("nest_b")(1) == 33);
}

TEST_CASE("optimization level is part of the job key") {
  Cache cache;
  json o0 = precompile_ok(cache, {"-O", "0", "--entry", "nest_a", data("nested.ll")});
  json o2 = precompile_ok(cache, {"-O", "2", "--entry", "nest_a", data("nested.ll")});
  CHECK(statuses(o2) == std::set<std::string>{"compiled"});
  for (const char* e : {"nest_a", "nest_b", "nest_c"}) {
    INFO(e);
    CHECK(key(o0, e) != key(o2, e));
  }
  CHECK(closure(o0, "nest_a") != closure(o2, "nest_a"));

  Image image0(cache, closure(o0, "nest_a"));
  CHECK(image0.fn<I32Fn>("nest_a")(1) == 333);
  Image image2(cache, closure(o2, "nest_a"));
  CHECK(image2.fn<I32Fn>("nest_a")(1) == 333);
}

TEST_CASE("C API: unknown root and unknown function are KILN_NOT_FOUND") {
  Cache cache;
  precompile_ok(cache, {"--entry", "nest_a", data("nested.ll")});

  kiln_cache* c = nullptr;
  REQUIRE(kiln_cache_open(cache.db().c_str(), &c) == KILN_OK);
  kiln_image* missing = nullptr;
  CHECK(kiln_image_load(c, "nosuch_root", "host", &missing) == KILN_NOT_FOUND);
  CHECK(std::string(kiln_last_error()).find("nosuch_root") != std::string::npos);

  kiln_image* image = nullptr;
  REQUIRE(kiln_image_load(c, "nest_a", "host", &image) == KILN_OK);
  kiln_cache_close(c); // images stay valid after the cache is closed
  void* address = nullptr;
  CHECK(kiln_image_lookup(image, "nosuch_fn", &address) == KILN_NOT_FOUND);
  REQUIRE(kiln_image_lookup(image, "nest_a", &address) == KILN_OK);
  I32Fn f;
  std::memcpy(&f, &address, sizeof f);
  CHECK(f(1) == 333);
  kiln_image_release(image);
}

TEST_CASE("both tools' --help document the exit statuses") {
  for (const fs::path& tool : {precompile_bin(), inspect_bin()}) {
    CAPTURE(tool);
    RunResult r = run({tool.string(), "--help"});
    REQUIRE_MESSAGE(r.exit_code == 0, describe(r));
    CHECK(r.out.find("Exit status: 0 success; 1 ") != std::string::npos);
    CHECK(r.out.find("2 usage or input error") != std::string::npos);
    CHECK(r.out.find("--read-only") != std::string::npos);
  }
}

TEST_SUITE_END();
