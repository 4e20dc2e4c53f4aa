// Deferred references from CUDA and HIP device code compiled by clang to
// LLVM IR: kiln::deferred(f) is "the address of f, compiled as its own Kiln
// job", lowering to the kiln_deferred marker that kiln-precompile resolves.
//
//   #include <kiln/device.h>
//   __device__ float square(float x) { return x * x; }
//   __global__ void apply(float* v) {
//     auto f = kiln::deferred(square);   // square is its own job
//     v[threadIdx.x] = f(v[threadIdx.x]);
//   }
//
// Compile with: clang++ -x cuda --cuda-device-only --cuda-gpu-arch=sm_90
//   -emit-llvm -c file.cu -o file.bc   (HIP: -x hip --offload-arch=gfx942)
// then: kiln-precompile --target sm_90 file.bc
#pragma once

#if defined(__CUDA__) || defined(__HIP__)
extern "C" __device__ void* kiln_deferred(void* function);

namespace kiln {
template <typename F> __device__ __attribute__((always_inline)) inline F* deferred(F* function) {
  return reinterpret_cast<F*>(kiln_deferred(reinterpret_cast<void*>(function)));
}
} // namespace kiln
#else
extern "C" void* kiln_deferred(void* function);

namespace kiln {
/// Host code: the same marker, for units precompiled for the host target.
template <typename F> __attribute__((always_inline)) inline F* deferred(F* function) {
  return reinterpret_cast<F*>(kiln_deferred(reinterpret_cast<void*>(function)));
}
} // namespace kiln
#endif
