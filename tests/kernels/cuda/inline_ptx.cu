// Inline PTX: special registers, carry chains, byte permutes, bit scans and
// a non-coherent load, as hand-tuned kernels write them.
#include <cstdint>

__device__ __forceinline__ unsigned lane_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

// 64-bit add from 32-bit halves through the carry flag.
__device__ __forceinline__ uint64_t add_with_carry(uint64_t a, uint64_t b) {
  uint32_t lo, hi;
  asm("add.cc.u32 %0, %2, %4;\n\t"
      "addc.u32 %1, %3, %5;"
      : "=r"(lo), "=r"(hi)
      : "r"(uint32_t(a)), "r"(uint32_t(a >> 32)), "r"(uint32_t(b)), "r"(uint32_t(b >> 32)));
  return (uint64_t(hi) << 32) | lo;
}

__device__ __forceinline__ unsigned byte_swap(unsigned x) {
  unsigned r;
  asm("prmt.b32 %0, %1, 0, 0x0123;" : "=r"(r) : "r"(x));
  return r;
}

__device__ __forceinline__ int highest_bit(unsigned x) {
  int r;
  asm("bfind.u32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}

__device__ __forceinline__ float load_nc(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

__global__ void ptx_bits(const unsigned* in, unsigned* swapped, int* top, unsigned* lanes, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    swapped[i] = byte_swap(in[i]);
    top[i] = highest_bit(in[i]);
    lanes[i] = lane_id();
  }
}

__global__ void ptx_wide_add(const uint64_t* a, const uint64_t* b, uint64_t* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = add_with_carry(a[i], b[i]);
}

__global__ void ptx_scaled_copy(const float* in, float* out, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = load_nc(in + i);
    float r;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(r) : "f"(v), "f"(s), "f"(1.0f));
    out[i] = r;
  }
}
