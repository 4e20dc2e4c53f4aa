// zstd compression of stored blobs. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstddef>
#include <string>
#include <string_view>

struct ZSTD_DDict_s;

namespace kiln {

/// The most a frame may decompress to per compressed byte: a claimed size
/// beyond it is refused as corrupt before any allocation. The ratio is
/// zstd's own densest block (RLE: 4 bytes for 128 KiB), so no frame
/// zstd_compress makes is refused; a header that claims more than its bytes
/// could hold is. It is no cap for highly compressible data (33 KB can hold
/// 1 GiB of zeros): max_decoded_size() is.
inline constexpr size_t kMaxZstdRatio = 32768;
inline constexpr size_t kMaxZstdSlack = size_t(1) << 20; ///< allowed whatever the input size
/// The default of max_decoded_size().
inline constexpr size_t kDefaultMaxDecoded = size_t(128) << 20;
/// The largest window a frame may ask a streaming decoder to keep (16 MiB):
/// zstd_compress's levels use at most 8 MiB, and a frame that declares more
/// would make the decoder allocate it up front.
inline constexpr int kMaxZstdWindowLog = 24;

/// The most any one blob, bundle payload or remote value may decode to:
/// $KILN_MAX_DECODED_SIZE (a size such as "512M"; read once per process),
/// else kDefaultMaxDecoded. An unreadable value is reported once on stderr
/// and the default used. Thread-safe.
size_t max_decoded_size();

/// The largest compressed input worth reading whole (a bundle file, a
/// remote value): zstd's bound for max_decoded_size() raw bytes, plus 64 KiB
/// for the envelope around the frame.
size_t max_encoded_size();

/// The largest size zstd_decompress accepts for `compressed_size` input
/// bytes: the ratio and slack above, and at most `max_output`.
size_t zstd_output_limit(size_t compressed_size, size_t max_output = max_decoded_size());

std::string zstd_compress(std::string_view raw, int level = 9);

/// Decompresses one frame whose header must declare exactly `expected_size`
/// content bytes; anything else (bad frame, no declared size, wrong size,
/// trailing bytes, a size over zstd_output_limit) is `corrupt`, refused
/// before the claimed size is allocated. Memory follows what actually
/// decodes: a frame that claims more than 1 MiB and more than 16 times its
/// compressed size is streamed into a buffer that at most doubles as bytes
/// arrive, so the call holds at most the larger of 1 MiB, 16 times the
/// compressed size and three times the bytes decoded so far (plus zstd's
/// window, at most 2^kMaxZstdWindowLog), and never more than `max_output`
/// of output.
Result<std::string> zstd_decompress(std::string_view compressed, size_t expected_size,
                                    size_t max_output = max_decoded_size());

/// zstd_decompress for a frame compressed with the dictionary `dict` (zstd's
/// ZSTD_DDict), with the same checks and bounds.
Result<std::string> zstd_decompress_dict(const ZSTD_DDict_s* dict, std::string_view compressed,
                                         size_t expected_size,
                                         size_t max_output = max_decoded_size());

} // namespace kiln
