// The loader's device backends behind one interface: for each kind of
// target, how an image is loaded, which of a cache's targets the present
// device runs best, and what that device's target is. The loader dispatches
// through this table only; each backend's files live in host/, cuda/, hip/.
#pragma once

#include "core/records.h"
#include "core/target.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln::runtime {

/// What the loader calls for one kind of target.
struct Backend {
  core::TargetKind kind;
  /// "host", "CUDA", "HIP": for messages.
  const char* name;
  /// Loads a checked image of `closure` and fills `symbols` by entry name;
  /// unavailable, with the reason, without the device or its driver.
  Result<std::unique_ptr<LoadedModule>> (*load)(const std::string& bytes,
                                                const core::ClosureRecord& closure,
                                                SymbolMap& symbols);
  /// Of the targets a cache has for a root, the one the present device runs
  /// best; empty when none runs or there is no such device.
  Result<std::string> (*choose_target)(const std::vector<std::string>& have);
  /// ok when code built as `root` (a closure's root job) runs on the
  /// present device; unavailable with the reason otherwise. Asked before
  /// the image is fetched or loaded. Null when the target spec alone
  /// decides (GPUs): then the load reads no job row for it.
  Status (*check_job)(const core::JobRecord& root);
  /// The present device's target spec ("host", "sm_90",
  /// "gfx942:sramecc+:xnack-"); unavailable when there is no such device.
  Result<std::string> (*device_target)();
};

/// The backend for code of `kind`.
const Backend& backend_for(core::TargetKind kind);

/// Every backend, in the order a load without a target asks them for one:
/// the GPUs first (NVIDIA, then AMD), the host last.
std::span<const Backend> backends();

} // namespace kiln::runtime
