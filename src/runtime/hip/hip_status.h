// HIP results (hipError_t) as text a user can act on, worded like CUDA's
// (cuda/cuda_status.h): the number, and the runtime's own name and
// description of it when it has them.
#pragma once

#include "runtime/hip/hip_dynamic_symbols.h"

#include <string>

namespace kiln::runtime {

/// "HIP error 500 (hipErrorNotFound: named symbol not found)" from what the
/// runtime said of `rc`; `name` and `text` may be null (a runtime without
/// hipGetErrorName), leaving "HIP error 500".
std::string hip_status_text(int rc, const char* name, const char* text);

/// `rc` in words, asked of the runtime through `hip` where it has the
/// error-text entry points.
std::string hip_describe(const HipSymbols& hip, int rc);

} // namespace kiln::runtime
