// Bundles: whole closures with their jobs, images and names in one
// self-contained file (cereal, versioned, checksummed), for shipping a cache
// built on one machine to another. Decoding treats the bytes as hostile.
// The same envelope carries every remote value (storage/storage.h).
#pragma once

#include "storage/records.h"
#include "storage/signing.h"

#include <kiln/result.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace kiln::storage {

/// The unsigned envelope, and the version of the contents (remote keys
/// carry it: signed and unsigned values share them).
inline constexpr uint32_t kBundleVersion = 1;
/// The same envelope and contents with a MAC trailer (storage/signing.h):
/// unsigned bundles stay version 1, so older readers still read them.
inline constexpr uint32_t kSignedBundleVersion = 2;

/// Reads the closures, their member jobs (artifacts, refs), images and the
/// names that point at them. Every blob is checksum-checked on the way.
Result<BundleData> collect_bundle(Records& store, const std::vector<Hash128>& closures);

/// The file's bytes: magic, version, size, XXH3-128, zstd(cereal(data)),
/// and with `key` (version 2) the MAC of all of that.
std::string encode_bundle(const BundleData& data, const SigningKey* key = nullptr);

/// Checks magic, version, signature (as `signing` decides: Signing::check),
/// checksum and size, then decodes. Anything wrong is `corrupt` (or
/// `invalid_argument` for a newer version); nothing is trusted further than
/// that: the caller validates the contents. Input over max_encoded_size(), or
/// a payload that claims more than max_decoded_size(), is refused before
/// anything is allocated; every length inside is held to the bytes left.
/// Besides `bytes`, a decode holds the payload (never more than what its
/// frame actually decodes to, support/compress.h) and the records decoded
/// from it, read in place.
Result<BundleData> decode_bundle(std::string_view bytes, const Signing& signing = {});

} // namespace kiln::storage
