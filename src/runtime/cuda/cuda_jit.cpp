// The CUDA driver's JIT linker (cuLink*) as an image maker for
// image::fetch_or_make: the cache keeps what it made, so a device that needs
// the JIT pays for it once per closure.
#include "runtime/cuda/cuda_jit.h"

#include "image/image.h"
#include "runtime/cuda/cuda_select.h"
#include "runtime/cuda/cuda_status.h"

#include <cstdint>

namespace kiln::runtime {

namespace {

constexpr int kJitErrorLogBuffer = 5;     // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSize = 6; // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
constexpr int kJitInputPtx = 1;           // CU_JIT_INPUT_PTX

} // namespace

Result<std::string> cuda_jit_fingerprint() {
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return d.error();
  int version = 0;
  if (d->cu->cuDriverGetVersion(&version) != 0)
    return make_error(Code::unavailable, "no CUDA driver version");
  return "cuda-driver-jit " + std::to_string(version);
}

Result<std::string> cuda_jit_link(const std::vector<std::string>& ptx,
                                  const std::vector<std::string>& names) {
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return d.error();
  const CudaSymbols& cu = *d->cu;
  d->make_current();
  // The driver's own words go into the error.
  std::string log(8192, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
  void* values[] = {log.data(), reinterpret_cast<void*>(uintptr_t(log.size()))};
  void* state = nullptr;
  int rc = cu.cuLinkCreate(2, options, values, &state);
  if (rc != 0)
    return make_error(Code::internal, "cuLinkCreate failed: " + cuda_describe(cu, rc));
  auto fail = [&](const std::string& what, int code) {
    std::string msg = what + ": " + cuda_describe(cu, code) + ": " + log.c_str();
    cu.cuLinkDestroy(state);
    return make_error(Code::internal, msg);
  };
  for (size_t i = 0; i < ptx.size(); ++i) {
    // The driver reads PTX as a C string: pass it NUL-terminated.
    std::string text = ptx[i] + '\0';
    rc = cu.cuLinkAddData(state, kJitInputPtx, text.data(), text.size(), names[i].c_str(), 0,
                          nullptr, nullptr);
    if (rc != 0)
      return fail("the driver's JIT rejected the PTX of job " + names[i], rc);
  }
  void* cubin = nullptr;
  size_t size = 0;
  if ((rc = cu.cuLinkComplete(state, &cubin, &size)) != 0)
    return fail("the driver's JIT could not link " + std::to_string(ptx.size()) + " jobs", rc);
  std::string out(static_cast<const char*>(cubin), size); // owned by the link state
  cu.cuLinkDestroy(state);
  return out;
}

Result<std::optional<image::Maker>> cuda_image_maker(const std::string& target,
                                                     storage::Records& store) {
  KILN_TRY_ASSIGN(bool jit, cuda_needs_jit(target));
  if (!jit)
    return std::optional<image::Maker>();
  KILN_TRY_ASSIGN(std::string arch, cuda_device_arch());
  image::Maker maker;
  maker.arch = arch;
  maker.fingerprint = cuda_jit_fingerprint;
  maker.make = [&store, arch](const core::ClosureRecord& c) -> Result<std::string> {
    std::string what = "JIT of closure " + c.key.hex() + " for " + arch;
    std::vector<std::string> ptx, names;
    for (const core::ClosureMember& m : c.members) {
      auto p = store.jobs().get_artifact(m.job, "ptx");
      if (!p)
        return p.error().context(what);
      ptx.push_back(p.take());
      names.push_back(m.job.hex());
    }
    auto image = cuda_jit_link(ptx, names);
    if (!image)
      return image.error().context(what);
    return image;
  };
  return std::optional<image::Maker>(std::move(maker));
}

} // namespace kiln::runtime
