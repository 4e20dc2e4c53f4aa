// Images the CUDA driver's JIT makes from a closure's PTX, for NVIDIA code
// whose cubin does not run on the present device. They are cached like
// linked images, under the device's arch and the driver's version.
#pragma once

#include "core/data_model.h"
#include "image/image.h"
#include "storage/records.h"

#include <kiln/result.hpp>

#include <optional>
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

/// How NVIDIA images for `target` are made for the present device (the
/// CUDA backend's image_maker): none where its cubin runs here; where only
/// its PTX does, the driver's JIT of a closure's PTX, read from `store`,
/// its images stored under the device's arch; unavailable where neither
/// runs, or without a device.
Result<std::optional<image::Maker>> cuda_image_maker(const std::string& target,
                                                     storage::Records& store);

} // namespace kiln::runtime
