#include "support/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace kiln {

std::string Hash128::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = digits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = digits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

Hash128 hash128(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.high64, h.low64};
}

uint64_t hash64(std::string_view bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

static int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool is_hash128_hex(std::string_view text) {
  if (text.size() != 32)
    return false;
  for (char c : text)
    if (hex_value(c) < 0)
      return false;
  return true;
}

Result<Hash128> parse_hash128(std::string_view text) {
  if (!is_hash128_hex(text))
  {
    std::string message = "'";
    message.append(text).append("' is not a 32-hex-digit key");
    return make_error(Code::invalid_argument, message);
  }
  Hash128 h;
  for (int i = 0; i < 16; ++i) {
    h.hi = (h.hi << 4) | uint64_t(hex_value(text[i]));
    h.lo = (h.lo << 4) | uint64_t(hex_value(text[16 + i]));
  }
  return h;
}

} // namespace kiln
