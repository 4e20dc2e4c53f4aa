// NVIDIA target selection: the driver's compatibility rules for cubins and
// PTX, and the present device they are asked about.
#include "runtime/cuda/cuda_select.h"

#include "runtime/cuda/cuda_status.h"


namespace kiln::runtime {

namespace {

constexpr int kAttrComputeMajor = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

Result<CudaDevice> open_cuda_device() {
  const Result<CudaSymbols>& table = cuda_symbols();
  if (!table)
    return table.error();
  const CudaSymbols& cu = *table;
  CudaDevice d;
  d.cu = &cu;
  int rc = cu.cuInit(0), count = 0;
  if (rc != 0)
    return make_error(Code::unavailable, "cuInit failed: " + cuda_describe(cu, rc));
  if ((rc = cu.cuDeviceGetCount(&count)) != 0 || count == 0)
    return make_error(Code::unavailable,
                      "no CUDA device" + (rc ? ": " + cuda_describe(cu, rc) : std::string()));
  if ((rc = cu.cuDeviceGet(&d.device, 0)) != 0 ||
      (rc = cu.cuDeviceGetAttribute(&d.major, kAttrComputeMajor, d.device)) != 0 ||
      (rc = cu.cuDeviceGetAttribute(&d.minor, kAttrComputeMinor, d.device)) != 0 ||
      (rc = cu.cuDevicePrimaryCtxRetain(&d.context, d.device)) != 0)
    return make_error(Code::unavailable, "cannot query CUDA device 0: " + cuda_describe(cu, rc));
  return d;
}

} // namespace

bool cubin_runs_on(const std::string& target, int major, int minor) {
  auto a = core::parse_nv_arch(target);
  if (!a || a->major != major)
    return false;
  if (a->suffix == 'a')
    return a->minor == minor;
  return a->minor <= minor;
}

bool ptx_jits_on(const std::string& target, int major, int minor) {
  auto a = core::parse_nv_arch(target);
  if (!a)
    return false;
  if (a->suffix == 'a')
    return a->major == major && a->minor == minor;
  if (a->suffix == 'f')
    return a->major == major && a->minor <= minor;
  return a->major < major || (a->major == major && a->minor <= minor);
}

NvChoice select_nvidia_target(const std::vector<std::string>& have, int major, int minor) {
  NvChoice best;
  int best_rank = -1;
  for (const std::string& t : have) {
    auto a = core::parse_nv_arch(t);
    if (!a)
      continue;
    int rank = -1;
    bool jit = false;
    if (cubin_runs_on(t, major, minor)) {
      // Exact arch beats a lower minor; arch-specific beats plain beats family.
      int kind = a->suffix == 'a' ? 2 : a->suffix == 0 ? 1 : 0;
      rank = 1000 + a->minor * 10 + kind;
    } else if (ptx_jits_on(t, major, minor)) {
      rank = a->major * 10 + a->minor;
      jit = true;
    }
    if (rank > best_rank) {
      best_rank = rank;
      best = {t, jit};
    }
  }
  return best;
}

std::string CudaDevice::arch() const {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

void CudaDevice::make_current() const {
  void* current = nullptr;
  if (cu->cuCtxGetCurrent(&current) == 0 && !current)
    cu->cuCtxSetCurrent(context);
}

const Result<CudaDevice>& cuda_device() {
  static const Result<CudaDevice> device = open_cuda_device();
  return device;
}

Result<std::string> choose_cuda_target(const std::vector<std::string>& have) {
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return std::string();
  return select_nvidia_target(have, d->major, d->minor).target;
}

Result<bool> cuda_needs_jit(const std::string& target) {
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return d.error().context("cannot load " + target + " code");
  if (cubin_runs_on(target, d->major, d->minor))
    return false;
  if (ptx_jits_on(target, d->major, d->minor))
    return true;
  return make_error(Code::unavailable, "code for " + target +
                                           " runs on neither the cubin nor the PTX path of this "
                                           "device (" + d->arch() + "); precompile for it");
}

Result<std::string> cuda_device_arch() {
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return d.error();
  return d->arch();
}

} // namespace kiln::runtime
