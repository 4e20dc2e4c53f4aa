// Bundles: whole closures with their jobs, images and names in one
// self-contained file (cereal, versioned, checksummed), for shipping a cache
// built on one machine to another. Decoding treats the bytes as hostile.
#pragma once

#include "storage/local/store.h"

#include <kiln/result.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

inline constexpr uint32_t kBundleVersion = 1;

/// Reads the closures, their member jobs (artifacts, refs), images and the
/// names that point at them. Every blob is checksum-checked on the way.
Result<BundleData> collect_bundle(Store& store, const std::vector<Hash128>& closures);

/// The file's bytes: magic, version, size, XXH3-128, zstd(cereal(data)).
std::string encode_bundle(const BundleData& data);

/// Checks magic, version, checksum and size, then decodes. Anything wrong is
/// `corrupt` (or `invalid_argument` for a newer version); nothing is trusted
/// further than that: the caller validates the contents.
Result<BundleData> decode_bundle(std::string_view bytes);

} // namespace kiln::storage
