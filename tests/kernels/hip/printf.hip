// printf from device code. The HIP headers lower it to the ROCm device
// library's hostcall printf (__ockl_printf_*), linked with the kernel; the
// kernel then asks the runtime for a hostcall buffer.
#include <hip/hip_runtime.h>

__global__ void say_hello(int tag) {
  printf("hello from block %d thread %d, tag %d\n", int(blockIdx.x), int(threadIdx.x), tag);
}

__global__ void print_values(const float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    printf("v[%d] = %.3f (%s)\n", i, v[i], v[i] < 0.0f ? "negative" : "non-negative");
}
