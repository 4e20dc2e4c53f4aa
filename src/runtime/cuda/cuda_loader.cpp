// NVIDIA images through the CUDA driver API, dlopen'd at first use. No GPU
// or no driver is KILN_UNAVAILABLE with the reason, never an abort.
#include "runtime/backends.h"

#include "image/image.h"

#include "runtime/cuda/cuda_select.h"
#include "support/fault.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

namespace kiln::runtime {

namespace {

constexpr int kAttrComputeMajor = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kErrorNotFound = 500;   // CUDA_ERROR_NOT_FOUND

struct Cuda {
#define KILN_CUDA(name, params) int(*name) params = nullptr;
#include "runtime/cuda/cuda_symbols.def"
#undef KILN_CUDA
  std::string error;  ///< why CUDA is unavailable
  int device = -1;
  int major = 0, minor = 0;
  void* context = nullptr;

  std::string describe(int rc) const {
    const char* s = nullptr;
    if (cuGetErrorString)
      cuGetErrorString(rc, &s);
    return "CUDA error " + std::to_string(rc) + (s ? std::string(" (") + s + ")" : "");
  }
};

const Cuda& cuda() {
  static Cuda c;
  static std::once_flag once;
  std::call_once(once, [] {
    bool injected = fault::hit("dlopen:cuda");
    void* h = injected ? nullptr : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      c.error = injected ? fault::message("dlopen:cuda")
                                              : "no CUDA driver (libcuda.so.1 cannot be loaded)";
      return;
    }
    using GetProc = int (*)(const char*, void**, int, uint64_t, int*);
    auto get = reinterpret_cast<GetProc>(dlsym(h, "cuGetProcAddress_v2"));
    if (!get) {
      c.error = "the CUDA driver is older than 12.0 (no cuGetProcAddress_v2)";
      return;
    }
#define KILN_CUDA(name, params)                                                                    \
  {                                                                                                \
    void* p = nullptr;                                                                             \
    int status = 0;                                                                                \
    if (get(#name, &p, 12000, 0, &status) != 0 || !p) {                                           \
      c.error = "the CUDA driver lacks " #name;                                                    \
      return;                                                                                      \
    }                                                                                              \
    c.name = reinterpret_cast<decltype(c.name)>(p);                                                \
  }
#include "runtime/cuda/cuda_symbols.def"
#undef KILN_CUDA
    int rc = c.cuInit(0), count = 0;
    if (rc != 0) {
      c.error = "cuInit failed: " + c.describe(rc);
      return;
    }
    if ((rc = c.cuDeviceGetCount(&count)) != 0 || count == 0) {
      c.error = "no CUDA device" + (rc ? ": " + c.describe(rc) : std::string());
      return;
    }
    // The process's current device is device 0 unless it already made a
    // context current; Kiln loads into the primary context of device 0.
    if ((rc = c.cuDeviceGet(&c.device, 0)) != 0 ||
        (rc = c.cuDeviceGetAttribute(&c.major, kAttrComputeMajor, c.device)) != 0 ||
        (rc = c.cuDeviceGetAttribute(&c.minor, kAttrComputeMinor, c.device)) != 0 ||
        (rc = c.cuDevicePrimaryCtxRetain(&c.context, c.device)) != 0) {
      c.error = "cannot query CUDA device 0: " + c.describe(rc);
      return;
    }
  });
  return c;
}

class CudaModule final : public LoadedModule {
public:
  explicit CudaModule(void* m) : module_(m) {}
  ~CudaModule() override {
    const Cuda& c = cuda();
    if (module_ && c.error.empty())
      c.cuModuleUnload(module_);
  }
  void* handle() const override { return module_; }

private:
  void* module_;
};

} // namespace

Result<std::string> choose_cuda_target(const std::vector<std::string>& have) {
  const Cuda& c = cuda();
  if (!c.error.empty())
    return std::string();
  return select_nvidia_target(have, c.major, c.minor).target;
}

Result<bool> cuda_needs_jit(const std::string& target) {
  const Cuda& c = cuda();
  if (!c.error.empty())
    return make_error(Code::unavailable, "cannot load " + target + " code: " + c.error);
  if (cubin_runs_on(target, c.major, c.minor))
    return false;
  if (ptx_jits_on(target, c.major, c.minor))
    return true;
  return make_error(Code::unavailable,
                    "code for " + target + " runs on neither the cubin nor the PTX path of this "
                    "device (sm_" + std::to_string(c.major) + std::to_string(c.minor) +
                    "); precompile for it");
}

Result<std::string> cuda_device_arch() {
  const Cuda& c = cuda();
  if (!c.error.empty())
    return make_error(Code::unavailable, c.error);
  return "sm_" + std::to_string(c.major) + std::to_string(c.minor);
}

Result<std::string> cuda_jit_fingerprint() {
  const Cuda& c = cuda();
  int version = 0;
  if (!c.error.empty() || c.cuDriverGetVersion(&version) != 0)
    return make_error(Code::unavailable, c.error.empty() ? "no CUDA driver version" : c.error);
  return "cuda-driver-jit " + std::to_string(version);
}

Result<std::string> cuda_jit_link(const std::vector<std::string>& ptx,
                                  const std::vector<std::string>& names) {
  const Cuda& c = cuda();
  if (!c.error.empty())
    return make_error(Code::unavailable, c.error);
  void* current = nullptr;
  if (c.cuCtxGetCurrent(&current) == 0 && !current)
    c.cuCtxSetCurrent(c.context);
  // CU_JIT_ERROR_LOG_BUFFER (5) and its size (6): the driver's own words go
  // into the error.
  std::string log(8192, '\0');
  int options[] = {5, 6};
  void* values[] = {log.data(), reinterpret_cast<void*>(uintptr_t(log.size()))};
  void* state = nullptr;
  int rc = c.cuLinkCreate(2, options, values, &state);
  if (rc != 0)
    return make_error(Code::internal, "cuLinkCreate failed: " + c.describe(rc));
  auto fail = [&](const std::string& what, int code) {
    std::string msg = what + ": " + c.describe(code) + ": " + log.c_str();
    c.cuLinkDestroy(state);
    return make_error(Code::internal, msg);
  };
  for (size_t i = 0; i < ptx.size(); ++i) {
    // The driver reads PTX as a C string: pass it NUL-terminated.
    std::string text = ptx[i] + '\0';
    rc = c.cuLinkAddData(state, /*CU_JIT_INPUT_PTX*/ 1, text.data(), text.size(),
                         names[i].c_str(), 0, nullptr, nullptr);
    if (rc != 0)
      return fail("the driver's JIT rejected the PTX of job " + names[i], rc);
  }
  void* cubin = nullptr;
  size_t size = 0;
  if ((rc = c.cuLinkComplete(state, &cubin, &size)) != 0)
    return fail("the driver's JIT could not link " + std::to_string(ptx.size()) + " jobs", rc);
  std::string out(static_cast<const char*>(cubin), size); // owned by the link state
  c.cuLinkDestroy(state);
  return out;
}

Result<std::string> cuda_jit_image(storage::Store& store, const core::ClosureRecord& closure,
                                   bool* linked) {
  auto arch = cuda_device_arch();
  if (!arch)
    return arch.error();
  image::Maker jit;
  jit.arch = *arch;
  jit.fingerprint = cuda_jit_fingerprint;
  jit.make = [&](const core::ClosureRecord& c) -> Result<std::string> {
    std::string what = "JIT of closure " + c.key.hex() + " for " + *arch;
    std::vector<std::string> ptx, names;
    for (const core::ClosureMember& m : c.members) {
      auto p = store.get_artifact(m.job, "ptx");
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
  return image::fetch_or_make(store, closure, jit, linked);
}

Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols) {
  const Cuda& c = cuda();
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  if (!c.error.empty())
    return make_error(Code::unavailable, "cannot load " + what + ": " + c.error);
  void* current = nullptr;
  if (c.cuCtxGetCurrent(&current) == 0 && !current)
    c.cuCtxSetCurrent(c.context);
  void* module = nullptr;
  int rc = c.cuModuleLoadData(&module, bytes.data());
  if (rc != 0)
    return make_error(Code::unavailable, "cuModuleLoadData of " + what + " on sm_" +
                                             std::to_string(c.major) + std::to_string(c.minor) +
                                             " failed: " + c.describe(rc));
  auto mod = std::make_unique<CudaModule>(module);
  // Only kernels have CUfunction handles; device functions of the closure
  // are reached through the kernels' deferred pointers.
  for (const core::ClosureMember& m : closure.members) {
    void* fn = nullptr;
    rc = c.cuModuleGetFunction(&fn, module, m.symbol.c_str());
    if (rc == 0)
      symbols.emplace(m.entry, fn);
    else if (rc != kErrorNotFound)
      return make_error(Code::internal, "cuModuleGetFunction(" + m.entry + ") in " + what +
                                            " failed: " + c.describe(rc));
  }
  return std::unique_ptr<LoadedModule>(std::move(mod));
}

} // namespace kiln::runtime
