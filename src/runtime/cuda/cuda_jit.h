// Images the CUDA driver's JIT makes from a closure's PTX, for NVIDIA code
// whose cubin does not run on the present device. They are cached like
// linked images, under the device's arch and the driver's version.
#pragma once

#include "core/records.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <string>
#include <vector>

namespace kiln::runtime {

/// The driver JIT's fingerprint ("cuda-driver-jit 12040"): a newer driver
/// may make other code, so it keys the images the JIT makes.
Result<std::string> cuda_jit_fingerprint();

/// Links PTX (one text per job, `names` naming them for the driver's log)
/// with the driver's JIT into a cubin for the present device.
Result<std::string> cuda_jit_link(const std::vector<std::string>& ptx,
                                  const std::vector<std::string>& names);

/// The image the driver's JIT made from the closure's PTX: from the cache,
/// or made now and stored under the device's arch. `linked` says which.
Result<std::string> cuda_jit_image(storage::Records& store, const core::ClosureRecord& closure,
                                   bool* linked = nullptr);

} // namespace kiln::runtime
