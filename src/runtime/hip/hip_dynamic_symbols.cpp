// Resolving hip_symbols.def with dlsym: HIP exports each entry point under
// its plain name (hipGetDevicePropertiesR0600 is the ROCm 6 ABI's own name).
#include "runtime/hip/hip_dynamic_symbols.h"

#include "support/fault.h"

#include <dlfcn.h>

namespace kiln::runtime {

Result<HipSymbols> load_hip_symbols() {
  void* lib = nullptr;
  bool injected = fault::hit("dlopen:hip");
  if (!injected)
    for (const char* name : {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
  if (!lib)
    return make_error(Code::unavailable, injected
                                             ? fault::message("dlopen:hip")
                                             : "no HIP runtime (libamdhip64.so cannot be loaded)");
  // The library stays loaded for the process: the table points into it.
  HipSymbols hip;
#define KILN_HIP(name, params)                                                                     \
  hip.name = reinterpret_cast<decltype(hip.name)>(dlsym(lib, #name));                              \
  if (!hip.name)                                                                                   \
    return make_error(Code::unavailable, "the HIP runtime lacks " #name);
#define KILN_HIP_TEXT(name, params)                                                                \
  hip.name = reinterpret_cast<decltype(hip.name)>(dlsym(lib, #name));
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP
  return hip;
}

const Result<HipSymbols>& hip_symbols() {
  static const Result<HipSymbols> table = load_hip_symbols();
  return table;
}

} // namespace kiln::runtime
