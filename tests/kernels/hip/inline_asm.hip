// Inline GCN assembly: vector ALU operations with register constraints,
// byte permutes, bit-field extracts and a scalar instruction, as
// hand-tuned AMD kernels write them.
#include <hip/hip_runtime.h>
#include <cstdint>

__device__ __forceinline__ uint32_t byte_swap(uint32_t x) {
  uint32_t r;
  asm volatile("v_perm_b32 %0, %1, %1, %2" : "=v"(r) : "v"(x), "v"(0x00010203u));
  return r;
}

__device__ __forceinline__ uint32_t bits(uint32_t x, uint32_t offset, uint32_t width) {
  uint32_t r;
  asm volatile("v_bfe_u32 %0, %1, %2, %3" : "=v"(r) : "v"(x), "v"(offset), "v"(width));
  return r;
}

__device__ __forceinline__ uint32_t mad24(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm volatile("v_mad_u32_u24 %0, %1, %2, %3" : "=v"(r) : "v"(a), "v"(b), "v"(c));
  return r;
}

__global__ void asm_bits(const uint32_t* in, uint32_t* swapped, uint32_t* fields, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    swapped[i] = byte_swap(in[i]);
    fields[i] = bits(in[i], 4, 12);
  }
}

__global__ void asm_mad(const uint32_t* a, const uint32_t* b, uint32_t* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    asm volatile("s_nop 1" ::);
    c[i] = mad24(a[i] & 0xffffff, b[i] & 0xffffff, c[i]);
  }
}
