// Unit tests for the bridge (src/bridge): libkiln's table holds, in each
// entry, the very function calls.inc names for it, and nothing else; the
// built libkiln hands it out under its release's version only, every entry
// inside libkiln; libkiln-compiler's calls through it reach libkiln's state
// (its last error, its registry of live handles), not a copy's; and a
// libkiln-compiler meeting a libkiln of another release fails to load,
// naming the version, rather than calling through a table it was not built
// with.
#include "bridge/bridge.h"

#include "fixtures/cache.hpp"
#include "fixtures/files.hpp"
#include "support/files.h"

#include <kiln/kiln.h>
#include <kiln/kiln_compiler.h>

#include <doctest/doctest.h>

#include <climits>
#include <utility>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <link.h>

namespace fs = std::filesystem;

namespace kiln {
namespace {

using bridge::Bridge;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// The entries of `b` whose value is not the function calls.inc names.
std::vector<std::string> wrong_entries(const Bridge& b) {
  std::vector<std::string> wrong;
#define KILN_BRIDGE_FREE(field, ret, name, params, args)                                       \
  {                                                                                            \
    decltype(b.field) expected = &name;                                                        \
    if (b.field != expected)                                                                   \
      wrong.push_back(#field);                                                                 \
  }
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals)                       \
  {                                                                                            \
    decltype(b.field) expected = &cls::method;                                                 \
    if (b.field != expected)                                                                   \
      wrong.push_back(#field);                                                                 \
  }
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  decltype(b.cache_flush_usage) flush = &::kiln_cache::flush_usage;
  if (b.cache_flush_usage != flush)
    wrong.push_back("cache_flush_usage");
  return wrong;
}

/// The entries of `b` that are empty.
std::vector<std::string> empty_entries(const Bridge& b) {
  std::vector<std::string> empty;
#define KILN_BRIDGE_FREE(field, ret, name, params, args)                                       \
  if (!b.field)                                                                                \
    empty.push_back(#field);
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals)                       \
  if (!b.field)                                                                                \
    empty.push_back(#field);
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  if (!b.cache_flush_usage)
    empty.push_back("cache_flush_usage");
  return empty;
}

/// The free functions' entries of `b`, by field name.
std::vector<std::pair<std::string, const void*>> free_entries(const Bridge& b) {
  std::vector<std::pair<std::string, const void*>> out;
#define KILN_BRIDGE_FREE(field, ret, name, params, args)                                       \
  out.emplace_back(#field, reinterpret_cast<const void*>(b.field));
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals)
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  return out;
}

/// The size Bridge has when it holds the listed entries and nothing more.
constexpr size_t listed_size() {
  size_t n = sizeof(size_t);
#define KILN_BRIDGE_FREE(field, ret, name, params, args) n += sizeof(Bridge::field);
#define KILN_BRIDGE_MEMBER(field, ret, cls, method, params, args, quals) n += sizeof(Bridge::field);
#include "bridge/calls.inc"
#undef KILN_BRIDGE_FREE
#undef KILN_BRIDGE_MEMBER
  return n + sizeof(Bridge::cache_flush_usage);
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  REQUIRE(::realpath(path.c_str(), buf));
  return buf;
}

/// A shared object opened by path in this namespace, closed with the object.
struct Opened {
  void* handle = nullptr;
  explicit Opened(const std::string& path) {
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    INFO(path << ": " << ::dlerror());
    REQUIRE(handle);
  }
  ~Opened() { ::dlclose(handle); }
  Opened(const Opened&) = delete;
  Opened& operator=(const Opened&) = delete;
  template <class F> F symbol(const char* name) const {
    void* p = ::dlsym(handle, name);
    INFO(name);
    REQUIRE(p);
    return reinterpret_cast<F>(p);
  }
};

} // namespace
} // namespace kiln

using namespace kiln;
using namespace kiln::test;

TEST_CASE("bridge: every entry of libkiln's table is the function calls.inc names for it, and "
          "the table holds no other") {
  const Bridge* b = kiln_private_bridge();
  REQUIRE(b);
  CHECK(b == kiln_private_bridge()); // made once
  CHECK(b->size == sizeof(Bridge));
  // An entry added to Bridge by hand, outside calls.inc, would be in no list
  // below and so never filled or checked.
  CHECK(sizeof(Bridge) == listed_size());
  CHECK(empty_entries(*b).empty());
  // Entries of one type (nvjitlink_path, cuda_device_runtime_path and
  // nvlink_identity; handle_taken and handle_live) would compile swapped.
  std::vector<std::string> wrong = wrong_entries(*b);
  INFO(wrong.size() << " wrong, the first: " << (wrong.empty() ? "" : wrong[0]));
  CHECK(wrong.empty());

  // Such a swap is told, entry by entry.
  Bridge swapped = *b;
  std::swap(swapped.nvjitlink_path, swapped.nvlink_identity);
  std::swap(swapped.handle_taken, swapped.handle_live);
  CHECK(wrong_entries(swapped) ==
        std::vector<std::string>{"nvjitlink_path", "nvlink_identity", "handle_taken",
                                 "handle_live"});
  swapped = *b;
  swapped.storage_put_job = nullptr;
  CHECK(empty_entries(swapped) == std::vector<std::string>{"storage_put_job"});
}

TEST_CASE("bridge: the built libkiln hands out its table under this release's version alone, "
          "each entry inside libkiln") {
  Opened lib(KILN_TEST_LOADER_LIBRARY);
  using Table = const Bridge* (*)();
  const std::string version = lib.symbol<const char* (*)()>("kiln_version")();
  CHECK(version == kiln_version()); // this build's

  void* versioned_symbol =
      ::dlvsym(lib.handle, "kiln_private_bridge", ("KILN_PRIVATE_" + version).c_str());
  REQUIRE(versioned_symbol);
  CHECK(::dlsym(lib.handle, "kiln_private_bridge") == versioned_symbol);
  auto versioned = reinterpret_cast<Table>(versioned_symbol);
  // A libkiln-compiler of another release asks for another version: libkiln has none.
  CHECK_FALSE(::dlvsym(lib.handle, "kiln_private_bridge", "KILN_PRIVATE_0.0.0"));
  CHECK_FALSE(::dlvsym(lib.handle, "kiln_private_bridge", "KILN_0"));

  const Bridge* t = versioned();
  REQUIRE(t);
  CHECK(t != kiln_private_bridge()); // libkiln's own, not this program's copy
  CHECK(t->size == sizeof(Bridge));
  CHECK(empty_entries(*t).empty());
  const std::string file = real(KILN_TEST_LOADER_LIBRARY);
  for (const auto& [field, fn] : free_entries(*t)) {
    CAPTURE(field);
    Dl_info info{};
    REQUIRE(::dladdr(fn, &info) != 0);
    REQUIRE(info.dli_fname);
    CHECK(real(info.dli_fname) == file);
  }
}

TEST_CASE("bridge: libkiln-compiler's calls reach libkiln's last error and its registry of "
          "live handles") {
  TestCache c = open_cache("kiln-bridge");
  c.store.reset();
  // libkiln-compiler brings the libkiln it was linked with.
  Opened compiler(KILN_TEST_COMPILER_LIBRARY);
  Opened loader(KILN_TEST_LOADER_LIBRARY);
  auto compile = compiler.symbol<decltype(&kiln_compile)>("kiln_compile");
  auto open = loader.symbol<decltype(&kiln_cache_open)>("kiln_cache_open");
  auto close = loader.symbol<decltype(&kiln_cache_close)>("kiln_cache_close");
  auto last_error = loader.symbol<decltype(&kiln_last_error)>("kiln_last_error");

  // A handle of libkiln is live for libkiln-compiler: the check passes and
  // the options are read next.
  kiln_cache* theirs = nullptr;
  REQUIRE(open(c.path().c_str(), &theirs) == KILN_OK);
  kiln_compile_result* result = nullptr;
  CHECK(compile(theirs, nullptr, &result) == KILN_INVALID_ARGUMENT);
  CHECK(result == nullptr);
  // libkiln-compiler's error is read through libkiln, and only there.
  CHECK(contains(last_error(), "kiln_compile: options is NULL"));
  CHECK_FALSE(contains(kiln_last_error(), "options is NULL"));

  // A handle this program's own copy made is no handle of libkiln's.
  kiln_cache* ours = nullptr;
  REQUIRE(kiln_cache_open(c.path().c_str(), &ours) == KILN_OK);
  CHECK(compile(ours, nullptr, &result) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_compile: cache is not a live kiln_cache handle"));
  kiln_cache_close(ours);

  // Nor is a handle libkiln has closed.
  close(theirs);
  CHECK(compile(theirs, nullptr, &result) == KILN_INVALID_ARGUMENT);
  CHECK(contains(last_error(), "kiln_compile: cache is not a live kiln_cache handle"));
}

TEST_CASE("bridge: a libkiln-compiler meeting a libkiln of another release fails to load, "
          "naming the version") {
  // A copy of libkiln that defines its table under another version, opened
  // in a namespace of its own so that libkiln-compiler's dependency on
  // libkiln (by soname) is that copy.
  const std::string version = "KILN_PRIVATE_" + std::string(kiln_version());
  TempDir dir = temp_dir("kiln-bridge-release");
  auto bytes = read_file(KILN_TEST_LOADER_LIBRARY);
  REQUIRE(bytes);
  std::string other = "KILN_PRIVATX_" + std::string(kiln_version());
  size_t replaced = 0;
  for (size_t at = bytes->find(version + '\0'); at != std::string::npos;
       at = bytes->find(version + '\0', at + 1), ++replaced)
    bytes->replace(at, version.size(), other);
  REQUIRE(replaced >= 1);
  std::string copy = dir.path() + "/" + fs::path(real(KILN_TEST_LOADER_LIBRARY)).filename().string();
  REQUIRE(write_file_atomic(copy, *bytes));

  void* loader = ::dlmopen(LM_ID_NEWLM, copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO(copy << ": " << (loader ? "" : ::dlerror()));
  REQUIRE(loader);
  // The copy loads, its public API as it was; its table is not under this
  // release's version.
  CHECK(::dlsym(loader, "kiln_version"));
  CHECK_FALSE(::dlvsym(loader, "kiln_private_bridge", version.c_str()));
  Lmid_t ns = 0;
  REQUIRE(::dlinfo(loader, RTLD_DI_LMID, &ns) == 0);

  void* compiler = ::dlmopen(ns, KILN_TEST_COMPILER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  const char* err = compiler ? nullptr : ::dlerror();
  CHECK_FALSE(compiler);
  REQUIRE(err);
  INFO(std::string(err));
  CHECK(contains(err, version));
  CHECK(contains(err, "not found"));
  if (compiler)
    ::dlclose(compiler);
  ::dlclose(loader);
}
