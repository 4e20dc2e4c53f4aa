// AMD images through HIP, dlopen'd at first use; mirrors cuda/. No GPU or
// no ROCm runtime is KILN_UNAVAILABLE with the reason, never an abort.
#include "runtime/backends.h"
#include "support/fault.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace kiln::runtime {

namespace {

constexpr int kErrorNotFound = 500; // hipErrorNotFound

struct Hip {
#define KILN_HIP(name, params) int(*name) params = nullptr;
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP
  std::string error;
  std::string arch; ///< gcnArchName of device 0, e.g. "gfx942:sramecc+:xnack-"
};

// hipDeviceProp_t's layout changes between ROCm releases and Kiln does not
// build against HIP headers, so the arch name is found by content: the one
// NUL-terminated "gfx<digit>..." string in the (oversized) property buffer.
std::string find_gcn_arch(const std::vector<char>& props) {
  for (size_t i = 0; i + 4 < props.size(); ++i) {
    if (std::memcmp(&props[i], "gfx", 3) != 0 || props[i + 3] < '0' || props[i + 3] > '9')
      continue;
    if (i > 0 && props[i - 1] != '\0')
      continue;
    size_t end = i;
    while (end < props.size() && props[end] != '\0')
      ++end;
    if (end < props.size())
      return std::string(&props[i], end - i);
  }
  return {};
}

const Hip& hip() {
  static Hip h;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = nullptr;
    bool injected = fault::hit("dlopen:hip");
    if (!injected)
      for (const char* name : {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"})
        if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
          break;
    if (!lib) {
      h.error = injected ? fault::message("dlopen:hip")
                                             : "no HIP runtime (libamdhip64.so cannot be loaded)";
      return;
    }
#define KILN_HIP(name, params)                                                                     \
  h.name = reinterpret_cast<decltype(h.name)>(dlsym(lib, #name));                                  \
  if (!h.name) {                                                                                   \
    h.error = "the HIP runtime lacks " #name;                                                      \
    return;                                                                                        \
  }
#include "runtime/hip/hip_symbols.def"
#undef KILN_HIP
    int count = 0;
    if (h.hipInit(0) != 0 || h.hipGetDeviceCount(&count) != 0 || count == 0) {
      h.error = "no AMD GPU visible to HIP";
      return;
    }
    std::vector<char> props(16384, '\0');
    if (h.hipGetDevicePropertiesR0600(props.data(), 0) != 0 ||
        (h.arch = find_gcn_arch(props)).empty()) {
      h.error = "cannot read the architecture of AMD GPU 0";
      return;
    }
  });
  return h;
}

class HipModule final : public LoadedModule {
public:
  explicit HipModule(void* m) : module_(m) {}
  ~HipModule() override {
    if (module_ && hip().error.empty())
      hip().hipModuleUnload(module_);
  }
  void* handle() const override { return module_; }

private:
  void* module_;
};

} // namespace

std::string hip_target_spec(const std::string& gcn_arch_name) {
  // gcnArchName lists features as the driver likes ("gfx942:sramecc+:xnack-");
  // a Kiln target spec names xnack before sramecc.
  std::string cpu = gcn_arch_name.substr(0, gcn_arch_name.find(':'));
  std::string xnack, sramecc;
  for (size_t at = gcn_arch_name.find(':'); at != std::string::npos;) {
    size_t next = gcn_arch_name.find(':', at + 1);
    std::string feature =
        gcn_arch_name.substr(at + 1, next == std::string::npos ? next : next - at - 1);
    if (feature.rfind("xnack", 0) == 0)
      xnack = ":" + feature;
    else if (feature.rfind("sramecc", 0) == 0)
      sramecc = ":" + feature;
    at = next;
  }
  return cpu + xnack + sramecc;
}

Result<std::string> hip_device_arch() {
  const Hip& h = hip();
  if (!h.error.empty())
    return make_error(Code::unavailable, h.error);
  return hip_target_spec(h.arch);
}

Result<std::string> choose_hip_target(const std::vector<std::string>& have) {
  const Hip& h = hip();
  if (!h.error.empty())
    return std::string();
  // AMD code objects need the exact processor and the same xnack/sramecc
  // settings; a target without a feature suffix runs either way.
  std::string cpu = h.arch.substr(0, h.arch.find(':'));
  for (const std::string& t : have)
    if (t == h.arch)
      return t;
  for (const std::string& t : have)
    if (t == cpu)
      return t;
  return std::string();
}

Result<std::unique_ptr<LoadedModule>> load_hip_image(const std::string& bytes,
                                                     const core::ClosureRecord& closure,
                                                     SymbolMap& symbols) {
  const Hip& h = hip();
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  if (!h.error.empty())
    return make_error(Code::unavailable, "cannot load " + what + ": " + h.error);
  void* module = nullptr;
  int rc = h.hipModuleLoadData(&module, bytes.data());
  if (rc != 0)
    return make_error(Code::unavailable, "hipModuleLoadData of " + what + " on " + h.arch +
                                             " failed: HIP error " + std::to_string(rc));
  auto mod = std::make_unique<HipModule>(module);
  for (const core::ClosureMember& m : closure.members) {
    void* fn = nullptr;
    rc = h.hipModuleGetFunction(&fn, module, m.symbol.c_str());
    if (rc == 0)
      symbols.emplace(m.entry, fn);
    else if (rc != kErrorNotFound)
      return make_error(Code::internal, "hipModuleGetFunction(" + m.entry + ") in " + what +
                                            " failed: HIP error " + std::to_string(rc));
  }
  return std::unique_ptr<LoadedModule>(std::move(mod));
}

} // namespace kiln::runtime
