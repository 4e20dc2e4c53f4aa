// zstd compression of stored blobs, with every claimed size checked before
// the output is allocated.
#include "support/compress.h"

#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <memory>

namespace kiln {

namespace {

// One context per thread, kept: ZSTD_compress and ZSTD_decompress make and
// free one per call, and a decompression context's allocation and setup
// cost more than decompressing a small image.
struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

ZSTD_CCtx* compress_context() {
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx(ZSTD_createCCtx());
  return ctx.get();
}

ZSTD_DCtx* decompress_context() {
  thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> ctx(ZSTD_createDCtx());
  return ctx.get();
}

} // namespace

size_t zstd_output_limit(size_t compressed_size, size_t max_output) {
  size_t by_ratio = compressed_size > (SIZE_MAX - kMaxZstdSlack) / kMaxZstdRatio
                        ? SIZE_MAX
                        : compressed_size * kMaxZstdRatio + kMaxZstdSlack;
  return std::min(by_ratio, max_output);
}

std::string zstd_compress(std::string_view raw, int level) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_CCtx* ctx = compress_context();
  size_t n = ctx ? ZSTD_compressCCtx(ctx, out.data(), out.size(), raw.data(), raw.size(), level)
                 : ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), level);
  // ZSTD_compress only fails for a too-small destination, which compressBound rules out.
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

Result<std::string> zstd_decompress(std::string_view compressed, size_t expected_size,
                                    size_t max_output) {
  // A stored size and a frame's header are input too: both must agree and
  // stay within what the compressed bytes could plausibly hold before
  // anything is allocated.
  size_t limit = zstd_output_limit(compressed.size(), max_output);
  if (expected_size > limit)
    return make_error(Code::corrupt, "blob claims " + std::to_string(expected_size) +
                                         " bytes from " + std::to_string(compressed.size()) +
                                         " compressed (at most " + std::to_string(limit) +
                                         " allowed)");
  unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size != expected_size)
    return make_error(Code::corrupt, "compressed blob has a bad zstd header or size");
  std::string out(expected_size, '\0');
  ZSTD_DCtx* ctx = decompress_context();
  size_t n = ctx ? ZSTD_decompressDCtx(ctx, out.data(), out.size(), compressed.data(),
                                       compressed.size())
                 : ZSTD_decompress(out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n) || n != expected_size)
    return make_error(Code::corrupt,
                      std::string("compressed blob does not decompress: ") +
                          (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
  return out;
}

} // namespace kiln
