// Unit tests for the embedding API (src/api/compiler_c_api.cpp,
// include/kiln/jit.hpp, include/kiln/kiln_compiler.h): the C API's compile of
// in-memory buffers into a real cache, its result accessors and option
// defaults, compile-or-load's hit and miss through both APIs, statistics, and
// the fields of errors: compile-or-load passes on the fields of where an
// error arose and names the root it was loading, error_info is a copy of the
// fields, and the C API's last error carries them. Must-hit mode through
// both APIs, and the guard that turns an exception at a C entry point into
// KILN_INTERNAL. Misuse: struct sizes no release has, and caches and results
// that are not live, are refused.
#include "fixtures/cache.hpp"
#include "fixtures/env.hpp"
#include "fixtures/ir.hpp"
#include "runtime/c_entry.h"
#include "support/fault.h"

#include <kiln/admin.hpp>
#include <kiln/jit.hpp>
#include <kiln/kiln_compiler.h>

#include <sqlite3.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

struct Fixture {
  TempDir dir = temp_dir("kiln-api-errors");
  Cache cache = [this] {
    auto c = Cache::open(cache_file(dir));
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
  Fixture f; // the cache exists
  // Every write to the cache fails from here on: the job compiles but
  // cannot be stored, so it fails. The compile writes through the handle's
  // own connection, opened with the fault in place.
  fault::set_plan("sqlite-write");
  auto cache = Cache::open(cache_file(f.dir));
  Result<Loaded> r = make_error(Code::internal, "not run");
  if (cache) {
    std::vector<Source> sources{{"unit.ll", kBase}};
    r = compile_or_load(*cache, sources, "f", "host");
  }
  fault::set_plan("");
  REQUIRE(cache);
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().entry == "f");
  CHECK(r.error().target == "host");
  CHECK(is_hash128_hex(r.error().job));
  CHECK(r.error().message.find("job " + r.error().job + " (f, host) failed") != std::string::npos);
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

namespace {

// A cache opened through the C API, closed at the end of the scope.
struct CCache {
  TempDir dir = temp_dir("kiln-c-api");
  kiln_cache* cache = [this] {
    kiln_cache* c = nullptr;
    REQUIRE(kiln_cache_open(cache_file(dir).c_str(), &c) == KILN_OK);
    REQUIRE(c);
    return c;
  }();
  CCache() = default;
  CCache(const CCache&) = delete;
  CCache& operator=(const CCache&) = delete;
  ~CCache() { kiln_cache_close(cache); }
};

// A compile's result, freed at the end of the scope.
struct CResult {
  kiln_compile_result* r = nullptr;
  CResult() = default;
  CResult(const CResult&) = delete;
  CResult& operator=(const CResult&) = delete;
  ~CResult() { kiln_compile_result_free(r); }
};

// Bytes with nothing after them: the API must not read a terminator.
std::vector<char> unterminated(const std::string& s) { return {s.begin(), s.end()}; }

// The default options with kBase, unterminated, as their one source.
struct BaseOptions {
  std::vector<char> bytes = unterminated(kBase);
  kiln_source src{"unit.ll", bytes.data(), bytes.size()};
  kiln_compile_options options = [this] {
    kiln_compile_options o;
    kiln_compile_options_init(&o);
    o.sources = &src;
    o.source_count = 1;
    return o;
  }();
  BaseOptions() = default;
  BaseOptions(const BaseOptions&) = delete; // the options point into it
  BaseOptions& operator=(const BaseOptions&) = delete;
};

std::vector<kiln_job_info> jobs_of(const kiln_compile_result* r) {
  std::vector<kiln_job_info> out(kiln_compile_result_job_count(r));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].struct_size = sizeof out[i];
    REQUIRE(kiln_compile_result_job(r, i, &out[i]) == KILN_OK);
  }
  return out;
}

kiln_root_info root_of(const kiln_compile_result* r) {
  REQUIRE(kiln_compile_result_root_count(r) == 1);
  kiln_root_info root{sizeof(kiln_root_info)};
  REQUIRE(kiln_compile_result_root(r, 0, &root) == KILN_OK);
  return root;
}

bool is_hex32(const char* s) { return s && is_hash128_hex(s); }

std::string last_message() { return kiln_compile_last_error()->message; }

using IntFn = int(int);

int call_c(kiln_image* image, const char* entry, int arg) {
  void* p = nullptr;
  REQUIRE(kiln_image_lookup(image, entry, &p) == KILN_OK);
  REQUIRE(p);
  return reinterpret_cast<IntFn*>(p)(arg);
}

} // namespace

TEST_CASE("C API: kiln_compile_options_init sets the defaults") {
  kiln_compile_options o;
  std::memset(&o, 0x5A, sizeof o);
  kiln_compile_options_init(&o);
  CHECK(o.sources == nullptr);
  CHECK(o.source_count == 0);
  CHECK(o.entries == nullptr);
  CHECK(o.entry_count == 0);
  CHECK(o.targets == nullptr);
  CHECK(o.target_count == 0);
  CHECK(o.opt_level == 2);
  CHECK(o.debug == 0);
  CHECK(o.jobs == 0u);
  CHECK(o.link_images == 1);
  CHECK(o.must_hit == (must_hit_from_environment() ? 1 : 0));
  CHECK(o.struct_size == sizeof o);
  CHECK(o.library == nullptr);
  CHECK(o.remote == nullptr);
  CHECK(o.remote_read_only == 0);
  CHECK(o.shard_index == 0u);
  CHECK(o.shard_count == 1u);
  kiln_compile_options_init(nullptr); // nothing to fill: no crash
  CHECK(kiln_compiler_abi_version() == KILN_COMPILER_ABI_VERSION);
}

TEST_CASE("C API: only a released struct size is read or written by") {
  // init with a size no release has writes nothing; with the released
  // size, exactly that many bytes.
  unsigned char buf[sizeof(kiln_compile_options) + 16];
  std::memset(buf, 0x5A, sizeof buf);
  auto* o = reinterpret_cast<kiln_compile_options*>(buf);
  kiln_compile_options_init_size(o, sizeof buf - 8);
  for (unsigned char b : buf)
    CHECK(b == 0x5A);
  CHECK(last_message().find("kiln_compile_options.struct_size is " +
                            std::to_string(sizeof buf - 8)) != std::string::npos);
  kiln_compile_options_init_size(o, sizeof(kiln_compile_options));
  CHECK(o->struct_size == sizeof(kiln_compile_options));
  CHECK(o->opt_level == 2);
  for (size_t i = sizeof(kiln_compile_options); i < sizeof buf; ++i)
    CHECK(buf[i] == 0x5A);

  CCache c;
  std::string ir = kBase;
  kiln_source src{"unit.ll", ir.data(), ir.size()};
  o->sources = &src;
  o->source_count = 1;
  CResult ok;
  REQUIRE(kiln_compile(c.cache, o, &ok.r) == KILN_OK);
  // Any other size is refused, saying what to set and what is known: one
  // short of the struct (where its last field ends), longer ones whose
  // extra bytes are zero (a newer header's, or garbage), a zeroed struct,
  // one never set (a pointer's worth).
  std::memset(buf + sizeof(kiln_compile_options), 0, 16);
  for (size_t size : {size_t(0), size_t(1), sizeof(kiln_compile_options) - 4,
                      sizeof(kiln_compile_options) + 8, sizeof(kiln_compile_options) + 16,
                      size_t(4096), size_t(1) << 40, reinterpret_cast<size_t>(&src)}) {
    CAPTURE(size);
    o->struct_size = size;
    CResult refused;
    CHECK(kiln_compile(c.cache, o, &refused.r) == KILN_INVALID_ARGUMENT);
    CHECK(refused.r == nullptr);
    CHECK(last_message().find("kiln_compile_options.struct_size is " + std::to_string(size) +
                              ", not a size any release of kiln_compiler.h gave it "
                              "(this libkiln-compiler knows " +
                              std::to_string(sizeof(kiln_compile_options)) + ")") !=
          std::string::npos);
    CHECK(last_message().find("kiln_compile_options_init") != std::string::npos);
    kiln_image* image = nullptr;
    CHECK(kiln_compile_or_load(c.cache, o, "f", "host", &image, nullptr) ==
          KILN_INVALID_ARGUMENT);
    CHECK(image == nullptr);
  }

  // Results: written only to a struct of a released size, and then whole.
  REQUIRE(kiln_compile_result_job_count(ok.r) > 0);
  unsigned char jbuf[sizeof(kiln_job_info) + 8];
  std::memset(jbuf, 0x5A, sizeof jbuf);
  auto* j = reinterpret_cast<kiln_job_info*>(jbuf);
  j->struct_size = sizeof jbuf;
  CHECK(kiln_compile_result_job(ok.r, 0, j) == KILN_INVALID_ARGUMENT);
  CHECK(last_message().find("set it to sizeof(kiln_job_info)") != std::string::npos);
  for (size_t i = sizeof(size_t); i < sizeof jbuf; ++i)
    CHECK(jbuf[i] == 0x5A);
  j->struct_size = sizeof(kiln_job_info);
  REQUIRE(kiln_compile_result_job(ok.r, 0, j) == KILN_OK);
  CHECK(j->struct_size == sizeof(kiln_job_info));
  CHECK(is_hex32(j->key));
  kiln_root_info unsized{};
  CHECK(kiln_compile_result_root(ok.r, 0, &unsized) == KILN_INVALID_ARGUMENT);
  CHECK(last_message().find("set it to sizeof(kiln_root_info)") != std::string::npos);
  kiln_root_info garbage{};
  garbage.struct_size = size_t(1) << 40;
  CHECK(kiln_compile_result_root(ok.r, 0, &garbage) == KILN_INVALID_ARGUMENT);
  kiln_library_info none{sizeof(kiln_library_info)};
  CHECK(kiln_compile_result_library_count(ok.r) == 0);
  CHECK(kiln_compile_result_library(ok.r, 0, &none) == KILN_NOT_FOUND);
  kiln_library_info short_lib{sizeof(kiln_library_info) - 8};
  CHECK(kiln_compile_result_library(ok.r, 0, &short_lib) == KILN_INVALID_ARGUMENT);
}

TEST_CASE("C API: a cache or result that is not live is refused without being read") {
  CCache c;
  std::string ir = kBase;
  kiln_source src{"unit.ll", ir.data(), ir.size()};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &src;
  o.source_count = 1;
  alignas(64) static unsigned char junk[4096];
  std::memset(junk, 0xA5, sizeof junk);

  // A closed cache, an unmapped address, garbage: kiln_compile and
  // compile-or-load refuse each before reading the options.
  kiln_cache* closed = nullptr;
  REQUIRE(kiln_cache_open(cache_file(c.dir).c_str(), &closed) == KILN_OK);
  kiln_cache_close(closed);
  for (void* p : {static_cast<void*>(closed), reinterpret_cast<void*>(0x1234),
                  static_cast<void*>(junk)}) {
    auto* cache = static_cast<kiln_cache*>(p);
    kiln_compile_result* r = reinterpret_cast<kiln_compile_result*>(0x1);
    CHECK(kiln_compile(cache, &o, &r) == KILN_INVALID_ARGUMENT);
    CHECK(r == nullptr);
    CHECK(last_message() ==
          "kiln_compile: cache is not a live kiln_cache handle (closed, or never opened)");
    CHECK(kiln_compile_last_error()->status == KILN_INVALID_ARGUMENT);
    CHECK(std::string(kiln_last_error()) == last_message());
    kiln_image* image = reinterpret_cast<kiln_image*>(0x1);
    CHECK(kiln_compile_or_load(cache, &o, "f", "host", &image, &r) ==
          KILN_INVALID_ARGUMENT);
    CHECK(image == nullptr);
    CHECK(r == nullptr);
    CHECK(last_message().find("kiln_compile_or_load: cache is not a live") != std::string::npos);
  }

  // A result freed twice, read after its free, and pointers that never
  // were results.
  kiln_compile_result* freed = nullptr;
  REQUIRE(kiln_compile(c.cache, &o, &freed) == KILN_OK);
  REQUIRE(kiln_compile_result_job_count(freed) > 0);
  kiln_compile_result_free(freed);
  kiln_compile_result_free(freed);
  CHECK(last_message().find("kiln_compile_result_free: result is not a live "
                            "kiln_compile_result") != std::string::npos);
  for (void* p : {static_cast<void*>(freed), reinterpret_cast<void*>(0x1234),
                  static_cast<void*>(junk), static_cast<void*>(c.cache)}) {
    auto* r = static_cast<kiln_compile_result*>(p);
    const std::string dead = "is not a live kiln_compile_result";
    CHECK(kiln_compile_result_ok(r) == 0);
    CHECK(last_message().find("kiln_compile_result_ok: result " + dead) != std::string::npos);
    CHECK(kiln_compile_result_job_count(r) == 0);
    CHECK(kiln_compile_result_root_count(r) == 0);
    CHECK(kiln_compile_result_library_count(r) == 0);
    CHECK(last_message().find(dead) != std::string::npos);
    kiln_job_info job{sizeof job};
    CHECK(kiln_compile_result_job(r, 0, &job) == KILN_INVALID_ARGUMENT);
    CHECK(last_message().find("kiln_compile_result_job: result " + dead) != std::string::npos);
    kiln_root_info root{sizeof root};
    CHECK(kiln_compile_result_root(r, 0, &root) == KILN_INVALID_ARGUMENT);
    kiln_library_info lib{sizeof lib};
    CHECK(kiln_compile_result_library(r, 0, &lib) == KILN_INVALID_ARGUMENT);
    const char *symbol = nullptr, *key = nullptr;
    CHECK(kiln_compile_result_job_ref(r, 0, 0, &symbol, &key) == KILN_INVALID_ARGUMENT);
    kiln_compile_result_free(r);
    CHECK(last_message().find("kiln_compile_result_free: result " + dead) != std::string::npos);
  }
  // The cache handed in as a result above is untouched.
  CResult again;
  CHECK(kiln_compile(c.cache, &o, &again.r) == KILN_OK);
}

TEST_CASE("C API: the library, shard and remote settings reach the compile") {
  CCache c;
  std::string ir = kBase;
  kiln_source src{"unit.ll", ir.data(), ir.size()};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &src;
  o.source_count = 1;
  o.library = "kernels";
  o.remote = "off";
  CResult lib;
  REQUIRE(kiln_compile(c.cache, &o, &lib.r) == KILN_OK);
  REQUIRE(kiln_compile_result_library_count(lib.r) == 1);
  kiln_library_info info{sizeof(kiln_library_info)};
  REQUIRE(kiln_compile_result_library(lib.r, 0, &info) == KILN_OK);
  CHECK(std::string(info.name) == "kernels");
  CHECK(std::string(info.target) == "host");
  CHECK(is_hex32(info.closure));
  CHECK(info.roots == kiln_compile_result_root_count(lib.r));
  CHECK(info.members >= info.roots);
  CHECK(info.has_image == 1);
  CHECK(std::string(info.error).empty());
  kiln_image* image = nullptr;
  REQUIRE(kiln_library_load(c.cache, "kernels", "host", &image) == KILN_OK);
  kiln_image_release(image);

  // Shards: a shard that does not exist is the driver's error.
  kiln_compile_options sharded = o;
  sharded.library = nullptr;
  sharded.shard_index = 3;
  sharded.shard_count = 2;
  CResult bad_shard;
  CHECK(kiln_compile(c.cache, &sharded, &bad_shard.r) == KILN_INVALID_ARGUMENT);
  CHECK(last_message().find("shard 3 of 2") != std::string::npos);
  // A remote that cannot be parsed is refused before anything is compiled.
  kiln_compile_options remote = o;
  remote.library = nullptr;
  remote.remote = "ftp://nowhere";
  CResult bad_remote;
  CHECK(kiln_compile(c.cache, &remote, &bad_remote.r) == KILN_INVALID_ARGUMENT);
  // compile-or-load takes one root, whole.
  kiln_image* out = nullptr;
  CHECK(kiln_compile_or_load(c.cache, &o, "f", "host", &out, nullptr) == KILN_INVALID_ARGUMENT);
  CHECK(last_message().find("library or shards") != std::string::npos);
}

TEST_CASE("C API: kiln_compile compiles in-memory buffers into a cache") {
  CCache c;
  std::vector<char> bytes = unterminated(data_file("nested.ll"));
  kiln_source src{"nested.ll", bytes.data(), bytes.size()};
  const char* entries[] = {"nest_a"};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &src;
  o.source_count = 1;
  o.entries = entries;
  o.entry_count = 1;
  o.jobs = 2;

  CResult first;
  REQUIRE_MESSAGE(kiln_compile(c.cache, &o, &first.r) == KILN_OK, last_message());
  REQUIRE(first.r);
  CHECK(kiln_compile_result_ok(first.r) == 1);
  CHECK(kiln_compile_last_error()->status == KILN_OK);
  CHECK(last_message().empty());
  std::vector<kiln_job_info> jobs = jobs_of(first.r);
  REQUIRE(jobs.size() == 3);
  std::set<std::string> keys, entry_names;
  std::map<std::string, std::string> symbol_of_key;
  for (const kiln_job_info& j : jobs) {
    CAPTURE(j.entry);
    CHECK(is_hex32(j.key));
    CHECK(std::string(j.target) == "host");
    CHECK(is_deferred_symbol(j.symbol));
    CHECK(j.status == KILN_JOB_COMPILED);
    CHECK(std::string(j.error).empty());
    CHECK(j.compile_ms > 0);
    keys.insert(j.key);
    entry_names.insert(j.entry);
    symbol_of_key[j.key] = j.symbol;
  }
  CHECK(keys.size() == 3);
  CHECK(entry_names == std::set<std::string>{"nest_a", "nest_b", "nest_c"});
  // Each open reference names another job of the result by its symbol.
  size_t refs = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (size_t k = 0; k < jobs[i].ref_count; ++k, ++refs) {
      const char* sym = nullptr;
      const char* key = nullptr;
      REQUIRE(kiln_compile_result_job_ref(first.r, i, k, &sym, &key) == KILN_OK);
      REQUIRE(symbol_of_key.count(key) == 1);
      CHECK(symbol_of_key[key] == sym);
    }
  }
  CHECK(refs == 2); // nest_a -> nest_b -> nest_c

  kiln_root_info root = root_of(first.r);
  CHECK(std::string(root.name) == "nest_a");
  CHECK(std::string(root.target) == "host");
  CHECK(is_hex32(root.closure));
  CHECK(root.has_image == 1);
  CHECK(std::string(root.error).empty());
  std::string closure = root.closure;

  // The image is in the cache: it loads, and the code runs.
  kiln_image* image = nullptr;
  REQUIRE_MESSAGE(kiln_image_load(c.cache, "nest_a", "host", &image) == KILN_OK, kiln_last_error());
  CHECK(call_c(image, "nest_a", 1) == 333);
  CHECK(call_c(image, "nest_c", 2) == 6);
  kiln_image_release(image);

  // Again: every job cached, nothing compiled, the same closure.
  CResult second;
  REQUIRE(kiln_compile(c.cache, &o, &second.r) == KILN_OK);
  CHECK(kiln_compile_result_ok(second.r) == 1);
  std::vector<kiln_job_info> again = jobs_of(second.r);
  REQUIRE(again.size() == 3);
  for (size_t i = 0; i < again.size(); ++i) {
    CHECK(again[i].status == KILN_JOB_CACHED);
    CHECK(again[i].compile_ms == 0);
    CHECK(std::string(again[i].key) == jobs[i].key);
  }
  CHECK(root_of(second.r).closure == closure);

  // Unlinked, at -O0, for every exported function: other keys, no images.
  kiln_compile_options o0 = o;
  o0.opt_level = 0;
  o0.link_images = 0;
  o0.entries = nullptr;
  o0.entry_count = 0;
  CResult third;
  REQUIRE(kiln_compile(c.cache, &o0, &third.r) == KILN_OK);
  REQUIRE(kiln_compile_result_root_count(third.r) == 3);
  for (const kiln_job_info& j : jobs_of(third.r)) {
    CHECK(j.status == KILN_JOB_COMPILED);
    CHECK(keys.count(j.key) == 0);
  }
  for (size_t i = 0; i < 3; ++i) {
    kiln_root_info r{sizeof(kiln_root_info)};
    REQUIRE(kiln_compile_result_root(third.r, i, &r) == KILN_OK);
    CHECK(r.has_image == 0);
    CHECK(is_hex32(r.closure));
  }
}

TEST_CASE("C API: several buffers are one unit; an unnamed buffer is named by its index") {
  CCache c;
  std::string a = "declare i32 @g(i32)\ndefine i32 @f(i32 %x) {\n  %r = call i32 @g(i32 %x)\n"
                  "  ret i32 %r\n}\n";
  std::string b = "define i32 @g(i32 %x) {\n  %r = add i32 %x, 5\n  ret i32 %r\n}\n";
  kiln_source srcs[] = {{"a.ll", a.data(), a.size()}, {nullptr, b.data(), b.size()}};
  const char* entries[] = {"f"};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = srcs;
  o.source_count = 2;
  o.entries = entries;
  o.entry_count = 1;
  CResult r;
  REQUIRE_MESSAGE(kiln_compile(c.cache, &o, &r.r) == KILN_OK, last_message());
  CHECK(kiln_compile_result_ok(r.r) == 1);
  kiln_image* image = nullptr;
  REQUIRE(kiln_image_load(c.cache, "f", "host", &image) == KILN_OK);
  CHECK(call_c(image, "f", 1) == 6);
  kiln_image_release(image);

  std::string broken = "define i32 @h() {\n  ret i32 %nope\n}\n";
  kiln_source bad[] = {{"a.ll", a.data(), a.size()}, {nullptr, broken.data(), broken.size()}};
  o.sources = bad;
  o.entries = nullptr;
  o.entry_count = 0;
  CResult none;
  CHECK(kiln_compile(c.cache, &o, &none.r) == KILN_INVALID_ARGUMENT);
  CHECK(none.r == nullptr);
  const kiln_error_info* e = kiln_compile_last_error();
  CHECK(e->status == KILN_INVALID_ARGUMENT);
  CHECK(std::string(e->source) == "buffer1");
  CHECK(e->line == 2);
  CHECK(e->column == 11);
  CHECK(std::string(e->message).find("buffer1:2:11") != std::string::npos);
  CHECK(std::string(kiln_last_error()) == e->message);
}

TEST_CASE("C API: arguments are checked before anything is compiled") {
  CCache c;
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  CResult r;
  auto refused = [&](const kiln_compile_options* opts, const std::string& says) {
    CAPTURE(says);
    CHECK(kiln_compile(c.cache, opts, &r.r) == KILN_INVALID_ARGUMENT);
    CHECK(r.r == nullptr);
    CHECK(kiln_compile_last_error()->status == KILN_INVALID_ARGUMENT);
    CHECK(last_message().find(says) != std::string::npos);
  };
  CHECK(kiln_compile(nullptr, &o, &r.r) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_compile(c.cache, &o, nullptr) == KILN_INVALID_ARGUMENT);
  refused(nullptr, "kiln_compile: options is NULL");

  kiln_compile_options no_sources = o;
  no_sources.source_count = 2;
  refused(&no_sources, "source_count is 2 but sources is NULL");

  kiln_source hollow{"hollow.ll", nullptr, 10};
  kiln_compile_options no_data = o;
  no_data.sources = &hollow;
  no_data.source_count = 1;
  refused(&no_data, "source 0 ('hollow.ll') has size 10 but no data");

  std::string ir = kBase;
  kiln_source src{"unit.ll", ir.data(), ir.size()};
  kiln_compile_options no_entries = o;
  no_entries.sources = &src;
  no_entries.source_count = 1;
  no_entries.entry_count = 1;
  refused(&no_entries, "entries_count is 1 but entries is NULL");

  const char* empty_entry[] = {""};
  kiln_compile_options blank = no_entries;
  blank.entries = empty_entry;
  refused(&blank, "entries[0] is NULL or empty");

  const char* null_target[] = {"host", nullptr};
  kiln_compile_options targets = o;
  targets.sources = &src;
  targets.source_count = 1;
  targets.targets = null_target;
  targets.target_count = 2;
  refused(&targets, "targets[1] is NULL or empty");

  // A failure is this thread's until the next call, which clears it.
  kiln_compile_options fine = o;
  fine.sources = &src;
  fine.source_count = 1;
  REQUIRE(kiln_compile(c.cache, &fine, &r.r) == KILN_OK);
  CHECK(kiln_compile_last_error()->status == KILN_OK);
  CHECK(last_message().empty());
}

TEST_CASE("C API: result accessors check their arguments and ranges") {
  CHECK(kiln_compile_result_ok(nullptr) == 0);
  CHECK(kiln_compile_result_job_count(nullptr) == 0);
  CHECK(kiln_compile_result_root_count(nullptr) == 0);
  kiln_compile_result_free(nullptr);

  CCache c;
  std::string ir = kBase;
  kiln_source src{"unit.ll", ir.data(), ir.size()};
  kiln_compile_options o;
  kiln_compile_options_init(&o);
  o.sources = &src;
  o.source_count = 1;
  CResult r;
  REQUIRE(kiln_compile(c.cache, &o, &r.r) == KILN_OK);
  REQUIRE(kiln_compile_result_job_count(r.r) == 1);

  kiln_job_info job{sizeof(kiln_job_info)};
  CHECK(kiln_compile_result_job(r.r, 1, &job) == KILN_NOT_FOUND);
  CHECK(kiln_compile_last_error()->status == KILN_NOT_FOUND);
  CHECK(last_message() == "kiln_compile_result_job: index 1 is past the 1 jobs");
  CHECK(kiln_compile_result_job(r.r, 0, nullptr) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_compile_result_job(nullptr, 0, &job) == KILN_INVALID_ARGUMENT);
  REQUIRE(kiln_compile_result_job(r.r, 0, &job) == KILN_OK);
  CHECK(std::string(job.entry) == "f");
  CHECK(job.ref_count == 0);

  const char* sym = nullptr;
  const char* key = nullptr;
  CHECK(kiln_compile_result_job_ref(r.r, 0, 0, &sym, &key) == KILN_NOT_FOUND);
  CHECK(last_message() == "kiln_compile_result_job_ref: no reference 0 of job 0");
  CHECK(kiln_compile_result_job_ref(r.r, 5, 0, &sym, &key) == KILN_NOT_FOUND);
  CHECK(kiln_compile_result_job_ref(r.r, 0, 0, nullptr, &key) == KILN_INVALID_ARGUMENT);

  kiln_root_info root{sizeof(kiln_root_info)};
  CHECK(kiln_compile_result_root(r.r, 1, &root) == KILN_NOT_FOUND);
  CHECK(last_message() == "kiln_compile_result_root: index 1 is past the 1 roots");
  CHECK(kiln_compile_result_root(r.r, 0, nullptr) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_compile_result_root(r.r, 0, &root) == KILN_OK);
  CHECK(kiln_compile_last_error()->status == KILN_OK);

  CHECK(std::string(kiln_job_status_name(KILN_JOB_COMPILED)) == "compiled");
  CHECK(std::string(kiln_job_status_name(KILN_JOB_CACHED)) == "cached");
  CHECK(std::string(kiln_job_status_name(KILN_JOB_FAILED)) == "failed");
  CHECK(std::string(kiln_present_target()) == present_target());
}

TEST_CASE("compile_or_load: a miss compiles and loads, a hit loads without compiling") {
  Fixture f;
  std::string ir = data_file("nested.ll");
  std::vector<Source> sources{{"nested.ll", ir}};
  auto miss = compile_or_load(f.cache, sources, "nest_a", "host");
  INFO((miss ? std::string() : miss.error().message));
  REQUIRE(miss);
  CHECK_FALSE(miss->hit);
  REQUIRE(miss->report.jobs.size() == 3);
  for (const JobReport& j : miss->report.jobs)
    CHECK(j.status == JobStatus::compiled);
  REQUIRE(miss->report.roots.size() == 1);
  CHECK(miss->report.roots[0].image);
  auto fn = miss->image.function<IntFn>("nest_a");
  REQUIRE(fn);
  CHECK((*fn)(1) == 333);

  auto before = kiln::admin::stats(f.cache);
  REQUIRE(before);
  auto hit = compile_or_load(f.cache, sources, "nest_a", "host");
  REQUIRE(hit);
  CHECK(hit->hit);
  REQUIRE(hit->report.jobs.size() == 3);
  for (const JobReport& j : hit->report.jobs)
    CHECK(j.status == JobStatus::cached);
  REQUIRE(hit->report.roots.size() == 1);
  CHECK(hit->report.roots[0].closure == miss->report.roots[0].closure);
  auto hit_fn = hit->image.function<IntFn>("nest_b");
  REQUIRE(hit_fn);
  CHECK((*hit_fn)(0) == 30);
  auto after = kiln::admin::stats(f.cache);
  REQUIRE(after);
  CHECK(after->jobs == before->jobs);
  CHECK(after->images == before->images);
  CHECK(after->counters.job_misses == before->counters.job_misses);

  // Other options are another closure: a miss.
  JitOptions o0;
  o0.opt_level = 0;
  auto other = compile_or_load(f.cache, sources, "nest_a", "host", o0);
  REQUIRE(other);
  CHECK_FALSE(other->hit);
  CHECK(other->report.roots[0].closure != miss->report.roots[0].closure);
}

TEST_CASE("compile_or_load: what kiln::compile stored is a hit") {
  Fixture f;
  std::string ir = data_file("cycle.ll");
  CompileRequest req;
  req.inputs = {SourceInput::memory("cycle.ll", ir)};
  req.entries = {"cyc_a"};
  req.jobs = 2;
  auto compiled = compile(req, f.cache);
  INFO((compiled ? std::string() : compiled.error().message));
  REQUIRE(compiled);
  CHECK(compiled->ok());
  REQUIRE(compiled->roots.size() == 1);

  std::vector<Source> sources{{"renamed.ll", ir}};
  auto loaded = compile_or_load(f.cache, sources, "cyc_a", "host");
  REQUIRE(loaded);
  CHECK(loaded->hit);
  CHECK(loaded->report.roots[0].closure == compiled->roots[0].closure);
  for (const JobReport& j : loaded->report.jobs)
    CHECK(j.status == JobStatus::cached);
}

TEST_CASE("compile_or_load: every answer leaves the root's name as a precompile does") {
  // v1 compiled, then v2 (the name moves), then v1 again three ways: from
  // its memo with a report, from its memo without one (the C API), and
  // with no memo (a closure found by its key). Each points the name back
  // at v1's closure, from v1's unit, and says where it was.
  Fixture f;
  std::string v1 = data_file("change_v1.ll"), v2 = data_file("change_v2.ll");
  std::vector<Source> s1{{"v1.ll", v1}}, s2{{"v2.ll", v2}};
  auto first = compile_or_load(f.cache, s1, "chg_parent", "host");
  REQUIRE(first);
  std::string c1 = first->report.roots[0].closure;
  CHECK(first->report.roots[0].unit == "v1.ll");
  const std::string path = cache_file(f.dir);
  auto store = [&] { return kiln::storage::Store::open(path).take(); };
  auto named = [&] {
    auto st = store();
    auto k = st->names().resolve_name("chg_parent", "host");
    REQUIRE(k);
    return std::make_pair(k->hex(), *st->names().name_unit("chg_parent", "host"));
  };
  for (int way = 0; way < 3; ++way) {
    CAPTURE(way);
    auto moved = compile_or_load(f.cache, s2, "chg_parent", "host");
    REQUIRE(moved);
    std::string c2 = moved->report.roots[0].closure;
    REQUIRE(c2 != c1);
    CHECK(named() == std::make_pair(c2, std::string("v2.ll")));
    if (way == 2) // no memo: v1's closure is found by its key after planning
      REQUIRE(raw_exec(path, "DELETE FROM memo_rows WHERE kind = 0") > 0);
    if (way == 1) {
      kiln_source src{"v1.ll", v1.data(), v1.size()};
      kiln_compile_options o;
      kiln_compile_options_init(&o);
      o.sources = &src;
      o.source_count = 1;
      kiln_image* img = nullptr;
      REQUIRE(kiln_compile_or_load(f.cache.raw(), &o, "chg_parent", "host", &img, nullptr) ==
              KILN_OK);
      kiln_image_release(img);
    } else {
      auto back = compile_or_load(f.cache, s1, "chg_parent", "host");
      REQUIRE(back);
      CHECK(back->hit);
      const RootReport& rr = back->report.roots[0];
      CHECK(rr.closure == c1);
      CHECK(rr.unit == "v1.ll");
      CHECK(rr.previous_closure == c2);
      CHECK(rr.previous_unit == "v2.ll");
    }
    CHECK(named() == std::make_pair(c1, std::string("v1.ll")));
  }
}

TEST_CASE("compile: a memo's answer reports each root's unit as the run it replays did") {
  Fixture f;
  CompileRequest req;
  req.inputs = {SourceInput::memory("nested.ll", data_file("nested.ll"))};
  req.entries = {"nest_a", "nest_c"};
  auto run = compile(req, f.cache);
  REQUIRE(run);
  REQUIRE_FALSE(run->memo_hit);
  auto again = compile(req, f.cache);
  REQUIRE(again);
  REQUIRE(again->memo_hit);
  REQUIRE(again->roots.size() == run->roots.size());
  for (size_t i = 0; i < run->roots.size(); ++i) {
    CAPTURE(i);
    CHECK(again->roots[i].unit == run->roots[i].unit);
    CHECK(again->roots[i].unit == "nested.ll");
    CHECK(again->roots[i].image);
    CHECK(again->roots[i].previous_closure.empty());
  }
}

TEST_CASE("compile: a read-only cache answers a memo hit whose name came from another file "
          "name, without writing") {
  // The memo key is the bytes, not the file's name: the same unit under
  // another name is a hit whose name already names its closure, from
  // another unit. A read-only cache answers it as it is.
  Fixture f;
  const std::string path = cache_file(f.dir);
  std::string ir = data_file("nested.ll");
  CompileRequest req;
  req.inputs = {SourceInput::memory("first.ll", ir)};
  req.entries = {"nest_a"};
  auto run = compile(req, f.cache);
  REQUIRE(run);
  REQUIRE(run->ok());
  req.inputs = {SourceInput::memory("renamed.ll", ir)};
  kiln::test::EnvVar ro("KILN_READ_ONLY", "1");
  auto again = compile(req, path);
  INFO((again ? std::string() : again.error().message));
  REQUIRE(again);
  CHECK(again->memo_hit);
  REQUIRE(again->roots.size() == 1);
  CHECK(again->roots[0].closure == run->roots[0].closure);
  CHECK(again->roots[0].image);
  auto st = kiln::storage::Store::open(path, kiln::storage::OpenMode::read_only);
  REQUIRE(st);
  CHECK(*(*st)->names().name_unit("nest_a", "host") == "first.ll");
}

TEST_CASE("compile: a cache handle is compiled into through its own connection, read-only "
          "included") {
  Fixture f;
  CompileRequest req;
  std::string ir = data_file("cycle.ll");
  req.inputs = {SourceInput::memory("cycle.ll", ir)};
  req.entries = {"cyc_a"};
  // A handle opened read-only stays read-only: the compile is refused, not
  // run against the file opened again for writing.
  auto ro = Cache::open(cache_file(f.dir), KILN_CACHE_READ_ONLY);
  REQUIRE(ro);
  REQUIRE(ro->read_only());
  auto refused = compile(req, *ro);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Code::unavailable);
  CHECK(refused.error().message.find("is read-only (opened read-only): cannot compile into it") !=
        std::string::npos);
  auto stats = kiln::admin::stats(f.cache);
  REQUIRE(stats);
  CHECK(stats->jobs == 0);
  // The writable handle compiles; the read-only one then sees the result
  // through its own connection.
  auto done = compile(req, f.cache);
  REQUIRE(done);
  CHECK(done->ok());
  auto loaded = ro->load("cyc_a", "host");
  INFO((loaded ? std::string() : loaded.error().message));
  CHECK(loaded);
}

TEST_CASE("compile: the roots of one deferred cycle share one linked image, and each loads "
          "and runs from it") {
  Fixture f;
  CompileRequest req;
  req.inputs = {SourceInput::memory("cycle.ll", data_file("cycle.ll"))};
  req.jobs = 2;
  auto compiled = compile(req, f.cache); // every function a root
  INFO((compiled ? std::string() : compiled.error().message));
  REQUIRE(compiled);
  CHECK(compiled->ok());
  REQUIRE(compiled->roots.size() == 3);
  for (const RootReport& r : compiled->roots)
    CHECK(r.image);
  auto stats_now = kiln::admin::stats(f.cache);
  REQUIRE(stats_now);
  CHECK(stats_now->closures == 3);
  CHECK(stats_now->images == 1); // one link of the three jobs, not three
  // cyc_a(4) = 2112, cyc_b(0) = 2000, cyc_c(2) = 2101 (tests/data/cycle.ll).
  for (auto [root, arg, want] : {std::tuple{"cyc_a", 4, 2112}, std::tuple{"cyc_b", 0, 2000},
                                 std::tuple{"cyc_c", 2, 2101}}) {
    CAPTURE(root);
    auto image = f.cache.load(root, "host");
    REQUIRE_MESSAGE(image, (image ? std::string() : image.error().message));
    auto fn = image->lookup(root);
    REQUIRE(fn);
    CHECK(reinterpret_cast<int (*)(int)>(*fn)(arg) == want);
  }
  auto after = kiln::admin::stats(f.cache);
  REQUIRE(after);
  CHECK(after->images == 1); // the loads linked nothing
  auto problems = f.cache.verify(); // the shared image checked against each closure
  REQUIRE(problems);
  CHECK(problems->empty());
  // The same request again: a memo hit, every root's image found (once).
  auto again = compile(req, f.cache);
  REQUIRE(again);
  CHECK(again->memo_hit);
  REQUIRE(again->roots.size() == 3);
  for (const RootReport& r : again->roots)
    CHECK(r.image);
}

TEST_CASE("C API: kiln_compile_or_load misses, then hits, and takes its root as arguments") {
  CCache c;
  BaseOptions base;
  kiln_compile_options& o = base.options;

  kiln_image* image = nullptr;
  CResult miss;
  REQUIRE_MESSAGE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, &miss.r) == KILN_OK,
                  last_message());
  REQUIRE(image);
  CHECK(call_c(image, "f", 2) == 9);
  CHECK(std::string(kiln_image_target(image)) == "host");
  kiln_image_release(image);
  std::vector<kiln_job_info> jobs = jobs_of(miss.r);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0].status == KILN_JOB_COMPILED);
  std::string closure = root_of(miss.r).closure;

  image = nullptr;
  CResult hit;
  REQUIRE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, &hit.r) == KILN_OK);
  REQUIRE(image);
  CHECK(call_c(image, "f", 3) == 12);
  kiln_image_release(image);
  REQUIRE(kiln_compile_result_job_count(hit.r) == 1);
  CHECK(jobs_of(hit.r)[0].status == KILN_JOB_CACHED);
  CHECK(root_of(hit.r).closure == closure);

  // The report is optional. Without one, a hit is answered from the memo's
  // row and the closure's load alone; with its image gone, the closure is
  // linked again and loaded, as with a report.
  image = nullptr;
  REQUIRE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, nullptr) == KILN_OK);
  REQUIRE(image);
  CHECK(call_c(image, "f", 4) == 15);
  kiln_image_release(image);
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(cache_file(c.dir).c_str(), &db) == SQLITE_OK);
    sqlite3_busy_timeout(db, 10000);
    CHECK(sqlite3_exec(db, "DELETE FROM images", nullptr, nullptr, nullptr) == SQLITE_OK);
    CHECK(sqlite3_changes(db) >= 1);
    sqlite3_close(db);
  }
  image = nullptr;
  REQUIRE_MESSAGE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, nullptr) == KILN_OK,
                  last_message());
  REQUIRE(image);
  CHECK(call_c(image, "f", 5) == 18);
  kiln_image_release(image);
  image = nullptr;
  CResult relinked;
  REQUIRE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, &relinked.r) == KILN_OK);
  CHECK(call_c(image, "f", 1) == 6);
  kiln_image_release(image);
  CHECK(root_of(relinked.r).closure == closure);
  CHECK(jobs_of(relinked.r)[0].status == KILN_JOB_CACHED);

  // The root is the call's: options naming entries or targets are refused.
  const char* entries[] = {"f"};
  kiln_compile_options named = o;
  named.entries = entries;
  named.entry_count = 1;
  image = nullptr;
  CResult refused;
  CHECK(kiln_compile_or_load(c.cache, &named, "f", "host", &image, &refused.r) ==
        KILN_INVALID_ARGUMENT);
  CHECK(image == nullptr);
  CHECK(refused.r == nullptr);
  CHECK(last_message().find("options name entries or targets") != std::string::npos);
  CHECK(kiln_compile_or_load(c.cache, &o, "", "host", &image, nullptr) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_compile_or_load(c.cache, &o, "f", "host", nullptr, nullptr) ==
        KILN_INVALID_ARGUMENT);

  // A failure carries its fields through the C view.
  CHECK(kiln_compile_or_load(c.cache, &o, "no_such_function", "host", &image, nullptr) ==
        KILN_INVALID_ARGUMENT);
  const kiln_error_info* e = kiln_compile_last_error();
  CHECK(e->status == KILN_INVALID_ARGUMENT);
  CHECK(std::string(e->entry) == "no_such_function");
  CHECK(std::string(e->job).empty());
}

TEST_CASE("stats: what the cache holds; an empty handle is refused") {
  Fixture f;
  std::string ir = data_file("nested.ll");
  std::vector<Source> sources{{"nested.ll", ir}};
  auto empty = kiln::admin::stats(f.cache);
  REQUIRE(empty);
  CHECK(empty->jobs == 0);
  CHECK(empty->closures == 0);
  REQUIRE(compile_or_load(f.cache, sources, "nest_a", "host"));
  auto s = kiln::admin::stats(f.cache);
  REQUIRE(s);
  CHECK(s->jobs == 3);
  CHECK(s->closures == 1);
  CHECK(s->images == 1);
  CHECK(s->names == 1);
  CHECK(s->stored_bytes > 0);
  CHECK(s->raw_bytes > 0);
  CHECK(s->jobs_per_target == std::vector<std::pair<std::string, int64_t>>{{"host", 3}});

  // A handle moved from holds no cache.
  Cache moved = std::move(f.cache);
  REQUIRE(moved.raw());
  CHECK(f.cache.raw() == nullptr);
  auto none = kiln::admin::stats(f.cache);
  REQUIRE_FALSE(none);
  CHECK(none.error().code == Code::invalid_argument);
  auto loaded = compile_or_load(f.cache, sources, "nest_a", "host");
  REQUIRE_FALSE(loaded);
  CHECK(loaded.error().code == Code::invalid_argument);
  CompileRequest req;
  req.inputs = {SourceInput::memory("nested.ll", ir)};
  auto compiled = compile(req, f.cache);
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().code == Code::invalid_argument);
  CHECK(kiln::admin::stats(moved)->jobs == 3);
}

namespace {

// kBase computing something else: another module hash for the same entry.
std::string changed_base() {
  std::string ir = kBase;
  size_t at = ir.find("mul i32 %y, 3");
  REQUIRE(at != std::string::npos);
  ir.replace(at, 13, "mul i32 %y, 5");
  return ir;
}

} // namespace

TEST_CASE("must-hit: KILN_MUST_HIT is the default of every API's must-hit option") {
  {
    EnvVar on("KILN_MUST_HIT", "1");
    CHECK(must_hit_from_environment());
    CHECK(CompileRequest{}.must_hit);
    CHECK(JitOptions{}.must_hit);
    kiln_compile_options o;
    kiln_compile_options_init(&o);
    CHECK(o.must_hit == 1);
  }
  {
    EnvVar off("KILN_MUST_HIT", "0");
    CHECK_FALSE(must_hit_from_environment());
    CHECK_FALSE(CompileRequest{}.must_hit);
    kiln_compile_options o;
    kiln_compile_options_init(&o);
    CHECK(o.must_hit == 0);
  }
}

TEST_CASE("must-hit: C compile-or-load loads what is cached and refuses to compile a miss") {
  CCache c;
  BaseOptions base;
  kiln_compile_options& o = base.options;
  o.must_hit = 1;

  // Nothing cached yet: refused, naming the job and that nothing is near it.
  kiln_image* image = nullptr;
  CResult refused;
  CHECK(kiln_compile_or_load(c.cache, &o, "f", "host", &image, &refused.r) == KILN_NOT_FOUND);
  CHECK(image == nullptr);
  CHECK(refused.r == nullptr);
  const kiln_error_info* e = kiln_compile_last_error();
  CHECK(e->status == KILN_NOT_FOUND);
  CHECK(std::string(e->entry) == "f");
  std::string job = e->job;
  CHECK(job.size() == 32);
  CHECK_MESSAGE(last_message().find("must-hit: job 'f' for target host (key " + job +
                                    ") is not cached and would be compiled; no cached job for "
                                    "entry 'f' on any target") != std::string::npos,
                last_message());
  CHECK(std::string(kiln_last_error()) == last_message());

  // Compiled without must-hit, it is then a hit under it.
  o.must_hit = 0;
  REQUIRE_MESSAGE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, nullptr) == KILN_OK,
                  last_message());
  kiln_image_release(image);
  o.must_hit = 1;
  image = nullptr;
  CResult hit;
  REQUIRE_MESSAGE(kiln_compile_or_load(c.cache, &o, "f", "host", &image, &hit.r) == KILN_OK,
                  last_message());
  REQUIRE(image);
  CHECK(call_c(image, "f", 2) == 9);
  kiln_image_release(image);
  CHECK(jobs_of(hit.r)[0].status == KILN_JOB_CACHED);

  // A changed unit misses; the message names the input as what differs.
  std::vector<char> changed = unterminated(changed_base());
  kiln_source csrc{"unit.ll", changed.data(), changed.size()};
  o.sources = &csrc;
  image = nullptr;
  CHECK(kiln_compile_or_load(c.cache, &o, "f", "host", &image, nullptr) == KILN_NOT_FOUND);
  CHECK(image == nullptr);
  CHECK_MESSAGE(last_message().find(") differs in the input (module hash): module_hash ") !=
                    std::string::npos,
                last_message());
}

TEST_CASE("must-hit: C++ compile and compile-or-load name the differing options") {
  Fixture f;
  std::vector<Source> sources{{"unit.ll", kBase}};
  REQUIRE(compile_or_load(f.cache, sources, "f", "host"));
  JitOptions o3;
  o3.opt_level = 3;
  o3.must_hit = true;
  auto r = compile_or_load(f.cache, sources, "f", "host", o3);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::not_found);
  CHECK_MESSAGE(r.error().message.find(") differs in options: opt_level 3 wanted, 2 cached") !=
                    std::string::npos,
                r.error().message);

  CompileRequest req;
  req.inputs = {SourceInput::memory("unit.ll", kBase)};
  req.entries = {"f"};
  req.opt_level = 3;
  req.must_hit = true;
  auto compiled = compile(req, f.cache);
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().code == Code::not_found);
  CHECK(compiled.error().job.size() == 32);
  req.opt_level = 2;
  auto cached = compile(req, f.cache);
  REQUIRE_MESSAGE(cached, (cached ? std::string() : cached.error().message));
  REQUIRE(cached->jobs.size() == 1);
  CHECK(cached->jobs[0].status == JobStatus::cached);
}

TEST_CASE("c_entry: an exception thrown by an entry point's body is KILN_INTERNAL, reported") {
  std::string reported;
  auto report = [&](const std::string& m) { reported = m; };
  CHECK(runtime::c_entry("kiln_x", [] { return KILN_NOT_FOUND; }, report) == KILN_NOT_FOUND);
  CHECK(reported.empty());

  CHECK(runtime::c_entry("kiln_x", []() -> kiln_status { throw std::bad_alloc(); }, report) ==
        KILN_INTERNAL);
  CHECK(reported == "kiln_x: internal error: out of memory");
  CHECK(runtime::c_entry("kiln_y", []() -> kiln_status { throw std::runtime_error("boom"); },
                         report) == KILN_INTERNAL);
  CHECK(reported == "kiln_y: internal error: boom");
  CHECK(runtime::c_entry("kiln_z", []() -> kiln_status { throw 7; }, report) == KILN_INTERNAL);
  CHECK(reported == "kiln_z: internal error: unknown exception");

  // A report that itself throws still leaves the status.
  auto throwing = [](const std::string&) { throw std::bad_alloc(); };
  CHECK(runtime::c_entry("kiln_x", []() -> kiln_status { throw std::bad_alloc(); }, throwing) ==
        KILN_INTERNAL);

  // Without a report of its own, the message is kiln_last_error's.
  CHECK(runtime::c_entry("kiln_w", []() -> kiln_status { throw std::length_error("long"); }) ==
        KILN_INTERNAL);
  CHECK(std::string(kiln_last_error()) == "kiln_w: internal error: long");
}

TEST_CASE("compile: a compile worker that cannot start fails the run instead of ending it") {
  Fixture f;
  CompileRequest req;
  req.inputs = {SourceInput::memory("nested.ll", data_file("nested.ll"))};
  req.entries = {"nest_a"};
  req.jobs = 2;
  fault::set_plan("thread-start");
  auto r = compile(req, f.cache);
  fault::set_plan("");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::internal);
  CHECK_MESSAGE(r.error().message.rfind("cannot start compile worker 1 of 2: ", 0) == 0,
                r.error().message);
  CHECK(r.error().message.find("thread-start") != std::string::npos);

  // Without the fault the same request compiles.
  auto ok = compile(req, f.cache);
  REQUIRE_MESSAGE(ok, (ok ? std::string() : ok.error().message));
  CHECK(ok->ok());
}
