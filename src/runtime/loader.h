// The loader: name or key → closure → image (cached, or relinked from the
// closure's job artifacts and stored) → loaded → function addresses by the
// jobs' original entry names. Free of LLVM; the linker is dlopen'd lazily.
#pragma once

#include "runtime/handles.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace kiln::runtime {
/// The whole load: resolve, fetch or relink, load.
Result<std::unique_ptr<kiln_image>> load_image(kiln_cache& cache, std::string_view name,
                                               std::string_view target);
/// A kernel library's image: the library (name, target; empty target: the
/// best match, as for a root) → its closure → load_image.
Result<std::unique_ptr<kiln_image>> load_library(kiln_cache& cache, std::string_view name,
                                                 std::string_view target);
/// Sets this thread's kiln_last_error() (the compiler's C API reports its
/// failures there too).
void set_last_error(const std::string& message);
} // namespace kiln::runtime
