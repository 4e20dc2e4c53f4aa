// The HIP runtime's entry points as a table of function pointers, resolved
// from libamdhip64.so at first use; mirrors cuda/cuda_dynamic_symbols.h.
// Kiln neither links against nor includes ROCm: a machine without it builds
// and runs Kiln, and its AMD loads report KILN_UNAVAILABLE with the reason.
#pragma once

#include <kiln/result.hpp>

#include <span>
#include <string>

namespace kiln::runtime {

/// The hipDeviceProp_t layouts Kiln reads. Which one a property call fills
/// is fixed by the entry point's name, not by the runtime's version.
enum class HipPropsLayout {
  r0000, ///< ROCm 5's hipDeviceProp_t: what plain hipGetDeviceProperties fills
  r0600, ///< ROCm 6's hipDeviceProp_tR0600 (ROCm 7's too): hipGetDevicePropertiesR0600
};

/// Every entry point of hip_symbols.def; the KILN_HIP ones all set once the
/// table loaded, the KILN_HIP_OPTIONAL and KILN_HIP_TEXT ones where the
/// runtime has them.
struct HipSymbols {
#define KILN_HIP(name, params) int(*name) params = nullptr;
#define KILN_HIP_OPTIONAL(name, params) int(*name) params = nullptr;
#define KILN_HIP_TEXT(name, params) const char*(*name) params = nullptr;
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP_OPTIONAL
#undef KILN_HIP

  std::string library; ///< the soname it came from: "libamdhip64.so.6"
  /// The property call to use (one of the two above) and the layout it fills.
  int (*get_device_properties)(void* props, int device) = nullptr;
  HipPropsLayout props_layout = HipPropsLayout::r0600;
};

/// The HIP runtime's sonames in the order they are tried: ROCm 7's, 6's,
/// 5's (the one Debian ships), then the unversioned development link.
std::span<const char* const> hip_library_names();

/// The first of `names` that opens, preferring one this process has already
/// loaded (the application's own HIP runtime, which launches the handles
/// Kiln returns), else the first that loads; sets `opened` to its name.
/// Null when none opens. The library stays loaded for the process.
void* open_hip_library(std::span<const char* const> names, std::string& opened);

/// Sets `hip`'s property call from the entry points it resolved:
/// hipGetDevicePropertiesR0600 where the runtime has it, else plain
/// hipGetDeviceProperties with the ROCm 5 layout. Unavailable when it has
/// neither.
Status choose_hip_properties_call(HipSymbols& hip);

/// Opens the HIP runtime (hip_library_names, by open_hip_library) and
/// resolves every entry point. Unavailable, with the reason, when the
/// runtime is missing (or fault point dlopen:hip fires) or lacks a required
/// one.
Result<HipSymbols> load_hip_symbols();

/// The process's table: loaded at the first call, then kept, failure
/// included.
const Result<HipSymbols>& hip_symbols();

} // namespace kiln::runtime
