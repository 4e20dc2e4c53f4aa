// Unit tests for hashing (src/support/hash.cpp).
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
