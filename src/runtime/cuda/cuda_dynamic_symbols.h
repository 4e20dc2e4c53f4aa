// The CUDA driver's entry points as a table of function pointers, resolved
// from libcuda.so.1 at first use. Kiln neither links against nor includes
// CUDA: a machine without it builds and runs Kiln, and its GPU loads report
// KILN_UNAVAILABLE with the reason.
#pragma once

#include <kiln/result.hpp>

#include <cstddef>

namespace kiln::runtime {

/// Every entry point of cuda_symbols.def; all set once the table loaded.
struct CudaSymbols {
#define KILN_CUDA(name, params) int(*name) params = nullptr;
#include "runtime/cuda/cuda_symbols.def"
#undef KILN_CUDA
};

/// Opens libcuda.so.1 and resolves every entry point. Unavailable, with the
/// reason, when the driver is missing (or fault point dlopen:cuda fires),
/// older than 12.0 or lacks one of them.
Result<CudaSymbols> load_cuda_symbols();

/// The process's table: loaded at the first call, then kept, failure
/// included (a driver does not appear while a process runs).
const Result<CudaSymbols>& cuda_symbols();

} // namespace kiln::runtime
