// Kernel libraries: a request's roots recorded under one name and loaded as
// one image (kiln_library_load), through the compiler's report, the store,
// the memo, gc and verify; the C, C++ and ELF views of the image agree.
#include "fixtures/cache.hpp"

#include "core/keys.h"
#include "core/target.h"
#include "support/elf.h"
#include "support/fault.h"

#include <kiln/compiler.hpp>
#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <set>
#include <string>

using namespace kiln;
using namespace kiln::test;

namespace {

using IntFn = int (*)(int);

CompileReport compile_library(const std::string& path, std::vector<std::string> entries,
                              std::vector<std::string> targets = {}) {
  CompileRequest req = data_request("nested.ll", std::move(entries), std::move(targets));
  req.library = "nest";
  auto r = compile(req, path);
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  REQUIRE(r->ok());
  return r.take();
}

} // namespace

TEST_CASE("library: the roots load as one image and every root is found by its name") {
  TestCache c = empty_cache("kiln-library");
  CompileReport rep = compile_library(c.path(), {"nest_a", "nest_b", "nest_c"});
  REQUIRE(rep.libraries.size() == 1);
  const LibraryReport& lib = rep.libraries[0];
  CHECK(lib.name == "nest");
  CHECK(lib.target == "host");
  CHECK(lib.roots == 3);
  CHECK(lib.members == 3); // nest_a's closure holds the other two: each job once
  CHECK(lib.image);
  CHECK(lib.error.empty());

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  kiln_status st = kiln_library_load(cache, "nest", "host", &img);
  INFO(kiln_last_error());
  REQUIRE(st == KILN_OK);
  void *a = nullptr, *b = nullptr, *cf = nullptr;
  REQUIRE(kiln_image_lookup(img, "nest_a", &a) == KILN_OK);
  REQUIRE(kiln_image_lookup(img, "nest_b", &b) == KILN_OK);
  REQUIRE(kiln_image_lookup(img, "nest_c", &cf) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(a)(1) == 333);
  CHECK(reinterpret_cast<IntFn>(cf)(7) == 21);
  // The library's closure is a closure: loadable by key, the same image.
  kiln_image* by_key = nullptr;
  REQUIRE(kiln_image_load(cache, lib.closure.c_str(), "host", &by_key) == KILN_OK);
  kiln_image_release(by_key);
  kiln_image_release(img);
  // No target: the best match, as for a root.
  REQUIRE(kiln_library_load(cache, "nest", nullptr, &img) == KILN_OK);
  CHECK(std::string(kiln_image_target(img)) == "host");
  kiln_image_release(img);
  CHECK(kiln_library_load(cache, "no-such-library", "host", &img) == KILN_NOT_FOUND);
  CHECK(std::string(kiln_last_error()).find("no-such-library") != std::string::npos);
  CHECK(kiln_library_load(cache, nullptr, "host", &img) == KILN_INVALID_ARGUMENT);
  kiln_cache_close(cache);

  // C++: the same image.
  auto cpp = Cache::open(c.path());
  REQUIRE(cpp);
  auto image = cpp->load_library("nest", "host");
  REQUIRE(image);
  auto fb = image->function<int(int)>("nest_b");
  REQUIRE(fb);
  auto fa = image->function<int(int)>("nest_a");
  REQUIRE(fa);
  CHECK((*fa)(1) == 333);
  CHECK(!cpp->load_library("nest", "sm_90"));

  // The store lists it with its roots; verify finds nothing wrong.
  c.open();
  auto libs = c.store->images().list_libraries();
  REQUIRE(libs);
  REQUIRE(libs->size() == 1);
  CHECK((*libs)[0].roots == std::vector<std::string>{"nest_a", "nest_b", "nest_c"});
  auto problems = c.store->verify();
  REQUIRE(problems);
  CHECK(problems->empty());
}

TEST_CASE("library: the same roots give the same closure in any order and by the memo; other "
          "roots another") {
  TestCache c = empty_cache("kiln-library");
  CompileReport first = compile_library(c.path(), {"nest_b", "nest_c"});
  CompileReport again = compile_library(c.path(), {"nest_b", "nest_c"});
  CHECK(again.memo_hit);
  REQUIRE(again.libraries.size() == 1);
  CHECK(again.libraries[0].closure == first.libraries[0].closure);
  CHECK(again.libraries[0].image);
  CompileReport reordered = compile_library(c.path(), {"nest_c", "nest_b"});
  CHECK(reordered.libraries[0].closure == first.libraries[0].closure);
  CompileReport more = compile_library(c.path(), {"nest_a", "nest_b", "nest_c"});
  CHECK(more.libraries[0].closure != first.libraries[0].closure);
  // The name now holds the newer roots.
  c.open();
  auto lib = c.store->images().get_library("nest", "host");
  REQUIRE(lib);
  CHECK(lib->closure.hex() == more.libraries[0].closure);
  CHECK(lib->roots.size() == 3);
}

TEST_CASE("library: roots named with a newline round-trip as written and each loads") {
  // Root names are rows: "x\ny" and "z" are two roots, not the three that
  // newline-joined text would give back.
  TestCache c = empty_cache("kiln-library");
  CompileRequest req;
  req.inputs = {SourceInput::memory(
      "odd.ll", "define i32 @\"x\\0Ay\"(i32 %a) {\n  %b = add i32 %a, 5\n  ret i32 %b\n}\n"
                "define i32 @z(i32 %a) {\n  %b = mul i32 %a, 7\n  ret i32 %b\n}\n")};
  req.library = "odd";
  req.remote = "off";
  auto r = compile(req, c.path());
  INFO((r ? std::string() : r.error().message));
  REQUIRE(r);
  REQUIRE(r->ok());
  REQUIRE(r->libraries.size() == 1);
  CHECK(r->libraries[0].roots == 2);
  CHECK(r->libraries[0].image);

  c.open();
  auto lib = c.store->images().get_library("odd", "host");
  REQUIRE(lib);
  CHECK(lib->roots == std::vector<std::string>{"x\ny", "z"});
  auto listed = c.store->images().list_libraries("odd");
  REQUIRE(listed);
  REQUIRE(listed->size() == 1);
  CHECK((*listed)[0].roots == lib->roots);
  c.store.reset();

  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  kiln_status st = kiln_library_load(cache, "odd", "host", &img);
  INFO(kiln_last_error());
  REQUIRE(st == KILN_OK);
  void *x = nullptr, *z = nullptr;
  REQUIRE(kiln_image_lookup(img, "x\ny", &x) == KILN_OK);
  REQUIRE(kiln_image_lookup(img, "z", &z) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(x)(1) == 6);
  CHECK(reinterpret_cast<IntFn>(z)(3) == 21);
  kiln_image_release(img);
  kiln_cache_close(cache);

  // A damaged closure key is corrupt, naming the library.
  CHECK(raw_exec(c.path(), "UPDATE libraries SET closure_key = x'0011'") == 1);
  c.open();
  auto bad = c.store->images().get_library("odd", "host");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Code::corrupt);
  CHECK(bad.error().message.find("'odd'") != std::string::npos);
}

TEST_CASE("library: two roots that bring different code under one symbol are refused") {
  core::ClosureRecord a, b;
  a.key = hash128(std::string("a"));
  a.target = b.target = "sm_90";
  b.key = hash128(std::string("b"));
  a.members = {{"_Z1kv", hash128(std::string("job1")), "_Z1kv"}};
  b.members = {{"_Z1kv", hash128(std::string("job2")), "_Z1kv"}};
  auto both = core::library_closure({a, b});
  REQUIRE(!both);
  CHECK(both.error().code == Code::invalid_argument);
  CHECK(both.error().message.find("_Z1kv") != std::string::npos);
  // The same job under the same symbol is one member.
  b.members = a.members;
  auto same = core::library_closure({a, b});
  REQUIRE(same);
  CHECK(same->members.size() == 1);
  b.target = "host";
  CHECK(!core::library_closure({a, b}));
  CHECK(!core::library_closure({}));
}

TEST_CASE("library: an NVIDIA library is one cubin holding every kernel under its source name") {
  TestCache c = empty_cache("kiln-library");
  CompileRequest req = data_request("gpu_nvptx.ll", {}, {"sm_90"});
  req.library = "kernels";
  auto r = compile(req, c.path());
  REQUIRE(r);
  if (!r->ok() || r->libraries.empty() || !r->libraries[0].image) {
    std::string why = r->libraries.empty() ? "no library" : r->libraries[0].note;
    MESSAGE("skipped: no NVIDIA linker here: " << why);
    return;
  }
  c.open();
  auto lib = c.store->images().get_library("kernels", "sm_90");
  REQUIRE(lib);
  CHECK(lib->roots.size() == 3);
  auto images = c.store->images().images_of(lib->closure);
  REQUIRE(images);
  REQUIRE(images->size() == 1);
  auto elf = read_elf((*images)[0].bytes);
  REQUIRE(elf);
  std::set<std::string> defined;
  for (const ElfSymbol& s : elf->symbols)
    if (s.defined)
      defined.insert(s.name);
  for (const char* k : {"k_nested", "k_fact", "k_cycle"})
    CHECK_MESSAGE(defined.count(k), k);
}

TEST_CASE("library: gc removes a library with its closure") {
  TestCache c = empty_cache("kiln-library");
  compile_library(c.path(), {"nest_b"});
  c.open();
  REQUIRE(c.store->images().list_libraries()->size() == 1);
  storage::GcOptions gc;
  gc.max_size = 0;
  REQUIRE(c.store->upkeep().gc(gc));
  CHECK(c.store->images().list_libraries()->empty());
  auto problems = c.store->verify();
  REQUIRE(problems);
  CHECK(problems->empty());
}

namespace {

// A root loaded by name through the C API: its function's value at `x`, and
// whether the load linked (the handle's image_misses).
int root_value(const std::string& path, const char* root, int x, int64_t* linked = nullptr) {
  kiln_cache* cache = nullptr;
  REQUIRE(kiln_cache_open(path.c_str(), &cache) == KILN_OK);
  kiln_image* img = nullptr;
  kiln_status st = kiln_image_load(cache, root, "host", &img);
  INFO(root << ": " << kiln_last_error());
  REQUIRE(st == KILN_OK);
  void* f = nullptr;
  REQUIRE(kiln_image_lookup(img, root, &f) == KILN_OK);
  int v = reinterpret_cast<IntFn>(f)(x);
  kiln_image_release(img);
  kiln_cache_close(cache);
  if (linked) {
    auto store = open_store(path);
    auto s = store->upkeep().stats();
    REQUIRE(s);
    *linked = s->counters.image_misses;
  }
  return v;
}

int64_t image_rows(const std::string& path) {
  auto store = open_store(path);
  auto s = store->upkeep().stats();
  REQUIRE(s);
  return s->images;
}

} // namespace

TEST_CASE("library: its one image serves its roots, which are not linked one by one") {
  TestCache c = empty_cache("kiln-library");
  CompileReport rep = compile_library(c.path(), {"nest_a", "nest_b", "nest_c"});
  for (const RootReport& r : rep.roots)
    CHECK_MESSAGE(r.image, r.name); // the library's image holds it

  CHECK(image_rows(c.path()) == 1);
  // Each root loads by name from the library's image, linking nothing.
  int64_t linked = -1;
  CHECK(root_value(c.path(), "nest_a", 1, &linked) == 333);
  CHECK(linked == 0);
  CHECK(root_value(c.path(), "nest_c", 7, &linked) == 21);
  CHECK(linked == 0);
  // A root's load marks the library used too: gc keeps the image that
  // serves it for as long as its roots are loaded.
  raw_exec(c.path(), "UPDATE closures SET last_used = 1");
  root_value(c.path(), "nest_b", 1);
  CHECK(image_rows(c.path()) == 1); // statistics take in the loads noted beside the file
  CHECK(raw_exec(c.path(), "UPDATE closures SET last_used = last_used WHERE last_used > 1 AND "
                           "key = x'" + rep.libraries[0].closure + "'") == 1);
  // The memo's answer is the same, and links nothing either.
  CompileReport again = compile_library(c.path(), {"nest_a", "nest_b", "nest_c"});
  CHECK(again.memo_hit);
  for (const RootReport& r : again.roots)
    CHECK_MESSAGE(r.image, r.name);
  CHECK(image_rows(c.path()) == 1);
  // Without the library's image, a root links its own at load, and keeps it.
  raw_exec(c.path(), "DELETE FROM images");
  CHECK(root_value(c.path(), "nest_b", 1, &linked) == root_value(c.path(), "nest_b", 1));
  CHECK(linked == 1);
  CHECK(image_rows(c.path()) == 1);
}

TEST_CASE("library: a library serves only closures whose every member it holds") {
  // v1's parent and child as one library; then v2 changes the child, so the
  // parent's new closure has the same root job but another child: v1's
  // library must not serve it.
  TestCache c = empty_cache("kiln-library");
  CompileRequest v1 = data_request("change_v1.ll", {"chg_parent", "chg_child"});
  v1.library = "chg";
  auto r1 = compile(v1, c.path());
  REQUIRE(r1);
  REQUIRE(r1->ok());
  CHECK(root_value(c.path(), "chg_parent", 5) == 12);
  CompileRequest v2 = data_request("change_v2.ll", {"chg_parent"});
  v2.link_images = false; // its closure has no image of its own
  auto r2 = compile(v2, c.path());
  REQUIRE(r2);
  REQUIRE(r2->ok());
  CHECK(r2->roots[0].closure != r1->roots[0].closure);
  int64_t linked = -1;
  CHECK(root_value(c.path(), "chg_parent", 5, &linked) == 210);
  CHECK(linked == 1); // linked for v2, not served by v1's library
  // A closure that is not a library does not serve another either: v1's
  // parent closure (holding the child) for the child's own closure.
  raw_exec(c.path(), "DELETE FROM libraries");
  raw_exec(c.path(), "DELETE FROM images WHERE closure_key = x'" + r1->roots[1].closure + "'");
  auto k = parse_hash128(r1->roots[1].closure);
  REQUIRE(k);
  auto store = open_store(c.path());
  auto served = store->images().get_image_any_linker(*k, core::image_arch("host"));
  CHECK_FALSE(served);
}

TEST_CASE("library: when the library's link fails, its roots are linked one by one") {
  TestCache c = empty_cache("kiln-library");
  fault::set_plan("link:host:1"); // the first link of this process: the library's
  CompileRequest req = data_request("nested.ll", {"nest_a", "nest_b", "nest_c"});
  req.library = "nest";
  auto r = compile(req, c.path());
  fault::set_plan("");
  REQUIRE(r);
  for (const RootReport& root : r->roots) {
    CHECK_MESSAGE(root.image, root.name);
    CHECK_MESSAGE(root.error.empty(), root.error);
  }
  CHECK(root_value(c.path(), "nest_a", 1) == 333);
  CHECK(root_value(c.path(), "nest_c", 7) == 21);
}
