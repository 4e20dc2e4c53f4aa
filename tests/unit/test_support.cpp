#include "support/compress.h"
#include "support/files.h"
#include "support/hash.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sys/stat.h>

using namespace kiln;

TEST_CASE("hash128 is XXH3-128 spelled as 32 lowercase hex digits, high half first") {
  // Reference value of XXH3_128bits("") from the xxHash specification.
  Hash128 h = hash128("");
  CHECK(h.hex() == "99aa06d3014798d86001c324468d497f");
  CHECK(hash128("a") != hash128("b"));
  auto parsed = parse_hash128(h.hex());
  REQUIRE(parsed);
  CHECK(*parsed == h);
  auto upper = parse_hash128("99AA06D3014798D86001C324468D497F");
  REQUIRE(upper);
  CHECK(*upper == h);
}

TEST_CASE("parse_hash128 rejects anything but 32 hex digits") {
  CHECK_FALSE(parse_hash128(""));
  CHECK_FALSE(parse_hash128("99aa06d3014798d86001c324468d497"));
  CHECK_FALSE(parse_hash128("99aa06d3014798d86001c324468d497ff"));
  auto bad = parse_hash128("zzaa06d3014798d86001c324468d497f");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Code::invalid_argument);
}

TEST_CASE("zstd round trip, and damage is corrupt, not a crash") {
  std::string raw(100000, 'x');
  for (size_t i = 0; i < raw.size(); i += 7)
    raw[i] = char('a' + i % 26);
  std::string packed = zstd_compress(raw);
  CHECK(packed.size() < raw.size() / 4);
  auto back = zstd_decompress(packed, raw.size());
  REQUIRE(back);
  CHECK(*back == raw);

  auto wrong_size = zstd_decompress(packed, raw.size() + 1);
  REQUIRE_FALSE(wrong_size);
  CHECK(wrong_size.error().code == Code::corrupt);
  std::string truncated = packed.substr(0, packed.size() / 2);
  auto t = zstd_decompress(truncated, raw.size());
  REQUIRE_FALSE(t);
  CHECK(t.error().code == Code::corrupt);
  CHECK_FALSE(zstd_decompress("not zstd at all", 10));
}

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
  std::string saved_kiln = old_kiln ? old_kiln : "", saved_xdg = old_xdg ? old_xdg : "";
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
}
