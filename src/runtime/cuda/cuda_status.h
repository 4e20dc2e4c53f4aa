// CUDA driver results (CUresult) as text a user can act on: the number, and
// the driver's own name and description of it when it knows the code.
#pragma once

#include "runtime/cuda/cuda_dynamic_symbols.h"

#include <string>

namespace kiln::runtime {

/// "CUDA error 500 (CUDA_ERROR_NOT_FOUND: named symbol not found)" from what
/// the driver said of `rc`; `name` and `text` may be null (a code the driver
/// does not know), leaving "CUDA error 500".
std::string cuda_status_text(int rc, const char* name, const char* text);

/// `rc` in words, asked of the driver through `cu`.
std::string cuda_describe(const CudaSymbols& cu, int rc);

} // namespace kiln::runtime
