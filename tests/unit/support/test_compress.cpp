// Unit tests for compression (src/support/compress.cpp): round trips,
// damage, and claimed sizes bounded before anything is allocated.
#include "support/compress.h"
#include "support/hash.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sys/resource.h>
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

namespace {

// A zstd frame whose header claims `claimed` content bytes (single segment,
// 8-byte content size) followed by one empty last raw block.
std::string frame_claiming(uint64_t claimed) {
  std::string f = {'\x28', '\xb5', '\x2f', '\xfd', '\xe0'};
  for (int i = 0; i < 8; ++i)
    f.push_back(char((claimed >> (8 * i)) & 0xff));
  f += std::string("\x01\x00\x00", 3);
  return f;
}

long max_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

} // namespace

TEST_CASE("zstd: a frame claiming 4 GiB is refused as corrupt without allocating it") {
  const uint64_t four_gib = uint64_t(1) << 32;
  std::string hostile = frame_claiming(four_gib);
  REQUIRE(hostile.size() == 16);
  long before = max_rss_kib();
  auto r = zstd_decompress(hostile, size_t(four_gib));
  long grown_kib = max_rss_kib() - before;
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::corrupt);
  CHECK(r.error().message == "blob claims 4294967296 bytes from 16 compressed (at most " +
                                 std::to_string(zstd_output_limit(16)) + " allowed)");
  CHECK(grown_kib < 64 * 1024);

  // A size within the ratio still has to match the frame.
  auto mismatch = zstd_decompress(frame_claiming(1000), 999);
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().code == Code::corrupt);
}

TEST_CASE("zstd_output_limit: a multiple of the input plus slack, never past the maximum") {
  CHECK(zstd_output_limit(0) == kMaxZstdSlack);
  CHECK(zstd_output_limit(100) == 100 * kMaxZstdRatio + kMaxZstdSlack);
  CHECK(zstd_output_limit(size_t(1) << 40) == kMaxZstdOutput);
  CHECK(zstd_output_limit(SIZE_MAX) == kMaxZstdOutput);
  // Highly compressible data within the limit still round-trips.
  std::string zeros(size_t(4) << 20, '\0');
  std::string packed = zstd_compress(zeros);
  REQUIRE(zeros.size() <= zstd_output_limit(packed.size()));
  auto back = zstd_decompress(packed, zeros.size());
  REQUIRE(back);
  CHECK(*back == zeros);
}
