// Unit tests for a handle's warm images (src/runtime/warm.h): a host image
// loaded again reads nothing while the cache file is unchanged; any commit
// (another connection's, the handle's own) or a still-loaded image of the
// same file sends the load back to the cache; the set is bounded and its
// memory files close with the handle.
#include "fixtures/cache.hpp"
#include "runtime/handles.h"
#include "runtime/host/host_loader.h"
#include "runtime/warm.h"

#include <kiln/kiln.h>

#include <doctest/doctest.h>

#include <atomic>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <iterator>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

using IntFn = int (*)(int);

kiln_cache* open_ok(const std::string& path) {
  kiln_cache* cache = nullptr;
  INFO(kiln_last_error());
  REQUIRE(kiln_cache_open(path.c_str(), &cache) == KILN_OK);
  return cache;
}

// Loads `name` for the host and calls it with `arg`; the image stays loaded.
int call(kiln_cache* cache, const char* name, int arg, kiln_image** out) {
  INFO(kiln_last_error());
  REQUIRE(kiln_image_load(cache, name, "host", out) == KILN_OK);
  void* fn = nullptr;
  REQUIRE(kiln_image_lookup(*out, name, &fn) == KILN_OK);
  return reinterpret_cast<IntFn>(fn)(arg);
}

// Loads, calls and releases.
int call_once(kiln_cache* cache, const char* name, int arg) {
  kiln_image* img = nullptr;
  int r = call(cache, name, arg, &img);
  kiln_image_release(img);
  return r;
}

long open_fds() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                       std::filesystem::directory_iterator());
}

} // namespace

TEST_CASE("warm images: a root loaded again is served from its memory file, and counted") {
  TestCache c = nested_cache("kiln-warm");
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "nest_a", 1) == 333);
  CHECK(cache->warm.hits() == 0);
  CHECK(cache->warm.size() == 1);
  for (int i = 0; i < 3; ++i)
    CHECK(call_once(cache, "nest_a", 1) == 333);
  CHECK(cache->warm.hits() == 3);
  kiln_cache_close(cache);
  // Every load counts as a load of a stored image.
  storage::Stats st = stats_ok(*open_store(c.path()));
  CHECK(st.counters.loads == 4);
  CHECK(st.counters.image_hits == 4);
}

TEST_CASE("warm images: an image still loaded is not loaded again from its file") {
  // Two live loads of one root are two objects, each with its own globals:
  // the second cannot come from the file the first was loaded from.
  TestCache c = nested_cache("kiln-warm-live");
  kiln_cache* cache = open_ok(c.path());
  kiln_image* first = nullptr;
  kiln_image* second = nullptr;
  CHECK(call(cache, "nest_a", 1, &first) == 333);
  CHECK(call(cache, "nest_a", 1, &second) == 333);
  CHECK(cache->warm.hits() == 0);
  void* f1 = nullptr;
  void* f2 = nullptr;
  REQUIRE(kiln_image_lookup(first, "nest_a", &f1) == KILN_OK);
  REQUIRE(kiln_image_lookup(second, "nest_a", &f2) == KILN_OK);
  CHECK(f1 != f2);
  CHECK(kiln_image_module(first) != kiln_image_module(second));
  kiln_image_release(first);
  kiln_image_release(second);
  // Once none is loaded, the kept file serves again.
  CHECK(call_once(cache, "nest_a", 1) == 333);
  CHECK(cache->warm.hits() == 1);
  kiln_cache_close(cache);
}

TEST_CASE("warm images: another connection's commit sends the next load to the cache") {
  // chg_parent(5) is 12 in change_v1.ll and 210 in change_v2.ll.
  TestCache c = empty_cache("kiln-warm-other");
  c.report = precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "chg_parent", 5) == 12);
  CHECK(call_once(cache, "chg_parent", 5) == 12);
  CHECK(cache->warm.hits() == 1);
  // Another connection points the name at v2.
  precompile(data_request("change_v2.ll", {"chg_parent"}), c.path());
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  CHECK(cache->warm.hits() == 1);
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  CHECK(cache->warm.hits() == 2);
  kiln_cache_close(cache);
}

TEST_CASE("warm images: the handle's own write sends the next load to the cache") {
  TestCache c = empty_cache("kiln-warm-own");
  CompileReport v1 = precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  REQUIRE(v1.roots.size() == 1);
  precompile(data_request("change_v2.ll", {"chg_parent"}), c.path());
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  CHECK(cache->warm.hits() == 1);
  // Through the handle's own connection, the name goes back to v1's closure:
  // no other connection committed, so only the handle's write tells.
  core::NameRecord back{"chg_parent", "host", *parse_hash128(v1.roots[0].closure)};
  auto opened = cache->store();
  REQUIRE(opened);
  REQUIRE((*opened)->records().names().point_name(back, "by hand"));
  CHECK(call_once(cache, "chg_parent", 5) == 12);
  CHECK(cache->warm.hits() == 1);
  kiln_cache_close(cache);
}

TEST_CASE("warm images: at most kMaxImages memory files, all closed with the handle") {
  TestCache c = empty_cache("kiln-warm-bound");
  c.report = precompile(data_request("nested.ll", {"nest_a", "nest_b", "nest_c"}), c.path());
  long before = open_fds();
  kiln_cache* cache = open_ok(c.path());
  long opened = open_fds();
  for (int round = 0; round < 3; ++round) {
    CHECK(call_once(cache, "nest_c", 7) == 21);
    CHECK(call_once(cache, "nest_b", 0) == 30);
    CHECK(call_once(cache, "nest_a", 1) == 333);
  }
  CHECK(cache->warm.size() == 3);
  CHECK(cache->warm.hits() == 6);
  CHECK(open_fds() == opened + 3);
  kiln_cache_close(cache);
  CHECK(open_fds() == before);

  // The bound, on the set alone: kMaxImages files, the least recently
  // loaded going first.
  runtime::WarmImages set;
  storage::DataStamp now{1, 2, 3};
  CHECK_FALSE(set.find("x", "", now)); // tags the set
  std::string elf;
  {
    // Any host image: nest_a's, exported through a load's own bytes.
    auto store = open_store(c.path());
    auto closure = (*store).closures().get_closure(*parse_hash128(c.report.roots[0].closure));
    REQUIRE(closure);
    auto bytes = (*store).images().get_image_any_linker(closure->key, core::image_arch("host"));
    REQUIRE(bytes);
    elf = *bytes;
  }
  for (size_t i = 0; i < runtime::WarmImages::kMaxImages + 2; ++i) {
    auto file = runtime::HostImageFile::make(elf, "test image");
    REQUIRE(file);
    set.keep("root" + std::to_string(i), "", now,
             std::make_shared<const runtime::WarmImage>(
                 runtime::WarmImage{"host", {}, std::nullopt, file.take()}));
  }
  CHECK(set.size() == runtime::WarmImages::kMaxImages);
  CHECK_FALSE(set.find("root0", "", now));
  CHECK_FALSE(set.find("root1", "", now));
  CHECK(set.find("root2", "", now));
  // Larger than the whole budget: not kept (the image's own bytes, then
  // padding: still a well-formed header).
  {
    auto big = runtime::HostImageFile::make(elf + std::string(runtime::WarmImages::kMaxBytes, '\0'),
                                            "big image");
    REQUIRE(big);
    set.keep("big", "", now,
             std::make_shared<const runtime::WarmImage>(
                 runtime::WarmImage{"host", {}, std::nullopt, big.take()}));
    CHECK_FALSE(set.find("big", "", now));
    CHECK(set.size() == runtime::WarmImages::kMaxImages);
  }
  // Kept under an older stamp: dropped.
  set.keep("late", "", storage::DataStamp{0, 0, 0},
           std::make_shared<const runtime::WarmImage>(runtime::WarmImage{
               "host", {}, std::nullopt, runtime::HostImageFile::make(elf, "late").take()}));
  CHECK_FALSE(set.find("late", "", now));
  // Another stamp empties it.
  CHECK_FALSE(set.find("root2", "", storage::DataStamp{1, 2, 4}));
  CHECK(set.size() == 0);
}

TEST_CASE("warm images: a kept memory file is sealed") {
  TestCache c = nested_cache("kiln-warm-seal");
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "nest_a", 1) == 333);
  kiln_cache_close(cache);
  auto store = open_store(c.path());
  auto closure = (*store).closures().get_closure(*parse_hash128(c.report.roots[0].closure));
  REQUIRE(closure);
  auto bytes = (*store).images().get_image_any_linker(closure->key, core::image_arch("host"));
  REQUIRE(bytes);
  auto file = runtime::HostImageFile::make(*bytes, "test image");
  REQUIRE(file);
  // No write, no resize reaches the bytes.
  int fd = (*file)->fd();
  // (The kernel may add seals of its own, F_SEAL_EXEC with vm.memfd_noexec.)
  int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
  CHECK((*file)->sealed());
  CHECK((::fcntl(fd, F_GET_SEALS) & want) == want);
  CHECK(::pwrite(fd, "x", 1, 0) < 0);
  CHECK(::ftruncate(fd, 0) < 0);
}

TEST_CASE("warm images: threads loading one root at once each get an object of their own") {
  TestCache c = nested_cache("kiln-warm-threads");
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "nest_a", 1) == 333); // kept
  constexpr int kThreads = 4, kLoads = 50;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kLoads; ++i) {
        kiln_image* a = nullptr;
        kiln_image* b = nullptr;
        void* fa = nullptr;
        void* fb = nullptr;
        // Two held at once: whichever is served from the kept file, the
        // other is a new object.
        if (kiln_image_load(cache, "nest_a", "host", &a) != KILN_OK ||
            kiln_image_load(cache, "nest_a", "host", &b) != KILN_OK ||
            kiln_image_lookup(a, "nest_a", &fa) != KILN_OK ||
            kiln_image_lookup(b, "nest_a", &fb) != KILN_OK || fa == fb ||
            reinterpret_cast<IntFn>(fa)(1) != 333 || reinterpret_cast<IntFn>(fb)(1) != 333)
          ++wrong;
        kiln_image_release(a);
        kiln_image_release(b);
      }
    });
  for (auto& t : threads)
    t.join();
  CHECK(wrong == 0);
  CHECK(cache->warm.hits() > 0);
  kiln_cache_close(cache);
}

TEST_CASE("warm images: a kept file's next load finds each member where the first found it") {
  TestCache c = empty_cache("kiln-warm-offsets");
  c.report = precompile(data_request("nested.ll", {"nest_a"}), c.path());
  auto store = open_store(c.path());
  auto closure = store->closures().get_closure(*parse_hash128(c.report.roots[0].closure));
  REQUIRE(closure);
  REQUIRE(closure->members.size() == 3);
  auto bytes = store->images().get_image_any_linker(closure->key, core::image_arch("host"));
  REQUIRE(bytes);
  std::shared_ptr<runtime::HostImageFile> file;
  runtime::SymbolMap first;
  auto mod = runtime::load_host_image(*bytes, *closure, first, &file);
  REQUIRE(mod);
  REQUIRE(file);
  CHECK(file->remembered());
  REQUIRE(first.size() == 3);
  // The first object still loaded: the file gives no second one.
  runtime::SymbolMap none;
  auto aliased = file->load(*closure, none);
  REQUIRE(aliased);
  CHECK_FALSE(*aliased);
  CHECK(none.empty());
  mod->reset();
  // Unloaded: the next object's members, from its base, are the ones
  // dlsym finds in it, and they run.
  runtime::SymbolMap next;
  auto again = file->load(*closure, next);
  REQUIRE(again);
  REQUIRE(*again);
  REQUIRE(next.size() == 3);
  for (const core::ClosureMember& m : closure->members) {
    CAPTURE(m.entry);
    CHECK(next.at(m.entry) == ::dlsym((*again)->handle(), m.symbol.c_str()));
  }
  CHECK(reinterpret_cast<IntFn>(next.at("nest_a"))(1) == 333);
  again->reset();
  // Asked for the file's own table, a load hands it out with the object's
  // base, and fills no map: the same addresses.
  runtime::SymbolMap unused;
  std::shared_ptr<const runtime::OffsetMap> shared;
  uintptr_t base = 0;
  auto third = file->load(*closure, unused, &shared, &base);
  REQUIRE(third);
  REQUIRE(*third);
  CHECK(unused.empty());
  REQUIRE(shared);
  CHECK(shared->size() == 3);
  CHECK(base != 0);
  for (const core::ClosureMember& m : closure->members) {
    CAPTURE(m.entry);
    CHECK(reinterpret_cast<void*>(base + shared->at(m.entry)) ==
          ::dlsym((*third)->handle(), m.symbol.c_str()));
  }
}

TEST_CASE("warm images: a warm image's functions are found by name through the C API, and a "
          "name it lacks is not_found") {
  TestCache c = nested_cache("kiln-warm-lookup");
  kiln_cache* cache = open_ok(c.path());
  CHECK(call_once(cache, "nest_a", 1) == 333); // first load: the file is kept
  kiln_image* img = nullptr;
  CHECK(call(cache, "nest_a", 1, &img) == 333); // served from the kept file
  CHECK(cache->warm.hits() == 1);
  CHECK(img->offsets != nullptr);
  CHECK(img->symbols.empty());
  // nest_b(x) = (x + 10) * 3 and nest_c(x) = x * 3 (tests/data/nested.ll).
  for (auto [entry, want] : {std::pair{"nest_a", 333}, {"nest_b", 33}, {"nest_c", 3}}) {
    CAPTURE(entry);
    void* fn = nullptr;
    REQUIRE(kiln_image_lookup(img, entry, &fn) == KILN_OK);
    CHECK(reinterpret_cast<IntFn>(fn)(1) == want);
  }
  void* fn = reinterpret_cast<void*>(1);
  CHECK(kiln_image_lookup(img, "not_there", &fn) == KILN_NOT_FOUND);
  CHECK(fn == nullptr);
  CHECK(std::string(kiln_last_error()).find("no function 'not_there'") != std::string::npos);
  kiln_image_release(img);
  kiln_cache_close(cache);
}
