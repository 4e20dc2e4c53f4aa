// Unit tests for the admin C API (src/admin/admin_c_api.cpp): answers are the C++
// views' JSON in memory the caller frees with kiln_admin_free; a NULL or
// dead handle, a NULL out argument and a malformed argument are
// KILN_INVALID_ARGUMENT with the call named and *json_out NULL; a write on a
// read-only cache is KILN_UNAVAILABLE; kiln_admin_free ignores what it did
// not hand out, a second free included, however many answers are unfreed.
#include "admin/admin_cache.hpp"

#include "support/fault.h"
#include "support/files.h"

#include <kiln/admin.h>
#include <kiln/admin.hpp>
#include <kiln/kiln.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace kiln;
using namespace kiln::test;

namespace {

using json = nlohmann::json;

/// A cache handle from the C API, closed with the object.
struct CHandle {
  kiln_cache* cache = nullptr;
  explicit CHandle(const std::string& path, unsigned flags = 0) {
    kiln_status st = kiln_cache_open_flags(path.c_str(), flags | KILN_CACHE_LOCAL_ONLY, &cache);
    INFO(kiln_last_error());
    REQUIRE(st == KILN_OK);
  }
  ~CHandle() { kiln_cache_close(cache); }
  CHandle(const CHandle&) = delete;
  CHandle& operator=(const CHandle&) = delete;
};

/// An answer of a kiln_admin_* call, freed with the object.
struct Answer {
  char* text = nullptr;
  ~Answer() { kiln_admin_free(text); }
  json parsed() const {
    REQUIRE(text);
    return json::parse(text);
  }
};

/// A pointer no call returned, for out arguments that must be overwritten.
char* sentinel() {
  static char c;
  return &c;
}

/// Every call that answers with JSON, each with arguments that would be
/// valid, over `cache` and into `out`.
std::vector<std::pair<const char*, std::function<kiln_status(kiln_cache*, char**)>>>
json_calls(const std::string& dir) {
  const std::string file = dir + "/out.kbundle";
  return {
      {"kiln_admin_ls", [](kiln_cache* c, char** o) { return kiln_admin_ls(c, "", "", o); }},
      {"kiln_admin_show",
       [](kiln_cache* c, char** o) { return kiln_admin_show(c, "alpha", "host", o); }},
      {"kiln_admin_graph",
       [](kiln_cache* c, char** o) { return kiln_admin_graph(c, "alpha", "host", o); }},
      {"kiln_admin_libraries", [](kiln_cache* c, char** o) { return kiln_admin_libraries(c, o); }},
      {"kiln_admin_library",
       [](kiln_cache* c, char** o) { return kiln_admin_library(c, "nest", "", o); }},
      {"kiln_admin_export_image",
       [file](kiln_cache* c, char** o) {
         return kiln_admin_export_image(c, "alpha", nullptr, "host", file.c_str(), o);
       }},
      {"kiln_admin_stats", [](kiln_cache* c, char** o) { return kiln_admin_stats(c, 0, o); }},
      {"kiln_admin_verify", [](kiln_cache* c, char** o) { return kiln_admin_verify(c, o); }},
      {"kiln_admin_gc",
       [](kiln_cache* c, char** o) { return kiln_admin_gc(c, nullptr, nullptr, 1, o); }},
      {"kiln_admin_export",
       [file](kiln_cache* c, char** o) {
         return kiln_admin_export(c, file.c_str(), nullptr, 0, o);
       }},
      {"kiln_admin_import",
       [file](kiln_cache* c, char** o) { return kiln_admin_import(c, file.c_str(), o); }},
      {"kiln_admin_check_portable",
       [](kiln_cache* c, char** o) { return kiln_admin_check_portable(c, nullptr, o); }},
      {"kiln_admin_explain",
       [](kiln_cache* c, char** o) {
         return kiln_admin_explain(c, "00000000000000000000000000000000",
                                   "00000000000000000000000000000000", o);
       }},
      {"kiln_admin_config",
       [](kiln_cache* c, char** o) { return kiln_admin_config(c, nullptr, nullptr, o); }},
  };
}

} // namespace

TEST_CASE("admin C API: a NULL json_out, a NULL cache and a dead cache are invalid arguments, "
          "named, and *json_out is NULL") {
  AdminCache a = admin_cache("kiln-admin-c-api");
  // Opened before the dead one is made, so that it cannot take its address.
  CHandle live(a.path());
  kiln_cache* dead = nullptr;
  REQUIRE(kiln_cache_open_flags(a.path().c_str(), KILN_CACHE_LOCAL_ONLY, &dead) == KILN_OK);
  kiln_cache_close(dead);
  // Never a handle, never read through: an address inside the test's own data.
  int not_a_handle[4] = {};

  for (auto& [name, call] : json_calls(a.cache.dir.path())) {
    CAPTURE(name);
    CHECK(call(live.cache, nullptr) == KILN_INVALID_ARGUMENT);
    CHECK(contains(kiln_last_error(), std::string(name) + ": json_out is NULL"));

    char* out = sentinel();
    CHECK(call(nullptr, &out) == KILN_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK(contains(kiln_last_error(), std::string(name) + ": cache is NULL"));

    for (kiln_cache* bad : {dead, reinterpret_cast<kiln_cache*>(not_a_handle)}) {
      out = sentinel();
      CHECK(call(bad, &out) == KILN_INVALID_ARGUMENT);
      CHECK(out == nullptr);
      CHECK(contains(kiln_last_error(), std::string(name) + ": cache is not a live kiln_cache"));
    }
  }
}

TEST_CASE("admin C API: answers are the C++ views' JSON") {
  AdminCache a = admin_cache("kiln-admin-c-api");
  CHandle h(a.path());
  Cache cpp = Cache::borrow(h.cache);

  Answer ls;
  REQUIRE(kiln_admin_ls(h.cache, nullptr, nullptr, &ls.text) == KILN_OK);
  CHECK(std::string(ls.text) == admin::to_json(admin_ok(admin::list(cpp))));
  json l = ls.parsed();
  CHECK(l["jobs"].size() == 5);
  CHECK(l["names"].size() == 3);

  Answer filtered;
  REQUIRE(kiln_admin_ls(h.cache, "sm_90", "", &filtered.text) == KILN_OK);
  CHECK(filtered.parsed()["jobs"].size() == 1);

  Answer show;
  REQUIRE(kiln_admin_show(h.cache, a.records.alpha.key.hex().c_str(), nullptr, &show.text) ==
          KILN_OK);
  CHECK(show.parsed()["kind"] == "job");
  CHECK(show.parsed()["refs"][0]["entry"] == "beta");

  Answer verify;
  REQUIRE(kiln_admin_verify(h.cache, &verify.text) == KILN_OK);
  CHECK(verify.parsed()["ok"] == true);
  CHECK(verify.parsed()["closures"] == 3);

  Answer config;
  REQUIRE(kiln_admin_config(h.cache, "max_size", "3M", &config.text) == KILN_OK);
  CHECK(config.parsed()["max_size"] == 3 * 1048576);

  // A failure of the view is its status, with its message.
  char* out = sentinel();
  CHECK(kiln_admin_show(h.cache, "no_such_root", "host", &out) == KILN_NOT_FOUND);
  CHECK(out == nullptr);
  CHECK(contains(kiln_last_error(), "no_such_root"));
  out = sentinel();
  CHECK(kiln_admin_explain(h.cache, "zz", nullptr, &out) == KILN_INVALID_ARGUMENT);
  CHECK(out == nullptr);
}

TEST_CASE("admin C API: malformed arguments are invalid and write nothing") {
  AdminCache a = admin_cache("kiln-admin-c-api");
  CHandle h(a.path());
  const std::string dir = a.cache.dir.path();
  char* out = sentinel();

  CHECK(kiln_admin_export_image(h.cache, "alpha", nullptr, "host", nullptr, &out) ==
        KILN_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(contains(kiln_last_error(), "kiln_admin_export_image: path is empty"));
  CHECK(kiln_admin_export_image(h.cache, "alpha", nullptr, "host", "", &out) ==
        KILN_INVALID_ARGUMENT);

  std::string bundle = dir + "/b.kbundle";
  out = sentinel();
  CHECK(kiln_admin_export(h.cache, bundle.c_str(), nullptr, 2, &out) == KILN_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(contains(kiln_last_error(), "kiln_admin_export: which is NULL"));
  CHECK_FALSE(path_exists(bundle));

  CHECK(kiln_admin_gc(h.cache, "12 parsecs", nullptr, 1, &out) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_admin_gc(h.cache, nullptr, "a while", 1, &out) == KILN_INVALID_ARGUMENT);
  CHECK(kiln_admin_config(h.cache, "no_such_setting", nullptr, &out) == KILN_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error(), "no_such_setting"));
  CHECK(kiln_admin_import(h.cache, (dir + "/missing.kbundle").c_str(), &out) != KILN_OK);
  CHECK(out == nullptr);

  // A listed export names its roots; an empty list is every root.
  const char* which[] = {"gamma"};
  Answer one;
  REQUIRE(kiln_admin_export(h.cache, bundle.c_str(), which, 1, &one.text) == KILN_OK);
  CHECK(one.parsed()["closures"] == 1);
  CHECK(one.parsed()["bytes"].get<size_t>() == read_file(bundle)->size());
  Answer all;
  REQUIRE(kiln_admin_export(h.cache, bundle.c_str(), nullptr, 0, &all.text) == KILN_OK);
  CHECK(all.parsed()["closures"] == 3);
}

TEST_CASE("admin C API: writes on a read-only cache are unavailable; reads answer") {
  AdminCache a = admin_cache("kiln-admin-c-api");
  std::string bundle = a.cache.dir.path() + "/all.kbundle";
  {
    CHandle w(a.path());
    Answer exported;
    REQUIRE(kiln_admin_export(w.cache, bundle.c_str(), nullptr, 0, &exported.text) == KILN_OK);
  }
  CHandle ro(a.path(), KILN_CACHE_READ_ONLY);
  char* out = sentinel();
  CHECK(kiln_admin_gc(ro.cache, "1", nullptr, 1, &out) == KILN_UNAVAILABLE);
  CHECK(out == nullptr);
  CHECK(kiln_admin_import(ro.cache, bundle.c_str(), &out) == KILN_UNAVAILABLE);
  CHECK(kiln_admin_stats(ro.cache, 1, &out) == KILN_UNAVAILABLE);
  CHECK(kiln_admin_config(ro.cache, "max_size", "1M", &out) == KILN_UNAVAILABLE);
  CHECK(out == nullptr);

  Answer stats, config, ls;
  CHECK(kiln_admin_stats(ro.cache, 0, &stats.text) == KILN_OK);
  CHECK(stats.parsed()["jobs"] == 5);
  CHECK(kiln_admin_config(ro.cache, nullptr, nullptr, &config.text) == KILN_OK);
  CHECK(kiln_admin_ls(ro.cache, nullptr, nullptr, &ls.text) == KILN_OK);
}

TEST_CASE("admin C API: check_portable of a bundle needs no cache; of the cache, it does") {
  TestCache c = nested_cache("kiln-admin-c-api-portable");
  std::string bundle = c.dir.path() + "/nest.kbundle";
  CHandle h(c.path());
  Answer exported;
  REQUIRE(kiln_admin_export(h.cache, bundle.c_str(), nullptr, 0, &exported.text) == KILN_OK);

  Answer of_bundle;
  REQUIRE(kiln_admin_check_portable(nullptr, bundle.c_str(), &of_bundle.text) == KILN_OK);
  json b = of_bundle.parsed();
  CHECK(b["closures"] == 1);
  CHECK(b["loadable"] == 1);
  CHECK(b["details"][0]["names"] == json::array({"nest_a"}));

  Answer of_cache;
  REQUIRE(kiln_admin_check_portable(h.cache, "", &of_cache.text) == KILN_OK);
  CHECK(of_cache.parsed() == b);

  char* out = sentinel();
  CHECK(kiln_admin_check_portable(nullptr, nullptr, &out) == KILN_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(kiln_admin_check_portable(nullptr, "", &out) == KILN_INVALID_ARGUMENT);
  // An image for a file in a directory that does not exist: an error naming
  // it, and no file.
  std::string nowhere = c.dir.path() + "/no/such/dir/nest_a.so";
  CHECK(kiln_admin_export_image(h.cache, "nest_a", nullptr, "host", nowhere.c_str(), &out) !=
        KILN_OK);
  CHECK(out == nullptr);
  CHECK(contains(kiln_last_error(), "no/such/dir"));
  CHECK_FALSE(path_exists(nowhere));
  Answer image;
  std::string there = c.dir.path() + "/nest_a.so";
  REQUIRE(kiln_admin_export_image(h.cache, "nest_a", nullptr, "host", there.c_str(),
                                  &image.text) == KILN_OK);
  CHECK(image.parsed()["bytes"].get<size_t>() == read_file(there)->size());
  // A bundle that is not one.
  std::string junk = c.dir.path() + "/junk.kbundle";
  REQUIRE(write_file_atomic(junk, "not a bundle"));
  CHECK(kiln_admin_check_portable(nullptr, junk.c_str(), &out) != KILN_OK);
  CHECK(out == nullptr);
}

TEST_CASE("admin C API: dump answers an artifact's bytes, NULs included, freed like JSON") {
  TestCache c = open_cache("kiln-admin-c-api-dump");
  core::JobRecord j = consistent_job("bin");
  const std::string object("\x7f" "ELF\0\0\x01\xff tail", 13);
  REQUIRE(c.store->jobs().put_job(j, {{"obj", object}}, {}));
  c.store.reset();
  CHandle h(c.path());

  void* bytes = nullptr;
  size_t size = 99;
  REQUIRE(kiln_admin_dump(h.cache, j.key.hex().c_str(), "object", &bytes, &size) == KILN_OK);
  REQUIRE(bytes);
  CHECK(size == object.size());
  CHECK(std::string(static_cast<const char*>(bytes), size) == object);
  // Terminated past its end, for a caller that prints PTX as a string.
  CHECK(static_cast<const char*>(bytes)[size] == '\0');
  kiln_admin_free(bytes);

  bytes = sentinel();
  size = 99;
  CHECK(kiln_admin_dump(h.cache, j.key.hex().c_str(), "ptx", &bytes, &size) == KILN_NOT_FOUND);
  CHECK(bytes == nullptr);
  CHECK(size == 0);
  CHECK(kiln_admin_dump(h.cache, j.key.hex().c_str(), "assembly", &bytes, &size) ==
        KILN_INVALID_ARGUMENT);
  CHECK(kiln_admin_dump(nullptr, j.key.hex().c_str(), "object", &bytes, &size) ==
        KILN_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error(), "kiln_admin_dump: cache is NULL"));
  CHECK(kiln_admin_dump(h.cache, j.key.hex().c_str(), "object", nullptr, &size) ==
        KILN_INVALID_ARGUMENT);
  CHECK(kiln_admin_dump(h.cache, j.key.hex().c_str(), "object", &bytes, nullptr) ==
        KILN_INVALID_ARGUMENT);
  CHECK(contains(kiln_last_error(), "an out argument is NULL"));
}

TEST_CASE("admin C API: kiln_admin_free frees each answer once and ignores anything else, "
          "with thousands unfreed") {
  AdminCache a = admin_cache("kiln-admin-c-api-free");
  CHandle h(a.path());

  kiln_admin_free(nullptr);

  // More answers than the live-answer table's slots: the rest overflow, and
  // each is still freed once.
  std::vector<char*> answers(3000);
  for (char*& p : answers) {
    REQUIRE(kiln_admin_config(h.cache, nullptr, nullptr, &p) == KILN_OK);
    REQUIRE(p);
  }
  for (char* p : answers)
    CHECK(json::parse(p).contains("max_size"));
  char* kept = answers.back();
  answers.pop_back();
  const std::string before = kept;
  for (char* p : answers)
    kiln_admin_free(p);

  // A second free of one, a pointer no call returned, and one inside an
  // answer: ignored, and said so. (No answer is made in between, so none
  // can have the freed one's address.)
  kiln_admin_free(answers[0]);
  CHECK(contains(kiln_last_error(), "kiln_admin_free: the pointer is not an answer"));
  char local[16] = "not an answer";
  kiln_admin_free(local);
  CHECK(contains(kiln_last_error(), "kiln_admin_free"));
  CHECK(std::string(local) == "not an answer");
  kiln_admin_free(kept + 1);
  CHECK(std::string(kept) == before);
  kiln_admin_free(kept);
}

TEST_CASE("admin C API: an exception inside a call is KILN_INTERNAL naming the call, never "
          "an abort") {
  AdminCache a = admin_cache("kiln-admin-c-api-fault");
  CHandle h(a.path());
  char* out = nullptr;
  fault::set_plan("c-entry");
  kiln_status st = kiln_admin_verify(h.cache, &out);
  fault::set_plan("");
  CHECK(st == KILN_INTERNAL);
  CHECK(contains(kiln_last_error(), "kiln_admin_verify: internal error"));
  CHECK(contains(kiln_last_error(), "c-entry"));
  // The handle is untouched.
  Answer after;
  CHECK(kiln_admin_verify(h.cache, &after.text) == KILN_OK);
}
