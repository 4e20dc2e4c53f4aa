// Which AMD target's code runs on the present device, by the HIP runtime's
// rules; mirrors cuda/cuda_select.h. The rules are pure functions of the
// target spec and the device's gcnArchName, tested without a GPU; the device
// queries below apply them to device 0 of this process.
#pragma once

#include "runtime/hip/hip_dynamic_symbols.h"

#include <kiln/result.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {

struct AmdArch {
  std::string processor; ///< "gfx942"
  /// The settings named, in order: {"xnack", '-'}, {"sramecc", '+'}.
  std::vector<std::pair<std::string, char>> features;
};

/// "gfx942:xnack-:sramecc+" → {"gfx942", {xnack -, sramecc +}}, in either
/// feature order (a gcnArchName parses too); anything else: nullopt.
std::optional<AmdArch> parse_amd_arch(const std::string& target);

/// A HIP gcnArchName ("gfx942:sramecc+:xnack-") as a target spec
/// ("gfx942:xnack-:sramecc+": Kiln names xnack before sramecc).
std::string hip_target_spec(const std::string& gcn_arch_name);

/// The gcnArchName in a raw hipDeviceProp_t: the one NUL-terminated
/// "gfx<digit>..." string in the buffer; empty if there is none.
std::string find_gcn_arch(const std::vector<char>& props);

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
  std::string gcn_arch_name; ///< as the runtime reports it: "gfx942:sramecc+:xnack-"

  /// Its target spec: "gfx942:xnack-:sramecc+".
  std::string arch() const { return hip_target_spec(gcn_arch_name); }
};

/// The present device, opened at the first call and kept; unavailable, with
/// the reason, without a HIP runtime or an AMD GPU.
const Result<HipDevice>& hip_device();

/// Of the targets a cache has for a root, the one the present AMD device
/// runs best; empty when none fits or there is no device.
Result<std::string> choose_hip_target(const std::vector<std::string>& have);

/// The present device's target spec ("gfx942:xnack-:sramecc+"); unavailable
/// without HIP or a device.
Result<std::string> hip_device_arch();

} // namespace kiln::runtime
