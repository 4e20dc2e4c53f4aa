// Content hashing: XXH3-128 digests and their 32-hex-digit spelling.
// Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

/// A 128-bit XXH3 digest. Spelled as 32 lowercase hex digits, high half first.
struct Hash128 {
  uint64_t hi = 0;
  uint64_t lo = 0;

  std::string hex() const;
  /// The first `n` hex digits, for human output.
  std::string short_hex(size_t n = 12) const { return hex().substr(0, n); }
  bool operator==(const Hash128&) const = default;
  auto operator<=>(const Hash128&) const = default;

  template <class Archive> void serialize(Archive& ar) { ar(hi, lo); }
};

Hash128 hash128(std::string_view bytes);
uint64_t hash64(std::string_view bytes);

/// Parses 32 hex digits (either case). Anything else is invalid_argument.
Result<Hash128> parse_hash128(std::string_view text);
bool is_hash128_hex(std::string_view text);

} // namespace kiln
