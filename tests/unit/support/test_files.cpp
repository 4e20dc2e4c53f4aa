// Unit tests for files (src/support/files.cpp): atomic writes, temporary
// directories, the default cache path.
#include "support/files.h"

#include "fixtures/env.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>

using namespace kiln;
using namespace kiln::test;

TEST_CASE("write_file_atomic replaces whole and TempDir cleans up") {
  std::string dir_path;
  {
    auto dir = TempDir::create("kiln-test");
    REQUIRE(dir);
    dir_path = dir->path();
    std::string f = dir->path() + "/a/b/file";
    REQUIRE(make_dirs(dir->path() + "/a/b"));
    REQUIRE(write_file_atomic(f, "first"));
    REQUIRE(write_file_atomic(f, "second"));
    auto r = read_file(f);
    REQUIRE(r);
    CHECK(*r == "second");
    auto missing = read_file(dir->path() + "/nope");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == Code::not_found);
  }
  struct stat st;
  CHECK(::stat(dir_path.c_str(), &st) != 0);
}

TEST_CASE("default cache path follows KILN_CACHE, then XDG_CACHE_HOME, then HOME") {
  // Each variable is put back at the end: later tests in this process must
  // see the real home again.
  {
    EnvVar kiln_cache("KILN_CACHE", "/x/k.db");
    CHECK(*default_cache_path() == "/x/k.db");
  }
  EnvVar no_kiln_cache("KILN_CACHE", nullptr);
  {
    EnvVar xdg("XDG_CACHE_HOME", "/xdg");
    CHECK(*default_cache_path() == "/xdg/kiln/kiln.db");
  }
  EnvVar no_xdg("XDG_CACHE_HOME", nullptr);
  EnvVar home("HOME", "/home/u");
  CHECK(*default_cache_path() == "/home/u/.cache/kiln/kiln.db");
}
