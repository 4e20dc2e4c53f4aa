// Resolving cuda_symbols.def through the driver's own cuGetProcAddress_v2,
// which gives the versioned entry points (the plain dlsym names are the
// oldest ABI of each).
#include "runtime/cuda/cuda_dynamic_symbols.h"

#include "support/fault.h"

#include <dlfcn.h>

#include <cstdint>

namespace kiln::runtime {

namespace {

constexpr int kApiVersion = 12000; // the CUDA 12.0 ABI of each entry point

} // namespace

Result<CudaSymbols> load_cuda_symbols() {
  bool injected = fault::hit("dlopen:cuda");
  void* lib = injected ? nullptr : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return make_error(Code::unavailable, injected
                                             ? fault::message("dlopen:cuda")
                                             : "no CUDA driver (libcuda.so.1 cannot be loaded)");
  using GetProc = int (*)(const char*, void**, int, uint64_t, int*);
  auto get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get)
    return make_error(Code::unavailable,
                      "the CUDA driver is older than 12.0 (no cuGetProcAddress_v2)");
  // The library stays loaded for the process: the table points into it.
  CudaSymbols cu;
#define KILN_CUDA(name, params)                                                                    \
  {                                                                                                \
    void* p = nullptr;                                                                             \
    int status = 0;                                                                                \
    if (get(#name, &p, kApiVersion, 0, &status) != 0 || !p)                                        \
      return make_error(Code::unavailable, "the CUDA driver lacks " #name);                        \
    cu.name = reinterpret_cast<decltype(cu.name)>(p);                                              \
  }
#include "runtime/cuda/cuda_symbols.def"
#undef KILN_CUDA
  return cu;
}

const Result<CudaSymbols>& cuda_symbols() {
  static const Result<CudaSymbols> table = load_cuda_symbols();
  return table;
}

} // namespace kiln::runtime
