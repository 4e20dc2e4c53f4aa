// zstd compression of stored blobs. Knows nothing of jobs or caches.
#pragma once

#include <kiln/result.hpp>

#include <string>
#include <string_view>

namespace kiln {

std::string zstd_compress(std::string_view raw, int level = 9);
/// Decompresses a frame whose content size must equal `expected_size`;
/// anything else (bad frame, wrong size) is `corrupt`.
Result<std::string> zstd_decompress(std::string_view compressed, size_t expected_size);

} // namespace kiln
