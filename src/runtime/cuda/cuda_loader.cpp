// NVIDIA images through the CUDA driver API, dlopen'd at first use. No GPU
// or no driver is KILN_UNAVAILABLE with the reason, never an abort.
#include "runtime/loader.h"

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
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      c.error = "no CUDA driver (libcuda.so.1 cannot be loaded)";
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
  std::string exact = "sm_" + std::to_string(c.major) + std::to_string(c.minor);
  // The driver's rules for cubins: the exact architecture, including an
  // arch-specific sm_XXa built for exactly this device; else the same major
  // version with a lower minor (never an 'a' or 'f' target built elsewhere).
  for (const std::string& t : have)
    if (t == exact || t == exact + "a")
      return t;
  std::string best;
  int best_minor = -1;
  std::string prefix = "sm_" + std::to_string(c.major);
  for (const std::string& t : have) {
    if (t.rfind(prefix, 0) != 0 || t.size() != prefix.size() + 1)
      continue;
    int minor = t.back() - '0';
    if (minor >= 0 && minor <= c.minor && minor > best_minor) {
      best = t;
      best_minor = minor;
    }
  }
  return best;
}

Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const cache::ClosureRecord& closure,
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
  for (const cache::ClosureMember& m : closure.members) {
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
