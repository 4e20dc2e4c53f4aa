// The HIP runtime's entry points as a table of function pointers, resolved
// from libamdhip64.so at first use; mirrors cuda/cuda_dynamic_symbols.h.
// Kiln neither links against nor includes ROCm: a machine without it builds
// and runs Kiln, and its AMD loads report KILN_UNAVAILABLE with the reason.
#pragma once

#include <kiln/result.hpp>

namespace kiln::runtime {

/// Every entry point of hip_symbols.def; the KILN_HIP ones all set once the
/// table loaded, the KILN_HIP_TEXT ones where the runtime has them.
struct HipSymbols {
#define KILN_HIP(name, params) int(*name) params = nullptr;
#define KILN_HIP_TEXT(name, params) const char*(*name) params = nullptr;
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP
};

/// Opens libamdhip64.so (ROCm 6, then 5, then unversioned) and resolves
/// every entry point. Unavailable, with the reason, when the runtime is
/// missing (or fault point dlopen:hip fires) or lacks a required one.
Result<HipSymbols> load_hip_symbols();

/// The process's table: loaded at the first call, then kept, failure
/// included.
const Result<HipSymbols>& hip_symbols();

} // namespace kiln::runtime
