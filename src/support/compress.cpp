// zstd compression of stored blobs, with every claimed size checked before
// the output is allocated, and output grown only as bytes actually decode.
#include "support/compress.h"

#include "support/units.h"

#include "support/zstd_api.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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
using DCtx = std::unique_ptr<ZSTD_DCtx, FreeDCtx>;

ZSTD_CCtx* compress_context() {
  thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> ctx(ZSTD_createCCtx());
  return ctx.get();
}

ZSTD_DCtx* decompress_context() {
  thread_local DCtx ctx(ZSTD_createDCtx());
  return ctx.get();
}

// A frame is decoded in one call into a buffer of its declared size when
// that size is at most kOneShot, or at most kTrustedRatio times its
// compressed size (what stored code and PTX compress to): all a lying
// header can waste is the larger of the two. Beyond both, the output is
// streamed and grows only as it decodes.
constexpr size_t kOneShot = size_t(1) << 20;
constexpr size_t kTrustedRatio = 16;

Error corrupt(const std::string& why) { return make_error(Code::corrupt, why); }

// The checks every decode makes before it allocates: the caller's size
// within the limits, and the frame's header declaring exactly that size.
Status check_claim(std::string_view compressed, size_t expected, size_t max_output) {
  if (expected > max_output)
    return corrupt("blob claims " + std::to_string(expected) + " decoded bytes, over the " +
                   std::to_string(max_output) + "-byte maximum (KILN_MAX_DECODED_SIZE)");
  size_t limit = zstd_output_limit(compressed.size(), max_output);
  if (expected > limit)
    return corrupt("blob claims " + std::to_string(expected) + " bytes from " +
                   std::to_string(compressed.size()) + " compressed (at most " +
                   std::to_string(limit) + " allowed)");
  unsigned long long size = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (size == ZSTD_CONTENTSIZE_UNKNOWN)
    return corrupt("compressed blob's zstd frame does not declare its size");
  if (size == ZSTD_CONTENTSIZE_ERROR || size != expected)
    return corrupt("compressed blob has a bad zstd header or size");
  return Status::ok();
}

// Streams one frame into a buffer that grows only as output arrives (at
// most doubling, never past `expected`), in a context of its own so that
// no thread keeps a large window once the call returns.
Result<std::string> decompress_streaming(const ZSTD_DDict* dict, std::string_view compressed,
                                         size_t expected, size_t initial) {
  DCtx owned(ZSTD_createDCtx());
  ZSTD_DCtx* d = owned.get();
  if (!d)
    return make_error(Code::internal, "cannot create a zstd decompression context");
  size_t set = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, kMaxZstdWindowLog);
  if (!ZSTD_isError(set) && dict)
    set = ZSTD_DCtx_refDDict(d, dict);
  if (ZSTD_isError(set))
    return make_error(Code::internal, std::string("cannot set up zstd: ") + ZSTD_getErrorName(set));
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  std::string out(initial, '\0');
  size_t produced = 0;
  char spill = 0; // where output past the declared size would go
  for (;;) {
    bool full = produced == out.size();
    if (full && out.size() < expected) {
      out.resize(std::min(expected, std::max(out.size() * 2, kOneShot)));
      full = false;
    }
    ZSTD_outBuffer ob = full ? ZSTD_outBuffer{&spill, 1, 0}
                             : ZSTD_outBuffer{out.data(), out.size(), produced};
    size_t in_before = in.pos, out_before = ob.pos;
    size_t ret = ZSTD_decompressStream(d, &ob, &in);
    if (ZSTD_isError(ret))
      return corrupt(std::string("compressed blob does not decompress: ") +
                     ZSTD_getErrorName(ret));
    if (full && ob.pos)
      return corrupt("compressed blob decodes to more than its declared " +
                     std::to_string(expected) + " bytes");
    if (!full)
      produced = ob.pos;
    if (ret == 0)
      break; // the frame is complete
    if (in.pos == in_before && ob.pos == out_before)
      return corrupt("compressed blob is truncated (" + std::to_string(produced) + " of " +
                     std::to_string(expected) + " bytes decoded)");
  }
  if (in.pos != in.size)
    return corrupt("compressed blob has bytes after its zstd frame");
  if (produced != expected)
    return corrupt("compressed blob decodes to " + std::to_string(produced) + " bytes, not the " +
                   std::to_string(expected) + " it declares");
  return out;
}

Result<std::string> decompress(const ZSTD_DDict* dict, std::string_view compressed,
                               size_t expected, size_t max_output) {
  KILN_TRY(check_claim(compressed, expected, max_output));
  size_t trusted = compressed.size() > SIZE_MAX / kTrustedRatio
                       ? SIZE_MAX
                       : std::max(kOneShot, compressed.size() * kTrustedRatio);
  if (expected > trusted)
    return decompress_streaming(dict, compressed, expected, trusted);
  ZSTD_DCtx* ctx = decompress_context();
  if (!ctx)
    return make_error(Code::internal, "cannot create a zstd decompression context");
  std::string out(expected, '\0');
  size_t n = dict ? ZSTD_decompress_usingDDict(ctx, out.data(), out.size(), compressed.data(),
                                               compressed.size(), dict)
                  : ZSTD_decompressDCtx(ctx, out.data(), out.size(), compressed.data(),
                                        compressed.size());
  if (ZSTD_isError(n) || n != expected)
    return corrupt(std::string("compressed blob does not decompress") +
                   (dict ? " with its dictionary: " : ": ") +
                   (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size"));
  return out;
}

} // namespace

size_t max_decoded_size() {
  static const size_t limit = [] {
    const char* env = std::getenv("KILN_MAX_DECODED_SIZE");
    if (!env || !*env)
      return kDefaultMaxDecoded;
    auto v = parse_size(env);
    if (!v || *v <= 0) {
      std::fprintf(stderr, "kiln: KILN_MAX_DECODED_SIZE: %s; using %zu bytes\n",
                   v ? "must be positive" : v.error().message.c_str(), kDefaultMaxDecoded);
      return kDefaultMaxDecoded;
    }
    return size_t(*v);
  }();
  return limit;
}

size_t max_encoded_size() {
  size_t raw = max_decoded_size();
  // zstd.h's formula, without opening the library.
  size_t bound = raw >= ZSTD_MAX_INPUT_SIZE ? 0 : ZSTD_COMPRESSBOUND(raw);
  return bound == 0 || bound > SIZE_MAX - (size_t(64) << 10) ? SIZE_MAX
                                                             : bound + (size_t(64) << 10);
}

size_t zstd_output_limit(size_t compressed_size, size_t max_output) {
  size_t by_ratio = compressed_size > (SIZE_MAX - kMaxZstdSlack) / kMaxZstdRatio
                        ? SIZE_MAX
                        : compressed_size * kMaxZstdRatio + kMaxZstdSlack;
  return std::min(by_ratio, max_output);
}

std::string zstd_compress(std::string_view raw, int level) {
  // Empty, as for any failure, where the library cannot be opened (the
  // cache file's open has reported why before anything is stored).
  if (!load_zstd())
    return {};
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
  KILN_TRY(load_zstd());
  return decompress(nullptr, compressed, expected_size, max_output);
}

Result<std::string> zstd_decompress_dict(const ZSTD_DDict_s* dict, std::string_view compressed,
                                         size_t expected_size, size_t max_output) {
  KILN_TRY(load_zstd());
  return decompress(dict, compressed, expected_size, max_output);
}

} // namespace kiln
