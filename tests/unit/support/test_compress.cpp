// Unit tests for compression (src/support/compress.cpp): round trips,
// damage, and claimed sizes bounded before anything is allocated.
#include "support/compress.h"
#include "support/hash.h"

#include "fixtures/zstd_bomb.hpp"

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
  CHECK(r.error().message == "blob claims 4294967296 decoded bytes, over the " +
                                 std::to_string(max_decoded_size()) +
                                 "-byte maximum (KILN_MAX_DECODED_SIZE)");
  CHECK(grown_kib < 64 * 1024);
  // Under a raised maximum, the ratio still refuses what 16 bytes cannot hold.
  auto ratio = zstd_decompress(hostile, size_t(four_gib), size_t(8) << 30);
  REQUIRE_FALSE(ratio);
  CHECK(ratio.error().message == "blob claims 4294967296 bytes from 16 compressed (at most " +
                                     std::to_string(zstd_output_limit(16)) + " allowed)");

  // A size within the ratio still has to match the frame.
  auto mismatch = zstd_decompress(frame_claiming(1000), 999);
  REQUIRE_FALSE(mismatch);
  CHECK(mismatch.error().code == Code::corrupt);
}

TEST_CASE("zstd_output_limit: a multiple of the input plus slack, never past the maximum") {
  CHECK(zstd_output_limit(0) == kMaxZstdSlack);
  CHECK(zstd_output_limit(100) == 100 * kMaxZstdRatio + kMaxZstdSlack);
  CHECK(zstd_output_limit(size_t(1) << 40) == max_decoded_size());
  CHECK(zstd_output_limit(SIZE_MAX) == max_decoded_size());
  CHECK(zstd_output_limit(SIZE_MAX, 1000) == 1000);
  // Highly compressible data within the limit still round-trips.
  std::string zeros(size_t(4) << 20, '\0');
  std::string packed = zstd_compress(zeros);
  REQUIRE(zeros.size() <= zstd_output_limit(packed.size()));
  auto back = zstd_decompress(packed, zeros.size());
  REQUIRE(back);
  CHECK(*back == zeros);
}

TEST_CASE("zstd: 1 GiB of zeros in 32 KiB is within the ratio, and refused by the maximum "
          "before anything is allocated") {
  const uint64_t gib = uint64_t(1) << 30;
  std::string bomb = test::zero_frame(gib);
  REQUIRE(bomb.size() < 33 * 1024);
  REQUIRE(gib <= zstd_output_limit(bomb.size(), SIZE_MAX)); // the ratio alone lets it through
  REQUIRE(max_decoded_size() < gib);
  REQUIRE(test::reset_peak_rss());
  long before = test::rss_kib();
  auto r = zstd_decompress(bomb, size_t(gib));
  long grown_kib = test::peak_rss_kib() - before;
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::corrupt);
  CHECK(r.error().message == "blob claims 1073741824 decoded bytes, over the " +
                                 std::to_string(max_decoded_size()) +
                                 "-byte maximum (KILN_MAX_DECODED_SIZE)");
  CHECK(grown_kib < 4 * 1024);
  // A lower maximum is a lower limit.
  auto low = zstd_decompress(test::zero_frame(uint64_t(4) << 20), size_t(4) << 20, size_t(1) << 20);
  REQUIRE_FALSE(low);
  CHECK(low.error().message.find("over the 1048576-byte maximum") != std::string::npos);
  // The same construction under the maximum decodes: the frames are real.
  auto small = zstd_decompress(test::zero_frame(uint64_t(4) << 20), size_t(4) << 20);
  REQUIRE(small);
  CHECK(*small == std::string(size_t(4) << 20, '\0'));
}

TEST_CASE("zstd: a frame that does not declare its size is refused, however much it holds") {
  for (uint64_t size : {uint64_t(1) << 30, uint64_t(1) << 20, kiln::test::kRleBlock}) {
    CAPTURE(size);
    std::string frame = test::zero_frame(size, false);
    REQUIRE(test::reset_peak_rss());
    long before = test::rss_kib();
    auto r = zstd_decompress(frame, size_t(size), SIZE_MAX);
    long grown_kib = test::peak_rss_kib() - before;
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Code::corrupt);
    CHECK(r.error().message == "compressed blob's zstd frame does not declare its size");
    CHECK(grown_kib < 4 * 1024);
  }
}

TEST_CASE("zstd: a claimed size within the maximum is not allocated up front; output grows as "
          "bytes decode") {
  // The header claims 1 GiB, the maximum allows it, the ratio allows it
  // (32 KiB of raw padding), but only 8 MiB and 32 KiB follow: decoding
  // must hold about what those need.
  const uint64_t gib = uint64_t(1) << 30;
  std::string truncated = test::zero_frame(gib, true, uint64_t(8) << 20, 32 << 10);
  REQUIRE(gib <= zstd_output_limit(truncated.size(), SIZE_MAX));
  REQUIRE(test::reset_peak_rss());
  long before = test::rss_kib();
  auto r = zstd_decompress(truncated, size_t(gib), size_t(2) << 30);
  long grown_kib = test::peak_rss_kib() - before;
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Code::corrupt);
  CHECK(r.error().message ==
        "compressed blob is truncated (8421376 of 1073741824 bytes decoded)");
  // Three times the 8 MiB decoded, plus zstd's 1 MiB window: far from 1 GiB.
  INFO("grew " << grown_kib << " KiB");
  CHECK(grown_kib < 40 * 1024);
}

TEST_CASE("zstd: large frames round-trip, streamed or not; trailing bytes and a second frame "
          "are corrupt") {
  // Dense data is decoded in one call; data that compresses more than 16
  // times is streamed.
  std::string dense(size_t(3) << 20, '\0'), sparse(size_t(3) << 20, 'k');
  for (size_t i = 0; i < dense.size(); ++i)
    dense[i] = char((i * 2654435761u) >> 13);
  for (size_t i = 0; i < sparse.size(); i += 4099)
    sparse[i] = char(i >> 12);
  for (const std::string* raw : {&dense, &sparse}) {
    std::string packed = zstd_compress(*raw, 3);
    bool streamed = raw == &sparse;
    CAPTURE(streamed);
    CHECK((packed.size() * 16 < raw->size()) == streamed);
    auto back = zstd_decompress(packed, raw->size());
    REQUIRE(back);
    CHECK(*back == *raw);
    for (const std::string& extra : {std::string("junk"), zstd_compress("more", 3)}) {
      auto r = zstd_decompress(packed + extra, raw->size());
      REQUIRE_FALSE(r);
      CHECK(r.error().code == Code::corrupt);
      if (streamed)
        CHECK(r.error().message == "compressed blob has bytes after its zstd frame");
    }
    auto cut = zstd_decompress(packed.substr(0, packed.size() - 10), raw->size());
    REQUIRE_FALSE(cut);
    CHECK(cut.error().code == Code::corrupt);
  }
}
