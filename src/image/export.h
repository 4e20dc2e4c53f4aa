// A root's image written to a file: the stored image, or the closure linked
// (and stored) first when the cache holds only its jobs' artifacts.
#pragma once

#include "core/data_model.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <cstddef>
#include <string>

namespace kiln::image {

/// What export_image wrote.
struct ExportedImage {
  core::ClosureRecord closure;
  size_t bytes = 0;
};

/// Writes the image of `what` (a 32-hex closure key, never read as a name;
/// else a root name for `target`) to `path`, atomically.
Result<ExportedImage> export_image(storage::Records& store, const std::string& what,
                                   const std::string& target, const std::string& path);

/// Writes the image of kernel library `name` for `target` (one image
/// holding all its roots' kernels) to `path`, atomically.
Result<ExportedImage> export_library_image(storage::Records& store, const std::string& name,
                                           const std::string& target, const std::string& path);

} // namespace kiln::image
