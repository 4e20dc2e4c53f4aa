// The loader's device backends behind one interface: for each kind of
// target, how an image is loaded, which of a cache's targets the present
// device runs best, whether its code runs here, how its images are made
// where the linkers' do not run, and what that device's target is. The loader dispatches
// through this table only; each backend's files live in host/, cuda/, hip/.
#pragma once

#include "core/data_model.h"
#include "core/target.h"
#include "image/image.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <memory>
#include <optional>
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
  /// unavailable, with the reason, without the device or its driver. Given
  /// `kept`, a backend that can load the image again without reading it
  /// (the host's sealed memory file) hands that there; the others leave it.
  Result<std::unique_ptr<LoadedModule>> (*load)(const std::string& bytes,
                                                const core::ClosureRecord& closure,
                                                SymbolMap& symbols,
                                                std::shared_ptr<KeptImage>* kept);
  /// Of the targets a cache has for a root, the one the present device runs
  /// best; empty when none runs or there is no such device.
  Result<std::string> (*choose_target)(const std::vector<std::string>& have);
  /// ok when code built as `root` (a closure's root job) runs on the
  /// present device; unavailable with the reason otherwise. Asked before
  /// the image is fetched or loaded. Null when the target spec alone
  /// decides (GPUs): then the load reads no job row for it.
  Status (*check_job)(const core::JobRecord& root);
  /// How images for `target` are made where the linkers' do not run on
  /// the present device (NVIDIA code whose cubin does not: the driver's JIT
  /// of its PTX, read from `store`); none where they run; unavailable where
  /// the device runs no code for `target`, reported once the closure is
  /// found. Null where the linkers' images always serve (host, AMD).
  Result<std::optional<image::Maker>> (*image_maker)(const std::string& target,
                                                     storage::Records& store);
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
