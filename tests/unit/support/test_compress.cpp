// Unit tests for compression (src/support/compress.cpp).
#include "support/compress.h"
#include "support/hash.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sys/stat.h>

using namespace kiln;

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
