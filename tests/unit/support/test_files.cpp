// Unit tests for files (src/support/files.cpp): atomic writes, temporary
// directories, the default cache path.
#include "support/files.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sys/stat.h>

using namespace kiln;

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
  const char* old_kiln = std::getenv("KILN_CACHE");
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const char* old_home = std::getenv("HOME");
  std::string saved_kiln = old_kiln ? old_kiln : "", saved_xdg = old_xdg ? old_xdg : "";
  std::string saved_home = old_home ? old_home : "";
  ::setenv("KILN_CACHE", "/x/k.db", 1);
  CHECK(*default_cache_path() == "/x/k.db");
  ::unsetenv("KILN_CACHE");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  CHECK(*default_cache_path() == "/xdg/kiln/kiln.db");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  CHECK(*default_cache_path() == "/home/u/.cache/kiln/kiln.db");
  if (old_kiln)
    ::setenv("KILN_CACHE", saved_kiln.c_str(), 1);
  if (old_xdg)
    ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  // Later tests in this process must see the real home again.
  if (old_home)
    ::setenv("HOME", saved_home.c_str(), 1);
  else
    ::unsetenv("HOME");
}
