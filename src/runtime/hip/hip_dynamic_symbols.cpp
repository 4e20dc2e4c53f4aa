// Resolving hip_symbols.def with dlsym: HIP exports each entry point under
// its plain name. Versioned ABIs get their own names instead
// (hipGetDevicePropertiesR0600 is ROCm 6's property struct), so which
// property call exists says which struct it fills.
#include "runtime/hip/hip_dynamic_symbols.h"

#include "support/fault.h"

#include <dlfcn.h>

namespace kiln::runtime {

namespace {

// Newest first: where several are installed, the newest runtime knows the
// newest GPUs. Each major version has its own soname (its ABI); the
// unversioned link exists only with the development package.
constexpr const char* kLibraryNames[] = {"libamdhip64.so.7", "libamdhip64.so.6",
                                         "libamdhip64.so.5", "libamdhip64.so"};

} // namespace

std::span<const char* const> hip_library_names() { return kLibraryNames; }

void* open_hip_library(std::span<const char* const> names, std::string& opened) {
  // A runtime already in the process comes first: the application launches
  // the hipFunction_t handles Kiln returns with its own runtime, which knows
  // nothing of modules a second runtime loaded.
  for (int flags : {RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD, RTLD_NOW | RTLD_LOCAL})
    for (const char* name : names)
      if (void* lib = dlopen(name, flags)) {
        opened = name;
        return lib;
      }
  return nullptr;
}

Status choose_hip_properties_call(HipSymbols& hip) {
  // ROCm 6 and 7 still export the plain name, filling the ROCm 5 struct for
  // old binaries; the R0600 call is the current one wherever it exists.
  if (hip.hipGetDevicePropertiesR0600) {
    hip.get_device_properties = hip.hipGetDevicePropertiesR0600;
    hip.props_layout = HipPropsLayout::r0600;
  } else if (hip.hipGetDeviceProperties) {
    hip.get_device_properties = hip.hipGetDeviceProperties;
    hip.props_layout = HipPropsLayout::r0000;
  } else {
    return make_error(Code::unavailable,
                      "the HIP runtime " + hip.library +
                          " has neither hipGetDevicePropertiesR0600 nor hipGetDeviceProperties");
  }
  return Status::ok();
}

Result<HipSymbols> load_hip_symbols() {
  bool injected = fault::hit("dlopen:hip");
  HipSymbols hip;
  void* lib = injected ? nullptr : open_hip_library(hip_library_names(), hip.library);
  if (!lib)
    return make_error(Code::unavailable,
                      injected ? fault::message("dlopen:hip")
                               : "no HIP runtime (none of libamdhip64.so.7, libamdhip64.so.6, "
                                 "libamdhip64.so.5, libamdhip64.so can be loaded)");
  // The library stays loaded for the process: the table points into it.
#define KILN_HIP(name, params)                                                                     \
  hip.name = reinterpret_cast<decltype(hip.name)>(dlsym(lib, #name));                              \
  if (!hip.name)                                                                                   \
    return make_error(Code::unavailable, "the HIP runtime " + hip.library + " lacks " #name);
#define KILN_HIP_OPTIONAL(name, params)                                                            \
  hip.name = reinterpret_cast<decltype(hip.name)>(dlsym(lib, #name));
#define KILN_HIP_TEXT(name, params)                                                                \
  hip.name = reinterpret_cast<decltype(hip.name)>(dlsym(lib, #name));
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP_TEXT
#undef KILN_HIP_OPTIONAL
#undef KILN_HIP
  KILN_TRY(choose_hip_properties_call(hip));
  return hip;
}

const Result<HipSymbols>& hip_symbols() {
  static const Result<HipSymbols> table = load_hip_symbols();
  return table;
}

} // namespace kiln::runtime
