// Which AMD target's code runs on the present device, by the HIP runtime's
// rules; mirrors cuda/cuda_select.h. The rules are pure functions of the
// target spec and the device's gcnArchName, tested without a GPU; the device
// queries below apply them to device 0 of this process.
#pragma once

#include "core/target.h"
#include "runtime/hip/hip_dynamic_symbols.h"

#include <kiln/result.hpp>

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {

// Specs and arch names are read as core/target.h reads them
// (core::parse_amd_arch).

/// A property struct's layout: where its gcnArchName (char[256]) lies, its
/// size, and the call that fills it. Offsets from ROCm's hip_runtime_api.h
/// (LP64): ROCm 5's hipDeviceProp_t has gcnArchName at byte 396 of 792;
/// hipDeviceProp_tR0600 at byte 1160 of 1472.
struct HipPropsFormat {
  size_t gcn_arch_name = 0;
  size_t size = 0;
  const char* call = ""; ///< "hipGetDevicePropertiesR0600"
};
HipPropsFormat hip_props_format(HipPropsLayout layout);

/// "HIP runtime 6.2.41133 (libamdhip64.so.6)" from hipRuntimeGetVersion's
/// number (major * 10000000 + minor * 100000 + patch); 0: "of unknown
/// version".
std::string hip_runtime_text(int version, const std::string& library);

/// The gcnArchName in `props`, a buffer holding a property struct of
/// `layout` as the call filled it: at the layout's offset, starting "gfx<digit>", NUL-terminated
/// within its 256 bytes and parsing as an AMD arch. Anything else is
/// unavailable, naming `runtime` (hip_runtime_text) and the offset read: a
/// runtime whose struct Kiln does not know.
Result<std::string> read_gcn_arch(std::span<const char> props, HipPropsLayout layout,
                                  const std::string& runtime);

/// A code object for `target` runs on a device of arch `device` (a target
/// spec): the same processor, and every feature the target names set the
/// same way on the device; a feature it leaves out runs either way.
bool code_object_runs_on(const std::string& target, const std::string& device);

/// Of the targets a cache has for a root, the best for the device: of those
/// that run, the one naming the most features (the most specific build);
/// empty when none runs.
std::string select_amd_target(const std::vector<std::string>& have, const std::string& device);

/// The present AMD device: device 0 as HIP sees it.
struct HipDevice {
  const HipSymbols* hip = nullptr;
  int runtime_version = 0;   ///< hipRuntimeGetVersion's; 0 when unknown
  std::string gcn_arch_name; ///< as the runtime reports it: "gfx942:sramecc+:xnack-"

  /// Its canonical target spec: "gfx942:sramecc+:xnack-".
  std::string arch() const { return core::canonical_amd_spec(gcn_arch_name); }
};

/// Device 0 through `hip` (a loaded table, its property call chosen):
/// unavailable, with the reason and the runtime's version, without a device
/// or when its properties hold no architecture name Kiln can read.
Result<HipDevice> open_hip_device(const HipSymbols& hip);

/// The present device, opened at the first call and kept; unavailable, with
/// the reason, without a HIP runtime or an AMD GPU.
const Result<HipDevice>& hip_device();

/// Of the targets a cache has for a root, the one the present AMD device
/// runs best; empty when none fits or there is no device.
Result<std::string> choose_hip_target(const std::vector<std::string>& have);

/// The present device's canonical target spec ("gfx942:sramecc+:xnack-"),
/// what the compiler stores a build for it under; unavailable without HIP
/// or a device.
Result<std::string> hip_device_arch();

} // namespace kiln::runtime
