// Tensor cores through warp-level mma.sync (sm_80 and later): one warp
// multiplies a 16x16 half tile by a 16x8 half tile into a 16x8 float tile,
// the fragment layout of mma.m16n8k16.row.col.
#include <cuda_fp16.h>
#include <cstdint>

__device__ __forceinline__ uint32_t pack(__half lo, __half hi) {
  return uint32_t(__half_as_ushort(lo)) | (uint32_t(__half_as_ushort(hi)) << 16);
}

// a: 16x16 row-major, b: 16x8 row-major (k, n), d: 16x8 row-major.
__global__ void mma_16x8x16(const __half* a, const __half* b, float* d) {
  unsigned lane = threadIdx.x & 31;
  unsigned g = lane >> 2, t = lane & 3;
  uint32_t ra[4], rb[2];
  ra[0] = pack(a[g * 16 + 2 * t], a[g * 16 + 2 * t + 1]);
  ra[1] = pack(a[(g + 8) * 16 + 2 * t], a[(g + 8) * 16 + 2 * t + 1]);
  ra[2] = pack(a[g * 16 + 2 * t + 8], a[g * 16 + 2 * t + 9]);
  ra[3] = pack(a[(g + 8) * 16 + 2 * t + 8], a[(g + 8) * 16 + 2 * t + 9]);
  rb[0] = pack(b[(2 * t) * 8 + g], b[(2 * t + 1) * 8 + g]);
  rb[1] = pack(b[(2 * t + 8) * 8 + g], b[(2 * t + 9) * 8 + g]);
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
  d[g * 8 + 2 * t] = c[0];
  d[g * 8 + 2 * t + 1] = c[1];
  d[(g + 8) * 8 + 2 * t] = c[2];
  d[(g + 8) * 8 + 2 * t + 1] = c[3];
}
