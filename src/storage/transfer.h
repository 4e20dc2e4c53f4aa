// Moving roots between caches through bundle files (storage/bundle.h):
// export writes the closures some roots name, with their jobs, images and
// names; import validates a whole bundle (core::check_bundle) before it
// writes anything, so a damaged or hostile file changes nothing.
#pragma once

#include "storage/records.h"

#include <kiln/result.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::storage {

/// What one export or import moved.
struct BundleSummary {
  size_t closures = 0;
  size_t jobs = 0;
  size_t images = 0;
  size_t names = 0;
  size_t bytes = 0; ///< the bundle file's size (export only)
};

/// Writes the closures `which` names to the bundle file `path`: each root
/// name with every target it has, else what resolve_closure finds (a
/// closure key); empty `which` means every root. Signed when
/// $KILN_SIGNING_KEY is set (storage/signing.h).
Result<BundleSummary> export_bundle(Records& store, const std::string& path,
                                    const std::vector<std::string>& which);

/// Adds a bundle file's contents after validating all of it, its signature
/// as signing_for(store) decides; rows already present are kept.
Result<BundleSummary> import_bundle(Records& store, const std::string& path);

} // namespace kiln::storage
