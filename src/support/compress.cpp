#include "support/compress.h"

#include <zstd.h>

namespace kiln {

std::string zstd_compress(std::string_view raw, int level) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), level);
  // ZSTD_compress only fails for a too-small destination, which compressBound rules out.
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

Result<std::string> zstd_decompress(std::string_view compressed, size_t expected_size) {
  // A stored size is input too: refuse absurd ones before allocating.
  constexpr size_t kMaxBlob = size_t(1) << 32;
  if (expected_size > kMaxBlob)
    return make_error(Code::corrupt, "blob claims " + std::to_string(expected_size) + " bytes");
  unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size != expected_size)
    return make_error(Code::corrupt, "compressed blob has a bad zstd header or size");
  std::string out(expected_size, '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n) || n != expected_size)
    return make_error(Code::corrupt,
                      std::string("compressed blob does not decompress: ") +
                          (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
  return out;
}

} // namespace kiln
