// printf from device code. clang lowers it to the driver's vprintf, which
// the CUDA driver supplies when the image is loaded.
#include <cstdio>

__global__ void say_hello(int tag) {
  printf("hello from block %d thread %d, tag %d\n", int(blockIdx.x), int(threadIdx.x), tag);
}

__global__ void print_values(const float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    printf("v[%d] = %.3f (%s)\n", i, v[i], v[i] < 0.0f ? "negative" : "non-negative");
}
