// Unit tests for the LZ77 codec of the published host images
// (src/support/lz.cpp): round trips of every shape, with and without a
// dictionary, and malformed input refused without reading or writing out of
// bounds (ASan builds check the latter).
#include "support/lz.h"

#include <doctest/doctest.h>

#include <random>
#include <string>

using namespace kiln;

namespace {

std::string random_bytes(std::mt19937_64& rng, size_t n, int alphabet) {
  std::string s(n, '\0');
  for (char& c : s)
    c = char(rng() % unsigned(alphabet));
  return s;
}

void round_trip(const std::string& raw, const std::string& dict = {}) {
  std::string packed = lz_pack(raw, dict);
  auto back = lz_unpack(packed, raw.size(), dict);
  INFO("raw " << raw.size() << " B, dict " << dict.size() << " B, packed " << packed.size());
  REQUIRE(back);
  CHECK(*back == raw);
}

} // namespace

TEST_CASE("lz: round trips of empty, short, random, repetitive and long inputs") {
  std::mt19937_64 rng(7);
  round_trip("");
  round_trip("a");
  round_trip("abcdefghi");
  round_trip(std::string(100000, '\0'));
  round_trip(std::string(70000, 'x') + "tail");
  for (size_t n : {5u, 12u, 13u, 64u, 300u, 4096u, 70000u, 200000u})
    for (int alphabet : {2, 4, 256}) {
      round_trip(random_bytes(rng, n, alphabet));
      std::string unit = random_bytes(rng, 37, alphabet);
      std::string rep;
      while (rep.size() < n)
        rep += unit;
      round_trip(rep);
    }
}

TEST_CASE("lz: a dictionary is reached into, and packs alike inputs smaller") {
  std::mt19937_64 rng(11);
  std::string dict = random_bytes(rng, 3000, 256);
  std::string alike = dict.substr(0, 1000) + random_bytes(rng, 50, 256) + dict.substr(1500);
  round_trip(alike, dict);
  round_trip(alike, std::string(100000, 'q') + dict); // only its last 64 KiB count
  round_trip(random_bytes(rng, 5000, 256), dict);
  CHECK(lz_pack(alike, dict).size() < alike.size() / 4);
  CHECK(lz_pack(alike).size() > alike.size() / 2);
  // Unpacked with another dictionary, the bytes are others (or refused).
  auto wrong = lz_unpack(lz_pack(alike, dict), alike.size(), std::string(3000, 'z'));
  CHECK((!wrong || *wrong != alike));
  // Deterministic.
  CHECK(lz_pack(alike, dict) == lz_pack(alike, dict));
}

TEST_CASE("lz: a packer reused for many inputs gives what lz_pack gives each") {
  // The packer reads its dictionary once and clears what each input left in
  // its chains: an input packed after others packs as it would alone.
  std::mt19937_64 rng(5);
  std::string dict = random_bytes(rng, 20000, 16);
  for (std::string d : {std::string(), dict, std::string(80000, 'd') + dict}) {
    LzPacker packer(d);
    for (int i = 0; i < 40; ++i) {
      std::string raw = i % 3 == 0   ? random_bytes(rng, rng() % 5000, 4)
                        : i % 3 == 1 ? d.substr(rng() % (d.size() + 1), 3000) + "x"
                                     : std::string(rng() % 300, char('a' + i));
      std::string packed = packer.pack(raw);
      CHECK(packed == lz_pack(raw, d));
      auto back = lz_unpack(packed, raw.size(), d);
      REQUIRE(back);
      CHECK(*back == raw);
    }
  }
}

TEST_CASE("lz: a match that starts in the dictionary and runs on into the output") {
  // "wxyz" ends the dictionary; the input is that, then what it started,
  // repeated: one match from the dictionary's end through the input's own
  // first bytes, which the unpacker reads as it writes them.
  std::string dict = std::string(100, '.') + "wxyz";
  std::string raw = "wxyzwxyzwxyzwxyz0123456789";
  std::string packed = lz_pack(raw, dict);
  CHECK(packed.size() < raw.size());
  round_trip(raw, dict);
  // Hand-made: 0 literals, a match 4 back (the dictionary's "wxyz") of 12
  // bytes, then 5 literals.
  std::string seq = std::string("\x08\x04\x00", 3) + std::string("\x50", 1) + "abcde";
  auto back = lz_unpack(seq, 17, dict);
  REQUIRE(back);
  CHECK(*back == "wxyzwxyzwxyzabcde");
  // Reaching one byte further back than the dictionary holds is refused.
  std::string far = std::string("\x00\x68\x00", 3) + std::string("\x50", 1) + "abcde";
  CHECK(lz_unpack(far, 9, dict));
  far[1] = char(0x69);
  CHECK(!lz_unpack(far, 9, dict));
}

TEST_CASE("lz: malformed input is corrupt, never out of bounds") {
  std::string raw = std::string(5000, 'a') + "bcdefgh" + std::string(3000, 'b');
  std::string packed = lz_pack(raw);
  // A size other than the one packed.
  CHECK(!lz_unpack(packed, raw.size() + 1));
  CHECK(!lz_unpack(packed, raw.size() - 1));
  // A tiny input claiming a gigabyte is refused before anything is reserved.
  auto huge = lz_unpack("\x10" "a", size_t(1) << 30);
  REQUIRE(!huge);
  CHECK(huge.error().code == Code::corrupt);
  CHECK(huge.error().message.find("claims") != std::string::npos);
  // An offset before the start, an offset of zero, a run past the end.
  CHECK(!lz_unpack(std::string("\x00\x10\x00", 3), 4));
  CHECK(!lz_unpack(std::string("\x10" "a\x00\x00", 4), 5));
  CHECK(!lz_unpack(std::string("\xf0\xff\xff\xff", 4), 100));
  // Every truncation and every single-byte change: an error or other bytes,
  // never a crash.
  for (size_t n = 0; n < packed.size(); ++n)
    CHECK(!lz_unpack(packed.substr(0, n), raw.size()));
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = packed;
    bad[rng() % bad.size()] = char(rng());
    auto r = lz_unpack(bad, raw.size());
    if (r)
      CHECK(r->size() == raw.size());
  }
}
