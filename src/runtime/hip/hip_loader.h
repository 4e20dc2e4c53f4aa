// AMD images (HSA code objects) loaded onto the present device through HIP;
// lookups give hipFunction_t handles. Mirrors cuda/cuda_loader.h.
#pragma once

#include "core/data_model.h"
#include "runtime/module.h"

#include <kiln/result.hpp>

#include <memory>
#include <string>

namespace kiln::runtime {

/// Loads a checked image of `closure` and fills `symbols` with its kernels'
/// hipFunction_t handles by entry name. Unavailable, with the reason,
/// without a HIP runtime or a device, or when the device refuses it.
/// A module is not kept for a later load: `kept` is left empty.
Result<std::unique_ptr<LoadedModule>> load_hip_image(const std::string& bytes,
                                                     const core::ClosureRecord& closure,
                                                     SymbolMap& symbols,
                                                     std::shared_ptr<KeptImage>* kept = nullptr);

} // namespace kiln::runtime
