// Atomics: integer, float and double add, min/max, CAS loops, exchange and
// bitwise operations, in global and shared memory.
#include <hip/hip_runtime.h>

__global__ void histogram(const unsigned char* in, unsigned int* bins, int n) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[in[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    atomicAdd(&bins[b], local[b]);
}

// Float max by compare-and-swap on the bits.
__device__ float atomic_max_float(float* addr, float v) {
  int* bits = reinterpret_cast<int*>(addr);
  int old = *bits;
  while (__int_as_float(old) < v) {
    int assumed = old;
    old = atomicCAS(bits, assumed, __float_as_int(v));
    if (old == assumed)
      break;
  }
  return __int_as_float(old);
}

__global__ void stats(const float* in, int n, float* sum, double* sum_sq, float* max,
                      int* min_index) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  atomicAdd(sum, in[i]);
  atomicAdd(sum_sq, double(in[i]) * in[i]);
  atomic_max_float(max, in[i]);
  if (in[i] < 0.0f)
    atomicMin(min_index, i);
}

__global__ void claim_slots(int* slots, int nslots, int* owner, unsigned long long* tickets) {
  int me = blockIdx.x * blockDim.x + threadIdx.x;
  for (int s = 0; s < nslots; ++s)
    if (atomicCAS(&slots[s], 0, me + 1) == 0) {
      owner[me] = s;
      break;
    }
  atomicAdd(tickets, 1ull);
  atomicExch(&slots[nslots], me);
  atomicOr(&slots[nslots + 1], 1 << (me & 31));
  atomicInc(reinterpret_cast<unsigned*>(&slots[nslots + 2]), 1000u);
}
