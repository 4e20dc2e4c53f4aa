// Which NVIDIA target's code runs on a device, by the driver's rules. Pure
// functions of the target spec and the device's compute capability, so they
// are tested without a GPU.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

struct NvArch {
  int major = 0;
  int minor = 0;
  char suffix = 0; ///< 0, 'a' (arch-specific) or 'f' (family-specific)
};

/// "sm_90a" → {9, 0, 'a'}; "sm_121" → {12, 1, 0}; anything else: nullopt.
std::optional<NvArch> parse_nv_arch(const std::string& target);

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

} // namespace kiln::runtime
