// assert in device code: a failed assertion prints the condition through
// hostcall and aborts the kernel.
#include <hip/hip_runtime.h>
#include <cassert>

__global__ void checked_divide(const int* num, const int* den, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    assert(den[i] != 0 && "division by zero");
    out[i] = num[i] / den[i];
  }
}

__global__ void checked_index(const int* idx, const float* table, int size, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    assert(idx[i] >= 0 && idx[i] < size);
    out[i] = table[idx[i]];
  }
}
