// The loader: name or key → closure → image (published, kept warm, stored,
// fetched from the remote, or relinked from the closure's job artifacts and
// stored) → loaded → function addresses by the jobs' original entry names.
// Free of LLVM; the linker is dlopen'd lazily.
#pragma once

#include "runtime/handles.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// What a load asks for.
struct LoadRequest {
  /// A root's name, a kernel library's name, or a closure key (32 hex
  /// digits, either case: a key names itself, never a root or library).
  std::string_view name;
  /// The target; empty: the best one the cache has for this process's
  /// devices.
  std::string_view target;
  /// `name` names a kernel library: its closure is loaded, its image the
  /// one image of all its roots' kernels.
  bool library = false;
};

/// The whole load: each image source in turn (sources.h) until one gives
/// the image or its bytes, which the target's backend loads.
Result<std::unique_ptr<kiln_image>> load(kiln_cache& cache, LoadRequest request);

/// A root's image (or a closure's, by key): load(), under the name the
/// compiler library's calls into libkiln know it by (bridge/calls.inc).
Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target);

/// Sets this thread's kiln_last_error() (the compiler's C API reports its
/// failures there too).
void set_last_error(const std::string& message);
} // namespace kiln::runtime
