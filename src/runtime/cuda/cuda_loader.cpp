// NVIDIA images through the CUDA driver API. No GPU or no driver is
// KILN_UNAVAILABLE with the reason, never an abort.
#include "runtime/cuda/cuda_loader.h"

#include "runtime/cuda/cuda_select.h"
#include "runtime/cuda/cuda_status.h"

namespace kiln::runtime {

namespace {

constexpr int kErrorNotFound = 500; // CUDA_ERROR_NOT_FOUND

class CudaModule final : public LoadedModule {
public:
  CudaModule(const CudaSymbols& cu, void* m) : cu_(cu), module_(m) {}
  ~CudaModule() override {
    if (module_)
      cu_.cuModuleUnload(module_);
  }
  void* handle() const override { return module_; }

private:
  const CudaSymbols& cu_; // the process's table, which outlives every module
  void* module_;
};

} // namespace

Result<std::unique_ptr<LoadedModule>> load_cuda_image(const std::string& bytes,
                                                      const core::ClosureRecord& closure,
                                                      SymbolMap& symbols,
                                                      std::shared_ptr<KeptImage>* /*kept*/) {
  std::string what = "image of closure " + closure.key.hex() + " (" + closure.target + ")";
  const Result<CudaDevice>& d = cuda_device();
  if (!d)
    return d.error().context("cannot load " + what);
  const CudaSymbols& cu = *d->cu;
  d->make_current();
  void* module = nullptr;
  int rc = cu.cuModuleLoadData(&module, bytes.data());
  if (rc != 0)
    return make_error(Code::unavailable, "cuModuleLoadData of " + what + " on " + d->arch() +
                                             " failed: " + cuda_describe(cu, rc));
  auto mod = std::make_unique<CudaModule>(cu, module);
  for (const core::ClosureMember& m : closure.members) {
    void* fn = nullptr;
    rc = cu.cuModuleGetFunction(&fn, module, m.symbol.c_str());
    if (rc == 0)
      symbols.emplace(m.entry, fn);
    else if (rc != kErrorNotFound)
      return make_error(Code::internal, "cuModuleGetFunction(" + m.entry + ") in " + what +
                                            " failed: " + cuda_describe(cu, rc));
  }
  return std::unique_ptr<LoadedModule>(std::move(mod));
}

} // namespace kiln::runtime
