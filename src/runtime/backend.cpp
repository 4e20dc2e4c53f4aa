// The dispatch table: one Backend per core::TargetKind.
#include "runtime/backend.h"

#include "runtime/cuda/cuda_jit.h"
#include "runtime/cuda/cuda_loader.h"
#include "runtime/cuda/cuda_select.h"
#include "runtime/hip/hip_loader.h"
#include "runtime/hip/hip_select.h"
#include "runtime/host/host_cpu_check.h"
#include "runtime/host/host_loader.h"
#include "runtime/host/host_select.h"

#include <cstdlib>

namespace kiln::runtime {

namespace {

// GPU code is matched to its device by target spec alone (the image arch
// and the driver decide): no job check. Only NVIDIA code may need images
// the linkers do not make (the driver's JIT).
// In the order backends() gives them.
constexpr Backend kBackends[] = {
    {core::TargetKind::nvptx, "CUDA", load_cuda_image, choose_cuda_target, nullptr,
     cuda_image_maker, cuda_device_arch},
    {core::TargetKind::amdgpu, "HIP", load_hip_image, choose_hip_target, nullptr, nullptr,
     hip_device_arch},
    {core::TargetKind::host, "host", load_host_image, choose_host_target, check_host_job,
     nullptr, host_device_target},
};

} // namespace

const Backend& backend_for(core::TargetKind kind) {
  // A switch, so that a new TargetKind without a backend fails to compile
  // (-Wswitch); the unit tests check each case names its own kind.
  switch (kind) {
  case core::TargetKind::nvptx:
    return kBackends[0];
  case core::TargetKind::amdgpu:
    return kBackends[1];
  case core::TargetKind::host:
    return kBackends[2];
  }
  std::abort(); // not a TargetKind
}

std::span<const Backend> backends() { return kBackends; }

} // namespace kiln::runtime
