// The loader's device backends: host (memfd + dlopen), CUDA (driver API) and
// HIP, each loaded lazily through dlopen. Each takes a checked image and the
// closure it was made from, and fills the symbol table by entry name.
#pragma once

#include "core/records.h"
#include "runtime/module.h"
#include "storage/local/store.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

/// Host images: validated, then loaded from memory (memfd) with dlopen.
Result<std::unique_ptr<LoadedModule>> load_host_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols);

/// NVIDIA images: loaded through the CUDA driver (libcuda.so.1, dlopen'd);
/// lookups give CUfunction handles of the closure's kernels.
Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols);
/// AMD images: loaded through HIP (libamdhip64.so, dlopen'd); lookups give
/// hipFunction_t handles.
Result<std::unique_ptr<LoadedModule>> load_hip_image(const std::string& bytes,
                                                     const core::ClosureRecord& closure,
                                                     SymbolMap& symbols);
/// Of the targets a cache has for a root, the one this process's NVIDIA
/// device runs best; empty when none fits or there is no device.
Result<std::string> choose_cuda_target(const std::vector<std::string>& have);
/// Whether code for an NVIDIA target must go through the driver's PTX JIT
/// on this device (its cubin does not run there); unavailable if neither
/// path runs it or there is no device.
Result<bool> cuda_needs_jit(const std::string& target);
/// The device's arch ("sm_90") and the driver JIT's fingerprint, which key
/// the images the JIT makes.
Result<std::string> cuda_device_arch();
/// The AMD device's target spec ("gfx942:xnack-:sramecc+"); unavailable
/// without HIP or a device.
Result<std::string> hip_device_arch();
/// A HIP gcnArchName ("gfx942:sramecc+:xnack-") as a target spec.
std::string hip_target_spec(const std::string& gcn_arch_name);
Result<std::string> cuda_jit_fingerprint();
/// Links the closure's PTX with the driver's JIT into a cubin for the device.
Result<std::string> cuda_jit_link(const std::vector<std::string>& ptx,
                                  const std::vector<std::string>& names);
/// Same for an AMD device: an exact gfx + features match.
Result<std::string> choose_hip_target(const std::vector<std::string>& have);

/// NVIDIA code whose cubin does not run on the present device: the image the
/// driver's JIT made from the closure's PTX, from the cache or made now and
/// stored under the device's arch.
Result<std::string> cuda_jit_image(storage::Store& store, const core::ClosureRecord& closure,
                                   bool* linked = nullptr);

} // namespace kiln::runtime
