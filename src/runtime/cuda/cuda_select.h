// Which NVIDIA target's code runs on the present device, by the driver's
// rules. The rules are pure functions of the target spec and the device's
// compute capability, tested without a GPU; the device queries below apply
// them to device 0 of this process.
#pragma once

#include "core/target.h"
#include "runtime/cuda/cuda_dynamic_symbols.h"

#include <kiln/result.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

// Specs are read as core/target.h reads them (core::parse_nv_arch).

/// A cubin for `target` runs on a device of compute capability major.minor:
/// the same major and a minor no higher; an 'a' target only on exactly its
/// own device.
bool cubin_runs_on(const std::string& target, int major, int minor);

/// The driver can JIT `target`'s PTX for the device: any plain target no
/// newer than the device; 'a' and 'f' PTX only within its own arch/family.
bool ptx_jits_on(const std::string& target, int major, int minor);

struct NvChoice {
  std::string target; ///< empty: nothing the cache has runs on the device
  bool jit = false;   ///< load its PTX through the driver's JIT, not its cubin
};

/// Of the targets a cache has for a root, the best for the device: a cubin
/// that runs (exact arch first, then the nearest lower minor), else PTX the
/// driver can JIT (the newest such).
NvChoice select_nvidia_target(const std::vector<std::string>& have, int major, int minor);

/// The present NVIDIA device: device 0 and its primary context, into which
/// Kiln loads (the process's current device is device 0 unless it already
/// made another context current).
struct CudaDevice {
  const CudaSymbols* cu = nullptr;
  int device = -1;
  int major = 0, minor = 0;
  void* context = nullptr;

  /// "sm_90".
  std::string arch() const;
  /// Makes the primary context current on this thread, unless the thread
  /// already has a context (the application's own wins).
  void make_current() const;
};

/// The present device, opened at the first call and kept; unavailable, with
/// the reason, without a driver or a device.
const Result<CudaDevice>& cuda_device();

/// Of the targets a cache has for a root, the one the present NVIDIA device
/// runs best; empty when none fits or there is no device.
Result<std::string> choose_cuda_target(const std::vector<std::string>& have);

/// Whether code for an NVIDIA target must go through the driver's PTX JIT
/// on this device (its cubin does not run there); unavailable if neither
/// path runs it or there is no device.
Result<bool> cuda_needs_jit(const std::string& target);

/// The present device's arch ("sm_90"); unavailable without one.
Result<std::string> cuda_device_arch();

} // namespace kiln::runtime
