// zstd compression of stored blobs. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

/// The most a frame may decompress to per compressed byte, and in all: a
/// claimed size beyond either is refused as corrupt before any allocation.
/// The ratio is zstd's own densest block (RLE: 4 bytes for 128 KiB), so no
/// frame zstd_compress makes is refused; a header that claims more than its
/// bytes could hold is.
inline constexpr size_t kMaxZstdRatio = 32768;
inline constexpr size_t kMaxZstdSlack = size_t(1) << 20; ///< allowed whatever the input size
inline constexpr size_t kMaxZstdOutput = size_t(1) << 30;

/// The largest size zstd_decompress accepts for `compressed_size` input
/// bytes: the ratio and slack above, and at most `max_output`.
size_t zstd_output_limit(size_t compressed_size, size_t max_output = kMaxZstdOutput);

std::string zstd_compress(std::string_view raw, int level = 9);
/// Decompresses a frame whose content size must equal `expected_size`;
/// anything else (bad frame, wrong size, a size over zstd_output_limit) is
/// `corrupt`. `max_output` raises or lowers the absolute maximum for one
/// kind of blob.
Result<std::string> zstd_decompress(std::string_view compressed, size_t expected_size,
                                    size_t max_output = kMaxZstdOutput);

} // namespace kiln
