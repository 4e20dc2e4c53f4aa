// Unit tests for the loader's C API and its C++ wrapper (src/runtime/c_api.cpp)
// over a real cache: NULL arguments are invalid_argument with
// kiln_last_error set, a root loads by name and by closure key and its
// functions run, an unknown root or function is not_found, each status has
// its name, errors are per thread, and a closed handle leaves its usage in
// the cache. Misuse: a handle closed, released or never made is refused with
// invalid_argument, whichever entry point is given it, and "" is no path.
#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"

#include <kiln/kiln.h>
#include <kiln/kiln.hpp>

#include <doctest/doctest.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <thread>

using namespace kiln;
using namespace kiln::test;

namespace {

// nested.ll's nest_a (nest_a(x) = ((x + 100) + 10) * 3) precompiled for the
// host; with `link` its image is stored too.
TestCache compiled(bool link) { return nested_cache("kiln-c-api-test", link); }

kiln_cache* open_ok(const std::string& path) {
  kiln_cache* cache = nullptr;
  kiln_status st = kiln_cache_open(path.c_str(), &cache);
  INFO(kiln_last_error());
  REQUIRE(st == KILN_OK);
  REQUIRE(cache);
  return cache;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string last_error() { return kiln_last_error(); }

using IntFn = int (*)(int);

} // namespace

TEST_CASE("c_api: NULL arguments are invalid_argument and say which call") {
  TestCache c = compiled(false);
  kiln_cache* cache = open_ok(c.path());

  CHECK(kiln_cache_open(c.path().c_str(), nullptr) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_cache_open"));
  CHECK(contains(last_error(), "NULL"));
  // Flags it does not know are refused, and the handle out is cleared, as
  // at every other failure.
  kiln_cache* refused = reinterpret_cast<kiln_cache*>(0x1);
  CHECK(kiln_cache_open_flags(c.path().c_str(), 0x80, &refused) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "unknown flags"));
  CHECK(refused == nullptr);

  kiln_image* img = reinterpret_cast<kiln_image*>(0x1);
  CHECK(kiln_image_load(nullptr, "nest_a", "host", &img) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_image_load"));
  CHECK(kiln_image_load(cache, nullptr, "host", &img) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_image_load(cache, "nest_a", "host", nullptr) == KILN_INVALID_ARGUMENT);
  // An empty name is no name either.
  img = nullptr;
  CHECK(kiln_image_load(cache, "", "host", &img) == KILN_INVALID_ARGUMENT);
  CHECK(img == nullptr);

  REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  void* fn = reinterpret_cast<void*>(0x1);
  CHECK(kiln_image_lookup(nullptr, "nest_a", &fn) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_image_lookup"));
  CHECK(kiln_image_lookup(img, nullptr, &fn) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_image_lookup(img, "nest_a", nullptr) == KILN_INVALID_ARGUMENT);

  // The accessors and releases take NULL quietly.
  CHECK(kiln_image_module(nullptr) == nullptr);
  CHECK(std::string(kiln_image_target(nullptr)).empty());
  kiln_image_release(nullptr);
  kiln_cache_close(nullptr);

  kiln_image_release(img);
  kiln_cache_close(cache);
}

TEST_CASE("c_api: a handle closed, released or never made is refused without being read") {
  TestCache c = compiled(false);
  const std::string cache_dead = "is not a live kiln_cache handle (closed, or never opened)";
  const std::string image_dead = "is not a live kiln_image handle (released, or never loaded)";
  // Garbage to be taken for a handle: an address nothing is mapped at, and
  // a buffer whose "pointers" lead nowhere.
  alignas(64) static unsigned char junk[4096];
  std::memset(junk, 0xA5, sizeof junk);
  void* never[] = {reinterpret_cast<void*>(0x1234), junk};

  kiln_cache* cache = open_ok(c.path());
  kiln_image* img = nullptr;
  REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  kiln_cache_close(cache);
  // Closed twice: the second close is told, and does nothing.
  kiln_cache_close(cache);
  CHECK(contains(last_error(), "kiln_cache_close: cache " + cache_dead));
  // Used after the close.
  kiln_image* out = reinterpret_cast<kiln_image*>(0x1);
  CHECK(kiln_image_load(cache, "nest_a", "host", &out) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_image_load: cache " + cache_dead));
  CHECK(out == nullptr);
  CHECK(kiln_library_load(cache, "nest_a", "host", &out) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_library_load: cache " + cache_dead));
  CHECK(kiln_cache_read_only(cache) == 0);
  CHECK(contains(last_error(), "kiln_cache_read_only: cache " + cache_dead));
  size_t problems = 5;
  CHECK(kiln_cache_verify(cache, &problems) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_cache_verify: cache " + cache_dead));
  CHECK(problems == 0);
  // The image loaded before the close is still live.
  void* fn = nullptr;
  REQUIRE(kiln_image_lookup(img, "nest_a", &fn) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(fn)(1) == 333);

  // Released twice, and used after the release.
  kiln_image_release(img);
  kiln_image_release(img);
  CHECK(contains(last_error(), "kiln_image_release: image " + image_dead));
  fn = reinterpret_cast<void*>(0x1);
  CHECK(kiln_image_lookup(img, "nest_a", &fn) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_image_lookup: image " + image_dead));
  CHECK(fn == nullptr);
  CHECK(kiln_image_module(img) == nullptr);
  CHECK(contains(last_error(), "kiln_image_module: image " + image_dead));
  CHECK(std::string(kiln_image_target(img)).empty());

  // Pointers that never were handles, to every entry point that takes one.
  for (void* p : never) {
    auto* bad_cache = static_cast<kiln_cache*>(p);
    auto* bad_image = static_cast<kiln_image*>(p);
    CHECK(kiln_image_load(bad_cache, "nest_a", "host", &out) == KILN_INVALID_ARGUMENT);
    CHECK(contains(last_error(), cache_dead));
    CHECK(kiln_library_load(bad_cache, "nest_a", "host", &out) == KILN_INVALID_ARGUMENT);
    CHECK(kiln_cache_read_only(bad_cache) == 0);
    CHECK(kiln_cache_verify(bad_cache, nullptr) == KILN_INVALID_ARGUMENT);
    kiln_cache_close(bad_cache);
    CHECK(contains(last_error(), "kiln_cache_close: cache " + cache_dead));
    CHECK(kiln_image_lookup(bad_image, "nest_a", &fn) == KILN_INVALID_ARGUMENT);
    CHECK(contains(last_error(), image_dead));
    CHECK(kiln_image_module(bad_image) == nullptr);
    CHECK(std::string(kiln_image_target(bad_image)).empty());
    kiln_image_release(bad_image);
    CHECK(contains(last_error(), "kiln_image_release: image " + image_dead));
  }

  // One type's handle is not the other's.
  cache = open_ok(c.path());
  REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  CHECK(kiln_image_lookup(reinterpret_cast<kiln_image*>(cache), "nest_a", &fn) ==
        KILN_INVALID_ARGUMENT);
  CHECK(kiln_image_load(reinterpret_cast<kiln_cache*>(img), "nest_a", "host", &out) ==
        KILN_INVALID_ARGUMENT);
  kiln_image_release(img);
  kiln_cache_close(cache);
}

TEST_CASE("c_api: an empty cache path is refused; NULL is the default cache") {
  TestCache c = compiled(false);
  kiln_cache* cache = reinterpret_cast<kiln_cache*>(0x1);
  CHECK(kiln_cache_open("", &cache) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_cache_open: the path is empty"));
  CHECK(cache == nullptr);
  CHECK(kiln_cache_open_flags("", KILN_CACHE_READ_ONLY, &cache) == KILN_INVALID_ARGUMENT);
  CHECK(cache == nullptr);
  // The C++ API has no NULL: its empty path is the default, as documented.
  EnvVar env("KILN_CACHE", c.path());
  REQUIRE(kiln_cache_open(nullptr, &cache) == KILN_OK);
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  kiln_image_release(img);
  kiln_cache_close(cache);
  auto cpp = Cache::open("");
  INFO((cpp ? "" : cpp.error().message));
  CHECK(cpp);
}

TEST_CASE("c_api: a root loads by name and by closure key, and its functions run") {
  TestCache c = compiled(false);
  kiln_cache* cache = open_ok(c.path());

  kiln_image* by_name = nullptr;
  kiln_status st = kiln_image_load(cache, "nest_a", "host", &by_name);
  INFO(last_error());
  REQUIRE(st == KILN_OK);
  REQUIRE(by_name);
  CHECK(std::string(kiln_image_target(by_name)) == "host");
  CHECK(kiln_image_module(by_name) != nullptr);
  void* a = nullptr;
  REQUIRE(kiln_image_lookup(by_name, "nest_a", &a) == KILN_OK);
  REQUIRE(a);
  CHECK(reinterpret_cast<IntFn>(a)(1) == 333);
  // Every member job's entry, not only the root's.
  void* cfn = nullptr;
  REQUIRE(kiln_image_lookup(by_name, "nest_c", &cfn) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(cfn)(7) == 21);

  kiln_image* by_key = nullptr;
  REQUIRE(kiln_image_load(cache, c.root_closure().c_str(), "host", &by_key) == KILN_OK);
  void* b = nullptr;
  REQUIRE(kiln_image_lookup(by_key, "nest_b", &b) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(b)(0) == 30);

  // No target: the best match for this process, here the host build.
  kiln_image* best = nullptr;
  REQUIRE(kiln_image_load(cache, "nest_a", nullptr, &best) == KILN_OK);
  CHECK(std::string(kiln_image_target(best)) == "host");

  // Images outlive their cache handle.
  kiln_cache_close(cache);
  CHECK(reinterpret_cast<IntFn>(a)(2) == 336);
  void* again = nullptr;
  REQUIRE(kiln_image_lookup(best, "nest_a", &again) == KILN_OK);
  CHECK(reinterpret_cast<IntFn>(again)(-110) == 0);
  kiln_image_release(best);
  kiln_image_release(by_key);
  kiln_image_release(by_name);
}

TEST_CASE("c_api: a closure key loads its own closure, never a name row spelling it") {
  TestCache c = compiled(true);
  // A second root, nest_c alone (nest_c(x) = x * 3): the impostor.
  CompileReport other = precompile(data_request("nested.ll", {"nest_c"}), c.path());
  REQUIRE(other.roots.size() == 1);
  const std::string key = c.root_closure();
  std::string upper = key;
  for (char& ch : upper)
    ch = char(std::toupper(static_cast<unsigned char>(ch)));
  // Name rows of nest_a's closure key, in both cases, pointing at nest_c's
  // closure, and a library of that name: what an older cache or a crafted
  // file may hold.
  for (const std::string& name : {key, upper})
    raw_exec(c.path(), "INSERT INTO names(name, target, closure_key, updated_at) VALUES ('" +
                           name + "', 'host', '" + other.roots[0].closure + "', 0)");
  kiln_cache* cache = open_ok(c.path());
  for (const std::string& lookup : {key, upper})
    for (const char* target : {"host", static_cast<const char*>(nullptr)}) {
      CAPTURE(lookup);
      CAPTURE((target ? target : "(best)"));
      kiln_image* img = nullptr;
      REQUIRE_MESSAGE(kiln_image_load(cache, lookup.c_str(), target, &img) == KILN_OK,
                      last_error());
      void* a = nullptr;
      REQUIRE(kiln_image_lookup(img, "nest_a", &a) == KILN_OK);
      CHECK(reinterpret_cast<IntFn>(a)(1) == 333);
      kiln_image_release(img);
      // A library load by key is the closure of that key too.
      REQUIRE_MESSAGE(kiln_library_load(cache, lookup.c_str(), target, &img) == KILN_OK,
                      last_error());
      CHECK(kiln_image_lookup(img, "nest_a", &a) == KILN_OK);
      kiln_image_release(img);
    }
  kiln_cache_close(cache);
  auto cxx = Cache::open(c.path());
  REQUIRE(cxx);
  auto img = cxx->load(upper, "host");
  REQUIRE(img);
  auto fn = img->function<int(int)>("nest_a");
  REQUIRE(fn);
  CHECK((*fn)(1) == 333);
}

TEST_CASE("c_api: an unknown root or function is not_found, naming it") {
  TestCache c = compiled(true);
  kiln_cache* cache = open_ok(c.path());

  kiln_image* img = reinterpret_cast<kiln_image*>(0x1);
  CHECK(kiln_image_load(cache, "nest_z", "host", &img) == KILN_NOT_FOUND);
  CHECK(img == nullptr);
  CHECK(contains(last_error(), "nest_z"));
  // A known root for a target it was not precompiled for.
  CHECK(kiln_image_load(cache, "nest_a", "gfx942", &img) == KILN_NOT_FOUND);
  // A well-formed key of no closure.
  std::string no_closure = hash128("no closure").hex();
  CHECK(kiln_image_load(cache, no_closure.c_str(), "host", &img) == KILN_NOT_FOUND);
  CHECK(contains(last_error(), no_closure));

  REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
  void* fn = reinterpret_cast<void*>(0x1);
  CHECK(kiln_image_lookup(img, "nest_d", &fn) == KILN_NOT_FOUND);
  CHECK(fn == nullptr);
  CHECK(contains(last_error(), "'nest_d'"));
  CHECK(contains(last_error(), c.root_closure()));
  // Deferred symbols are the image's own business, not entries.
  auto store = open_store(c.path());
  auto closure = store->closures().get_closure(*parse_hash128(c.root_closure()));
  REQUIRE(closure);
  CHECK(kiln_image_lookup(img, closure->members[0].symbol.c_str(), &fn) == KILN_NOT_FOUND);

  kiln_image_release(img);
  kiln_cache_close(cache);
}

TEST_CASE("c_api: a file that is not a cache is refused by kiln_cache_open") {
  TempDir dir = temp_dir("kiln-c-api-test");
  std::string junk = dir.path() + "/junk.db";
  REQUIRE(write_file_atomic(junk, std::string(8192, 'j')));
  kiln_cache* cache = reinterpret_cast<kiln_cache*>(0x1);
  CHECK(kiln_cache_open(junk.c_str(), &cache) == KILN_CORRUPT);
  CHECK(cache == nullptr);
  CHECK(contains(last_error(), junk));

  auto wrapped = Cache::open(junk);
  REQUIRE_FALSE(wrapped);
  CHECK(wrapped.error().code == Code::corrupt);
  CHECK(contains(wrapped.error().message, junk));
}

TEST_CASE("c_api: every status has its name, and the codes are the library's") {
  CHECK(std::string(kiln_status_name(KILN_OK)) == "KILN_OK");
  CHECK(std::string(kiln_status_name(KILN_NOT_FOUND)) == "KILN_NOT_FOUND");
  CHECK(std::string(kiln_status_name(KILN_INVALID_ARGUMENT)) == "KILN_INVALID_ARGUMENT");
  CHECK(std::string(kiln_status_name(KILN_UNAVAILABLE)) == "KILN_UNAVAILABLE");
  CHECK(std::string(kiln_status_name(KILN_CORRUPT)) == "KILN_CORRUPT");
  CHECK(std::string(kiln_status_name(KILN_INTERNAL)) == "KILN_INTERNAL");
  CHECK(std::string(kiln_status_name(static_cast<kiln_status>(99))) == "KILN_UNKNOWN_STATUS");
  // The C API returns a Code as its status unchanged.
  CHECK(int(KILN_NOT_FOUND) == int(Code::not_found));
  CHECK(int(KILN_INVALID_ARGUMENT) == int(Code::invalid_argument));
  CHECK(int(KILN_UNAVAILABLE) == int(Code::unavailable));
  CHECK(int(KILN_CORRUPT) == int(Code::corrupt));
  CHECK(int(KILN_INTERNAL) == int(Code::internal));
}

TEST_CASE("c_api: kiln_last_error is this thread's own") {
  CHECK(kiln_cache_open(nullptr, nullptr) == KILN_INVALID_ARGUMENT);
  std::string mine = last_error();
  REQUIRE(contains(mine, "kiln_cache_open"));
  std::string theirs;
  std::thread other([&] {
    CHECK(std::string(kiln_last_error()).empty());
    CHECK(kiln_image_lookup(nullptr, nullptr, nullptr) == KILN_INVALID_ARGUMENT);
    theirs = kiln_last_error();
  });
  other.join();
  CHECK(contains(theirs, "kiln_image_lookup"));
  CHECK(last_error() == mine);
}

TEST_CASE("c_api: the C++ API loads, looks up typed functions and reports as the C API does") {
  TestCache c = compiled(true);
  auto cache = Cache::open(c.path());
  REQUIRE(cache);
  auto img = cache->load("nest_a", "host");
  INFO((img ? std::string() : img.error().message));
  REQUIRE(img);
  auto fn = img->function<int(int)>("nest_a");
  REQUIRE(fn);
  CHECK((*fn)(1) == 333);
  auto by_key = cache->load(c.root_closure(), "host");
  REQUIRE(by_key);
  CHECK(std::string(kiln_image_target(by_key->raw())) == "host");

  auto missing = img->lookup("nest_d");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Code::not_found);
  CHECK(contains(missing.error().message, "'nest_d'"));
  auto unknown = cache->load("nest_z", "host");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == Code::not_found);

  // Ownership passes to and from the C API.
  kiln_image* raw = img->release();
  REQUIRE(raw);
  Image adopted = Image::adopt(raw);
  auto again = adopted.function<int(int)>("nest_b");
  REQUIRE(again);
  CHECK((*again)(0) == 30);
}

TEST_CASE("c_api: closing a cache records its loads: stored images are hits, links are misses") {
  TestCache c = compiled(false);
  kiln_cache* cache = open_ok(c.path());
  for (int i = 0; i < 3; ++i) {
    kiln_image* img = nullptr;
    REQUIRE(kiln_image_load(cache, "nest_a", "host", &img) == KILN_OK);
    kiln_image_release(img);
  }
  kiln_cache_close(cache);

  storage::Stats st = stats_ok(*open_store(c.path()));
  CHECK(st.counters.loads == 3);
  CHECK(st.counters.image_misses == 1); // the first load linked the image
  CHECK(st.counters.image_hits == 2);
  CHECK(st.images == 1);
}

TEST_CASE("c_api: host images keep no descriptor but the handle's warm files, and a reused "
          "descriptor never aliases") {
  // Three roots, three images. A memfd is closed once its image is mapped
  // unless the handle keeps it for the root's next load (runtime/warm.h):
  // one per root here, all closed with the handle. The smallest image
  // first: nest_c's holds neither nest_b nor nest_a, so a load that aliased
  // it would lack them.
  TestCache c = empty_cache("kiln-c-api-fds");
  c.report = precompile(data_request("nested.ll", {"nest_a", "nest_b", "nest_c"}), c.path());
  auto open_fds = [] {
    return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                         std::filesystem::directory_iterator());
  };
  auto unopened = open_fds();
  kiln_cache* cache = open_ok(c.path());
  auto before = open_fds();
  struct Root {
    const char* name;
    int arg, want;
    kiln_image* img = nullptr;
  } roots[] = {{"nest_c", 7, 21}, {"nest_b", 0, 30}, {"nest_a", 1, 333}};
  for (int round = 0; round < 2; ++round) {
    for (Root& r : roots) {
      REQUIRE_MESSAGE(kiln_image_load(cache, r.name, "host", &r.img) == KILN_OK, last_error());
      void* fn = nullptr;
      REQUIRE(kiln_image_lookup(r.img, r.name, &fn) == KILN_OK);
      CHECK(reinterpret_cast<IntFn>(fn)(r.arg) == r.want);
    }
    CHECK(open_fds() == before + 3);
    for (Root& r : roots)
      kiln_image_release(r.img);
  }
  kiln_cache_close(cache);
  CHECK(open_fds() == unopened);
}
