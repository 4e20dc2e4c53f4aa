// AMD images through HIP's module API; mirrors cuda/cuda_loader.cpp. No GPU
// or no ROCm runtime is KILN_UNAVAILABLE with the reason, never an abort.
#include "runtime/hip/hip_loader.h"

#include "runtime/hip/hip_select.h"
#include "runtime/hip/hip_status.h"

namespace kiln::runtime {

namespace {

constexpr int kErrorNotFound = 500; // hipErrorNotFound

class HipModule final : public LoadedModule {
public:
  HipModule(const HipSymbols& hip, void* m) : hip_(hip), module_(m) {}
  ~HipModule() override {
    if (module_)
      hip_.hipModuleUnload(module_);
  }
  void* handle() const override { return module_; }

private:
  const HipSymbols& hip_; // the process's table, which outlives every module
  void* module_;
};

} // namespace

Result<std::unique_ptr<LoadedModule>> load_hip_image(const std::string& bytes,
                                                     const core::ClosureRecord& closure,
                                                     SymbolMap& symbols,
                                                     std::shared_ptr<KeptImage>* /*kept*/) {
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  const Result<HipDevice>& d = hip_device();
  if (!d)
    return d.error().context("cannot load " + what);
  const HipSymbols& hip = *d->hip;
  void* module = nullptr;
  int rc = hip.hipModuleLoadData(&module, bytes.data());
  if (rc != 0)
    return make_error(Code::unavailable, "hipModuleLoadData of " + what + " on " + d->arch() +
                                             " failed: " + hip_describe(hip, rc));
  auto mod = std::make_unique<HipModule>(hip, module);
  for (const core::ClosureMember& m : closure.members) {
    void* fn = nullptr;
    rc = hip.hipModuleGetFunction(&fn, module, m.symbol.c_str());
    if (rc == 0)
      symbols.emplace(m.entry, fn);
    else if (rc != kErrorNotFound)
      return make_error(Code::internal, "hipModuleGetFunction(" + m.entry + ") in " + what +
                                            " failed: " + hip_describe(hip, rc));
  }
  return std::unique_ptr<LoadedModule>(std::move(mod));
}

} // namespace kiln::runtime
