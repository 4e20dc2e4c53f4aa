// A CUDA kernel with deferred device functions, through <kiln/device.h>.
// `square` and `shifted` become jobs of their own; `apply` refers to them
// symbolically, so changing either recompiles only that job.
//
//   clang++-22 -x cuda --cuda-device-only --cuda-gpu-arch=sm_90 -O1 -emit-llvm \
//     -I include -c examples/cuda/apply.cu -o apply.bc
//   kiln-precompile --target sm_90 apply.bc
#include <kiln/device.h>

__device__ float square(float x) { return x * x; }

// Defers in turn: a deferred job may itself defer.
__device__ float shifted(float x) {
  auto sq = kiln::deferred(square);
  return sq(x) + 1.0f;
}

extern "C" __global__ void apply(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    auto f = kiln::deferred(shifted);
    v[i] = f(v[i]);
  }
}
