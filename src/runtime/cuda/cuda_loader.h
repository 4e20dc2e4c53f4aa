// NVIDIA images (cubins) loaded into the present device's primary context
// through the CUDA driver; lookups give CUfunction handles.
#pragma once

#include "core/data_model.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>

namespace kiln::runtime {

/// Loads a checked image of `closure` and fills `symbols` with its kernels'
/// CUfunction handles by entry name (device functions have none: they are
/// reached through the kernels' deferred pointers). Unavailable, with the
/// reason, without a driver or a device, or when the device refuses it.
/// A module is not kept for a later load: `kept` is left empty.
Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<KeptImage>* kept = nullptr);

} // namespace kiln::runtime
