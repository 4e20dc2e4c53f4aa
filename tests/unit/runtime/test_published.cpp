// Unit tests for the published host images (src/storage/published/published.h) and
// the loads they serve (src/runtime/loader.cpp): published by the writer
// that closes, read alone by a handle that only loads host code, removed by
// every commit before it is visible, refused when damaged, foreign or open
// to other writers, and never trusted over the cache file's CPU check.
#include "fixtures/cache.hpp"
#include "fixtures/cpu.hpp"
#include "runtime/handles.h"
#include "storage/published/published.h"
#include "support/lz.h"

#include <kiln/kiln.h>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <link.h>
#include <fstream>
#include <sqlite3.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace kiln;
using namespace kiln::test;
namespace fs = std::filesystem;

namespace {

using IntFn = int (*)(int);

kiln_cache* open_ok(const std::string& path, unsigned flags = 0) {
  kiln_cache* cache = nullptr;
  INFO(kiln_last_error());
  REQUIRE(kiln_cache_open_flags(path.c_str(), flags, &cache) == KILN_OK);
  return cache;
}

int call_once(kiln_cache* cache, const char* name, int arg) {
  kiln_image* img = nullptr;
  INFO(name << ": " << kiln_last_error());
  REQUIRE(kiln_image_load(cache, name, "host", &img) == KILN_OK);
  void* fn = nullptr;
  REQUIRE(kiln_image_lookup(img, name, &fn) == KILN_OK);
  int r = reinterpret_cast<IntFn>(fn)(arg);
  kiln_image_release(img);
  return r;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  REQUIRE(out.good());
}

// The header's fields this test writes (src/storage/published/format.h): the
// stamp at 80 (the cache file's size and time, the WAL's size and time),
// the header's checksum at 120, of the 120 bytes before it.
constexpr size_t kStampAt = 80, kHeaderSumAt = 120, kHeaderBytes = 128;

void set_u64(std::string& s, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s[at + size_t(i)] = char((v >> (8 * i)) & 0xff);
}

void seal(std::string& bytes) {
  set_u64(bytes, kHeaderSumAt, hash64(std::string_view(bytes.data(), kHeaderSumAt)));
}

// `bytes` (a published file) stamped with the state `cache` and its WAL
// are in now, as a publication now would be.
std::string stamped_now(std::string bytes, const std::string& cache) {
  REQUIRE(bytes.size() >= kHeaderBytes);
  struct stat db {}, wal {};
  REQUIRE(::lstat(cache.c_str(), &db) == 0);
  bool has_wal = ::lstat((cache + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
  auto ns = [](const struct stat& st) {
    return uint64_t(st.st_mtim.tv_sec) * 1000000000 + uint64_t(st.st_mtim.tv_nsec);
  };
  set_u64(bytes, kStampAt, uint64_t(db.st_size));
  set_u64(bytes, kStampAt + 8, ns(db));
  set_u64(bytes, kStampAt + 16, has_wal ? uint64_t(wal.st_size) : 0);
  set_u64(bytes, kStampAt + 24, has_wal ? ns(wal) : 0);
  seal(bytes);
  return bytes;
}

// The three roots of nested.ll, precompiled for the host.
TestCache nested_roots(const std::string& prefix) {
  TestCache c = empty_cache(prefix);
  c.report = precompile(data_request("nested.ll", {"nest_a", "nest_b", "nest_c"}), c.path());
  return c;
}

// Whether a handle serves `name` from the published images alone: the
// load works and the cache file was never opened.
bool served_alone(const std::string& path, const char* name, int arg, int want) {
  kiln_cache* cache = open_ok(path);
  bool alone = cache->published != nullptr && call_once(cache, name, arg) == want &&
               cache->storage == nullptr;
  kiln_cache_close(cache);
  return alone;
}

} // namespace

TEST_CASE("published images: a precompile publishes its host roots, and a handle loads them "
          "without opening the cache file") {
  TestCache c = nested_roots("kiln-published");
  std::string published = storage::published_path(c.path());
  REQUIRE(fs::exists(published));
  // The file's mode is the cache file's.
  CHECK((fs::status(published).permissions() & fs::perms::all) ==
        (fs::status(c.path()).permissions() & fs::perms::all));
  auto p = storage::PublishedImages::open(c.path());
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p);
  CHECK((*p)->size() == 3);
  const storage::PublishedRoot* a = (*p)->find("nest_a", "host");
  REQUIRE(a);
  CHECK((*p)->closure_of(*a).members.size() == 3);
  CHECK(!(*p)->find("nest_a", "host-x86-64-v9"));
  CHECK(!(*p)->find("nest_", "host"));

  kiln_cache* cache = open_ok(c.path());
  REQUIRE(cache->published);
  CHECK(call_once(cache, "nest_a", 1) == 333);
  CHECK(call_once(cache, "nest_c", 7) == 21);
  CHECK(call_once(cache, "nest_a", 1) == 333); // warm: the memory file again
  CHECK(cache->warm.hits() == 1);
  CHECK(cache->storage == nullptr);
  // A call that needs the records opens the file then.
  CHECK(kiln_cache_read_only(cache) == 0);
  CHECK(cache->storage != nullptr);
  CHECK(call_once(cache, "nest_b", 0) == 30);
  kiln_cache_close(cache);
}

TEST_CASE("published images: their loads are counted and mark their closures used, through "
          "the load log") {
  TestCache c = nested_roots("kiln-published-usage");
  raw_exec(c.path(), "UPDATE closures SET last_used = 1"); // leaves the published file stale
  REQUIRE(open_store(c.path())->publish_images());
  REQUIRE(fs::exists(storage::published_path(c.path())));
  for (int i = 0; i < 3; ++i)
    REQUIRE(served_alone(c.path(), "nest_a", 1, 333));
  CHECK(fs::exists(storage::load_log_path(c.path())));
  // A read-only handle notes nothing.
  kiln_cache* ro = open_ok(c.path(), KILN_CACHE_READ_ONLY);
  CHECK(call_once(ro, "nest_b", 0) == 30);
  kiln_cache_close(ro);

  auto st = open_store(c.path());
  storage::Stats s = stats_ok(*st);
  CHECK(s.counters.loads == 3);
  CHECK(s.counters.image_hits == 3);
  CHECK(!fs::exists(storage::load_log_path(c.path())));
  auto used = [&](const std::string& closure) {
    return raw_exec(c.path(), "UPDATE closures SET last_used = last_used WHERE last_used > 1 AND "
                              "key = x'" + closure + "'");
  };
  auto closure_of = [&](const std::string& name) {
    for (const RootReport& r : c.report.roots)
      if (r.name == name)
        return r.closure;
    return std::string();
  };
  st.reset();
  CHECK(used(closure_of("nest_a")) == 1);
  CHECK(used(closure_of("nest_b")) == 0); // loaded read-only only
}

TEST_CASE("published images: a commit removes them before it is visible; a handle that holds "
          "them loads from the file after it") {
  TestCache c = empty_cache("kiln-published-commit");
  CompileReport v1 = precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  kiln_cache* cache = open_ok(c.path());
  REQUIRE(cache->published);
  CHECK(call_once(cache, "chg_parent", 5) == 12);

  // Another connection moves the name: before its commit, the file is gone.
  {
    auto st = open_store(c.path());
    REQUIRE(fs::exists(storage::published_path(c.path())));
    CompileReport v2 = precompile(data_request("change_v2.ll", {"chg_parent"}), c.path());
    (void)v2;
  }
  // This handle's publication is old news: it reads the file.
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  CHECK(cache->storage != nullptr);
  kiln_cache_close(cache);
  // The writer's close published the new state; a new handle reads it alone.
  CHECK(served_alone(c.path(), "chg_parent", 5, 210));

  // A commit through a store: removed at the commit, published at close.
  {
    auto st = open_store(c.path());
    core::NameRecord back{"chg_parent", "host", *parse_hash128(v1.roots[0].closure)};
    REQUIRE(st->names().point_name(back, "by hand"));
    CHECK(!fs::exists(storage::published_path(c.path())));
  }
  CHECK(served_alone(c.path(), "chg_parent", 5, 12));

  // Usage alone (the load log taken in, counters) leaves them in place,
  // stamped anew after the commit and after the close's checkpoint: the
  // next handle still reads them alone.
  {
    auto st = open_store(c.path());
    storage::Counters one;
    one.job_hits = 1;
    REQUIRE(st->upkeep().add_counters(one));
    CHECK(fs::exists(storage::published_path(c.path())));
    CHECK(storage::published_current(c.path()));
  }
  CHECK(served_alone(c.path(), "chg_parent", 5, 12));
}

TEST_CASE("published images: a host kernel library is published, and loads without opening "
          "the cache file") {
  TestCache c = empty_cache("kiln-published-library");
  CompileRequest req = data_request("nested.ll", {"nest_a", "nest_b", "nest_c"});
  req.library = "nest";
  CompileReport rep = precompile(req, c.path());
  REQUIRE(rep.libraries.size() == 1);
  auto p = storage::PublishedImages::open(c.path());
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p);
  const storage::PublishedRoot* lib = (*p)->find_library("nest", "host");
  REQUIRE(lib);
  CHECK(lib->library);
  CHECK(lib->closure.key.hex() == rep.libraries[0].closure);
  CHECK(!(*p)->find("nest", "host"));         // a library is not a root
  CHECK(!(*p)->find_library("nest_a", "host")); // nor a root a library
  CHECK((*p)->find("nest_a", "host"));

  kiln_cache* cache = open_ok(c.path());
  for (int i = 0; i < 2; ++i) {
    kiln_image* img = nullptr;
    INFO(kiln_last_error());
    REQUIRE(kiln_library_load(cache, "nest", "host", &img) == KILN_OK);
    void *a = nullptr, *cf = nullptr;
    REQUIRE(kiln_image_lookup(img, "nest_a", &a) == KILN_OK);
    REQUIRE(kiln_image_lookup(img, "nest_c", &cf) == KILN_OK);
    CHECK(reinterpret_cast<IntFn>(a)(1) == 333);
    CHECK(reinterpret_cast<IntFn>(cf)(7) == 21);
    kiln_image_release(img);
  }
  CHECK(cache->warm.hits() == 1); // the second, from its memory file
  {
    kiln_image* img = nullptr;
    REQUIRE(kiln_library_load(cache, "nest", nullptr, &img) == KILN_OK); // no target
    CHECK(std::string(kiln_image_target(img)) == "host");
    kiln_image_release(img);
  }
  CHECK(cache->warm.hits() == 2);
  // By closure key: the library's, and a root's.
  for (const std::string& key : {rep.libraries[0].closure, lib->closure.key.hex(),
                                 (*p)->find("nest_c", "host")->closure.key.hex()}) {
    kiln_image* img = nullptr;
    INFO(key << ": " << kiln_last_error());
    REQUIRE(kiln_image_load(cache, key.c_str(), "host", &img) == KILN_OK);
    void* cf = nullptr;
    REQUIRE(kiln_image_lookup(img, "nest_c", &cf) == KILN_OK);
    CHECK(reinterpret_cast<IntFn>(cf)(7) == 21);
    kiln_image_release(img);
  }
  CHECK(cache->warm.hits() == 4); // the library's twice more, by its key
  CHECK(cache->storage == nullptr);
  // A key for another target than its closure's is not theirs to serve.
  {
    kiln_image* img = nullptr;
    CHECK(kiln_image_load(cache, lib->closure.key.hex().c_str(), "host-x86-64-v2", &img) !=
          KILN_OK);
    CHECK(cache->storage != nullptr);
  }
  // A library's name is not a root's: that load reads the cache file, which
  // has no such root.
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(cache, "nest", "host", &img) == KILN_NOT_FOUND);
  CHECK(cache->storage != nullptr);
  kiln_cache_close(cache);
}

TEST_CASE("published images: a load given no target chooses from them where they hold every "
          "target the name has, and reads the cache file where they do not") {
  TestCache c = nested_roots("kiln-published-no-target");
  {
    kiln_cache* cache = open_ok(c.path());
    kiln_image* img = nullptr;
    INFO(kiln_last_error());
    REQUIRE(kiln_image_load(cache, "nest_a", nullptr, &img) == KILN_OK);
    CHECK(std::string(kiln_image_target(img)) == "host");
    kiln_image_release(img);
    CHECK(cache->storage == nullptr);
    kiln_cache_close(cache);
  }
  // The name gains a GPU target (a row as another build would leave it):
  // choosing weighs the devices present, which only the cache file's load
  // asks about.
  raw_exec(c.path(), "INSERT INTO names(name, target, closure_key, updated_at) SELECT 'nest_a', "
                     "'sm_90', closure_key, updated_at FROM names WHERE name = 'nest_a' AND "
                     "target = 'host'");
  REQUIRE(open_store(c.path())->publish_images());
  auto p = storage::PublishedImages::open(c.path());
  REQUIRE(p);
  CHECK(!(*p)->find("nest_a", "host")->all_targets);
  CHECK((*p)->find("nest_b", "host")->all_targets);
  kiln_cache* cache = open_ok(c.path());
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(cache, "nest_b", nullptr, &img) == KILN_OK);
  kiln_image_release(img);
  CHECK(cache->storage == nullptr);
  INFO(kiln_last_error());
  REQUIRE(kiln_image_load(cache, "nest_a", nullptr, &img) == KILN_OK);
  kiln_image_release(img);
  CHECK(cache->storage != nullptr);
  kiln_cache_close(cache);
}

TEST_CASE("published images: a write by another tool than Kiln, or a file copied over the "
          "cache file, is seen: the load reads the cache file") {
  TestCache c = empty_cache("kiln-published-foreign-write");
  precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  TestCache other = empty_cache("kiln-published-foreign-copy");
  precompile(data_request("change_v2.ll", {"chg_parent"}), other.path());
  REQUIRE(served_alone(c.path(), "chg_parent", 5, 12));
  std::string published = storage::published_path(c.path());

  // SQLite's shell, say, removes the name and leaves the published file:
  // the load does not run the image it names.
  {
    // Another connection keeps the write in the WAL (no checkpoint at the
    // shell's close), then the last one copies it into the file.
    sqlite3* reader = nullptr;
    REQUIRE(sqlite3_open_v2(c.path().c_str(), &reader, SQLITE_OPEN_READONLY, nullptr) ==
            SQLITE_OK);
    REQUIRE(sqlite3_exec(reader, "SELECT count(*) FROM names", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    CHECK(raw_exec(c.path(), "DELETE FROM names WHERE name = 'chg_parent'") == 1);
    REQUIRE(fs::exists(published));
    CHECK(!storage::published_current(c.path()));
    auto p = storage::PublishedImages::open(c.path());
    REQUIRE(!p);
    CHECK(p.error().message.find("older than the cache file") != std::string::npos);
    kiln_cache* cache = open_ok(c.path());
    kiln_image* img = nullptr;
    CHECK(kiln_image_load(cache, "chg_parent", "host", &img) == KILN_NOT_FOUND);
    kiln_cache_close(cache);
    sqlite3_close(reader);
  }
  // A handle that opened them before such a write reads the file after it.
  precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  kiln_cache* held = open_ok(c.path());
  REQUIRE(held->published);
  CHECK(call_once(held, "chg_parent", 5) == 12);
  CHECK(raw_exec(c.path(), "DELETE FROM names WHERE name = 'chg_parent'") == 1);
  // It looks at the files once per tick of the coarse clock: from the next
  // tick on, it has seen the write.
  struct timespec tick {};
  REQUIRE(::clock_getres(CLOCK_MONOTONIC_COARSE, &tick) == 0);
  std::this_thread::sleep_for(2 * (std::chrono::seconds(tick.tv_sec) +
                                   std::chrono::nanoseconds(tick.tv_nsec)));
  kiln_image* img = nullptr;
  CHECK(kiln_image_load(held, "chg_parent", "host", &img) == KILN_NOT_FOUND);
  kiln_cache_close(held);

  // Another cache's bytes copied over this file, in place (its device and
  // inode stay): the published file is not believed, and the load runs what
  // the file now names.
  precompile(data_request("change_v1.ll", {"chg_parent"}), c.path());
  REQUIRE(served_alone(c.path(), "chg_parent", 5, 12));
  std::string copied = read_all(other.path());
  {
    std::ofstream out(c.path(), std::ios::binary | std::ios::in | std::ios::out);
    out.write(copied.data(), std::streamsize(copied.size()));
    REQUIRE(out.good());
  }
  fs::resize_file(c.path(), copied.size());
  REQUIRE(fs::exists(published));
  kiln_cache* cache = open_ok(c.path());
  CHECK(cache->published == nullptr);
  CHECK(call_once(cache, "chg_parent", 5) == 210);
  kiln_cache_close(cache);
  // That load's close published the file as it is now.
  CHECK(served_alone(c.path(), "chg_parent", 5, 210));
}

TEST_CASE("published images: a damaged, truncated or foreign file is not believed, and the "
          "load reads the cache file") {
  TestCache c = nested_roots("kiln-published-damage");
  TestCache other = empty_cache("kiln-published-other");
  precompile(data_request("change_v1.ll", {"chg_parent"}), other.path());
  std::string published = storage::published_path(c.path());
  const std::string good = read_all(published);
  REQUIRE(good.size() > 200);

  // Each load below reads the cache file, which its close may change (a
  // checkpoint): the bytes are stamped with the state of the moment.
  auto expect_refused = [&](const std::string& bytes, const char* what) {
    write_all(published, bytes.size() >= kHeaderBytes ? stamped_now(bytes, c.path()) : bytes);
    ::chmod(published.c_str(), 0600);
    auto p = storage::PublishedImages::open(c.path());
    INFO(what);
    REQUIRE(!p);
    CHECK(p.error().code == Code::corrupt);
    // The handle opens the file instead, and loads what it names.
    kiln_cache* cache = open_ok(c.path());
    CHECK(cache->published == nullptr);
    CHECK(call_once(cache, "nest_a", 1) == 333);
    kiln_cache_close(cache);
    return p.error().message;
  };
  std::string flipped = good;
  flipped[good.size() - 5] ^= 1; // in the table, which ends the file
  CHECK(expect_refused(flipped, "table byte").find("checksum") != std::string::npos);
  CHECK(expect_refused(good.substr(0, good.size() - 1), "truncated").find("bytes") !=
        std::string::npos);
  CHECK(expect_refused(good.substr(0, 40), "no header").find("header") != std::string::npos);
  std::string unsealed = stamped_now(good, c.path());
  unsealed[kStampAt] ^= 1;
  write_all(published, unsealed);
  CHECK(storage::PublishedImages::open(c.path()).error().message.find("header fails") !=
        std::string::npos);
  // A header that claims a table of a gigabyte, its checksum made right.
  std::string huge = good;
  for (int i = 0; i < 8; ++i)
    huge[32 + i] = char(i == 3 ? 0x40 : 0);
  CHECK(expect_refused(huge, "huge table").find("does not fit") != std::string::npos);
  // Another cache's publication, sound in itself, beside this file.
  CHECK(expect_refused(read_all(storage::published_path(other.path())), "foreign")
            .find("another cache file") != std::string::npos);
  // Tables of other contents, sound as stored: what is held for one stays in
  // proportion to the file.
  uint64_t stored_table = 0;
  for (int i = 7; i >= 0; --i)
    stored_table = stored_table << 8 | uint8_t(good[size_t(32 + i)]);
  auto with_table = [&](const std::string& raw, uint64_t claimed_raw) {
    std::string f = good.substr(0, good.size() - stored_table);
    std::string packed = lz_pack(raw);
    f += packed;
    set_u64(f, 32, packed.size());
    set_u64(f, 40, f.size());
    set_u64(f, 72, claimed_raw);
    set_u64(f, 112, hash64(packed));
    return f;
  };
  // More CPUs than the three roots it claims: each is some root's.
  std::string four_cpus(1, '\x04');
  four_cpus += std::string(12 + 64, '\0');
  CHECK(expect_refused(with_table(four_cpus, four_cpus.size()), "more CPUs than roots")
            .find("4 CPUs for 3 roots") != std::string::npos);
  // A table that claims to unpack to more than 16 times its bytes (and
  // more than 64 KiB): refused before anything is reserved for it.
  std::string zeros(1000, '\0');
  CHECK(expect_refused(with_table(zeros, 1 << 20), "unpacks far").find("unpacked from") !=
        std::string::npos);

  // An image byte flipped, or one of the dictionary the images are packed
  // with (it follows the header; the table ends the file): the table is
  // sound, the image (or the dictionary, at the open) fails to unpack or
  // the image its checksum at the load, which then reads the cache file.
  uint64_t table_bytes = 0;
  for (int i = 7; i >= 0; --i)
    table_bytes = table_bytes << 8 | uint8_t(good[size_t(32 + i)]);
  const size_t in_dictionary = kHeaderBytes + 20;
  for (size_t at : {size_t(good.size() - table_bytes - 10), in_dictionary}) {
    CAPTURE(at);
    std::string bad_image = good;
    bad_image[at] ^= 0x55;
    write_all(published, stamped_now(bad_image, c.path()));
    kiln_cache* cache = open_ok(c.path());
    if (at != in_dictionary)
      REQUIRE(cache->published);
    CHECK(call_once(cache, "nest_c", 7) == 21);
    CHECK(call_once(cache, "nest_a", 1) == 333);
    CHECK(cache->storage != nullptr);
    kiln_cache_close(cache);
  }
}

TEST_CASE("published images: a file others can write refuses the cache, as a WAL would") {
  TestCache c = nested_roots("kiln-published-mode");
  std::string published = storage::published_path(c.path());
  REQUIRE(::chmod(published.c_str(), 0666) == 0);
  kiln_cache* cache = nullptr;
  CHECK(kiln_cache_open(c.path().c_str(), &cache) == KILN_UNAVAILABLE);
  CHECK(std::string(kiln_last_error()).find("-images") != std::string::npos);
  CHECK(std::string(kiln_last_error()).find("writable by group or others") != std::string::npos);
  // A link in its place is refused too.
  REQUIRE(::chmod(published.c_str(), 0644) == 0);
  fs::rename(published, published + ".real");
  fs::create_symlink(published + ".real", published);
  CHECK(kiln_cache_open(c.path().c_str(), &cache) == KILN_UNAVAILABLE);
  CHECK(std::string(kiln_last_error()).find("symbolic link") != std::string::npos);
}

TEST_CASE("published images: a root built for a CPU this one lacks is not loaded from them") {
  std::string lacking = lacking_cpu_feature();
  if (lacking.empty()) {
    MESSAGE("skipped: this CPU has every feature the table knows");
    return;
  }
  TestCache c = nested_roots("kiln-published-cpu");
  auto p = storage::PublishedImages::open(c.path());
  REQUIRE(p);
  // A publication where nest_a names nest_b's closure and image, built for
  // a CPU with a feature this one lacks: believed, it would run nest_b.
  const storage::PublishedRoot* b = (*p)->find("nest_b", "host");
  REQUIRE(b);
  auto image = (*p)->image(*b);
  REQUIRE(image);
  storage::PublishInput in;
  in.root = *b;
  in.root.closure = (*p)->closure_of(*b);
  in.members = std::make_shared<const std::vector<core::ClosureMember>>(in.root.closure.members);
  in.root.name.name = "nest_a";
  in.root.root.features = "+" + lacking;
  in.image = std::make_shared<const std::string>(*image);
  struct stat st;
  REQUIRE(::lstat(c.path().c_str(), &st) == 0);
  p->reset();
  REQUIRE(storage::write_published(c.path(), st, {in}));
  kiln_cache* cache = open_ok(c.path());
  REQUIRE(cache->published);
  CHECK(call_once(cache, "nest_a", 1) == 333); // the cache file's nest_a
  CHECK(cache->storage != nullptr);
  kiln_cache_close(cache);
}

TEST_CASE("published images: a cache with no host root publishes none; a connection that "
          "only read publishes nothing") {
  TestCache c = open_cache("kiln-published-none");
  REQUIRE(c.store->publish_images());
  c.store.reset();
  CHECK(!fs::exists(storage::published_path(c.path())));
  // With host roots, but the file removed: a connection that reads no host
  // root leaves it absent; one that loads one publishes it again.
  TestCache n = nested_roots("kiln-published-reread");
  REQUIRE(fs::remove(storage::published_path(n.path())));
  {
    auto st = open_store(n.path());
    REQUIRE(st->names().list_names());
  }
  CHECK(!fs::exists(storage::published_path(n.path())));
  kiln_cache* loader = open_ok(n.path());
  CHECK(call_once(loader, "nest_b", 0) == 30);
  kiln_cache_close(loader);
  CHECK(fs::exists(storage::published_path(n.path())));
  // Nor does a handle's open create one.
  kiln_cache* cache = open_ok(c.path());
  CHECK(cache->published == nullptr);
  kiln_cache_close(cache);
  CHECK(!fs::exists(storage::published_path(c.path())));
}

TEST_CASE("published images: a publication removes the temporaries a writer that died left, "
          "and only those") {
  TestCache c = empty_cache("kiln-published-stale");
  std::string published = storage::published_path(c.path());
  std::string stale = published + ".tmpAbC123";
  std::string other = published + ".tmpAbC1234"; // not a name mkstemp gives it
  std::string near = c.path() + "-imagesX.tmpAbC123";
  for (const std::string& f : {stale, other, near})
    write_all(f, "half a file");
  precompile(data_request("nested.ll", {"nest_a"}), c.path());
  CHECK(fs::exists(published));
  CHECK(!fs::exists(stale));
  CHECK(fs::exists(other));
  CHECK(fs::exists(near));
  CHECK(served_alone(c.path(), "nest_a", 1, 333));
}

TEST_CASE("published images: the table gives back every field as handed, the forms it "
          "stores apart and the ones it does not") {
  TestCache c = empty_cache("kiln-published-table");
  write_all(c.path(), "a cache file: only its stat counts here");
  ::chmod(c.path().c_str(), 0600);
  struct stat st {};
  REQUIRE(::lstat(c.path().c_str(), &st) == 0);
  const std::string lower = "__kiln_deferred_0123456789abcdef0123456789abcdef";
  const std::string upper = "__kiln_deferred_0123456789ABCDEF0123456789ABCDEF";
  auto members = std::make_shared<std::vector<core::ClosureMember>>(std::vector<core::ClosureMember>{
      {lower, Hash128{11, 12}, "child"},
      {upper, Hash128{13, 14}, "upper"},
      {"__kiln_deferred_0123", Hash128{15, 16}, "short"},
      {"kernel_name", Hash128{17, 18}, "kernel_name"},
  });
  auto image_a = std::make_shared<const std::string>(std::string(3000, 'a') + "tail");
  auto image_b = std::make_shared<const std::string>("another image");
  std::vector<storage::PublishInput> in;
  auto root = [&](const char* name, const char* target, Hash128 closure, const char* ctarget,
                  Hash128 root_job, Hash128 image_of,
                  std::shared_ptr<const std::string> image) {
    storage::PublishInput i;
    i.root.name = {name, target, closure};
    i.root.closure.key = closure;
    i.root.closure.target = ctarget;
    i.root.closure.root_job = root_job;
    i.root.root.key = root_job;
    i.root.root.target = target;
    i.root.root.cpu = "cpu-" + std::string(name);
    i.root.root.features = "+f";
    i.root.image_of = image_of;
    i.members = members;
    i.image = std::move(image);
    in.push_back(std::move(i));
  };
  // A root whose job is a member, with its own image; one whose job is not
  // and whose image is another closure's, for another target than its name.
  root("r_member", "host", Hash128{1, 2}, "host", Hash128{13, 14}, Hash128{1, 2}, image_a);
  root("r_apart", "host-x86-64-v2", Hash128{3, 4}, "host", Hash128{99, 98}, Hash128{1, 2},
       image_b);
  in[0].root.all_targets = true;
  root("r_member", "host", Hash128{1, 2}, "host", Hash128{13, 14}, Hash128{1, 2}, image_a);
  in.back().root.library = true; // a library of the same name
  REQUIRE(storage::write_published(c.path(), st, in));
  auto p = storage::PublishedImages::open(c.path());
  INFO((p ? std::string() : p.error().message));
  REQUIRE(p);
  for (const storage::PublishInput& want : in) {
    const storage::PublishedRoot* got =
        want.root.library ? (*p)->find_library(want.root.name.name, want.root.name.target)
                          : (*p)->find(want.root.name.name, want.root.name.target);
    REQUIRE(got);
    CHECK(got->library == want.root.library);
    CHECK(got->all_targets == want.root.all_targets);
    CHECK(got->closure.key == want.root.closure.key);
    CHECK(got->closure.target == want.root.closure.target);
    // No job key is stored: a load finds code by symbol and entry.
    CHECK(got->closure.root_job == Hash128{});
    CHECK(got->root.key == Hash128{});
    CHECK((*p)->cpu(*got).cpu == want.root.root.cpu);
    CHECK((*p)->cpu(*got).features == "+f");
    CHECK((*p)->cpu(*got).target == want.root.root.target);
    CHECK(got->root.target == want.root.root.target);
    CHECK(got->image_of == want.root.image_of);
    core::ClosureRecord closure = (*p)->closure_of(*got);
    REQUIRE(closure.members.size() == members->size());
    for (size_t i = 0; i < members->size(); ++i) {
      CHECK(closure.members[i].symbol == (*members)[i].symbol);
      CHECK(closure.members[i].job == Hash128{});
      CHECK(closure.members[i].entry == (*members)[i].entry);
    }
    auto bytes = (*p)->image(*got);
    REQUIRE(bytes);
    CHECK(*bytes == *want.image);
  }
}

TEST_CASE("published images: the load log takes only well-formed records of this user's file") {
  TestCache c = nested_roots("kiln-published-log");
  std::string log = storage::load_log_path(c.path());
  Hash128 k{1, 2};
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, 50, 2, 2}, {k, 60, 0, 0}}));
  // Garbage after them: a torn or foreign tail is skipped, record by record.
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out << std::string(48, 'x') << "tail";
  }
  std::vector<storage::LoadNote> notes = storage::take_load_log(c.path());
  REQUIRE(notes.size() == 2);
  CHECK(notes[0].closure == k);
  CHECK(notes[0].loads == 2);
  CHECK(notes[1].when == 60);
  CHECK(!fs::exists(log));
  CHECK(storage::take_load_log(c.path()).empty());
  // A record torn in the middle of the log (a crash, a full disk): the
  // records after it are found again at their magic.
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, 10, 1, 1}}));
  {
    std::ofstream out(log, std::ios::binary | std::ios::app);
    out << std::string("KLOD\x01\x02", 6) << std::string(17, 'y');
  }
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, 20, 1, 1}, {k, 30, 1, 1}}));
  notes = storage::take_load_log(c.path());
  REQUIRE(notes.size() == 3);
  CHECK(notes[0].when == 10);
  CHECK(notes[1].when == 20);
  CHECK(notes[2].when == 30);
  // A log grown past kLoadLogTakeIn (no writer came for some twenty thousand
  // loads) is taken in by the loading process that grows it.
  std::vector<storage::LoadNote> many(size_t(storage::kLoadLogTakeIn / 48), {k, 80, 1, 1});
  REQUIRE(storage::append_load_log(c.path(), 0600, many));
  REQUIRE(served_alone(c.path(), "nest_a", 1, 333));
  CHECK(!fs::exists(log));
  storage::Stats s = stats_ok(*open_store(c.path()));
  CHECK(s.counters.loads == int64_t(many.size()) + 1);
  // A log others can write is not appended to.
  write_all(log, "");
  REQUIRE(::chmod(log.c_str(), 0622) == 0);
  CHECK(!storage::append_load_log(c.path(), 0600, {{k, 70, 1, 1}}));
}

namespace {

void put_var(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(char(v));
}

// A published file for `cache` (any file: open reads no SQLite) built by
// hand: the header stamped with the file's state, an empty dictionary, no
// images, and `packed` as the table, claimed to unpack to `raw_table`
// bytes and to hold `count` roots.
std::string crafted_file(const std::string& cache, uint32_t count, const std::string& packed,
                         uint64_t raw_table) {
  std::string h(kHeaderBytes, '\0');
  h.replace(0, 8, "KILNPUB1");
  h[8] = 8; // the format version (published/format.h kVersion)
  for (int i = 0; i < 4; ++i)
    h[12 + size_t(i)] = char((count >> (8 * i)) & 0xff);
  struct stat st {};
  REQUIRE(::lstat(cache.c_str(), &st) == 0);
  set_u64(h, 16, uint64_t(st.st_dev));
  set_u64(h, 24, uint64_t(st.st_ino));
  std::string dict = lz_pack("");
  set_u64(h, 32, packed.size());
  set_u64(h, 40, kHeaderBytes + dict.size() + packed.size());
  set_u64(h, 48, kHeaderBytes);
  set_u64(h, 56, dict.size());
  set_u64(h, 64, 0);
  set_u64(h, 72, raw_table);
  set_u64(h, kHeaderSumAt - 8, hash64(packed));
  return stamped_now(h + dict + packed, cache);
}

long peak_rss_mb() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

// Runs `f` in a child that a blocked call would leave hanging: true if it
// returned within five seconds.
template <class F> bool returns_promptly(F f) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(5);
    f();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace

TEST_CASE("published images: a table crafted to end inside a root, or to claim gigabytes of "
          "records, is refused without a crash and in proportion to the file") {
  TempDir dir = temp_dir("kiln-published-crafted");
  std::string cache = dir.path() + "/kiln.db";
  write_all(cache, "x");
  std::string published = storage::published_path(cache);
  // No CPUs, sets or images, then a root whose table ends after its flags
  // (the same target): the member set it would name was indexed before
  // the end was noticed, in a list of none.
  std::string raw;
  put_var(raw, 0);
  put_var(raw, 0);
  put_var(raw, 0);
  put_var(raw, 60);
  raw += std::string(60, 'a');
  put_var(raw, 0);
  raw += std::string(16, '\1');
  raw.push_back(char(1));
  write_all(published, crafted_file(cache, 1, lz_pack(raw), raw.size()));
  auto p = storage::PublishedImages::open(cache);
  REQUIRE(!p);
  CHECK(p.error().code == Code::corrupt);
  CHECK(p.error().message.find("member set") != std::string::npos);

  // Five million CPUs of three empty strings each, packed as runs into a
  // file of about a megabyte: 1.5 GB of records once read, before.
  const uint64_t n = 5'000'000;
  std::string head;
  put_var(head, n);
  const uint64_t raw_size = head.size() + 3 * n;
  // The count and one zero as literals, then matches one byte back of 60
  // bytes each (4 + 15 + 41), then the last few zeros as literals.
  std::string packed;
  packed.push_back(char((head.size() + 1) << 4 | 15));
  packed += head;
  packed.push_back('\0');
  const std::string back_one("\x01\x00", 2);
  packed += back_one;
  packed.push_back(char(41));
  uint64_t left = 3 * n - 1 - 60;
  while (left > 60 + 15) {
    packed.push_back(char(15));
    packed += back_one;
    packed.push_back(char(41));
    left -= 60;
  }
  packed.push_back(char(15 << 4));
  packed.push_back(char(left - 15));
  packed += std::string(size_t(left), '\0');
  REQUIRE(lz_unpack(packed, size_t(raw_size)));
  REQUIRE(packed.size() < 2'000'000);
  write_all(published, crafted_file(cache, uint32_t(n), packed, raw_size));
  long before = peak_rss_mb();
  p = storage::PublishedImages::open(cache);
  long after = peak_rss_mb();
  REQUIRE(!p);
  CHECK(p.error().message.find("memory") != std::string::npos);
  INFO("peak RSS " << before << " MB to " << after << " MB");
  CHECK(after - before < 100);
}

TEST_CASE("published images: a second link to the file, a FIFO, another user's or a hard-linked "
          "load log are not read or written") {
  TestCache c = nested_roots("kiln-published-links");
  std::string published = storage::published_path(c.path());
  REQUIRE(served_alone(c.path(), "nest_a", 1, 333));
  // A second name for the published images (a backup's hard link): a
  // commit's removal of the first would not show, and it is not read.
  std::string second = c.path() + ".backup";
  REQUIRE(::link(published.c_str(), second.c_str()) == 0);
  auto p = storage::PublishedImages::open(c.path());
  REQUIRE(!p);
  CHECK(p.error().message.find("links") != std::string::npos);
  CHECK(!served_alone(c.path(), "nest_a", 1, 333));
  REQUIRE(::unlink(second.c_str()) == 0);

  // A FIFO where the load log goes blocks neither an append nor a take.
  std::string log = storage::load_log_path(c.path());
  ::unlink(log.c_str());
  REQUIRE(::mkfifo(log.c_str(), 0600) == 0);
  CHECK(returns_promptly([&] {
    if (storage::append_load_log(c.path(), 0600, {{Hash128{1, 2}, 5, 1, 1}}))
      ::_exit(3);
  }));
  CHECK(returns_promptly([&] {
    if (!storage::take_load_log(c.path()).empty())
      ::_exit(3);
  }));
  ::unlink(log.c_str());

  // A log linked to another file of this user's is not appended to.
  std::string victim = c.path() + ".victim";
  write_all(victim, "precious\n");
  REQUIRE(::link(victim.c_str(), log.c_str()) == 0);
  CHECK(!storage::append_load_log(c.path(), 0600, {{Hash128{1, 2}, 5, 1, 1}}));
  CHECK(read_all(victim) == "precious\n");
  CHECK(storage::take_load_log(c.path()).empty());
  CHECK(read_all(victim) == "precious\n");
  ::unlink(log.c_str());

  // Another user's log, or one others could write, gives nothing; nor does
  // a record of use far in the future (it would keep its closure from gc).
  Hash128 k{7, 7};
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, int64_t(1) << 62, 1, 1}}));
  CHECK(storage::take_load_log(c.path()).empty());
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, 100, 1, 1}}));
  REQUIRE(::chmod(log.c_str(), 0666) == 0);
  CHECK(storage::take_load_log(c.path()).empty());
  REQUIRE(storage::append_load_log(c.path(), 0600, {{k, 100, 1, 1}}));
  if (::geteuid() == 0 && ::chown(log.c_str(), 12345, 12345) == 0)
    CHECK(storage::take_load_log(c.path()).empty());
  else
    MESSAGE("not root: another user's log is not tried");
}

TEST_CASE("published images: another user's reader of a shared cache loads from them alone, "
          "warm after the first load, and writes nothing") {
  if (::geteuid() != 0) {
    MESSAGE("not root: no other user to read the cache as");
    return;
  }
  TestCache c = nested_roots("kiln-published-other-user");
  REQUIRE(served_alone(c.path(), "nest_a", 1, 333));
  // Shared as a cache directory is shared: readable by all, written by its
  // owner alone.
  std::string published = storage::published_path(c.path());
  REQUIRE(::chmod(c.dir.path().c_str(), 0755) == 0);
  REQUIRE(::chmod(c.path().c_str(), 0644) == 0);
  REQUIRE(::chmod(published.c_str(), 0644) == 0);
  ::unlink(storage::load_log_path(c.path()).c_str());
  struct stat before {};
  REQUIRE(::stat(published.c_str(), &before) == 0);
  // The reader: a child as nobody. Exit codes name what went wrong.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0)
      ::_exit(10);
    kiln_cache* cache = nullptr;
    if (kiln_cache_open(c.path().c_str(), &cache) != KILN_OK)
      ::_exit(11);
    if (!cache->published)
      ::_exit(12);
    for (int i = 0; i < 3; ++i) {
      kiln_image* img = nullptr;
      if (kiln_image_load(cache, "nest_a", "host", &img) != KILN_OK)
        ::_exit(13);
      void* fn = nullptr;
      if (kiln_image_lookup(img, "nest_a", &fn) != KILN_OK ||
          reinterpret_cast<IntFn>(fn)(1) != 333)
        ::_exit(14);
      kiln_image_release(img);
    }
    if (cache->storage)
      ::_exit(15); // the cache file was opened
    if (cache->warm.hits() != 2)
      ::_exit(16); // the second and third loads read the file again
    kiln_cache_close(cache);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  // It wrote nothing beside the cache: no load log, the same images file.
  CHECK(!fs::exists(storage::load_log_path(c.path())));
  struct stat after {};
  REQUIRE(::stat(published.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
  CHECK(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
}

namespace {

// The C API of one copy of libkiln, opened from `path`.
struct LoaderCopy {
  void* lib = nullptr;
  kiln_status (*open)(const char*, kiln_cache**) = nullptr;
  kiln_status (*load)(kiln_cache*, const char*, const char*, kiln_image**) = nullptr;
  kiln_status (*lookup)(kiln_image*, const char*, void**) = nullptr;
  void* (*module)(kiln_image*) = nullptr;
  void (*close)(kiln_cache*) = nullptr;
  explicit LoaderCopy(const std::string& path) {
    lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO(path << ": " << ::dlerror());
    REQUIRE(lib);
    open = reinterpret_cast<decltype(open)>(::dlsym(lib, "kiln_cache_open"));
    load = reinterpret_cast<decltype(load)>(::dlsym(lib, "kiln_image_load"));
    lookup = reinterpret_cast<decltype(lookup)>(::dlsym(lib, "kiln_image_lookup"));
    module = reinterpret_cast<decltype(module)>(::dlsym(lib, "kiln_image_module"));
    close = reinterpret_cast<decltype(close)>(::dlsym(lib, "kiln_cache_close"));
    REQUIRE((open && load && lookup && module && close));
  }
  // chg_parent's image loaded through `cache` and called with 5; the image
  // stays loaded.
  int load_and_call(kiln_cache* cache, kiln_image** img) {
    REQUIRE(load(cache, "chg_parent", "host", img) == KILN_OK);
    void* fn = nullptr;
    REQUIRE(lookup(*img, "chg_parent", &fn) == KILN_OK);
    return reinterpret_cast<IntFn>(fn)(5);
  }
};

} // namespace

TEST_CASE("host images: a second copy of the loader in the process never gets the first copy's "
          "object for an image of its own") {
  // Two caches whose root `chg_parent` is two different functions (12 and
  // 210 for 5) under the same deferred symbol (it follows from the entry,
  // not the body).
  TestCache v1 = empty_cache("kiln-two-loaders-1");
  precompile(data_request("change_v1.ll", {"chg_parent"}), v1.path());
  TestCache v2 = empty_cache("kiln-two-loaders-2");
  precompile(data_request("change_v2.ll", {"chg_parent"}), v2.path());
  // Two copies of libkiln (two versions, a vendored one), each counting its
  // loads from 1.
  std::string copy = v1.dir.path() + "/libkiln-copy.so";
  fs::copy_file(KILN_TEST_LOADER_LIBRARY, copy);
  LoaderCopy a(KILN_TEST_LOADER_LIBRARY), b(copy);
  kiln_cache* ca = nullptr;
  REQUIRE(a.open(v1.path().c_str(), &ca) == KILN_OK);
  kiln_image* ia = nullptr;
  CHECK(a.load_and_call(ca, &ia) == 12);
  a.close(ca);
  // The first copy's object was loaded from the memory file on descriptor
  // N (the path ends "/fd/N"), closed since with the handle. The second
  // copy's first load is made to get N too: its path was the same string,
  // and the C library gave it the first copy's object, chg_parent of v1.
  link_map* lm = nullptr;
  REQUIRE(::dlinfo(a.module(ia), RTLD_DI_LINKMAP, &lm) == 0);
  std::string name = lm->l_name;
  int n = std::atoi(name.substr(name.rfind('/') + 1).c_str());
  REQUIRE(n > 2);
  kiln_cache* cb = nullptr;
  REQUIRE(b.open(v2.path().c_str(), &cb) == KILN_OK);
  std::vector<int> fillers;
  for (;;) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    if (fd >= n) {
      ::close(fd);
      break;
    }
    fillers.push_back(fd);
  }
  kiln_image* ib = nullptr;
  CHECK(b.load_and_call(cb, &ib) == 210);
  b.close(cb);
  REQUIRE(::dlinfo(b.module(ib), RTLD_DI_LINKMAP, &lm) == 0);
  CHECK(std::string(lm->l_name) != name);
  for (int fd : fillers)
    ::close(fd);
  auto release_a = reinterpret_cast<void (*)(kiln_image*)>(::dlsym(a.lib, "kiln_image_release"));
  auto release_b = reinterpret_cast<void (*)(kiln_image*)>(::dlsym(b.lib, "kiln_image_release"));
  release_a(ia);
  release_b(ib);
}

TEST_CASE("the C API out of memory: closing a handle and asking whether it is read-only end "
          "cleanly, losing only usage") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("AddressSanitizer reserves address space: no limit on it can be set here");
  return;
#endif
  TestCache c = nested_roots("kiln-published-oom");
  // In a child, whose address space is then capped just above what it
  // uses and filled: a close used to throw std::bad_alloc out of the
  // handle's destructor (std::terminate), kiln_cache_read_only through C.
  for (bool ask_read_only : {true, false}) {
    CAPTURE(ask_read_only);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      kiln_cache* cache = nullptr;
      if (kiln_cache_open(c.path().c_str(), &cache) != KILN_OK)
        ::_exit(10);
      for (int i = 0; i < 20; ++i) {
        kiln_image* img = nullptr;
        if (kiln_image_load(cache, i % 2 ? "nest_a" : "nest_c", "host", &img) != KILN_OK)
          ::_exit(11);
        kiln_image_release(img);
      }
      long pages = 0;
      if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld", &pages) != 1)
          pages = 0;
        std::fclose(f);
      }
      if (pages <= 0)
        ::_exit(12);
      struct rlimit lim {};
      lim.rlim_cur = lim.rlim_max =
          rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE)) + (4u << 20);
      if (::setrlimit(RLIMIT_AS, &lim) != 0)
        ::_exit(13);
      // The heap filled, to its last small chunk: each block holds the next.
      void* head = nullptr;
      for (size_t size = size_t(1) << 20; size >= 16; size /= 2)
        for (;;) {
          void** block = static_cast<void**>(std::malloc(size));
          if (!block)
            break;
          *block = head;
          head = block;
        }
      if (ask_read_only)
        (void)kiln_cache_read_only(cache);
      else
        kiln_cache_close(cache);
      ::_exit(head ? 0 : 14);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    INFO("status " << status);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("host images: a root whose stored CPU or features no longer give its job's key is not "
          "loaded, through the cache file or published") {
  TestCache c = nested_roots("kiln-published-damaged-cpu");
  REQUIRE(served_alone(c.path(), "nest_a", 1, 333));
  // A row damaged to name fewer features than the code was built for: the
  // check would have let it run on a CPU that lacks one.
  REQUIRE(raw_exec(c.path(), "UPDATE targets SET features = substr(features, instr(features, "
                             "',') + 1) WHERE spec = 'host'") == 1);
  for (int pass = 0; pass < 2; ++pass) {
    CAPTURE(pass);
    kiln_cache* cache = open_ok(c.path());
    kiln_image* img = nullptr;
    CHECK(kiln_image_load(cache, "nest_a", "host", &img) == KILN_CORRUPT);
    CHECK(std::string(kiln_last_error()).find("damaged") != std::string::npos);
    // The first pass's close published the file again, without that root.
    if (pass == 1)
      CHECK((cache->published == nullptr || !cache->published->find("nest_a", "host")));
    kiln_cache_close(cache);
  }
}
